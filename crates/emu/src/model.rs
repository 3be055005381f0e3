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
//! Design choice: the tails are deterministic (every N-th flush, every N
//! bytes), not random, so two runs of the same workload are served alike
//! and a comparison of designs is not a comparison of dice.

use crate::profile::Profile;

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

/// The model's state: where the last request ended, bytes written since
/// the last GC pause, flushes so far.
#[derive(Debug, Clone)]
pub struct DeviceModel {
    profile: Profile,
    next_offset: Option<u64>,
    since_gc: u64,
    flushes: u64,
    /// GC pauses served so far.
    pub gc_pauses: u64,
}

fn transfer_ns(bytes: u64, per_s: u64) -> u64 {
    if per_s == 0 {
        0
    } else {
        (u128::from(bytes) * 1_000_000_000 / u128::from(per_s)) as u64
    }
}

impl DeviceModel {
    /// A fresh device.
    pub fn new(profile: Profile) -> DeviceModel {
        DeviceModel {
            profile,
            next_offset: None,
            since_gc: 0,
            flushes: 0,
            gc_pauses: 0,
        }
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
            self.profile.seek_ns
        }
    }

    /// How long the device takes to serve `op`, in ns; advances the state.
    pub fn cost(&mut self, op: Op) -> u64 {
        let p = &self.profile;
        match op {
            Op::Read { offset, bytes } => {
                let base = p.read_latency_ns + transfer_ns(bytes, p.read_bytes_per_s);
                base + self.seek(offset, bytes)
            }
            Op::Write { offset, bytes } => {
                let mut ns = p.write_latency_ns + transfer_ns(bytes, p.write_bytes_per_s);
                if p.gc_every_bytes > 0 {
                    self.since_gc += bytes;
                    while self.since_gc >= p.gc_every_bytes {
                        self.since_gc -= p.gc_every_bytes;
                        ns += p.gc_pause_ns;
                        self.gc_pauses += 1;
                    }
                }
                ns + self.seek(offset, bytes)
            }
            Op::Flush => {
                self.flushes += 1;
                let every = u64::from(p.flush_tail_every);
                if every > 0 && self.flushes % every == 0 {
                    p.flush_tail_ns
                } else {
                    p.flush_ns
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_documented_formula() {
        // Fixed figures, not the shipped calibration (which may change).
        let mut v: serde_json::Value = serde_json::from_str(crate::profile::BUILTIN[0].1).unwrap();
        for (field, value) in [
            ("write_latency", "300us"),
            ("flush", "2ms"),
            ("flush_tail", "25ms"),
            ("gc_every", "32MiB"),
            ("gc_pause", "60ms"),
        ] {
            v[field] = value.into();
        }
        v["flush_tail_every"] = 20.into();
        let mut m = DeviceModel::new(Profile::from_json(&v.to_string(), "test").unwrap());
        // 300 µs + 4096 B at 40 MB/s (102.4 µs).
        assert_eq!(
            m.cost(Op::Write {
                offset: 0,
                bytes: 4096
            }),
            300_000 + 102_400
        );
        // Flushes: 2 ms, every 20th 25 ms.
        let f: Vec<u64> = (0..20).map(|_| m.cost(Op::Flush)).collect();
        assert_eq!(f[0], 2_000_000);
        assert_eq!(f[19], 25_000_000);
        // 32 MiB written in 1 MiB writes: exactly one 60 ms GC pause.
        let mut total = 0;
        for i in 0..32u64 {
            total += m.cost(Op::Write {
                offset: i << 20,
                bytes: 1 << 20,
            });
        }
        assert_eq!(m.gc_pauses, 1);
        assert_eq!(total, 32 * (300_000 + 26_214_400) + 60_000_000);
    }

    #[test]
    fn a_disk_pays_a_seek_only_off_the_sequential_path() {
        let mut m = DeviceModel::new(Profile::load("hdd-5400").unwrap());
        let r = |m: &mut DeviceModel, offset| {
            m.cost(Op::Read {
                offset,
                bytes: 4096,
            })
        };
        let first = r(&mut m, 1 << 20);
        let next = r(&mut m, (1 << 20) + 4096);
        let far = r(&mut m, 1 << 30);
        assert_eq!(first - next, 17_500_000);
        assert_eq!(far, first);
    }
}
