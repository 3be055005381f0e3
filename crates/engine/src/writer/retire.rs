//! Retirement: a loop recording's disk budget and the flight recorder's
//! event limit ([`Retention`]). At each file switch the writer asks
//! [`Retire::decide`] which finished files of the recording leave (the
//! oldest beyond the kept count, and those whose last record is older
//! than the age limit), writes the cumulative claim it returns as the new
//! file's first frame ([`FrameKind::Retired`](crate::format::FrameKind)),
//! then hands the files over ([`Retire::hand_over`]) to a background
//! thread ([`Retirer`], in the idle I/O class like the pool's
//! refiller) that recycles each into the pool (rename into `.pool/` and a
//! slot header, [`Pool::recycle`]) while the pool is below its target, and
//! deletes it otherwise. A flight recorder's events leave whole, oldest
//! first, when a new event starts beyond `keep_events`
//! ([`Retire::begin_event`]); the continuous loop never touches them.
//!
//! The budget holds for the directory: the directory's earlier, closed
//! recordings ([`super::earlier`]) count against it and leave first,
//! oldest first, when the recording starts and at each switch, so a
//! recorder restarted after every power cut keeps the directory within
//! one budget (their files are counted apart: `earlier_files`,
//! `earlier_bytes`).
//!
//! In a shipped directory (`rtrec ship` keeps its ledger `.shipped`
//! there, or the loop was given `--unshipped-headroom`), the budget knows
//! what was shipped (issue 46; docs/unattended.md, "The budget knows"):
//! earlier recordings whose manifest is in the bucket leave first, oldest
//! first among them, before any unshipped one; an unshipped one leaves
//! only while the directory exceeds the budget by more than the headroom
//! (or by the age limit), and each such file is counted
//! (`unshipped_files`, `unshipped_bytes`) and said at the start and in
//! the summary's warnings: never silently.
//!
//! Design choices:
//! - **Headroom, then counted** (`--unshipped-headroom SIZE`, default 0):
//!   a field engineer wants the recorder to keep recording whatever the
//!   network does, and a card that fills stops the recording; so the
//!   loop never waits for the shipper. It keeps unshipped files up to a
//!   hard limit stated in bytes, fitted to the card at the start like the
//!   budget (clamped, said), and beyond it retires them, counted. With
//!   the default 0 an unshipped recording over the budget leaves at once,
//!   counted: the budget the user gave is never exceeded unless asked.
//! - **The running recording's own files are not "unshipped"**: no
//!   shipper sends a recording still open, so its turnover is the loop's
//!   (`files`); only earlier, closed recordings are counted.
//! - **The ledger is read off the writer's path**: at the start by
//!   [`Earlier::list`] (the creating thread); while recording by the
//!   retire thread, which looks at the ledger's inode, size and change
//!   time once a second and at each job and reads it again only when they
//!   changed (the shipper replaces it whole by a rename); the writer, at
//!   a switch, copies the thread's latest view into its units with a
//!   `try_lock` (no wait, no syscall, no allocation; busy: the next
//!   switch does). A view is at most about a second old: a recording
//!   shipped just before a switch may still count as unshipped there,
//!   never the other way round.
//! - The writer only decides and hands over; no file is renamed, written
//!   or deleted on its thread, and never on the producer's.
//! - Nothing disappears before the record of why is durable: the claim
//!   goes into the new file before the files are handed over, and the
//!   thread makes it durable (`fdatasync` of the file holding it, `fsync`
//!   of the directories naming it, [`sync_claim`]) before it recycles or
//!   deletes a file the claim covers; a claim that cannot be synced leaves
//!   its files on disk (counted: `unclaimed`). PostgreSQL's rule for WAL
//!   segments: one is recycled only after the checkpoint that makes it
//!   unneeded is durable. A power cut between the two leaves a durable
//!   claim over files still present: `recover` completes the retirement
//!   (`crate::recovery`). Issue 44: the claim used to follow the
//!   recording's durability, and a crash-state study found files deleted
//!   with no surviving claim.
//! - An earlier recording's files (`super::earlier`) have no claim in
//!   this recording's files: they leave only after the directory's
//!   retirement record names them durably (`.retired`,
//!   [`RetiredRecord`]: written to a temporary file, `fsync`ed, renamed,
//!   the directory `fsync`ed). At the start [`Retire::start`] writes it
//!   on the creating thread before the first record; at a switch the
//!   retire thread does (a `Record` job before those files), off the
//!   writer's path; the writer only when it catches a starved thread up.
//!   A record that cannot be written keeps the files (`unclaimed`).
//!   Issue 44: they used to be deleted with no durable record naming
//!   them, and the reader called any missing leading file retired.
//! - The queues are allocated once, at the start, for the kept count and
//!   a few more: in the steady state (as many files retired as finished)
//!   nothing is allocated.
//! - The bound holds whatever the load ([`Retire::catch_up`]): before the
//!   writer takes the next file, whatever an earlier switch handed over
//!   is done. The job the thread is working on is waited for; a claim it
//!   has not reached is synced on the writer's thread, then the files it
//!   covers are deleted there (counted: `retired_late_files`). Only a
//!   starved thread costs the writer this; otherwise the writer's switch
//!   does no more than before. At nice 19 the thread was starved by two busy loops on
//!   two cores and the directory grew 3 files past its bound
//!   (`tests/unattended_loop.rs`); the thread now runs at the default
//!   nice (its work is a rename or an unlink per switch) and keeps the
//!   idle I/O class.

