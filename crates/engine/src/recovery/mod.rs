//! What `rtrec recover DIR` (and `rtrec_dir_recover()` in C, and `rtrec
//! record --recover-first`) does after a crash, a kill or a power cut:
//! [`recover_dir`] brings every recording of a directory whose owner is
//! gone to a finished state, and says what it did ([`Recovery`]).
//!
//! The steps, each one idempotent, so a second run changes nothing and a
//! run that is itself interrupted leaves what the next one finishes:
//!
//! 1. recordings a crash left in the pool are moved back
//!    ([`Pool::recover`](crate::pool::Pool::recover)), the pool's
//!    preparations a killed preparer left removed
//!    ([`Pool::remove_stale_preparations`](crate::pool::Pool::remove_stale_preparations)),
//!    a pool slot stranded in the directory by a killed recycle put back
//!    or removed ([`Pool::reclaim_stranded`](crate::pool::Pool::reclaim_stranded)),
//!    files left under a temporary name removed (none holds a record:
//!    [`recover_leftovers`]);
//! 2. the name claims are looked at (the crate's `claims`): a recording whose claim
//!    a recorder holds locked is alive and skipped, file by file; a dead
//!    claim is held locked until the end;
//! 3. a file before the last whose header still says `OPEN` over the
//!    writer's end frame (a kill between the two steps of the writer's
//!    close at a switch) gets its header finished; the last file of each
//!    other recording, when unfinished, is closed
//!    (`close`): its crash hole cut after its durable mark (`hole`,
//!    never below it), an end frame with the flag
//!    [`END_INTERRUPTED`](crate::format::END_INTERRUPTED) carrying the
//!    recording's totals, the last durable sequence number and what was
//!    cut, the header finished, the unused pre-allocation given back
//!    (`ftruncate`, also of a pool file) — unless another pooled recording
//!    writes in the directory, when truncating could stall its journal
//!    (the rule of the command line's `disk` module): the tail is then
//!    kept, and a later run gives it back;
//! 4. the dead claims are removed.
//!
//! Before step 3, a loop recording whose newest RETIRED claim covers
//! files still present (a power cut came between the claim made durable
//! and the retire thread's deletion or recycle) has that retirement
//! completed (`complete_retirement`): the file holding the claim is
//! synced first, and its directory (so the claim is durable even after a
//! kill, whose claim may still be in the page cache only), then each
//! covered file is recycled into the pool while it is below its target,
//! else deleted. A file is never removed before the claim that covers it
//! is on the disk; a claim that cannot be synced leaves them, named.
//!
//! Likewise, before step 3, files of a recording that the directory's
//! retirement record (`.retired`, [`RetiredRecord`]: an earlier
//! recording a loop's disk budget retired) names are removed
//! (`complete_recorded`), after the record and the directory are synced
//! again. A file no claim and no record covers is never removed.
//!
//! A recording whose last file says it continues in a file that is not
//! there (a power cut kept the switch's end frame and lost the next
//! file's name, which held nothing durable) gets that end frame rewritten
//! as recover's (`close::close_continued`).
//!
//! Left alone, and named: a corrupt file (damage below its durable mark,
//! or no sign of a missing write: `rtrec export --salvage` reads it), an
//! unfinished file of format version 3 (no durable mark), raw files (no
//! frames).
//!
//! The parts, each declared after those it uses: `hole` (the crash-hole
//! cut), `close` (the end frame and the last steps), `slots` (the pool's
//! side: step 1); who is alive is the crate's `claims`, shared with a
//! loop's disk budget. This module takes the steps in order.

mod close;
mod hole;
mod slots;

use std::path::{Path, PathBuf};

use rtrec_sys as sys;

use crate::claims::Claims;
use crate::error::Error;
use crate::pool::{give_back_tails, Pool, WritersLock};
use crate::reader::{
    check_continuity, recording_files, recording_groups, verify_file, FileReport, FileStatus,
    RetiredRecord, RETIRED_RECORD,
};

pub use close::Closed;

/// Which files of a directory belong to a live recording (a recorder
/// holds its name claim): for `rtrec ls` to say "in progress". It only
/// looks: the dead claims it locks while looking are released when it is
/// dropped, never removed (that is [`recover_dir`]'s).
pub struct Live(Claims);

