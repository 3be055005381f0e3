//! The study's text: [`render`], one report's tables (each run's rows,
//! verdicts and the reasons of the rows under the target, then the spread
//! over the runs), and [`combine`], one table of several reports (e.g. one
//! per device, `--combine`).

use rtrec_engine::Alloc;

use super::options::{HoldRule, AGREE_WITHIN, TARGET_OF_DEVICE};
use super::report::{Row, Run, Spread, ThroughputReport};

/// The study's tables: for each run one line per back-end and record
/// size, whether the target was met and what stopped each row under it;
/// with several runs, each cell's spread.
pub fn render(r: &ThroughputReport) -> String {
    let rule = match r.hold_rule {
        HoldRule::Drops => "0 drops and the writer keeping up (lateness reported, not judged)",
        HoldRule::Max => "0 drops, the writer keeping up and every release within one period",
        HoldRule::P99 => {
            "0 drops, the writer keeping up and 99 % of the releases within one period"
        }
    };
    let mut t = format!(
        "Throughput on {}: the highest rate held {} of {} times for {} with {rule} (coarse search: {} probes), as a fraction of the device's sequential write bandwidth\n\
         producer: {}; probes' files: {}; {} run(s) on {} CPUs\n",
        r.device_profile,
        r.confirmations,
        r.confirmations,
        rtrec_units::format_duration((r.probe_s * 1e9) as u64),
        rtrec_units::format_duration((r.coarse_s * 1e9) as u64),
        r.rt.line(),
        match r.alloc {
            Alloc::Pool => "a pool zero-filled once and recycled into (--alloc pool)",
            _ => "fallocated as they are opened (--alloc fallocate)",
        },
        r.runs.len(),
        r.cpus,
    );
    for s in &r.skipped {
        t.push_str(&format!("not run: {s}\n"));
    }
    for (i, run) in r.runs.iter().enumerate() {
        t.push_str(&render_run(i + 1, run));
    }
    if r.runs.len() > 1 {
        t.push_str(&format!(
            "\nSpread over {} runs (held rate, highest ÷ lowest; agree: within {:.0} %)\n{:<14} {:>7} | {:>23} | {:>11} | {:>8} {:>5}\n",
            r.runs.len(),
            (AGREE_WITHIN - 1.0) * 100.0,
            "back-end",
            "record",
            "held, lowest-highest",
            "÷ device",
            "max÷min",
            "agree"
        ));
        for c in &r.spread {
            t.push_str(&format!(
                "{:<14} {:>7} | {:>23} | {:>11} | {:>8} {:>5}\n",
                c.io.name(),
                rtrec_units::format_size(c.record_bytes),
                range(&c.held_bytes_per_s, |b| rtrec_units::format_size_per_s(
                    b as u64
                )),
                range(&c.fractions_of_device, |f| format!("{f:.2}")),
                c.max_over_min.map_or("-".into(), |m| format!("{m:.2}")),
                if c.agree { "yes" } else { "no" },
            ));
        }
    }
    t
}

/// `lowest-highest` of `v` as `f` prints them (one value alone when they
/// print the same).
pub(crate) fn range(v: &[f64], f: impl Fn(f64) -> String) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0f64, f64::max);
    if v.is_empty() {
        "-".into()
    } else if f(lo) == f(hi) {
        f(lo)
    } else {
        format!("{}-{}", f(lo), f(hi))
    }
}

/// One run's table, its verdicts and the reasons of the rows under the
/// target.
fn render_run(n: usize, run: &Run) -> String {
    let mut t = run_header(n, run);
    for row in &run.rows {
        t.push_str(&row_line(row));
    }
    t.push_str(&run_notes(run));
    t.push_str(&verdict_lines(run));
    t.push_str(&reasons(run));
    t
}