use std::collections::VecDeque;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use rtrec_sys as sys;

use crate::config::{Alloc, Config, Retention};
use crate::error::Error;
use crate::format::RetiredPayload;
use crate::pool::Pool;
use crate::reader::{RetiredRange, RetiredRecord};
use crate::sizing;
use rtrec_units::format_size;

use super::earlier::{Earlier, Shipped, Stamp, Unit};
use super::report::RetireStats;

/// A finished file of the loop, until it is retired.
struct Finished {
    path: PathBuf,
    /// Its sequence numbers: `first_seq..next_seq`.
    next_seq: u64,
    /// Header and frames.
    bytes: u64,
    /// `CLOCK_MONOTONIC` ns when it was closed (its last record's time,
    /// near enough: the age limit is checked at switches anyway).
    closed_mono: u64,
}

/// See the module docs.
pub(super) struct Retire {
    rules: Retention,
    /// Why the directory's retirement record could not be read at the
    /// start (a new one replaces it): said in [`Retire::start`]'s notes.
    record_unreadable: Option<String>,
    /// The kept count for the recording's file size (`None`: no count).
    kept: Option<u64>,
    /// The loop's finished files not yet retired, oldest first.
    finished: VecDeque<Finished>,
    /// The loop's file being written, until it is closed.
    current: Option<PathBuf>,
    /// What was retired so far: the next file's claim.
    claim: RetiredPayload,
    /// Flight recorder: each kept event's files, oldest event first.
    events: VecDeque<Vec<PathBuf>>,
    /// The directory's earlier recordings the budget covers, oldest first
    /// (a loop's only).
    earlier: VecDeque<Unit>,
    /// The directory's budget lock (`super::earlier`), held while the
    /// loop records.
    _budget_lock: Option<std::fs::File>,
    /// Their bytes on disk.
    earlier_bytes: u64,
    /// The loop's file size: what each of its finished files counts.
    file_size: u64,
    /// Decided, not yet handed over.
    pending: Vec<PathBuf>,
    /// Of `pending`, the earlier recordings' files as the directory's
    /// retirement record names them (one range per unit).
    pending_ranges: Vec<RetiredRange>,
    /// Of `pending`, files of this recording (the rest are earlier
    /// recordings').
    pending_own: usize,
    stats: RetireStats,
    thread: Option<Retirer>,
    /// The pool retired files are recycled into (for [`Retire::start`]).
    pool: Option<Pool>,
    /// The files of the empty recordings the loop owns, removed at
    /// [`Retire::start`].
    empties: Vec<PathBuf>,
    /// The directory is shipped (see the module docs).
    shipping: bool,
    /// Why the shipping ledger could not be read at the start: said in
    /// [`Retire::start`]'s notes.
    ledger_unreadable: Option<String>,
    /// The retire thread's view of the ledger last copied into
    /// `earlier` (its generation).
    shipped_seen: u64,
    /// Before [`Retire::start`] returns: the unshipped recordings retired
    /// at the start, by name, for its note.
    unshipped_names: Option<Vec<String>>,
}

impl Retire {
    /// The retirement of a recording by `cfg` (its file size settled and
    /// its budget fitted to the card); `earlier`: the directory's earlier
    /// recordings its budget covers ([`Earlier::list`]); `pool`: the pool
    /// a retired file may be recycled into. The thread starts only when a
    /// limit is set. A loop decides here which earlier recordings leave
    /// and [`Retire::start`] retires them before its first file.
    pub(super) fn new(cfg: &Config, earlier: Earlier, pool: Option<Pool>) -> Retire {
        let rules = cfg.retention.clone();
        let kept = rules.kept_files(cfg.file_size);
        let on = rules.loops() || rules.keep_events > 0;
        // Nothing to hold without a limit.
        let room = if on {
            kept.unwrap_or(64).min(4096) as usize + 2
        } else {
            0
        };
        let pool = pool.filter(|_| cfg.alloc == Alloc::Pool);
        let Earlier {
            units,
            empties,
            lock,
            record,
            pruned,
            dir,
            unreadable,
            shipping,
            ledger_unreadable,
            ledger_stamp,
        } = earlier;
        let ship_dir = shipping.then(|| (dir.clone(), ledger_stamp));
        let book = record.map(|record| Book {
            record,
            pruned,
            dir,
        });
        let stats = RetireStats {
            empty_recordings: empties.len() as u64,
            ..RetireStats::default()
        };
        let mut r = Retire {
            record_unreadable: unreadable,
            earlier_bytes: units.iter().map(|u| u.bytes).sum(),
            earlier: units,
            _budget_lock: lock,
            empties: empties.into_iter().flat_map(|u| u.files).collect(),
            pool: pool.clone(),
            file_size: cfg.file_size.max(1),
            pending_own: 0,
            kept,
            finished: VecDeque::with_capacity(if rules.loops() { room } else { 0 }),
            current: None,
            claim: RetiredPayload::default(),
            events: VecDeque::with_capacity(rules.keep_events as usize),
            pending: Vec::with_capacity(room),
            pending_ranges: Vec::with_capacity(room),
            stats,
            thread: on.then(|| Retirer::start(pool, room, book, ship_dir)),
            rules,
            shipping,
            ledger_unreadable,
            shipped_seen: 0,
            unshipped_names: Some(Vec::new()),
        };
        r.retire_earlier();
        r
    }

