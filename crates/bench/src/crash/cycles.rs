//! `--study crash --crash-cycles N`: a year of power cuts compressed
//! (issue 44). One budgeted loop recording directory lives through N
//! power cuts in a row, as a recorder under a service manager on a board
//! that loses power would:
//!
//! 1. the card is the last cut's crash image (a fresh ext4 the first
//!    time), served by the emulated device with its write log on;
//! 2. the service starts: `rtrec recover` on the directory, then a loop
//!    recording (the loop cells' back-ends in turn, buffered, `direct`,
//!    `uring`; a random length of 200 to 1,000 records of 4 KiB, about
//!    one to four 1 MiB files, so files are retired and recycled in most
//!    cycles and earlier cycles' recordings leave under the budget);
//! 3. the power is cut at a point of the cycle's write log, half of them
//!    around its moments (file headers, RETIRED claims, names gone, the
//!    pool, durable points: [`moments`]), the rest anywhere, recover's
//!    own writes included; the crash image is built from the log
//!    ([`CrashState`]);
//! 4. the cut is checked as every crash state is ([`check`]): ext4, the
//!    records of this cycle's recording below its durable point present
//!    and byte-exact (or retired under a claim the image holds), no
//!    retirement without a durable claim, `verify` exit 0 and `export DIR`
//!    after `recover`, and the directory within the loop's bound before
//!    and after `recover`; the image, as `e2fsck` left it, is the next
//!    cycle's card.
//!
//! Design choices: the recorder runs to its end and the cut is chosen in
//! its write log afterwards, which gives every state a cut could leave at
//! that point (the writes after the last flush landing as none, all, a
//! subset or torn) rather than only what a kill at a wall-clock moment
//! leaves; each cycle's log is removed once its cut passed (kept, and
//! named, with a violation), so a thousand cycles take the disk of one.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Context;
use rtrec_emu::crashimg::{CrashState, SplitMix};
use rtrec_emu::writelog::{Log, What};

use super::check::{check, Checked};
use super::matrix::{selected, Options};
use super::moments;
use super::record::{record_cycle, Recorded};
use super::report::{CellResult, CrashReport, Violation};

/// The cells whose back-ends the cycles take in turn.
const CYCLE_CELLS: [&str; 3] = ["loop", "loop-direct", "loop-uring"];

/// Records per cycle: at least this many …
const MIN_COUNT: u64 = 200;
/// … and at most this many (about four 1 MiB files of 4 KiB records).
const MAX_COUNT: u64 = 1000;

/// Runs `o.cycles` power-cut cycles into `report` (one cell,
/// `power-cut-cycles`); prints a line every 25 cycles and one per
/// violation.
///
/// # Errors
/// Setting up an image, recording, or reading a log failed (the
/// environment's failure, not a violation).
pub(super) fn run_cycles(o: &Options, report: &mut CrashReport) -> anyhow::Result<()> {
    let names: Vec<String> = CYCLE_CELLS.iter().map(|s| s.to_string()).collect();
    let cells = selected(&names);
    let work = tempfile::Builder::new()
        .prefix("rtrec-crash-cycles-")
        .tempdir_in(&o.parent)
        .with_context(|| format!("creating a directory in '{}'", o.parent.display()))?;
    let started = std::time::Instant::now();
    let mut r = CellResult {
        name: "power-cut-cycles".into(),
        ..CellResult::default()
    };
    let mut rng = SplitMix::new(o.seed);
    let mut card: Option<PathBuf> = None;
    let mut keep_work = false;
    for k in 0..o.cycles {
        if crate::signal::interrupted() {
            break;
        }
        let c = cells[(k % cells.len() as u64) as usize];
        let count = MIN_COUNT + rng.below(MAX_COUNT - MIN_COUNT + 1);
        let log_dir = work.path().join(format!("log-{k}"));
        let (rec, before) = record_cycle(o, c, &log_dir, work.path(), card.as_deref(), count)
            .with_context(|| format!("cycle {k} ({})", c.name))?;
        let log = Log::open(&log_dir).context("reading the write log")?;
        let mut found = moments::in_log(&log).context("reading the write log")?;
        found.extend(moments::placed(&log, &rec.seen));
        tally(&mut r, &log, &found, &rec, count);
        let seed = rng.next_u64();
        let points = moments::weighted_points(&log, &found);
        let cut = cut(&log, &points, &rec, seed, o.atomic);
        let image = work.path().join(format!("card-{}.img", k % 2));
        cut.state
            .build(&log, &image)
            .context("building a crash image")?;
        let promised: BTreeSet<u64> = rec.stored.range(..cut.durable).copied().collect();
        let checked = check(o, &image, work.path(), &promised, false, true, &before)?;
        let name = format!("cycle {k} ({})", c.name);
        count_state(&mut r, &checked, &cut, &name, seed);
        let broke = !checked.broken.is_empty();
        for (kind, what) in checked.broken {
            violation(report, &mut r, &name, seed, &cut, kind, what, &log_dir);
        }
        if broke {
            keep_work = true;
        } else {
            let _ = std::fs::remove_dir_all(&log_dir);
        }
        card = Some(image);
        if (k + 1) % 25 == 0 || k + 1 == o.cycles {
            eprintln!(
                "rtrec bench: crash cycles: {} of {} cut and checked in {:.0} s, {} violations",
                k + 1,
                o.cycles,
                started.elapsed().as_secs_f64(),
                r.violations
            );
        }
    }
    if keep_work {
        let kept = work.keep();
        eprintln!(
            "rtrec bench: crash cycles: the logs of the cycles with a violation are kept in {}",
            kept.display()
        );
    }
    report.states_checked += r.states;
    report.fs_repaired += r.fs_repaired;
    report.cells.push(r);
    Ok(())
}