impl Live {
    /// Looks at the claims of `dir`.
    ///
    /// # Errors
    /// `dir` cannot be opened or listed.
    pub fn of(dir: &Path) -> Result<Live, Error> {
        let d = sys::Dir::open_nofollow(dir).map_err(|e| Error::io("opening", dir, e))?;
        Claims::take(&d)
            .map(Live)
            .map_err(|e| Error::io("listing", dir, e))
    }

    /// Whether the file named `name` (no directory) belongs to a live
    /// recording.
    pub fn is_live(&self, name: &str) -> bool {
        self.0.is_live(name)
    }
}
pub use hole::{cut_crash_hole, Cut};
pub(crate) use slots::RECOVERED_PREFIX;
pub use slots::{leftover_tmp, recording_now, recover_leftovers, Leftover};

use close::{close_continued, close_file, finish_file, finish_header, Before};

/// What [`recover_dir`] did, step by step.
#[derive(Debug, Default)]
pub struct Recovery {
    /// The directory has a pool.
    pub pool: bool,
    /// Recordings moved back from the pool: from, to.
    pub moved_from_pool: Vec<(PathBuf, PathBuf)>,
    /// Files a crash left under a temporary name, and what was done.
    pub leftovers: Vec<Leftover>,
    /// Preparations a killed preparer left in the pool, removed.
    pub stale_preparations: Vec<PathBuf>,
    /// Pool slots a killed recycle stranded in the directory, and where
    /// each went (`None`: removed).
    pub stranded_slots: Vec<(PathBuf, Option<PathBuf>)>,
    /// Interrupted recordings closed (their last files), or whose closing
    /// an earlier run began and this one finished.
    pub closed: Vec<Closed>,
    /// Files left alone because their recording is alive (its claim is
    /// locked by a recorder).
    pub live: Vec<PathBuf>,
    /// Unfinished files left alone, with the reason.
    pub left_alone: Vec<(PathBuf, String)>,
    /// Dead name claims removed.
    pub claims_removed: Vec<PathBuf>,
    /// Files before the last of their recording whose header a kill
    /// caught between the writer's end frame and its finished header:
    /// the header was finished.
    pub headers_finished: Vec<PathBuf>,
    /// Files removed that a recording had opened for its next records
    /// when it was interrupted, and that hold none (the file before is
    /// closed instead).
    pub removed_empty: Vec<PathBuf>,
    /// Files a loop's durable RETIRED claim covers that were still
    /// present (a power cut before the retirement was done): recycled
    /// into the pool (`true`) or deleted.
    pub retirements_completed: Vec<(PathBuf, bool)>,
    /// Files of earlier recordings the directory's durable retirement
    /// record ([`RetiredRecord`]) names that were still present (a power
    /// cut before a loop's disk budget removed them): recycled into the
    /// pool (`true`) or deleted.
    pub recorded_retirements_completed: Vec<(PathBuf, bool)>,
    /// Finished files whose unused tail their recording kept because
    /// another recording was writing in the directory when it ended
    /// ([`give_back_tails`]), given back now that none is: path and bytes.
    pub tails_given_back: Vec<(PathBuf, u64)>,
}

impl Recovery {
    /// True when the run changed nothing.
    pub fn nothing_done(&self) -> bool {
        self.moved_from_pool.is_empty()
            && self.stale_preparations.is_empty()
            && self.stranded_slots.is_empty()
            && self
                .leftovers
                .iter()
                .all(|l| matches!(l, Leftover::Busy(_)))
            && self.closed.is_empty()
            && self.claims_removed.is_empty()
            && self.headers_finished.is_empty()
            && self.removed_empty.is_empty()
            && self.retirements_completed.is_empty()
            && self.recorded_retirements_completed.is_empty()
            && self.tails_given_back.is_empty()
    }
}