    /// Retires the directory's earlier recordings, oldest first, while
    /// they and the loop's finished files take more than the budget (the
    /// kept count times the file size), and those older than the age
    /// limit. In a shipped directory the shipped ones go first, and an
    /// unshipped one only beyond the headroom (see the module docs).
    fn retire_earlier(&mut self) {
        self.sync_shipped();
        let budget = self.kept.map(|k| k.saturating_mul(self.file_size));
        let headroom = match self.shipping {
            true => self.rules.unshipped_headroom.unwrap_or(0),
            false => 0,
        };
        // The loop's own finished files as this switch leaves them: those
        // beyond the kept count leave in [`Retire::decide`] right after
        // (counting them would retire an earlier recording the headroom
        // keeps; without headroom the result is the same).
        let finished = self.finished.len() as u64;
        let own = self.kept.map_or(finished, |k| finished.min(k)) * self.file_size;
        let now = sys::realtime_ns();
        let age = self.rules.keep_for_ns;
        while let Some(i) = self.next_earlier(budget, headroom, own, now, age) {
            let Some(u) = self.earlier.remove(i) else {
                break;
            };
            self.earlier_bytes -= u.bytes;
            if self.shipping && !u.shipped {
                self.stats.unshipped_files += u.files.len() as u64;
                self.stats.unshipped_bytes += u.bytes;
                if let Some(names) = &mut self.unshipped_names {
                    if names.last() != Some(&u.name) {
                        names.push(u.name.clone());
                    }
                }
            }
            self.pending_ranges.push(RetiredRange {
                wall_ns: now,
                ..u.range
            });
            self.stats.earlier_files += u.files.len() as u64;
            self.stats.earlier_bytes += u.bytes;
            if !u.own && self.stats.others.last() != Some(&u.name) {
                self.stats.others.push(u.name);
            }
            self.pending.extend(u.files);
        }
    }

    /// The position in `earlier` of the unit that leaves next, if one
    /// does: with the directory's earlier bytes and the loop's own `own`
    /// over `budget`, the oldest shipped unit, else (beyond `headroom`
    /// too, or the oldest past the age limit `age` at `now`) the oldest.
    fn next_earlier(
        &self,
        budget: Option<u64>,
        headroom: u64,
        own: u64,
        now: u64,
        age: u64,
    ) -> Option<usize> {
        let front = self.earlier.front()?;
        let total = self.earlier_bytes + own;
        let over = budget.is_some_and(|b| total > b);
        let shipped = if over && self.shipping {
            self.earlier.iter().position(|u| u.shipped)
        } else {
            None
        };
        let beyond = budget.is_some_and(|b| total > b.saturating_add(headroom));
        let old = age > 0 && now.saturating_sub(front.newest_wall_ns) >= age;
        shipped.or((beyond || old).then_some(0))
    }

    /// Copies the retire thread's latest view of the shipping ledger into
    /// the earlier units (see the module docs: no wait, no syscall).
    fn sync_shipped(&mut self) {
        let Some(t) = self.thread.as_ref().filter(|_| self.shipping) else {
            return;
        };
        let generation = t.shared.shipped_generation.load(Ordering::Acquire);
        if generation == self.shipped_seen {
            return;
        }
        let Ok(view) = t.shared.shipped.try_lock() else {
            return;
        };
        for u in &mut self.earlier {
            u.shipped = view.shipped(u.range.recording_id);
        }
        self.shipped_seen = generation;
    }

    /// Before the recording's first file (no record is taken yet, so on
    /// the creating thread): removes the empty recordings the loop owns,
    /// and retires the earlier recordings decided in [`Retire::new`] at
    /// once — recycled into the pool while it is below its target, else
    /// deleted — so the room they took is free for the first file (issue
    /// 42, finding 6: after a kill on a full card the first file did not
    /// fit although the budget would have retired what filled it).
    /// Returns what it retired, for the recording's warnings: the
    /// sentences that name every recording the loop does not own.
    pub(super) fn start(&mut self) -> Vec<String> {
        for p in std::mem::take(&mut self.empties) {
            let _ = std::fs::remove_file(&p);
        }
        let mut notes = Vec::new();
        if let Some(e) = self.record_unreadable.take() {
            notes.push(format!(
                "{e}; a new record replaces it, so the earlier files it named now read as missing (`rtrec verify` says which)"
            ));
        }
        if let Some(e) = self.ledger_unreadable.take() {
            notes.push(format!(
                "{e}; the disk budget counts no earlier recording as shipped (the shipper sends again what it cannot find there)"
            ));
        }
        let names = self.unshipped_names.take().unwrap_or_default();
        if !names.is_empty() {
            notes.push(unshipped_note(&self.stats, &names));
        }
        // The record that names them is durable before the first leaves.
        // One write for all of them (a restart storm may leave many).
        let recorded = match &self.thread {
            Some(t) => t.record(self.pending_ranges.drain(..)),
            None => Ok(()),
        };
        if let Err(e) = recorded {
            self.stats.unclaimed += self.pending.len() as u64;
            notes.push(format!(
                "{} file(s) of earlier recordings over the disk budget were kept: the directory's retirement record could not be written ({e}); a file leaves only after the record naming it is on the disk",
                self.pending.len()
            ));
            self.pending.clear();
        }
        for p in self.pending.drain(..) {
            let recycled = self
                .pool
                .as_ref()
                .is_some_and(|pool| pool.recycle_below_target(&p).unwrap_or(false));
            if !recycled {
                let _ = std::fs::remove_file(&p);
            }
        }
        if !self.stats.others.is_empty() {
            notes.push(format!(
                "the disk budget (--keep-scope dir) retired {} recording(s) this loop does not own: {}",
                self.stats.others.len(),
                self.stats.others.join(", ")
            ));
        }
        notes
    }