/// Adds one cycle's log and recording to `r`'s counts.
fn tally(r: &mut CellResult, log: &Log, found: &[moments::Moment], rec: &Recorded, count: u64) {
    for (kind, n) in moments::counts(found) {
        *r.moments.entry(kind).or_insert(0) += n;
    }
    r.log_writes += log
        .entries
        .iter()
        .filter(|e| matches!(e.what, What::Write { .. }))
        .count() as u64;
    r.log_flushes += log.flushes().len() as u64;
    r.durable_points += rec.published.len() as u64;
    r.records_stored += count;
}

/// Where a cycle is cut: the crash state, its point in the log, whether
/// it was drawn around a moment, the time there from the log's first
/// entry (ns) and the durable point published before it.
pub(super) struct Cut {
    pub(super) state: CrashState,
    pub(super) point: usize,
    pub(super) weighted: bool,
    pub(super) at: u64,
    pub(super) durable: u64,
}

/// The cut of seed `seed`: half of them at one of the weighted `points`
/// ([`moments::weighted_points`]), the rest at any entry of `log`; the
/// matrix's crash states are drawn the same way.
pub(super) fn cut(log: &Log, points: &[usize], rec: &Recorded, seed: u64, atomic: u64) -> Cut {
    let mut pick = SplitMix::new(seed);
    let weighted = pick.below(2) == 0 && !points.is_empty();
    let point = if weighted {
        points[pick.below(points.len() as u64) as usize]
    } else {
        pick.below(log.entries.len() as u64 + 1) as usize
    };
    let at = log.entries.get(point).map_or(u64::MAX, |e| e.time_ns);
    let t0 = log.entries.first().map_or(0, |e| e.time_ns);
    let durable = rec
        .published
        .iter()
        .filter(|(t, _)| *t < at)
        .map(|(_, d)| *d)
        .max()
        .unwrap_or(0);
    Cut {
        state: CrashState::random(log, point, seed, atomic),
        point,
        weighted,
        at: at.saturating_sub(t0),
        durable,
    }
}

/// Counts one checked cut in `r` (the first ten ext4 repairs named).
fn count_state(r: &mut CellResult, checked: &Checked, cut: &Cut, name: &str, seed: u64) {
    r.states += 1;
    r.states_weighted += u64::from(cut.weighted);
    r.records_owed += checked.owed;
    if let Some(what) = &checked.fs_repaired {
        r.fs_repaired += 1;
        if r.fs_repairs.len() < 10 {
            r.fs_repairs.push(format!(
                "{name}, seed {seed}, {}: {what}",
                cut.state.describe()
            ));
        }
    }
}

/// Reports one broken rule of cycle `name`'s cut (its `at` from the log's
/// start): a line on stderr, a [`Violation`] in `report`, one more in
/// `r`.
#[allow(clippy::too_many_arguments)]
fn violation(
    report: &mut CrashReport,
    r: &mut CellResult,
    name: &str,
    seed: u64,
    cut: &Cut,
    kind: &'static str,
    what: String,
    log_dir: &std::path::Path,
) {
    let x = Violation {
        cell: name.to_string(),
        seed,
        point: cut.point,
        at_ms: cut.at.min(u64::MAX / 2) as f64 / 1e6,
        durable_seq: cut.durable,
        state: cut.state.describe(),
        kind,
        what,
        log: log_dir.display().to_string(),
    };
    eprintln!(
        "rtrec bench: crash VIOLATION {} seed {} point {} ({:.1} ms, durable_seq {}): {}: {} [{}]",
        x.cell, x.seed, x.point, x.at_ms, x.durable_seq, x.kind, x.what, x.state
    );
    report.violations.push(x);
    r.violations += 1;
}
