//! The device model: how long the emulated device takes to serve one
//! request, given its [`Profile`] and what came before. Pure arithmetic, no
//! clock: the server ([`crate::fs`]) asks [`DeviceModel::cost`] and waits
//! that long.
//!
//! Service time of a request, served one at a time (one queue):
//! - read: `read_latency + bytes / read_bandwidth`;
//! - write: `write_latency + bytes / write_bandwidth`, plus `gc_pause` each
//!   time the bytes written since the last pause reach `gc_every` (the
//!   device stops to erase and copy, as eMMC and SD cards do);
//! - either, plus `seek` when it does not start where the previous request
//!   ended (a disk's head moves; flash has `seek` 0);
//! - flush (`fsync`/`fdatasync` reaching the device: what every jbd2
//!   commit issues): `flush`, or `flush_tail` for every
//!   `flush_tail_every`-th flush.
//!
//! With a volatile write cache (`cache` > 0) a write instead costs
//! `write_latency + bytes / cache_bandwidth` (the bus), plus the time to
//! drain what does not fit (`(dirty + bytes − cache) / write_bandwidth`);
//! the cache drains to the medium at `write_bandwidth` all the time, idle
//! or not; and a flush costs `flush` (or the tail) plus draining what is
//! dirty at that moment (`dirty / write_bandwidth`). This is why a flush
//! after a burst of writes is slow on eMMC and a flush on an idle device is
//! cheap: the cost follows the cache's contents, not a fixed figure. The
//! drain needs the time between requests, so [`DeviceModel::cost`] takes
//! the device's clock (`now_ns`, from any fixed start); the model still
//! reads no clock itself.
//!
//! Design choice: the tails are deterministic (every N-th flush, every N
//! bytes), not random, so two runs of the same workload are served alike
//! and a comparison of designs is not a comparison of dice.

use crate::profile::Profile;
use crate::rate::{transfer_bytes, transfer_ns};

/// One request to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read `bytes` at `offset`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
    },
    /// Write `bytes` at `offset`.
    Write {
        /// Byte offset.
        offset: u64,
        /// Length.
        bytes: u64,
    },
    /// Flush the volatile write cache.
    Flush,
}

impl Op {
    /// The part of a read or write from `done` bytes in, at most `max`
    /// bytes long (a flush, or `max` 0, is itself whole).
    pub fn piece(self, done: u64, max: u64) -> Op {
        let cut = |offset: u64, bytes: u64| (offset + done, (bytes - done).min(max));
        match self {
            Op::Read { offset, bytes } if max > 0 => {
                let (offset, bytes) = cut(offset, bytes);
                Op::Read { offset, bytes }
            }
            Op::Write { offset, bytes } if max > 0 => {
                let (offset, bytes) = cut(offset, bytes);
                Op::Write { offset, bytes }
            }
            op => op,
        }
    }

    /// Bytes moved (0 for a flush).
    pub fn bytes(self) -> u64 {
        match self {
            Op::Read { bytes, .. } | Op::Write { bytes, .. } => bytes,
            Op::Flush => 0,
        }
    }
}

/// The model's state: where the last request ended, bytes written since
/// the last GC pause, flushes so far, the write cache's dirty bytes.
#[derive(Debug, Clone)]
pub struct DeviceModel {
    profile: Profile,
    next_offset: Option<u64>,
    since_gc: u64,
    flushes: u64,
    /// Bytes in the write cache not yet on the medium, as of `dirty_at_ns`.
    dirty: u64,
    dirty_at_ns: u64,
    /// GC pauses served so far.
    pub gc_pauses: u64,
    /// Requests so far that did not start where the previous one ended
    /// (a disk pays `seek` for each; on flash they cost nothing extra).
    pub seeks: u64,
}

impl DeviceModel {
    /// A fresh device.
    pub fn new(profile: Profile) -> DeviceModel {
        DeviceModel {
            profile,
            next_offset: None,
            since_gc: 0,
            flushes: 0,
            dirty: 0,
            dirty_at_ns: 0,
            gc_pauses: 0,
            seeks: 0,
        }
    }

    /// Bytes in the write cache at `now_ns` (always 0 without a cache).
    pub fn dirty_at(&mut self, now_ns: u64) -> u64 {
        let elapsed = now_ns.saturating_sub(self.dirty_at_ns);
        let drained = transfer_bytes(elapsed, self.profile.write_bytes_per_s);
        self.dirty = self.dirty.saturating_sub(drained);
        self.dirty_at_ns = self.dirty_at_ns.max(now_ns);
        self.dirty
    }