    /// True for a loop recording (its files after the first open with the
    /// claim).
    pub(super) fn loops(&self) -> bool {
        self.rules.loops()
    }

    /// The file at `path` is now the one being written (a flight
    /// recorder's: part of the newest event).
    pub(super) fn opened(&mut self, path: &std::path::Path) {
        if self.rules.loops() {
            self.current = Some(path.to_path_buf());
        } else if let Some(ev) = self.events.back_mut() {
            ev.push(path.to_path_buf());
        }
    }

    /// The file being written was closed with `bytes` (header and frames),
    /// its records ending before `next_seq`.
    pub(super) fn closed(&mut self, bytes: u64, next_seq: u64) {
        if let Some(path) = self.current.take() {
            self.finished.push_back(Finished {
                path,
                next_seq,
                bytes,
                closed_mono: sys::monotonic_ns(),
            });
        }
    }

    /// At a switch, before the next file's first frame: retires the
    /// oldest finished files beyond the kept count and those older than
    /// the age limit. Returns the claim the next file opens with
    /// (cumulative; a loop's every file after the first has one, even
    /// when nothing was retired yet).
    pub(super) fn decide(&mut self) -> RetiredPayload {
        self.retire_earlier();
        let now = sys::monotonic_ns();
        let age = self.rules.keep_for_ns;
        loop {
            let over = self.kept.is_some_and(|k| self.finished.len() as u64 > k);
            let old = age > 0
                && self
                    .finished
                    .front()
                    .is_some_and(|f| now.saturating_sub(f.closed_mono) >= age);
            if !(over || old) {
                break;
            }
            let Some(f) = self.finished.pop_front() else {
                break;
            };
            self.claim.files += 1;
            self.claim.bytes += f.bytes;
            self.claim.next_seq = f.next_seq;
            self.claim.next_index = self.claim.first_index + self.claim.files as u32;
            self.claim.last_wall_ns = sys::realtime_ns();
            self.stats.files += 1;
            self.stats.bytes += f.bytes;
            self.stats.seq_to = f.next_seq;
            self.pending.push(f.path);
            self.pending_own += 1;
        }
        self.claim
    }

    /// Flight recorder: a new event starts; the oldest events beyond
    /// `keep_events` (the new one counted) are retired whole.
    pub(super) fn begin_event(&mut self) {
        let keep = self.rules.keep_events as usize;
        while keep > 0 && self.events.len() >= keep {
            let Some(files) = self.events.pop_front() else {
                break;
            };
            self.stats.events += 1;
            for p in files {
                let bytes = std::fs::metadata(&p).map_or(0, |m| m.len());
                self.stats.files += 1;
                self.stats.bytes += bytes;
                self.pending.push(p);
                self.pending_own += 1;
            }
        }
        if keep > 0 {
            self.events.push_back(Vec::with_capacity(1));
        }
    }

    /// Hands what was decided to the thread, after `claim` (the file
    /// holding the RETIRED claim that covers them, and the directories
    /// naming it): they leave only once it is durable. Returns how many of
    /// the files were this recording's (the oldest of its file list).
    pub(super) fn hand_over(&mut self, claim: Option<(Arc<File>, Vec<PathBuf>)>) -> usize {
        let n = std::mem::take(&mut self.pending_own);
        if let Some(t) = &self.thread {
            t.give(&mut self.pending_ranges, claim, &mut self.pending, n);
        }
        self.pending.clear();
        self.pending_ranges.clear();
        n
    }

    /// Retired files kept on disk so far because the claim or record
    /// naming them could not be made durable (for the live counters).
    pub(super) fn unclaimed(&self) -> u64 {
        self.stats.unclaimed
            + self
                .thread
                .as_ref()
                .map_or(0, |t| t.shared.unclaimed.load(Ordering::Relaxed))
    }

    /// Before the writer takes the next file: every file handed over at
    /// an earlier switch is gone (see the module docs), so the directory
    /// never holds more than the bound of `docs/unattended.md`, even when
    /// the thread gets no CPU or I/O. Counts the files deleted here.
    pub(super) fn catch_up(&mut self) {
        if let Some(t) = &self.thread {
            self.stats.late += t.catch_up();
        }
    }

    /// Files retired so far (for the live counters).
    pub(super) fn retired(&self) -> (u64, u64) {
        (self.stats.files, self.stats.bytes)
    }

    /// Files and bytes of unshipped earlier recordings retired so far (for
    /// the live counters).
    pub(super) fn retired_unshipped(&self) -> (u64, u64) {
        (self.stats.unshipped_files, self.stats.unshipped_bytes)
    }

    /// After the recording: the thread finishes what it was given and
    /// stops; returns what was retired.
    pub(super) fn finish(&mut self) -> RetireStats {
        if let Some(t) = self.thread.take() {
            if let Ok(mut later) = t.shared.ledger_damaged.lock() {
                self.stats.ledger_damaged = later.take();
            }
            let (recycled, deleted, unclaimed) = t.stop();
            self.stats.recycled = recycled;
            self.stats.deleted = deleted;
            self.stats.unclaimed += unclaimed;
        }
        self.stats.clone()
    }
}

