//! Turning a write log ([`crate::writelog`]) into images: the state after
//! any prefix of the log, or a *crash state* — everything up to a flush,
//! plus a chosen subset of the writes completed after it and before the
//! crash point, optionally one of them torn at its atomic unit.
//!
//! A [`CrashState`] is plain data (crash point, subset, torn write), so a
//! state can be printed, rebuilt and debugged; [`CrashState::random`]
//! draws one from a seed, so the seed alone names it for a given log.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::writelog::{copy_sparse, Log, What};

/// A state the device may hold after a power cut at `point`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// The crash point: the entries `[0, point)` had completed.
    pub point: usize,
    /// The last flush before the point (`None`: no flush yet); every write
    /// before it is in the image.
    pub flush: Option<usize>,
    /// The writes after the flush (and before the point) that landed, by
    /// log index, ascending.
    pub landed: Vec<usize>,
    /// One of `landed` that landed in part: its index and how many of its
    /// first bytes (a whole number of atomic units, less than all of it).
    pub torn: Option<(usize, u64)>,
}

/// A small deterministic generator (SplitMix64): a seed names a state.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

impl CrashState {
    /// The state after the prefix `[0, point)`: every write in it landed.
    pub fn prefix(log: &Log, point: usize) -> CrashState {
        let flush = last_flush(log, point);
        CrashState {
            point,
            flush,
            landed: unflushed(log, flush, point),
            torn: None,
        }
    }

    /// A crash state at `point` drawn from `seed`: of the writes completed
    /// after the last flush, none, all or a random subset landed (a
    /// quarter of the draws each, the last quarter a subset that keeps the
    /// order: a prefix of them); in a third of the draws one that landed is
    /// torn after a random number of whole `unit`s.
    pub fn random(log: &Log, point: usize, seed: u64, unit: u64) -> CrashState {
        let mut rng = SplitMix::new(seed);
        let flush = last_flush(log, point);
        let after = unflushed(log, flush, point);
        let landed: Vec<usize> = match rng.below(4) {
            0 => Vec::new(),
            1 => after,
            2 => after.into_iter().filter(|_| rng.below(2) == 0).collect(),
            _ => {
                let n = rng.below(after.len() as u64 + 1) as usize;
                after[..n].to_vec()
            }
        };
        let mut torn = None;
        if !landed.is_empty() && rng.below(3) == 0 {
            let i = landed[rng.below(landed.len() as u64) as usize];
            if let What::Write { len, .. } = log.entries[i].what {
                let units = len.div_ceil(unit.max(1));
                if units > 1 {
                    torn = Some((i, rng.below(units - 1).saturating_add(1) * unit));
                }
            }
        }
        CrashState {
            point,
            flush,
            landed,
            torn,
        }
    }

    /// The subset in one line: `flush F + writes [a b c] torn a@512`.
    pub fn describe(&self) -> String {
        let flush = self
            .flush
            .map_or_else(|| "no flush".to_string(), |f| format!("flush at {f}"));
        let torn = self
            .torn
            .map_or_else(String::new, |(i, n)| format!(", {i} torn after {n} bytes"));
        let list: Vec<String> = self.landed.iter().map(ToString::to_string).collect();
        format!(
            "point {}: {flush} + writes [{}]{torn}",
            self.point,
            list.join(" ")
        )
    }

    /// Writes the image of this state to `out`: the log's base image, every
    /// write before the flush, then the landed ones, in log order.
    ///
    /// # Errors
    /// Reading the log or the base image, or writing `out`.
    pub fn build(&self, log: &Log, out: &Path) -> std::io::Result<()> {
        let base = File::open(log.base())?;
        let dst = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(out)?;
        copy_sparse(&base, &dst)?;
        let durable = self.flush.map_or(0, |f| f);
        let writes = (0..durable).chain(self.landed.iter().copied());
        for i in writes {
            let What::Write { offset, len, data } = log.entries[i].what else {
                continue;
            };
            let keep = match self.torn {
                Some((t, n)) if t == i => n.min(len),
                _ => len,
            };
            dst.write_all_at(&log.bytes(data, keep)?, offset)?;
        }
        Ok(())
    }
}

/// The last flush before `point`.
fn last_flush(log: &Log, point: usize) -> Option<usize> {
    (0..point.min(log.entries.len()))
        .rev()
        .find(|&i| log.entries[i].what == What::Flush)
}

/// The writes after `flush` and before `point`.
fn unflushed(log: &Log, flush: Option<usize>, point: usize) -> Vec<usize> {
    let from = flush.map_or(0, |f| f + 1);
    (from..point.min(log.entries.len()))
        .filter(|&i| matches!(log.entries[i].what, What::Write { .. }))
        .collect()
}

/// What `e2fsck` made of a crash image ([`fsck`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fsck {
    /// What the full check would still repair after the journal replay,
    /// beyond the summary counters (`None`: nothing): ext4's own damage.
    pub damage: Option<String>,
    /// The repair's exit code (4 and above: ext4 left damaged).
    pub code: i32,
    /// The repair's first line of output.
    pub said: String,
}

/// Checks and repairs the ext4 crash image `image` as a card's next boot
/// would: the journal replayed (`e2fsck -E journal_only -y`), then a
/// read-only full check (`-f -n`) says what it would repair beyond the
/// free block and inode counts, then the repair (`-f -y`) leaves the image
/// as the next mount finds it. The crash study and the tests that cut the
/// power under a command (`tests/ship_power.rs`) share it.
///
/// # Errors
/// `e2fsck` could not be run.
pub fn fsck(image: &Path) -> std::io::Result<Fsck> {
    let run = |args: &[&str]| {
        std::process::Command::new("e2fsck")
            .args(args)
            .arg(image)
            .stdin(std::process::Stdio::null())
            .output()
    };
    run(&["-E", "journal_only", "-y"])?;
    let look = run(&["-f", "-n"])?;
    let damage = damage_beyond_counters(&String::from_utf8_lossy(&look.stdout));
    let fix = run(&["-f", "-y"])?;
    let said = String::from_utf8_lossy(&fix.stdout)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Fsck {
        damage,
        code: fix.status.code().unwrap_or(8),
        said,
    })
}