/// Recovers the recordings of `dir` whose owner is gone (see the module
/// docs); safe beside live recorders.
///
/// # Errors
/// `dir` cannot be opened or listed, the pool cannot be read, or a claim
/// cannot be removed. A file that cannot be closed is not an error: it is
/// in [`Recovery::left_alone`] with the reason.
pub fn recover_dir(dir: &Path) -> Result<Recovery, Error> {
    let d = sys::Dir::open_nofollow(dir).map_err(|e| Error::io("opening", dir, e))?;
    let mut rec = Recovery::default();
    let pool = Pool::open(dir)?;
    if let Some(pool) = &pool {
        rec.pool = true;
        rec.moved_from_pool = pool.recover()?;
        rec.stale_preparations = pool.remove_stale_preparations()?.unwrap_or_default();
        rec.stranded_slots = pool.reclaim_stranded(dir)?;
    }
    rec.leftovers = recover_leftovers(dir)?;
    let claims = Claims::take(&d).map_err(|e| Error::io("listing", dir, e))?;
    let give_back = !recording_now(dir);
    let files = recording_files(dir).map_err(|e| Error::io("listing", dir, e))?;
    let mut reports = Vec::with_capacity(files.len());
    for path in files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if claims.is_live(name) {
            rec.live.push(path);
            continue;
        }
        // A file that cannot be read (or a planted symlink) is verify's to
        // report, not ours to touch.
        if let Ok(r) = verify_file(&path) {
            reports.push(r);
        }
    }
    check_continuity(&mut reports);
    let record = RetiredRecord::read(dir);
    for group in recording_groups(&reports) {
        let group = complete_recorded(&d, pool.as_ref(), &record, &reports, group, &mut rec);
        let group = complete_retirement(&d, pool.as_ref(), &reports, group, &mut rec);
        finish_headers(&reports, &group, give_back, &mut rec);
        let group = peel_empty(&d, &reports, group, give_back, &mut rec);
        if !group.is_empty() {
            close_recording(&reports, &group, give_back, &mut rec);
        }
    }
    give_back_kept_tails(dir, &reports, &mut rec);
    rec.claims_removed = claims
        .remove_dead(&d)
        .map_err(|e| Error::io("removing a name claim in", dir, e))?;
    Ok(rec)
}

/// The unused tails that finished recordings kept because another
/// recording was writing when they ended (a pooled file keeps its
/// pre-allocated size then: `rtrec record`'s and the C library's rule,
/// [`give_back_tails`]) are given back, when no recording writes in `dir`
/// now: the rule the recording itself would have applied, applied later.
/// The writers lock is taken (shared, then exclusive if alone) for the
/// duration, so a recorder that starts meanwhile waits a few `ftruncate`
/// calls. Live recordings' files are not in `reports`.
fn give_back_kept_tails(dir: &Path, reports: &[FileReport], rec: &mut Recovery) {
    let finished: Vec<PathBuf> = reports
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                FileStatus::Complete | FileStatus::Aborted | FileStatus::Interrupted
            )
        })
        .map(|r| r.path.clone())
        .collect();
    if finished.is_empty() {
        return;
    }
    let Some(lock) = WritersLock::take(dir) else {
        return;
    };
    let before: Vec<u64> = finished
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect();
    let t = give_back_tails(Some(lock), &finished);
    let kept: Vec<&PathBuf> = t.kept.iter().map(|k| &k.0).collect();
    for (path, len) in finished.iter().zip(before) {
        let now = std::fs::metadata(path).map_or(len, |m| m.len());
        if now < len && !kept.contains(&path) {
            rec.tails_given_back.push((path.clone(), len - now));
        }
    }
}

/// A loop recording (`group`) whose newest RETIRED claim covers files
/// still present: the claim is made durable (the file holding it synced,
/// then the directory), then each covered file is recycled into `pool`
/// while it is below its target, else deleted, and the directory synced.
/// Returns the group without the files that left. A claim that cannot be
/// synced leaves the files (in [`Recovery::left_alone`], with the reason).
fn complete_retirement(
    d: &sys::Dir,
    pool: Option<&Pool>,
    reports: &[FileReport],
    group: Vec<usize>,
    rec: &mut Recovery,
) -> Vec<usize> {
    let newest = group
        .iter()
        .filter_map(|&i| reports[i].retired_claim.map(|c| (i, c)))
        .max_by_key(|(_, c)| c.next_index);
    let Some((holder, claim)) = newest else {
        return group;
    };
    let held_by = reports[holder].index.unwrap_or(0);
    let covered = |i: usize| {
        reports[i]
            .index
            .is_some_and(|x| x < claim.next_index && x < held_by)
    };
    if !group.iter().any(|&i| covered(i)) {
        return group;
    }
    let synced = std::fs::File::open(&reports[holder].path)
        .and_then(|f| sys::fdatasync(&f))
        .and_then(|()| d.sync());
    if let Err(e) = synced {
        for &i in group.iter().filter(|&&i| covered(i)) {
            rec.left_alone.push((
                reports[i].path.clone(),
                format!(
                    "a RETIRED claim in '{}' covers it, but that claim could not be made durable: {e}",
                    reports[holder].path.display()
                ),
            ));
        }
        return group;
    }
    let (kept, done) = remove_covered(d, pool, reports, group, covered, rec, "RETIRED claim");
    rec.retirements_completed.extend(done);
    kept
}