/// The sentence that says the budget retired `stats`'s unshipped files:
/// at the start, of the recordings `names`; in the summary's warnings
/// (`names` empty), the whole recording's count.
pub(super) fn unshipped_note(stats: &RetireStats, names: &[String]) -> String {
    let of = match names {
        [] => "earlier recordings".to_string(),
        _ => format!("{} earlier recording(s)", names.len()),
    };
    let which = match names {
        [] => String::new(),
        _ => format!(": {}", names.join(", ")),
    };
    format!(
        "the disk budget retired {} file(s) ({}) of {of} not yet shipped{which}; give --unshipped-headroom (or a larger --keep) to keep them longer for `rtrec ship`",
        stats.unshipped_files,
        format_size(stats.unshipped_bytes)
    )
}

/// Fits a loop's budget to its card ([`sizing::fit_budget`]): the room
/// is the free space of `dir`, plus `retirable` (what the budget may
/// retire), plus the ready files of `pool`; the bound counts the file
/// being written and the pool's target as spares. A budget whose bound
/// does not fit is clamped to the kept count that does, in `cfg`, and the
/// sentence that says so is returned (said at the start, and in the
/// summary's warnings), and so is a clamped `--unshipped-headroom`
/// ([`fit_headroom`]); not a loop, or an age limit alone: nothing.
///
/// # Errors
/// Not even one finished file fits beside the file being written and the
/// pool's spares: one sentence naming `--file-size` and `--pool-files`.
pub(super) fn fit_to_card(
    dir: &std::path::Path,
    cfg: &mut Config,
    retirable: u64,
    pool: Option<&Pool>,
) -> Result<Vec<String>, Error> {
    let Some(kept) = cfg.retention.kept_files(cfg.file_size) else {
        return Ok(Vec::new());
    };
    let free = std::fs::File::open(dir)
        .and_then(|d| sys::available_bytes(&d))
        .map_err(|e| Error::io("reading the free space of", dir, e))?;
    let (spares, ready) = match pool.filter(|_| cfg.alloc == Alloc::Pool) {
        Some(p) => (
            u64::from(p.target_files()),
            p.ready().map_or(0, |r| r.len() as u64) * p.file_size(),
        ),
        None => (0, 0),
    };
    let room = free.saturating_add(retirable).saturating_add(ready);
    let size = |b: u64| format_size(b);
    let fs = cfg.file_size;
    let budget = match (cfg.retention.keep_bytes, cfg.retention.keep_files) {
        (0, n) => format!("--keep-files {n}"),
        (b, 0) => format!("--keep {}", size(b)),
        (b, n) => format!("--keep {} --keep-files {n}", size(b)),
    };
    let room_words = format!(
        "{} ({} free, {} this loop may retire, {} of ready pool files)",
        size(room),
        size(free),
        size(retirable),
        size(ready)
    );
    let fitted = match sizing::fit_budget(kept, fs, spares, room) {
        sizing::BudgetFit::Fits => None,
        sizing::BudgetFit::TooSmall => return Err(Error::Usage(format!(
            "'{}' holds {room_words}: too little for a loop of files of {} (one finished file, the file being written and the pool's {spares} spare file(s)); give a smaller --file-size or --pool-files",
            dir.display(),
            size(fs)
        ))),
        sizing::BudgetFit::Clamped(most) => {
            if cfg.retention.keep_bytes > 0 {
                cfg.retention.keep_bytes = most * fs;
            }
            if cfg.retention.keep_files > 0 {
                cfg.retention.keep_files = cfg.retention.keep_files.min(most as u32);
            }
            Some(format!(
                "the disk budget ({budget}) is more than '{}' holds, {room_words}: it is clamped to {most} file(s) of {} ({}), so that with the file being written and the pool's {spares} spare file(s) the card never fills",
                dir.display(),
                size(fs),
                size(most * fs)
            ))
        }
    };
    let mut notes: Vec<String> = fitted.into_iter().collect();
    notes.extend(fit_headroom(cfg, spares, room, &room_words));
    Ok(notes)
}

/// Clamps `--unshipped-headroom` in `cfg` to what `room` (described by
/// `room_words`) leaves beside the fitted budget's bound (the kept
/// files, the file being written, the pool's `spares` and the budget's
/// metadata): the headroom is a hard limit, so it may not fill the card
/// either. Returns the sentence that says so when it was clamped.
fn fit_headroom(cfg: &mut Config, spares: u64, room: u64, room_words: &str) -> Option<String> {
    let headroom = cfg.retention.unshipped_headroom?;
    let fs = cfg.file_size;
    let kept = cfg.retention.kept_files(fs)?;
    let bound = (kept + 1 + spares)
        .saturating_mul(fs)
        .saturating_add(sizing::BUDGET_METADATA_BYTES);
    let left = room.saturating_sub(bound);
    if headroom <= left {
        return None;
    }
    cfg.retention.unshipped_headroom = Some(left);
    Some(format!(
        "--unshipped-headroom {} is more than the card holds beside the budget, {room_words}: it is clamped to {}, so that unshipped recordings kept over the budget never fill the card",
        format_size(headroom),
        format_size(left)
    ))
}

/// What the thread and the writer share.
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Signalled when the thread has done a job ([`Retirer::catch_up`]).
    done: Condvar,
    stop: AtomicBool,
    recycled: AtomicU64,
    deleted: AtomicU64,
    /// Files left on disk: the claim covering them could not be made
    /// durable.
    unclaimed: AtomicU64,
    /// The directory's retirement record, for earlier recordings' files
    /// (`None`: not a loop).
    book: Mutex<Option<Book>>,
    /// The shipping ledger as the thread last read it (a shipped
    /// directory's; see the module docs).
    shipped: Mutex<Shipped>,
    /// Bumped each time the thread puts a new view in `shipped`.
    shipped_generation: AtomicU64,
    /// Why the ledger could not be read while recording, the first time
    /// it could not (it read at the start): for the summary's warnings.
    ledger_damaged: Mutex<Option<String>>,
}

