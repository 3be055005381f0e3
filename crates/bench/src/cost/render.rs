//! The cost study's text ([`render`]): for each run one line per record
//! size and back-end, the recorder's CPU per MiB by thread and in all
//! beside the floor and its parts, the ratio and the goal; with several
//! runs, each cell's spread.

use super::options::AGREE_WITHIN;
use super::report::{Cell, CostReport, Run};

/// The study's tables.
pub fn render(r: &CostReport) -> String {
    let mut t = format!(
        "Cost on {}: CPU ns per MiB of payload recorded ({} per cell), beside the floor of the same bytes (fio's like-for-like job, its whole process with io_uring's workers, + memcpy + CRC32C, each on its own core as the recorder's threads run them); ratio = total ÷ floor; hot: the floor before issue 47 (memcpy and CRC32C on one core, cache hot) and the ratio over it, for one release\n\
         producer: {}; {} run(s) on {} CPUs\n",
        r.device_profile,
        rtrec_units::format_size(r.bytes_per_cell),
        r.rt.line(),
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
        t.push_str(&render_spread(r));
    }
    t
}

/// One run's table.
fn render_run(i: usize, run: &Run) -> String {
    let mut t = format!(
        "\nRun {i}: every cell at {} (device {})\n{:<14} {:>6} | {:>9} {:>9} {:>9} {:>9} | {:>9} {:>9} {:>8} {:>8} | {:>5} {:>4} {:>3} | {:>9} {:>5}\n",
        rtrec_units::format_size_per_s(run.rate_bytes_per_s as u64),
        run.device_bytes_per_s
            .map_or("not measured".into(), |d| rtrec_units::format_size_per_s(d as u64)),
        "back-end", "record", "producer", "writer", "flusher", "total",
        "floor", "fio", "memcpy", "crc32c", "ratio", "goal", "met",
        "hot floor", "ratio",
    );
    for c in &run.cells {
        t.push_str(&row(c));
    }
    let missed: Vec<String> = run
        .cells
        .iter()
        .filter(|c| c.dropped > 0)
        .map(|c| {
            format!(
                "{} {}: {} dropped",
                c.io.name(),
                rtrec_units::format_size(c.record_bytes),
                c.dropped
            )
        })
        .collect();
    if !missed.is_empty() {
        t.push_str(&format!(
            "not at a comfortable rate: {}\n",
            missed.join("; ")
        ));
    }
    t
}

/// One cell's line, ns per MiB.
fn row(c: &Cell) -> String {
    let n = |v: f64| format!("{v:.0}");
    format!(
        "{:<14} {:>6} | {:>9} {:>9} {:>9} {:>9} | {:>9} {:>9} {:>8} {:>8} | {:>5.2} {:>4} {:>3} | {:>9} {:>5}\n",
        c.io.name(),
        rtrec_units::format_size(c.record_bytes),
        n(c.producer_ns_per_mib),
        n(c.writer_ns_per_mib),
        n(c.flusher_ns_per_mib),
        n(c.total_ns_per_mib),
        n(c.floor.ns_per_mib),
        c.floor.fio_ns_per_mib.map_or("-".into(), n),
        n(c.floor.memcpy_ns_per_mib),
        n(c.floor.crc32c_ns_per_mib),
        c.ratio,
        c.goal,
        if c.met { "yes" } else { "no" },
        c.floor.hot_ns_per_mib.map_or("-".into(), n),
        c.ratio_hot.map_or("-".into(), |r| format!("{r:.2}")),
    )
}

/// Each cell's spread over the runs.
fn render_spread(r: &CostReport) -> String {
    let mut t = format!(
        "\nSpread over {} runs (highest ÷ lowest of the ratio, of the recorder's total and of the floor; agree: the ratio within {:.0} %)\n{:<14} {:>6} | {:>11} {:>8} {:>6} {:>6} {:>5} | where it moved\n",
        r.runs.len(),
        (AGREE_WITHIN - 1.0) * 100.0,
        "back-end", "record", "ratios", "max÷min", "total", "floor", "agree",
    );
    let m = |v: Option<f64>| v.map_or("-".into(), |m| format!("{m:.2}"));
    for s in &r.spread {
        t.push_str(&format!(
            "{:<14} {:>6} | {:>11} {:>8} {:>6} {:>6} {:>5} | {}\n",
            s.io.name(),
            rtrec_units::format_size(s.record_bytes),
            crate::throughput::range(&s.ratios, |f| format!("{f:.2}")),
            m(s.max_over_min),
            m(s.total_max_over_min),
            m(s.floor_max_over_min),
            if s.agree { "yes" } else { "no" },
            s.reason
                .as_deref()
                .unwrap_or(if s.agree { "" } else { "not known" }),
        ));
    }
    t
}