/// One run's first lines: the device's figure, the load average and the
/// table's heading.
fn run_header(n: usize, run: &Run) -> String {
    format!(
        "\nrun {n}: device {} sequential ({}{}); load average {:.2} at the start, {:.2} at the end\n{:<14} {:>7} | {:>12} {:>11} | {:>9} | {:>11} {:>6} | {:>9} {:>6} | {:>9} | {:<12}\n",
        rtrec_units::format_size_per_s(run.device_bytes_per_s as u64),
        run.device_method,
        if run.device_jobs.is_empty() {
            String::new()
        } else {
            format!(
                ", the best of {} 1 MiB sequential jobs",
                run.device_jobs.len()
            )
        },
        run.load_avg[0],
        run.load_avg[1],
        "back-end",
        "record",
        "records/s",
        "bytes/s",
        "÷ device",
        "fio",
        "÷ fio",
        "late max",
        "missed",
        "CPU s/GiB",
        "limit"
    )
}

/// One row of a run's table.
fn row_line(row: &Row) -> String {
    format!(
        "{:<14} {:>7} | {:>12.0} {:>11} | {:>8.2}{} | {:>11} {:>6} | {:>9} {:>6} | {:>9} | {:<12}\n",
        row.io.name(),
        rtrec_units::format_size(row.record_bytes),
        row.sustained_hz,
        rtrec_units::format_size_per_s(row.sustained_bytes_per_s as u64),
        row.fraction_of_device,
        if row.capped { "+" } else { " " },
        row.fio_bytes_per_s
            .map_or("-".into(), |b| rtrec_units::format_size_per_s(b as u64)),
        row.fraction_of_fio
            .map_or("-".into(), |f| format!("{f:.2}")),
        row.max_lateness_ns
            .map_or("-".into(), rtrec_units::format_duration),
        row.missed_periods.map_or("-".into(), |m| m.to_string()),
        row.cpu_s_per_gib.map_or("-".into(), |c| format!("{c:.2}")),
        row.limit.as_ref().map_or("-", |l| l.kind.as_str()),
    )
}

/// The footnotes of a run's table: a rate left unprobed for lack of
/// space (`+`), a row none of whose rates held k of k, and with `--alloc
/// pool` the probes that found the pool empty.
fn run_notes(run: &Run) -> String {
    let mut t = String::new();
    if run.rows.iter().any(|row| row.capped) {
        t.push_str(
            "+: the next rate up was not probed (its recording would not fit in the free space)\n",
        );
    }
    if run.rows.iter().any(|row| !row.confirmed) {
        t.push_str("0 records/s: no rate held k of k, down to 0.43 of the coarse candidate\n");
    }
    // With --alloc pool: probes that found the pool empty recorded part of
    // their data into fallocated files, the other allocation.
    for row in &run.rows {
        let (n, files) = row
            .probes
            .iter()
            .filter(|p| p.pool_fallbacks > 0)
            .fold((0, 0), |(n, f), p| (n + 1, f + p.pool_fallbacks));
        if n > 0 {
            t.push_str(&format!(
                "{} {}: {n} probe(s) found the pool empty and fell back to fallocate for {files} file(s)\n",
                row.io.name(),
                rtrec_units::format_size(row.record_bytes),
            ));
        }
    }
    t
}

/// Whether some back-end reached the target, one line per record size.
fn verdict_lines(run: &Run) -> String {
    let mut t = String::new();
    for v in &run.verdicts {
        let size = rtrec_units::format_size(v.record_bytes);
        let target = TARGET_OF_DEVICE * 100.0;
        t.push_str(&if v.met {
            format!(
                "{size} records: {target:.0} % of the device met by {} ({:.2})\n",
                v.best.name(),
                v.best_fraction
            )
        } else {
            format!(
                "{size} records: {target:.0} % of the device NOT met; the best, {}, held {:.2}\n",
                v.best.name(),
                v.best_fraction
            )
        });
    }
    t
}