/// The directory's retirement record as the loop keeps it: written whole
/// each time a range is added ([`RetiredRecord::write`]).
struct Book {
    record: RetiredRecord,
    /// Ranges of recordings no longer there were dropped: sync the
    /// directory (their deletions) before the next write.
    pruned: bool,
    dir: PathBuf,
}

impl Book {
    /// Adds `ranges` and makes the record durable, in one write (see the
    /// module docs).
    fn add(&mut self, ranges: impl IntoIterator<Item = RetiredRange>) -> std::io::Result<()> {
        ranges.into_iter().for_each(|r| self.record.add(r));
        let dir = sys::Dir::open_nofollow(&self.dir)?;
        if self.pruned {
            dir.sync()?;
            self.pruned = false;
        }
        self.record.write(&dir)
    }
}

/// One step of the thread's work, in the order handed over.
enum Job {
    /// Make the directory's retirement record name an earlier
    /// recording's files, durably, before they leave.
    Record(RetiredRange),
    /// Make a claim durable before the files after it leave: the file
    /// that holds it and the directories naming it (the pool's too, for a
    /// pool file).
    Claim(Arc<File>, Vec<PathBuf>),
    /// Recycle or delete a retired file.
    Retire(PathBuf),
}

/// The thread's work: jobs handed over, whether it is working on one it
/// took, and whether the last claim is durable.
struct Queue {
    jobs: VecDeque<Job>,
    working: bool,
    /// The latest claim handed over was made durable (true before any:
    /// files handed over without a claim are not a loop's).
    claimed: bool,
}