/// Whether `e2fsck -fn`'s output asks to repair anything but the free
/// block and inode counts (the superblock's and the groups' summaries,
/// which ext4 does not keep current on storage and recomputes at mount).
fn damage_beyond_counters(fsck_n: &str) -> Option<String> {
    let mut summary = false;
    let mut before = "";
    for line in fsck_n.lines() {
        if line.starts_with("Free blocks count wrong")
            || line.starts_with("Free inodes count wrong")
        {
            summary = true;
        } else if line.ends_with("? no") {
            if !summary {
                let what = if line.len() > "Fix? no".len() {
                    line
                } else {
                    before
                };
                return Some(what.trim().to_string());
            }
            summary = false;
        }
        if !line.trim().is_empty() {
            before = line;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writelog::WriteLog;

    /// A log over an 8 KiB zero image: A (1 KiB of 'a' at 0), flush,
    /// B (1 KiB of 'b' at 1 KiB), C (2 KiB of 'c' at 4 KiB), flush,
    /// D (1 KiB of 'd' at 0, over A), E (2 KiB of 'e' at 2 KiB).
    fn log(dir: &Path) -> Log {
        let image = tempfile::tempfile().unwrap();
        image.set_len(8192).unwrap();
        let mut w = WriteLog::create(dir, &image).unwrap();
        w.write(0, &[b'a'; 1024]);
        w.flush();
        w.write(1024, &[b'b'; 1024]);
        w.write(4096, &[b'c'; 2048]);
        w.flush();
        w.write(0, &[b'd'; 1024]);
        w.write(2048, &[b'e'; 2048]);
        drop(w);
        Log::open(dir).unwrap()
    }

    fn image(log: &Log, state: &CrashState) -> Vec<u8> {
        let out = log.dir.join("out.img");
        state.build(log, &out).unwrap();
        std::fs::read(out).unwrap()
    }

    /// The bytes of `img` as one letter per KiB ('0' for zeros, '?' for a
    /// mix).
    fn kib(img: &[u8]) -> String {
        img.chunks(1024)
            .map(|c| match c[0] {
                _ if c.iter().any(|&b| b != c[0]) => '?',
                0 => '0',
                b => b as char,
            })
            .collect()
    }

    #[test]
    fn a_prefix_reproduces_exactly_the_writes_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let at = |p| kib(&image(&log, &CrashState::prefix(&log, p)));
        assert_eq!(at(0), "00000000");
        assert_eq!(at(1), "a0000000");
        assert_eq!(at(3), "ab000000");
        assert_eq!(at(4), "ab00cc00");
        assert_eq!(at(7), "dbeecc00");
        // The same prefix twice: the same bytes.
        assert_eq!(
            image(&log, &CrashState::prefix(&log, 6)),
            image(&log, &CrashState::prefix(&log, 6))
        );
    }

    #[test]
    fn a_crash_state_holds_the_flushed_writes_and_exactly_the_chosen_others() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        // After the second flush (index 4): A, B, C durable; of D and E
        // only E landed.
        let s = CrashState {
            point: 7,
            flush: Some(4),
            landed: vec![6],
            torn: None,
        };
        assert_eq!(kib(&image(&log, &s)), "abeecc00");
        // Before the second flush: only A is durable; C landed, B did not.
        let s = CrashState {
            point: 4,
            flush: Some(1),
            landed: vec![3],
            torn: None,
        };
        assert_eq!(kib(&image(&log, &s)), "a000cc00");
        assert_eq!(s.describe(), "point 4: flush at 1 + writes [3]");
    }

    #[test]
    fn a_torn_write_keeps_only_its_first_atomic_units() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        let s = CrashState {
            point: 7,
            flush: Some(4),
            landed: vec![6],
            torn: Some((6, 512)),
        };
        let img = image(&log, &s);
        assert!(img[2048..2048 + 512].iter().all(|&b| b == b'e'));
        assert!(img[2048 + 512..4096].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_seed_names_one_state_and_random_states_respect_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        for seed in 0..200 {
            let s = CrashState::random(&log, 7, seed, 512);
            assert_eq!(s, CrashState::random(&log, 7, seed, 512));
            assert_eq!(s.flush, Some(4));
            assert!(s.landed.iter().all(|&i| i == 5 || i == 6), "{s:?}");
            if let Some((i, n)) = s.torn {
                assert!(s.landed.contains(&i));
                assert!(n > 0 && n % 512 == 0 && n < 2048, "{s:?}");
            }
        }
    }

    #[test]
    fn only_repairs_beyond_the_summary_counters_count_as_ext4_damage() {
        let counters = "Pass 5: Checking group summary information\nFree blocks count wrong (227225, counted=225198).\nFix? no\n\nFree inodes count wrong (65525, counted=65521).\nFix? no\n";
        assert_eq!(damage_beyond_counters(counters), None);
        let orphan = format!("{counters}Inode 12 was part of the orphaned inode list.  FIXED.\nEntry 'x' in / (2) has deleted/unused inode 13.  Clear? no\n");
        assert_eq!(
            damage_beyond_counters(&orphan).as_deref(),
            Some("Entry 'x' in / (2) has deleted/unused inode 13.  Clear? no")
        );
    }
}