/// A recording (`group`) some of whose files the directory's retirement
/// record names (a power cut came between the record made durable and a
/// loop's disk budget removing them): the record is made durable again
/// (`fsync` of it and of the directory, as after a kill it may be in the
/// page cache only), then each file it names is recycled into `pool`
/// while it is below its target, else deleted. Returns the group without
/// the files that left. A record that cannot be read or synced leaves
/// the files (named, with the reason, when it names any).
fn complete_recorded(
    d: &sys::Dir,
    pool: Option<&Pool>,
    record: &Result<RetiredRecord, String>,
    reports: &[FileReport],
    group: Vec<usize>,
    rec: &mut Recovery,
) -> Vec<usize> {
    let (Ok(record), Some(id)) = (record, reports[group[0]].recording_id) else {
        return group;
    };
    let covered = |i: usize| reports[i].index.is_some_and(|x| record.covers(id, x));
    if !group.iter().any(|&i| covered(i)) {
        return group;
    }
    let synced = d
        .open_existing_nofollow(RETIRED_RECORD, false)
        .and_then(|f| sys::fsync(&f))
        .and_then(|()| d.sync());
    if let Err(e) = synced {
        for &i in group.iter().filter(|&&i| covered(i)) {
            rec.left_alone.push((
                reports[i].path.clone(),
                format!("the directory's retirement record names it, but that record could not be made durable: {e}"),
            ));
        }
        return group;
    }
    let (kept, done) = remove_covered(d, pool, reports, group, covered, rec, "retirement record");
    rec.recorded_retirements_completed.extend(done);
    kept
}

/// The files of `group` that `covered` says a durable record retired
/// are recycled into `pool` while it is below its target, else deleted,
/// and the directory synced; returns the files kept and those that left
/// (recycled or not). One that cannot be removed is left alone, naming
/// `what` covers it.
fn remove_covered(
    d: &sys::Dir,
    pool: Option<&Pool>,
    reports: &[FileReport],
    group: Vec<usize>,
    covered: impl Fn(usize) -> bool,
    rec: &mut Recovery,
    what: &str,
) -> (Vec<usize>, Vec<(PathBuf, bool)>) {
    let mut kept = Vec::with_capacity(group.len());
    let mut done = Vec::new();
    for i in group {
        if !covered(i) {
            kept.push(i);
            continue;
        }
        let path = &reports[i].path;
        let recycled = pool.is_some_and(|p| p.recycle_below_target(path).unwrap_or(false));
        let name = path.file_name().unwrap_or_default();
        match recycled || d.remove_file(name).is_ok() {
            true => done.push((path.clone(), recycled)),
            false => {
                rec.left_alone.push((
                    path.clone(),
                    format!("a durable {what} covers it, but it cannot be removed"),
                ));
                kept.push(i);
            }
        }
    }
    let _ = d.sync();
    (kept, done)
}

/// The files of `group` before its last whose header still says `OPEN`
/// over the writer's end frame get their header finished
/// ([`finish_header`]); one that cannot be is left alone, with the reason.
///
/// The last file too when its end frame finished the recording (status
/// complete) and only the header's rewrite is missing: a kill or power
/// cut between the two steps of the writer's last close. Left `OPEN`, the
/// recording read as complete to every reader but as in progress to a
/// loop's budget, which never retired it: a thousand power-cut cycles
/// (`rtrec bench --study crash --crash-cycles`) grew a directory 1.4 MiB
/// past its bound with such recordings (issue 44).
fn finish_headers(reports: &[FileReport], group: &[usize], give_back: bool, rec: &mut Recovery) {
    let last = group.last().copied();
    for &i in group {
        let r = &reports[i];
        if Some(i) == last && r.status != FileStatus::Complete {
            continue;
        }
        match finish_header(r, give_back) {
            Ok(true) => rec.headers_finished.push(r.path.clone()),
            Ok(false) => {}
            Err(e) => rec.left_alone.push((r.path.clone(), e.to_string())),
        }
    }
}

