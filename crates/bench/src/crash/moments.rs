//! The moments of a recording that matter to a power cut, and the crash
//! points weighted towards them (`--study crash`).
//!
//! Two sources, both on the write log's clock (`CLOCK_MONOTONIC`):
//! - **the log's own bytes**: a write that holds an rtrec file header at a
//!   4 KiB block boundary (a file's first block: a pool slot taken, a file
//!   created, a file switch, a flight-recorder event file; the same block
//!   written again is a header rewrite: the final header, or a mark in
//!   it), an end frame, a trigger frame (a flight-recorder event), or a
//!   RETIRED frame (a loop's claim over the files it retires);
//! - **what the study saw from outside** while polling: a durable point
//!   published in `--status` (the status file replaced), a new `.rtr` name
//!   or hidden temporary name in the directory, a `.rtr` name gone from
//!   it (a loop's retirement: unlinked or recycled), a change in the pool's
//!   slots (taken or refilled), a flight-recorder event counted.
//!
//! Design choice: a moment matters until the flushes after it have made
//! it durable, so the crash points it adds are the next two flushes (the
//! state just before each completes, twice each) and every entry between
//! the moment and the second of them. Every flush is a crash point once
//! besides.

use std::collections::BTreeMap;

use rtrec_emu::writelog::{Log, What};
use rtrec_engine::format::{FILE_MAGIC, FRAME_MAGIC};

/// Block size of the study's ext4 images: a file's header starts a block.
const BLOCK: u64 = 4096;

/// One moment: its kind and the first log entry completed at or after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    /// What happened (`header`, `header-rewrite`, `end-frame`, `trigger`,
    /// `retired-claim`, `published`, `name`, `name-gone`, `hidden-name`,
    /// `pool`, `event`).
    pub kind: &'static str,
    /// The log entry it is at.
    pub at: usize,
}

/// Moments seen from outside, stamped with `CLOCK_MONOTONIC` ns.
pub type Seen = Vec<(u64, &'static str)>;

/// The first log entry completed at or after `t_ns`.
pub fn entry_at(log: &Log, t_ns: u64) -> usize {
    log.entries.partition_point(|e| e.time_ns < t_ns)
}

/// The moments in the log's own bytes: file headers (first and
/// rewritten), end frames and trigger frames.
///
/// # Errors
/// Reading the log's data file.
pub fn in_log(log: &Log) -> std::io::Result<Vec<Moment>> {
    let mut headers = std::collections::BTreeSet::new();
    let mut found = Vec::new();
    for (i, e) in log.entries.iter().enumerate() {
        let What::Write { offset, len, data } = e.what else {
            continue;
        };
        let bytes = log.bytes(data, len)?;
        let first_block = (BLOCK - offset % BLOCK) % BLOCK;
        for at in (first_block..len).step_by(BLOCK as usize) {
            let b = &bytes[at as usize..];
            if b.starts_with(&FILE_MAGIC) {
                let kind = if headers.insert(offset + at) {
                    "header"
                } else {
                    "header-rewrite"
                };
                found.push(Moment { kind, at: i });
            }
        }
        for kind in frames(&bytes) {
            found.push(Moment { kind, at: i });
        }
    }
    Ok(found)
}

/// End, trigger and RETIRED frames in `bytes`: the frame magic, then
/// kind 3, 4 or 6 as a little-endian `u16` and the zero `u16` after it.
fn frames(bytes: &[u8]) -> Vec<&'static str> {
    bytes
        .windows(12)
        .filter(|w| w[..4] == FRAME_MAGIC && w[10..12] == [0, 0])
        .filter_map(|w| match u16::from_le_bytes([w[8], w[9]]) {
            3 => Some("end-frame"),
            4 => Some("trigger"),
            6 => Some("retired-claim"),
            _ => None,
        })
        .collect()
}

/// The moments seen from outside, placed in the log.
pub fn placed(log: &Log, seen: &Seen) -> Vec<Moment> {
    seen.iter()
        .map(|&(t, kind)| Moment {
            kind,
            at: entry_at(log, t),
        })
        .collect()
}

/// How many moments of each kind.
pub fn counts(moments: &[Moment]) -> BTreeMap<String, u64> {
    let mut c = BTreeMap::new();
    for m in moments {
        *c.entry(m.kind.to_string()).or_insert(0) += 1;
    }
    c
}

/// The weighted crash points: every flush once; for each moment, the
/// next two flushes after it twice each and every entry in between once.
/// A point `p` is the state in which entries `[0, p)` completed: a flush's
/// own index is the moment just before it completes.
pub fn weighted_points(log: &Log, moments: &[Moment]) -> Vec<usize> {
    let flushes = log.flushes();
    let mut points = flushes.clone();
    for m in moments {
        let next = flushes.partition_point(|&f| f < m.at);
        let f1 = flushes.get(next).copied();
        let f2 = flushes.get(next + 1).copied();
        let end = f2.or(f1).unwrap_or(log.entries.len());
        points.extend(m.at + 1..=end);
        for f in [f1, f2].into_iter().flatten() {
            points.extend([f, f]);
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtrec_emu::writelog::WriteLog;

    /// A log over a 16 KiB image: a header at block 1, flush, a data
    /// write, the header rewritten with an end frame before it, flush.
    fn log(dir: &std::path::Path) -> Log {
        let image = tempfile::tempfile().unwrap();
        image.set_len(16384).unwrap();
        let mut w = WriteLog::create(dir, &image).unwrap();
        let mut header = vec![0u8; 4096];
        header[..8].copy_from_slice(&FILE_MAGIC);
        w.write(4096, &header);
        w.flush();
        w.write(8192, &[7u8; 512]);
        let mut end = vec![0u8; 4096];
        end[100..104].copy_from_slice(&FRAME_MAGIC);
        end[108..110].copy_from_slice(&3u16.to_le_bytes());
        w.write(0, &end);
        w.write(4096, &header);
        w.flush();
        drop(w);
        Log::open(dir).unwrap()
    }

    #[test]
    fn headers_rewrites_and_end_frames_are_found_in_the_logs_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let kinds: Vec<(&str, usize)> = in_log(&log)
            .unwrap()
            .iter()
            .map(|m| (m.kind, m.at))
            .collect();
        assert_eq!(
            kinds,
            [("header", 0), ("end-frame", 3), ("header-rewrite", 4)]
        );
    }

    #[test]
    fn a_moment_weights_the_two_flushes_after_it_and_the_entries_between() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        // Entries: 0 header, 1 flush, 2 data, 3 end, 4 header, 5 flush.
        let points = weighted_points(
            &log,
            &[Moment {
                kind: "header",
                at: 0,
            }],
        );
        let mut sorted = points.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [1, 1, 1, 1, 2, 3, 4, 5, 5, 5, 5]);
    }

    #[test]
    fn moments_seen_from_outside_land_on_the_first_entry_completed_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let t = log.entries[2].time_ns;
        let m = placed(&log, &vec![(t, "name"), (0, "pool"), (u64::MAX, "event")]);
        assert!(m[0].at <= 2 && log.entries[m[0].at].time_ns >= t, "{m:?}");
        assert_eq!(m[1].at, 0);
        assert_eq!(m[2].at, log.entries.len());
        assert_eq!(counts(&m)["name"], 1);
    }
}
