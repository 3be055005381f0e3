//! `rtrec recover DIR`: after a crash, a kill or a power cut, finish every
//! recording of `DIR` whose owner is gone, and say what was done, one line
//! per step (`rtrec_engine::recovery::recover_dir`, which `rtrec_dir_recover()`
//! in C and `rtrec record --recover-first` run too):
//!
//! - recordings a crash left in the pool (`DIR/.pool`) are moved back, and
//!   a recording file left under its hidden temporary name (`.NAME.tmp`)
//!   is moved into place (or removed when it holds no recording);
//! - the last file of each interrupted recording is closed: cut at its
//!   last intact frame (never below its durable mark; a crash hole after
//!   the mark is cut and covered by a `crash-hole` loss frame), ended by
//!   an end frame "interrupted, closed by recover" with the recording's
//!   totals, the last durable sequence number and what was cut, and its
//!   unused pre-allocation is given back; `verify` then says so and exits
//!   0, and `export` reads it without a flag;
//! - the dead name claims (`.NAME-name.lock`) are removed.
//!
//! A recording whose claim a live recorder holds locked is skipped; so a
//! recover beside a running recorder is safe. A second run changes nothing
//! and says so. A file damaged below its mark, or after it without a sign
//! of a missing write, is corrupt and left alone (`rtrec export
//! --salvage` reads its intact frames).
//!
//! Exit codes: 0 done (also when there was nothing to recover, or a file
//! was left alone: each is named), 2 usage or I/O errors.

use std::path::Path;

use rtrec_engine::recovery::Leftover;
use rtrec_engine::recovery::{recover_dir, Closed, Recovery};
use rtrec_units::format_size;

/// Runs `rtrec recover DIR`.
pub fn run(dir: &Path) -> crate::error::Result<i32> {
    if !dir.is_dir() {
        return crate::error::usage(format!("'{}' is not a directory", dir.display()));
    }
    let rec = recover(dir)?;
    for line in lines(dir, &rec) {
        println!("{line}");
    }
    Ok(0)
}

/// Runs the recovery of `dir`, the error worded for the command line.
pub fn recover(dir: &Path) -> crate::error::Result<Recovery> {
    recover_dir(dir)
        .map_err(|e| crate::error::Error::Usage(format!("cannot recover '{}': {e}", dir.display())))
}

/// One line per thing done or left alone; one line saying nothing was to
/// be done when so.
pub fn lines(dir: &Path, rec: &Recovery) -> Vec<String> {
    let mut out = Vec::new();
    pool_lines(rec, &mut out);
    out.extend(rec.leftovers.iter().map(|l| leftover(dir, l)));
    out.extend(rec.closed.iter().map(closed));
    for p in &rec.headers_finished {
        out.push(format!(
            "finished the header of '{}': its end frame was written, its header not yet, when the recorder was interrupted",
            p.display()
        ));
    }
    for p in &rec.removed_empty {
        out.push(format!(
            "removed '{}': the recording had opened it for its next records when it was interrupted, and it holds none",
            p.display()
        ));
    }
    for (p, bytes) in &rec.tails_given_back {
        out.push(format!(
            "gave back {bytes} bytes of unused tail of '{}': its recording ended while another wrote here, and kept it",
            p.display()
        ));
    }
    for (path, why) in &rec.left_alone {
        out.push(format!("'{}' left alone: {why}", path.display()));
    }
    if !rec.live.is_empty() {
        out.push(format!(
            "{}: {} file(s) of recordings that are being recorded now were left alone",
            dir.display(),
            rec.live.len()
        ));
    }
    for c in &rec.claims_removed {
        out.push(format!(
            "removed '{}': the name claim of a recording whose recorder is gone",
            c.display()
        ));
    }
    if rec.nothing_done() && rec.left_alone.is_empty() {
        out.push(format!(
            "{}: nothing to recover: no interrupted recording, no dead claim{}",
            dir.display(),
            if rec.pool {
                ", nothing left in the pool"
            } else {
                ""
            }
        ));
    }
    out
}

/// The lines of what recover did with the pool: recordings moved back,
/// stale preparations and stranded slots, and retirements completed
/// (files recycled into the pool or removed).
fn pool_lines(rec: &Recovery, out: &mut Vec<String>) {
    for (from, to) in &rec.moved_from_pool {
        out.push(format!(
            "recovered an unfinished recording: '{}' moved back as '{}'",
            from.display(),
            to.display()
        ));
    }
    for p in &rec.stale_preparations {
        out.push(format!(
            "removed '{}': a pool file a killed rtrec was preparing (no data)",
            p.display()
        ));
    }
    for (from, to) in &rec.stranded_slots {
        out.push(match to {
            Some(to) => format!(
                "put '{}' back into the pool as '{}': a retired file a killed rtrec was recycling (its data were already given up)",
                from.display(),
                to.display()
            ),
            None => format!(
                "removed '{}': a retired file a killed rtrec was recycling (its data were already given up; the pool is full)",
                from.display()
            ),
        });
    }
    for (p, recycled) in &rec.recorded_retirements_completed {
        out.push(format!(
            "{} '{}': a loop's disk budget had retired it (the directory's durable retirement record names it), and a power cut came before it left",
            if *recycled { "recycled into the pool" } else { "removed" },
            p.display()
        ));
    }
    for (p, recycled) in &rec.retirements_completed {
        out.push(format!(
            "{} '{}': its loop's durable RETIRED claim had retired it, and a power cut came before it left",
            if *recycled { "recycled into the pool" } else { "removed" },
            p.display()
        ));
    }
}

/// The line of a leftover temporary file.
fn leftover(dir: &Path, l: &Leftover) -> String {
    match l {
        Leftover::Removed(p) => format!(
            "removed '{}': a file a crash left while it was prepared, with no record in it",
            p.display()
        ),
        Leftover::Busy(p) => format!(
            "left '{}' alone: a recording is writing in '{}' (run recover when none is)",
            p.display(),
            dir.display()
        ),
    }
}

/// The line of a closed recording.
fn closed(c: &Closed) -> String {
    let i = &c.interrupted;
    let what = if c.resumed {
        "finished closing (an earlier recover was interrupted)"
    } else {
        "closed"
    };
    let mut s = format!(
        "{what} the interrupted recording in '{}': {} records, every one before sequence {} durable",
        c.path.display(),
        c.records,
        i.durable_seq
    );
    if let Some(h) = &c.hole {
        s += &format!(
            "; cut a crash hole at offset {} (after its durable mark): {} intact record(s) after it",
            h.at, h.records_cut
        );
        if let Some((first, n)) = h.loss {
            s += &format!(
                ", a loss frame (crash-hole) covers sequence {first}..{}",
                first + n - 1
            );
        }
    }
    if i.cut_bytes > 0 {
        s += &format!("; {} byte(s) cut", i.cut_bytes);
    }
    if c.given_back_bytes > 0 {
        s += &format!(
            "; {} of unused pre-allocation given back",
            format_size(c.given_back_bytes)
        );
    }
    if c.kept_tail_bytes > 0 {
        s += &format!(
            "; {} of unused tail kept while a recording writes here (run recover again when none does)",
            format_size(c.kept_tail_bytes)
        );
    }
    s
}
