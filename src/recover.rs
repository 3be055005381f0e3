//! `rtrec recover DIR`: after a crash, move recordings left unfinished in
//! the pool (`DIR/.pool`) back into `DIR`, and say what was moved. Every
//! recording start does the same; this command does it without recording.
//! The moved files are unfinished recordings: `rtrec verify` reports their
//! intact prefix. Then, in every unfinished file of `DIR`, the torn tail a
//! power cut left after the intact frames (writes after the last durable
//! point that landed in part or out of order) is cut — overwritten with
//! zeros, the file keeping its size — and counted, so that `verify` says
//! unfinished without a tail and `export DIR` reads the file as it is.
//!
//! Exit codes: 0 done (also when there was nothing to recover), 2 usage or
//! I/O errors.

use std::os::unix::fs::FileExt;
use std::path::Path;

use rtrec_engine::pool::Pool;
use rtrec_engine::reader::{self, FileStatus};

use crate::cli::RecoverArgs;

/// Runs `rtrec recover`.
pub fn run(a: &RecoverArgs) -> crate::error::Result<i32> {
    if !a.dir.is_dir() {
        return crate::error::usage(format!("'{}' is not a directory", a.dir.display()));
    }
    match Pool::open(&a.dir)? {
        None => println!(
            "{}: no pool, no recording to move back (files of other allocation modes are always in the directory)",
            a.dir.display()
        ),
        Some(pool) => {
            let moved = pool.recover()?;
            if moved.is_empty() {
                println!("{}: no unfinished recording in the pool", a.dir.display());
            }
            for (from, to) in &moved {
                println!(
                    "recovered an unfinished recording: '{}' moved back as '{}'",
                    from.display(),
                    to.display()
                );
            }
        }
    }
    for path in reader::recording_files(&a.dir)? {
        // A file that cannot be read (or a planted symlink) is verify's to
        // report, not ours to touch.
        let Ok(r) = reader::verify_file(&path) else {
            continue;
        };
        if r.status != FileStatus::Unfinished || r.torn_tail_bytes == 0 {
            continue;
        }
        cut_tail(&path, r.valid_len, r.torn_tail_bytes)?;
        println!(
            "cut a torn tail of {} bytes after the intact records of '{}' ({} record(s) in it were after the last durable point)",
            r.torn_tail_bytes,
            path.display(),
            r.salvageable_records
        );
    }
    Ok(0)
}

/// Overwrites `len` bytes at `at` in `path` with zeros and syncs them.
fn cut_tail(path: &Path, at: u64, len: u64) -> crate::error::Result<()> {
    let f = rtrec_sys::open_rw_nofollow(path)?;
    let zeros = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(zeros.len() as u64) as usize;
        f.write_all_at(&zeros[..n], at + done)?;
        done += n as u64;
    }
    f.sync_data()?;
    Ok(())
}