/// A recording opens its next file before it closes the current one, so
/// an interruption between the two leaves an unfinished file followed by
/// one that holds nothing (its header only, `OPEN`). That empty last file
/// is removed (after the file before it was closed, when an earlier run
/// was interrupted in between; its unused space goes with it), and the
/// group without it is returned: the file before it is the one to close.
/// A file that cannot be removed is left, with the reason.
fn peel_empty(
    d: &sys::Dir,
    reports: &[FileReport],
    mut group: Vec<usize>,
    give_back: bool,
    rec: &mut Recovery,
) -> Vec<usize> {
    while let [.., before, last] = group[..] {
        let (r, p) = (&reports[last], &reports[before]);
        let empty = r.durable_mark.is_some()
            && r.record_frames == 0
            && r.stored.is_none()
            && r.crash_hole.is_none()
            && r.damaged_ranges == 0
            && r.valid_len == crate::format::HEADER_LEN as u64;
        let closable = p.stored.is_none() || p.stored.as_ref().is_some_and(|e| e.interrupted);
        // A RETIRED claim that covers more than the file before's is the
        // only record of why those files are gone: never removed.
        let claims_more = r
            .retired_claim
            .is_some_and(|c| p.retired_claim.is_none_or(|b| c.next_index > b.next_index));
        if !(empty && closable) || claims_more {
            break;
        }
        if p.stored.is_none() {
            // Close the file before first: a run interrupted after this
            // finds it closed, and this file still empty.
            let closed = rec.closed.len();
            close_recording(reports, &group[..group.len() - 1], give_back, rec);
            if rec.closed.len() == closed {
                // Left alone (the reason is there): so is this file.
                return Vec::new();
            }
        }
        let name = r.path.file_name().unwrap_or_default();
        match d.remove_file(name).and_then(|()| d.sync()) {
            Ok(()) => rec.removed_empty.push(r.path.clone()),
            Err(e) => {
                rec.left_alone
                    .push((r.path.clone(), format!("cannot remove it: {e}")));
                return Vec::new();
            }
        }
        group.pop();
        if p.stored.is_none() {
            return Vec::new();
        }
    }
    group
}

/// Closes the recording of `group` (indexes into `reports`) if its last
/// file is unfinished, or finishes an earlier run's close; adds what it
/// did to `rec`.
fn close_recording(reports: &[FileReport], group: &[usize], give_back: bool, rec: &mut Recovery) {
    let last = &reports[group[group.len() - 1]];
    let left = |why: String| (last.path.clone(), why);
    let done = match last.status {
        FileStatus::Unfinished if last.stored.as_ref().is_some_and(|e| e.interrupted) => {
            finish_file(last, give_back)
        }
        FileStatus::Interrupted => finish_file(last, give_back),
        FileStatus::Unfinished if last.stored.as_ref().is_some_and(|e| e.continued) => {
            close_continued(last, give_back).map(Some)
        }
        FileStatus::Unfinished if last.stored.is_some() => {
            rec.left_alone.push(left(
                "its end frame says neither finished nor continued; nothing can follow it".into(),
            ));
            return;
        }
        FileStatus::Unfinished => {
            let before = group
                .len()
                .checked_sub(2)
                .map_or_else(Before::default, |k| before(&reports[group[k]]));
            close_file(last, before, give_back).map(Some)
        }
        FileStatus::Corrupt if last.durable_mark.is_some() => {
            rec.left_alone.push(left("corrupt (damage that no crash explains); `rtrec export --salvage` reads its intact records".into()));
            return;
        }
        _ => return,
    };
    match done {
        Ok(Some(c)) => rec.closed.push(c),
        Ok(None) => {}
        Err(e) => rec.left_alone.push(left(e.to_string())),
    }
}

/// What the file `p`, the one before the closed one, tells of the
/// recording so far.
fn before(p: &FileReport) -> Before {
    let e = p.stored.as_ref();
    Before {
        records: e.map_or(p.records, |e| e.records_written),
        bytes: e.map_or(p.bytes, |e| e.bytes_written),
        dropped: e.map_or(p.lost_records, |e| e.records_dropped),
        next_seq: p.next_seq.unwrap_or(0),
        claim: p.retired_claim,
        layout: p.layout.clone(),
    }
}