    /// The profile served.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    fn seek(&mut self, offset: u64, bytes: u64) -> u64 {
        let seq = self.next_offset == Some(offset);
        self.next_offset = Some(offset + bytes);
        if seq {
            0
        } else {
            self.seeks += 1;
            self.profile.seek_ns
        }
    }

    /// How long the device takes to serve `op` arriving at `now_ns` (the
    /// device's clock, from any fixed start), in ns; advances the state.
    pub fn cost(&mut self, op: Op, now_ns: u64) -> u64 {
        let cached = self.profile.cache_bytes > 0;
        let dirty = if cached { self.dirty_at(now_ns) } else { 0 };
        let p = &self.profile;
        match op {
            Op::Read { offset, bytes } => {
                let base = p.read_latency_ns + transfer_ns(bytes, p.read_bytes_per_s);
                base + self.seek(offset, bytes)
            }
            Op::Write { offset, bytes } => {
                let mut ns = p.write_latency_ns;
                if cached {
                    let over = (dirty + bytes).saturating_sub(p.cache_bytes);
                    ns += transfer_ns(bytes, p.cache_bytes_per_s)
                        + transfer_ns(over, p.write_bytes_per_s);
                } else {
                    ns += transfer_ns(bytes, p.write_bytes_per_s);
                }
                if p.gc_every_bytes > 0 {
                    self.since_gc += bytes;
                    while self.since_gc >= p.gc_every_bytes {
                        self.since_gc -= p.gc_every_bytes;
                        ns += p.gc_pause_ns;
                        self.gc_pauses += 1;
                    }
                }
                let ns = ns + self.seek(offset, bytes);
                if cached {
                    // In the cache now; it drains while this request is served.
                    self.dirty = dirty + bytes;
                    self.dirty_at_ns = now_ns;
                    self.dirty_at(now_ns + ns);
                }
                ns
            }
            Op::Flush => {
                self.flushes += 1;
                let every = u64::from(p.flush_tail_every);
                let base = if every > 0 && self.flushes % every == 0 {
                    p.flush_tail_ns
                } else {
                    p.flush_ns
                };
                let ns = base + transfer_ns(dirty, p.write_bytes_per_s);
                if cached {
                    self.dirty = 0;
                    self.dirty_at_ns = now_ns + ns;
                }
                ns
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of the shipped `emmc` profile with `fields` replaced and
    /// every `tail_every`-th flush a tail: fixed figures, not the shipped
    /// calibration (which may change).
    fn model_with(fields: &[(&str, &str)], tail_every: u32) -> DeviceModel {
        let mut v: serde_json::Value = serde_json::from_str(crate::profile::BUILTIN[0].1).unwrap();
        for (field, value) in fields {
            v[*field] = (*value).into();
        }
        v["flush_tail_every"] = tail_every.into();
        DeviceModel::new(Profile::from_json(&v.to_string(), "test").unwrap())
    }

    #[test]
    fn costs_follow_the_documented_formula() {
        let mut m = model_with(
            &[
                ("write_latency", "300us"),
                ("flush", "2ms"),
                ("flush_tail", "25ms"),
                ("gc_every", "32MiB"),
                ("gc_pause", "60ms"),
                ("cache", "0B"),
            ],
            20,
        );
        // 300 µs + 4096 B at 40 MB/s (102.4 µs).
        assert_eq!(
            m.cost(
                Op::Write {
                    offset: 0,
                    bytes: 4096
                },
                0
            ),
            300_000 + 102_400
        );
        // Flushes: 2 ms, every 20th 25 ms.
        let f: Vec<u64> = (0..20).map(|_| m.cost(Op::Flush, 0)).collect();
        assert_eq!(f[0], 2_000_000);
        assert_eq!(f[19], 25_000_000);
        // 32 MiB written in 1 MiB writes: exactly one 60 ms GC pause.
        let mut total = 0;
        for i in 0..32u64 {
            total += m.cost(
                Op::Write {
                    offset: i << 20,
                    bytes: 1 << 20,
                },
                0,
            );
        }
        assert_eq!(m.gc_pauses, 1);
        assert_eq!(total, 32 * (300_000 + 26_214_400) + 60_000_000);
    }

    #[test]
    fn a_disk_pays_a_seek_only_off_the_sequential_path() {
        let mut m = DeviceModel::new(Profile::load("hdd-5400").unwrap());
        let r = |m: &mut DeviceModel, offset| {
            m.cost(
                Op::Read {
                    offset,
                    bytes: 4096,
                },
                0,
            )
        };
        let first = r(&mut m, 1 << 20);
        let next = r(&mut m, (1 << 20) + 4096);
        let far = r(&mut m, 1 << 30);
        assert_eq!(first - next, 17_500_000);
        assert_eq!(far, first);
    }

    #[test]
    fn a_write_cache_takes_bursts_at_the_bus_rate_and_a_flush_drains_it() {
        // 4 MiB cache at 100 MB/s in, draining at 10 MB/s; flush 1 ms.
        let mut m = model_with(
            &[
                ("write_latency", "0ns"),
                ("write_bandwidth", "10MB"),
                ("cache", "4MB"),
                ("cache_bandwidth", "100MB"),
                ("flush", "1ms"),
                ("gc_every", "0B"),
            ],
            0,
        );
        let w = |m: &mut DeviceModel, offset: u64, now| {
            m.cost(
                Op::Write {
                    offset,
                    bytes: 1_000_000,
                },
                now,
            )
        };
        // 1 MB at the bus rate: 10 ms; it drained 0.1 MB meanwhile.
        assert_eq!(w(&mut m, 0, 0), 10_000_000);
        assert_eq!(m.dirty_at(10_000_000), 900_000);
        // Right away, a flush drains the 0.9 MB at 10 MB/s: 1 ms + 90 ms.
        assert_eq!(m.cost(Op::Flush, 10_000_000), 91_000_000);
        // An idle second later a flush costs only its base.
        assert_eq!(m.cost(Op::Flush, 1_101_000_000), 1_000_000);
        // Back-to-back 1 MB writes fill the cache; the fifth must wait for
        // room: it finds 4 MB − 4 × 0.1 MB = 3.6 MB dirty, 0.6 MB too many.
        let t0 = 2_000_000_000;
        let mut now = t0;
        for i in 0..4 {
            now += w(&mut m, i * 1_000_000, now);
        }
        assert_eq!(now - t0, 40_000_000);
        assert_eq!(w(&mut m, 4_000_000, now), 10_000_000 + 60_000_000);
    }
}