/// What stopped each row under the target, one line each.
fn reasons(run: &Run) -> String {
    let mut t = String::new();
    for row in run
        .rows
        .iter()
        .filter(|row| row.fraction_of_device < TARGET_OF_DEVICE)
    {
        if let Some(l) = &row.limit {
            t.push_str(&format!(
                "  {} {} under {:.0} %, stopped by {}: {}\n",
                row.io.name(),
                rtrec_units::format_size(row.record_bytes),
                TARGET_OF_DEVICE * 100.0,
                l.kind,
                l.reason
            ));
        }
    }
    t
}

/// One table of several reports (`--combine`, e.g. one per device): each
/// cell's held rate, fraction of the device and of fio's matching job over
/// its runs, the spread, and what stopped it.
pub fn combine(reports: &[ThroughputReport]) -> String {
    let mut t = format!(
        "{:<13} {:<14} {:>7} | {:>23} | {:>11} | {:>11} | {:>7} {:>5} | {:<12}\n",
        "device", "back-end", "record", "held", "÷ device", "÷ fio", "max÷min", "runs", "limit"
    );
    for r in reports {
        for c in &r.spread {
            t.push_str(&combined_cell(r, c));
        }
    }
    t.push('\n');
    for r in reports {
        t.push_str(&combined_sizes(r));
    }
    t
}

/// One line of the combined table: cell `c` of report `r` over its runs.
fn combined_cell(r: &ThroughputReport, c: &Spread) -> String {
    let rows: Vec<&Row> = r
        .runs
        .iter()
        .filter_map(|run| run.row(c.io, c.record_bytes))
        .collect();
    let fio: Vec<f64> = rows.iter().filter_map(|x| x.fraction_of_fio).collect();
    // Each kind once, in the order the runs met them.
    let mut kinds: Vec<&str> = Vec::new();
    for k in rows
        .iter()
        .filter_map(|x| x.limit.as_ref().map(|l| l.kind.as_str()))
    {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    format!(
        "{:<13} {:<14} {:>7} | {:>23} | {:>11} | {:>11} | {:>7} {:>5} | {:<12}\n",
        r.label(),
        c.io.name(),
        rtrec_units::format_size(c.record_bytes),
        range(&c.held_bytes_per_s, |b| rtrec_units::format_size_per_s(
            b as u64
        )),
        range(&c.fractions_of_device, |f| format!("{f:.2}")),
        range(&fio, |f| format!("{f:.2}")),
        c.max_over_min.map_or("-".into(), |m| format!("{m:.2}")),
        r.runs.len(),
        kinds.join(","),
    )
}

/// The lines under the combined table for report `r`, one per record
/// size: the device's figure, in how many runs the target was met, whether
/// every cell agreed over the runs, and the load average.
fn combined_sizes(r: &ThroughputReport) -> String {
    let mut t = String::new();
    let device = range(
        &r.runs
            .iter()
            .map(|x| x.device_bytes_per_s)
            .collect::<Vec<_>>(),
        |b| rtrec_units::format_size_per_s(b as u64),
    );
    let loads: Vec<f64> = r.runs.iter().flat_map(|x| x.load_avg).collect();
    let mut sizes: Vec<u64> = r
        .runs
        .iter()
        .flat_map(|x| x.verdicts.iter().map(|v| v.record_bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let met = r
            .runs
            .iter()
            .filter(|x| x.verdicts.iter().any(|v| v.record_bytes == size && v.met))
            .count();
        let agree = r
            .spread
            .iter()
            .filter(|c| c.record_bytes == size)
            .all(|c| c.agree);
        t.push_str(&format!(
            "{} {}: device {device}; ≥ {:.0} % by some back-end in {met} of {} runs; every cell within {:.0} % over the runs: {}; load average {}\n",
            r.label(),
            rtrec_units::format_size(size),
            TARGET_OF_DEVICE * 100.0,
            r.runs.len(),
            (AGREE_WITHIN - 1.0) * 100.0,
            if r.runs.len() < 2 {
                "one run"
            } else if agree {
                "yes"
            } else {
                "no"
            },
            range(&loads, |l| format!("{l:.1}")),
        ));
    }
    t
}
