//! `rtrec recover DIR`: after a crash, move recordings left unfinished in
//! the pool (`DIR/.pool`) back into `DIR`, move a recording file a crash
//! left under its hidden temporary name (`.NAME.tmp`) into place (or remove
//! one that holds no recording), then cut the crash hole of each
//! unfinished file (format version 4: writes after its durable mark that a
//! power cut left out, with frames going on after them), and say what was
//! moved and cut. Every recording start does the move too; this command
//! does it without recording.
//!
//! A cut never goes below a file's durable mark (`rtrec_engine::recovery`):
//! the file ends at its last intact frame before the hole, a loss frame
//! (`crash-hole`) covers the sequence numbers of the records cut, and the
//! file stays unfinished, which `verify` reports and `export` reads. A file
//! damaged below its mark, or after it without a sign of a missing write,
//! is corrupt and left alone (`rtrec export --salvage` reads its intact
//! frames).
//!
//! It is for after a crash: while a pooled recording writes in `DIR` (it
//! holds the directory's writers lock) nothing is cut or removed, since a
//! live file's writes in flight may land out of order.
//!
//! Exit codes: 0 done (also when there was nothing to recover), 2 usage or
//! I/O errors.

use std::path::Path;

use rtrec_engine::pool::{recording_now, recover_leftovers, Leftover, Pool};
use rtrec_engine::reader::{recording_files, verify_file, FileStatus};
use rtrec_engine::recovery::cut_crash_hole;

use crate::cli::RecoverArgs;

/// Runs `rtrec recover`: the three steps in order, each saying what it did.
pub fn run(a: &RecoverArgs) -> crate::error::Result<i32> {
    if !a.dir.is_dir() {
        return crate::error::usage(format!("'{}' is not a directory", a.dir.display()));
    }
    move_back_from_pool(&a.dir)?;
    put_leftovers_in_place(&a.dir)?;
    if recording_now(&a.dir) {
        // A live file may show writes in flight out of order: not a hole.
        println!(
            "{}: a recording is writing here; no crash hole was cut (run recover when none is)",
            a.dir.display()
        );
        return Ok(0);
    }
    cut_crash_holes(&a.dir)?;
    Ok(0)
}

/// Moves the recordings left unfinished in `dir`'s pool back into `dir`.
fn move_back_from_pool(dir: &Path) -> crate::error::Result<()> {
    match Pool::open(dir)? {
        None => println!(
            "{}: no pool, no recording to move back (files of other allocation modes are always in the directory)",
            dir.display()
        ),
        Some(pool) => {
            let moved = pool.recover()?;
            if moved.is_empty() {
                println!("{}: no unfinished recording in the pool", dir.display());
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
    Ok(())
}

/// Moves a recording file left under its temporary name into place, or
/// removes one that holds no recording.
fn put_leftovers_in_place(dir: &Path) -> crate::error::Result<()> {
    for l in recover_leftovers(dir)? {
        match l {
            Leftover::Moved(from, to) => println!(
                "moved a recording file a crash left under its temporary name into place: '{}' as '{}'",
                from.display(),
                to.display()
            ),
            Leftover::Removed(p) => println!(
                "removed '{}': a file a crash left while it was prepared, with no recording in it",
                p.display()
            ),
            Leftover::Busy(p) => println!(
                "left '{}' alone: a recording is writing in '{}' (run recover when none is)",
                p.display(),
                dir.display()
            ),
        }
    }
    Ok(())
}

/// Cuts the crash hole of each unfinished recording file in `dir`; names
/// the corrupt ones it leaves alone.
fn cut_crash_holes(dir: &Path) -> crate::error::Result<()> {
    let files = recording_files(dir)
        .map_err(|e| crate::error::Error::Usage(format!("cannot list '{}': {e}", dir.display())))?;
    for path in files {
        // A file that cannot be read (or a planted symlink) is verify's to
        // report, not ours to touch.
        let Ok(r) = verify_file(&path) else {
            continue;
        };
        let cut = cut_crash_hole(&r).map_err(|e| {
            crate::error::Error::Usage(format!(
                "cannot cut the crash hole of '{}': {e}",
                path.display()
            ))
        })?;
        if let Some(c) = cut {
            let loss = match c.loss {
                Some((first, n)) => format!(
                    "; a loss frame (crash-hole) covers sequence {first}..{}",
                    first + n - 1
                ),
                None => String::new(),
            };
            println!(
                "cut a crash hole in '{}' at offset {} (after its durable mark): {} bytes and {} intact record(s) after the hole were cut{loss}; the file is unfinished and reads to the cut",
                path.display(),
                c.at,
                c.bytes_cut,
                c.records_cut
            );
        } else if r.status == FileStatus::Corrupt && r.durable_mark.is_some() {
            println!(
                "'{}' is corrupt (damage that no crash explains); left alone: `rtrec export --salvage` reads its intact records",
                path.display()
            );
        }
    }
    Ok(())
}