/// The background thread that recycles or deletes retired files (see the
/// module docs).
struct Retirer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Retirer {
    /// Starts the thread; its queue holds `room` jobs before it grows;
    /// `book`: the directory's retirement record (a loop's); `ship_dir`:
    /// a shipped directory and its ledger's stamp as read at the start,
    /// whose ledger the thread reads again when it changes.
    fn start(
        pool: Option<Pool>,
        room: usize,
        book: Option<Book>,
        ship_dir: Option<(PathBuf, Option<Stamp>)>,
    ) -> Retirer {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::with_capacity(room + 1),
                working: false,
                claimed: true,
            }),
            wake: Condvar::new(),
            done: Condvar::new(),
            stop: AtomicBool::new(false),
            recycled: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            unclaimed: AtomicU64::new(0),
            book: Mutex::new(book),
            shipped: Mutex::new(Shipped::default()),
            shipped_generation: AtomicU64::new(0),
            ledger_damaged: Mutex::new(None),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("rtrec-retire".into())
            .spawn(move || {
                let _ = sys::set_thread_ioprio(3, 7);
                let mut ledger = ship_dir.map(|(dir, stamp)| LedgerWatch { dir, stamp });
                let wait = ledger.as_ref().map(|_| LEDGER_LOOK);
                loop {
                    if let Some(l) = &mut ledger {
                        l.look(&s);
                    }
                    let (job, claimed) = match next_job(&s, wait) {
                        Next::Job(job, claimed) => (job, claimed),
                        Next::Idle => continue,
                        Next::Stop => break,
                    };
                    let synced = run_job(&s, pool.as_ref(), job, claimed);
                    let mut q = s.queue.lock().unwrap_or_else(|e| e.into_inner());
                    q.working = false;
                    if let Some(ok) = synced {
                        q.claimed = ok;
                    }
                    drop(q);
                    s.done.notify_all();
                }
            })
            .ok();
        Retirer { shared, thread }
    }

    /// Adds `ranges` to the directory's retirement record and makes it
    /// durable in one write, on the caller's thread (the loop's start).
    fn record(&self, ranges: impl IntoIterator<Item = RetiredRange>) -> std::io::Result<()> {
        record(&self.shared, ranges)
    }

    /// Queues `files` (moved out; the vectors keep their capacity): the
    /// earlier recordings' ones first, after the record naming them
    /// (`ranges`), then the last `own` (this recording's) after `claim`,
    /// the claim that covers them, when there is one: the files leave
    /// only once what names them is durable.
    fn give(
        &self,
        ranges: &mut Vec<RetiredRange>,
        claim: Option<(Arc<File>, Vec<PathBuf>)>,
        files: &mut Vec<PathBuf>,
        own: usize,
    ) {
        if files.is_empty() {
            return;
        }
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = files.len().saturating_sub(own);
        q.jobs.extend(ranges.drain(..).map(Job::Record));
        q.jobs.extend(files.drain(..earlier).map(Job::Retire));
        if let Some((f, dirs)) = claim {
            q.jobs.push_back(Job::Claim(f, dirs));
        }
        q.jobs.extend(files.drain(..).map(Job::Retire));
        if self.thread.is_none() {
            // No thread could be started: retire here (not the producer's
            // thread; rare).
            drain(&self.shared, &mut q);
            return;
        }
        drop(q);
        self.shared.wake.notify_one();
    }

    /// Before a switch: what was handed over earlier is done. The job the
    /// thread is working on is waited for first (a claim it is syncing
    /// comes before the files it covers); jobs it has not taken are done
    /// here (on the caller's thread; the lock held, so the thread waits):
    /// a claim made durable, then the files it covers deleted. Returns how
    /// many files were deleted here.
    fn catch_up(&self) -> u64 {
        let s = &self.shared;
        let mut q = s.queue.lock().unwrap_or_else(|e| e.into_inner());
        while q.working && self.thread.is_some() {
            q = s.done.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        drain(s, &mut q)
    }

    /// Lets the thread finish its queue, joins it; returns the files it
    /// recycled, deleted, and left for want of a durable claim.
    fn stop(mut self) -> (u64, u64, u64) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        (
            self.shared.recycled.load(Ordering::Relaxed),
            self.shared.deleted.load(Ordering::Relaxed),
            self.shared.unclaimed.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Retirer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How often the thread looks at a shipped directory's ledger while it
/// has nothing else to do (see the module docs).
const LEDGER_LOOK: std::time::Duration = std::time::Duration::from_secs(1);

/// What [`next_job`] found.
enum Next {
    /// A job, and whether the latest claim before it is durable.
    Job(Job, bool),
    /// Nothing within the wait asked for.
    Idle,
    /// Stopped, and the queue is empty.
    Stop,
}

/// The next job; waits for one at most `wait` (`None`: until one comes
/// or the thread is stopped).
fn next_job(s: &Shared, wait: Option<std::time::Duration>) -> Next {
    let mut q = s.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(j) = q.jobs.pop_front() {
            q.working = true;
            return Next::Job(j, q.claimed);
        }
        if s.stop.load(Ordering::Acquire) {
            return Next::Stop;
        }
        q = match wait {
            None => s.wake.wait(q).unwrap_or_else(|e| e.into_inner()),
            Some(d) => {
                let (q, t) = s.wake.wait_timeout(q, d).unwrap_or_else(|e| e.into_inner());
                if t.timed_out() && q.jobs.is_empty() {
                    return Next::Idle;
                }
                q
            }
        };
    }
}

/// The retire thread's watch over a shipped directory's ledger.
struct LedgerWatch {
    dir: PathBuf,
    /// The version last read ([`Shipped::stamp`]).
    stamp: Option<Stamp>,
}

impl LedgerWatch {
    /// Reads the ledger again when it changed since the last look, and
    /// puts what it says in `s` for the writer (see the module docs). A
    /// ledger that no longer decodes counts nothing as shipped; the first
    /// such reason is kept for the summary.
    fn look(&mut self, s: &Shared) {
        let stamp = Shipped::stamp(&self.dir);
        if stamp == self.stamp {
            return;
        }
        self.stamp = stamp;
        let view = Shipped::read(&self.dir);
        if let Some(e) = &view.unreadable {
            let mut d = s.ledger_damaged.lock().unwrap_or_else(|e| e.into_inner());
            if d.is_none() {
                *d = Some(e.clone());
            }
        }
        *s.shipped.lock().unwrap_or_else(|e| e.into_inner()) = view;
        s.shipped_generation.fetch_add(1, Ordering::Release);
    }
}

/// Does the queued jobs of `q` on the caller's thread, deleting the files
/// (no recycle: the caller is the writer, catching up); returns how many
/// files were deleted.
fn drain(s: &Shared, q: &mut Queue) -> u64 {
    let mut late = 0;
    while let Some(job) = q.jobs.pop_front() {
        match job {
            Job::Claim(f, dirs) => q.claimed = sync_claim(&f, &dirs).is_ok(),
            Job::Record(r) => q.claimed = record(s, [r]).is_ok(),
            Job::Retire(p) if q.claimed => {
                let _ = std::fs::remove_file(&p);
                s.deleted.fetch_add(1, Ordering::Relaxed);
                late += 1;
            }
            Job::Retire(_) => {
                s.unclaimed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    late
}

/// The thread's step: a claim made durable (returns whether it is), or a
/// file retired ([`retire_one`]) when the claim before it is durable
/// (`claimed`; else it stays, counted).
fn run_job(s: &Shared, pool: Option<&Pool>, job: Job, claimed: bool) -> Option<bool> {
    match job {
        Job::Claim(f, dirs) => Some(sync_claim(&f, &dirs).is_ok()),
        Job::Record(r) => Some(record(s, [r]).is_ok()),
        Job::Retire(p) if claimed => {
            retire_one(s, pool, p);
            None
        }
        Job::Retire(_) => {
            s.unclaimed.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// Adds `ranges` to the loop's retirement record and makes it durable (no
/// record: not a loop, nothing to name).
fn record(s: &Shared, ranges: impl IntoIterator<Item = RetiredRange>) -> std::io::Result<()> {
    let mut b = s.book.lock().unwrap_or_else(|e| e.into_inner());
    match b.as_mut() {
        Some(b) => b.add(ranges),
        None => Ok(()),
    }
}

/// Makes a RETIRED claim durable: `fdatasync` of the file holding it
/// (its frames so far, the claim among them), then `fsync` of each
/// directory naming it, so the file is found after a power cut. Design
/// choice: the retire thread syncs the claim itself rather than waiting
/// for the flusher's next durable point, which a recording with few
/// records may reach late; the writer's path never waits for it, except
/// when it catches a starved thread up ([`Retirer::catch_up`]).
fn sync_claim(f: &File, dirs: &[PathBuf]) -> std::io::Result<()> {
    sys::fdatasync(f)?;
    for d in dirs {
        sys::fsync(&File::open(d)?)?;
    }
    Ok(())
}

/// Recycles `path` into `pool` while it holds fewer ready files than its
/// target (a file of another size, or one the pool refuses, is deleted),
/// else deletes it. A file already gone counts as deleted.
fn retire_one(s: &Shared, pool: Option<&Pool>, path: PathBuf) {
    if let Some(pool) = pool {
        if pool.recycle_below_target(&path).unwrap_or(false) {
            s.recycled.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    let _ = std::fs::remove_file(&path);
    s.deleted.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three files in a fresh directory, and the file holding their
    /// claim.
    fn retired(dir: &std::path::Path) -> (Arc<File>, Vec<PathBuf>) {
        let files: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("r-{i:04}.rtr"))).collect();
        for f in &files {
            std::fs::write(f, b"x").unwrap();
        }
        let holder = File::create(dir.join("r-0005.rtr")).unwrap();
        (Arc::new(holder), files)
    }

    #[test]
    fn a_headroom_the_card_cannot_hold_beside_the_budget_is_clamped_and_said() {
        const MIB: u64 = 1 << 20;
        let mut cfg = Config {
            file_size: MIB,
            ..Config::default()
        };
        cfg.retention.keep_files = 2;
        cfg.retention.unshipped_headroom = Some(5 * MIB);
        // Two kept, one being written, one spare and the metadata: 4 MiB
        // and 64 KiB of 5 MiB and 64 KiB leave 1 MiB.
        let room = 5 * MIB + sizing::BUDGET_METADATA_BYTES;
        let note = fit_headroom(&mut cfg, 1, room, "5 MiB").unwrap();
        assert_eq!(cfg.retention.unshipped_headroom, Some(MIB));
        assert!(note.contains("clamped to 1 MiB"), "{note}");
        // What fits is left as given.
        assert_eq!(fit_headroom(&mut cfg, 1, room, "5 MiB"), None);
        assert_eq!(cfg.retention.unshipped_headroom, Some(MIB));
    }

    #[test]
    fn files_leave_once_their_claim_is_synced() {
        let dir = tempfile::tempdir().unwrap();
        let (holder, mut files) = retired(dir.path());
        let paths = files.clone();
        let t = Retirer::start(None, 4, None, None);
        t.give(
            &mut Vec::new(),
            Some((holder, vec![dir.path().to_path_buf()])),
            &mut files,
            3,
        );
        assert_eq!(t.stop(), (0, 3, 0));
        assert!(paths.iter().all(|p| !p.exists()));
    }

    /// A retirement record of `dir`, empty.
    fn book(dir: &std::path::Path) -> Option<Book> {
        Some(Book {
            record: RetiredRecord::default(),
            pruned: true,
            dir: dir.to_path_buf(),
        })
    }

    #[test]
    fn an_earlier_recordings_files_leave_once_the_record_naming_them_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (_, files) = retired(dir.path());
        let range = RetiredRange {
            recording_id: 5,
            first_index: 0,
            next_index: 3,
            wall_ns: 1,
        };
        let t = Retirer::start(None, 4, book(dir.path()), None);
        t.give(&mut vec![range], None, &mut files.clone(), 0);
        assert_eq!(t.stop(), (0, 3, 0));
        assert!(files.iter().all(|p| !p.exists()));
        let r = RetiredRecord::read(dir.path()).unwrap();
        assert_eq!(r.ranges, vec![range]);
        // A record that cannot be written keeps them, counted.
        let (_, files) = retired(dir.path());
        let t = Retirer::start(None, 4, book(&dir.path().join("gone")), None);
        t.give(&mut vec![range], None, &mut files.clone(), 0);
        assert_eq!(t.stop(), (0, 0, 3));
        assert!(files.iter().all(|p| p.exists()));
    }

    #[test]
    fn a_claim_that_cannot_be_synced_keeps_its_files_on_the_thread_and_in_a_catch_up() {
        let dir = tempfile::tempdir().unwrap();
        let (holder, files) = retired(dir.path());
        let gone = vec![dir.path().join("no-such-directory")];
        // The thread's path.
        let t = Retirer::start(None, 4, None, None);
        t.give(
            &mut Vec::new(),
            Some((holder.clone(), gone.clone())),
            &mut files.clone(),
            3,
        );
        assert_eq!(t.stop(), (0, 0, 3));
        assert!(files.iter().all(|p| p.exists()));
        // The writer's catch-up of jobs the thread never took: the claim
        // is synced (and fails) before any file would be deleted.
        let t = Retirer {
            shared: Retirer::start(None, 4, None, None).shared.clone(),
            thread: None,
        };
        {
            let mut q = t.shared.queue.lock().unwrap();
            q.jobs.push_back(Job::Claim(holder, gone));
            q.jobs.extend(files.iter().cloned().map(Job::Retire));
        }
        assert_eq!(t.catch_up(), 0);
        assert!(files.iter().all(|p| p.exists()));
        assert_eq!(t.shared.unclaimed.load(Ordering::Relaxed), 3);
        // A later claim that syncs lets them go.
        let next = Arc::new(File::create(dir.path().join("r-0006.rtr")).unwrap());
        {
            let mut q = t.shared.queue.lock().unwrap();
            q.jobs
                .push_back(Job::Claim(next, vec![dir.path().to_path_buf()]));
            q.jobs.extend(files.iter().cloned().map(Job::Retire));
        }
        assert_eq!(t.catch_up(), 3);
        assert!(files.iter().all(|p| !p.exists()));
    }
}
