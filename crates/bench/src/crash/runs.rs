//! The crash study's run: every selected cell recorded once with its
//! write log on, then its share of the crash states drawn from the log
//! (weighted to the moments), each built and checked; the write log's own
//! cost beside.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context;
use rtrec_emu::crashimg::SplitMix;
use rtrec_emu::writelog::{Log, What};
use rtrec_emu::EmulatorStats;

use super::check::check;
use super::cycles::{cut, Cut};
use super::matrix::{selected, Cell, Options};
use super::moments;
use super::record::{record, Recorded};
use super::report::{CellResult, CrashReport, LogCost, Violation};

/// Runs the study; prints one line per cell and per violation on stderr.
///
/// # Errors
/// Setting up an image, recording, or reading a log failed (the
/// environment's failure, not a violation).
pub fn run(o: &Options) -> anyhow::Result<CrashReport> {
    let mut report = CrashReport {
        seed: o.seed,
        atomic_bytes: o.atomic,
        ..CrashReport::default()
    };
    let started = std::time::Instant::now();
    if o.cycles > 0 {
        super::cycles::run_cycles(o, &mut report)?;
        report.wall_s = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let cells = selected(&o.only);
    if o.log_cost {
        if let Some(c) = cells.first() {
            report.log_cost = Some(log_cost(o, c)?);
        }
    }
    let n = cells.len().max(1) as u64;
    for (k, c) in cells.iter().enumerate() {
        if crate::signal::interrupted() {
            break;
        }
        let share = o.states / n + u64::from((k as u64) < o.states % n);
        let r = run_cell(o, c, share, &mut report.violations)?;
        eprintln!(
            "rtrec bench: crash {}: {} states, {} with ext4 repaired, {} violations ({} writes, {} flushes, {} durable points; moments {:?})",
            r.name, r.states, r.fs_repaired, r.violations, r.log_writes, r.log_flushes, r.durable_points, r.moments
        );
        report.states_checked += r.states;
        report.fs_repaired += r.fs_repaired;
        report.cells.push(r);
    }
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Records `c` once with the write log off and once with it on.
fn log_cost(o: &Options, c: &Cell) -> anyhow::Result<LogCost> {
    let work = tempfile::Builder::new()
        .prefix("rtrec-crash-cost-")
        .tempdir_in(&o.parent)?;
    let off = record(o, c, None, work.path())?.emulator;
    let on = record(o, c, Some(&work.path().join("log")), work.path())?.emulator;
    let e = |s: &Option<EmulatorStats>| s.as_ref().map_or("?".into(), EmulatorStats::error_summary);
    eprintln!(
        "rtrec bench: crash: the write log's cost ({}): emulator timing error off {}; on {}",
        c.name,
        e(&off),
        e(&on)
    );
    Ok(LogCost {
        cell: c.name.to_string(),
        off,
        on,
    })
}

/// Records cell `c` with its write log on, then draws and checks `states`
/// crash states from the log ([`Drawn::check_state`]), each broken rule
/// added to `violations`. The log of a cell with a violation is kept (its
/// directory printed) to rebuild the states.
fn run_cell(
    o: &Options,
    c: &Cell,
    states: u64,
    violations: &mut Vec<Violation>,
) -> anyhow::Result<CellResult> {
    let work = tempfile::Builder::new()
        .prefix(&format!("rtrec-crash-{}-", c.name))
        .tempdir_in(&o.parent)
        .with_context(|| format!("creating a directory in '{}'", o.parent.display()))?;
    let log_dir = work.path().join("log");
    let rec = record(o, c, Some(&log_dir), work.path())?;
    let log = Log::open(&log_dir).context("reading the write log")?;
    let mut found = moments::in_log(&log).context("reading the write log")?;
    found.extend(moments::placed(&log, &rec.seen));
    let mut r = cell_result(c, &log, &rec, &found);
    let drawn = Drawn {
        o,
        c,
        log: &log,
        log_dir: &log_dir,
        work: work.path(),
        points: moments::weighted_points(&log, &found),
        rec,
    };
    let mut rng = SplitMix::new(o.seed ^ fnv(c.name));
    let before = violations.len();
    for _ in 0..states {
        if crate::signal::interrupted() {
            break;
        }
        drawn.check_state(rng.next_u64(), &mut r, violations)?;
    }
    r.violations = (violations.len() - before) as u64;
    let _ = std::fs::remove_file(work.path().join("state.img"));
    if r.violations > 0 {
        let kept = work.keep();
        eprintln!(
            "rtrec bench: crash {}: the write log is kept in {} to rebuild the states",
            c.name,
            kept.display()
        );
    }
    Ok(r)
}

/// A cell's result before any state: what its recording and its log hold.
fn cell_result(c: &Cell, log: &Log, rec: &Recorded, found: &[moments::Moment]) -> CellResult {
    CellResult {
        name: c.name.to_string(),
        log_writes: log
            .entries
            .iter()
            .filter(|e| matches!(e.what, What::Write { .. }))
            .count() as u64,
        log_flushes: log.flushes().len() as u64,
        durable_points: rec.published.len() as u64,
        records_stored: rec.stored.len() as u64,
        moments: moments::counts(found),
        emulator: rec.emulator.clone(),
        ..CellResult::default()
    }
}

/// One cell's recording and its write log, from which its crash states
/// are drawn.
struct Drawn<'a> {
    o: &'a Options,
    c: &'a Cell,
    log: &'a Log,
    /// Where the log is (named in each violation, to rebuild the state).
    log_dir: &'a Path,
    /// The cell's directory (the crash image and the read-out go there).
    work: &'a Path,
    /// The crash points weighted to the moments ([`moments`]).
    points: Vec<usize>,
    rec: Recorded,
}

impl Drawn<'_> {
    /// Draws the crash state of `seed` (half of them at a weighted point,
    /// the others at any entry), builds its image and checks it against
    /// the records durable before its crash point: counted in `r`, each
    /// broken rule a violation.
    fn check_state(
        &self,
        seed: u64,
        r: &mut CellResult,
        violations: &mut Vec<Violation>,
    ) -> anyhow::Result<()> {
        let log = self.log;
        let Cut {
            state,
            point,
            weighted,
            at,
            durable,
        } = cut(log, &self.points, &self.rec, seed, self.o.atomic);
        let image = self.work.join("state.img");
        state.build(log, &image).context("building a crash image")?;
        let promised: BTreeSet<u64> = self.rec.stored.range(..durable).copied().collect();
        let checked = check(
            self.o,
            &image,
            self.work,
            &promised,
            self.c.flight,
            self.c.looped,
            &BTreeSet::new(),
        )?;
        r.states += 1;
        r.states_weighted += u64::from(weighted);
        r.records_owed += checked.owed;
        if let Some(what) = checked.fs_repaired {
            r.fs_repaired += 1;
            if r.fs_repairs.len() < 10 {
                r.fs_repairs
                    .push(format!("seed {seed}, {}: {what}", state.describe()));
            }
        }
        for (kind, what) in checked.broken {
            let x = Violation {
                cell: self.c.name.to_string(),
                seed,
                point,
                at_ms: at.min(u64::MAX / 2) as f64 / 1e6,
                durable_seq: durable,
                state: state.describe(),
                kind,
                what,
                log: self.log_dir.display().to_string(),
            };
            eprintln!(
                "rtrec bench: crash VIOLATION {} seed {} point {} ({:.1} ms, durable_seq {}): {}: {} [{}]",
                x.cell, x.seed, x.point, x.at_ms, x.durable_seq, x.kind, x.what, x.state
            );
            violations.push(x);
        }
        Ok(())
    }
}

/// FNV-1a of a name: each variant draws its own states from one seed.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::super::matrix::CELLS;
    use super::*;

    #[test]
    fn each_cell_draws_its_own_states_from_one_seed() {
        let names: BTreeSet<u64> = CELLS.iter().map(|c| fnv(c.name)).collect();
        assert_eq!(names.len(), CELLS.len());
    }
}
