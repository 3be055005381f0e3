//! The bench page above S3's and S4's sections: the environment, the
//! results table with the published figure beside the measured one, the
//! box plots of S1's Fig. 4, and each measured case's plots (latency over
//! time, histogram, spread across sets) and, with `--explain`, its
//! attribution table. The cases are S1's, S2's and rtrec's own.

use std::fmt::Write as _;

use crate::output::table::{published_us, rt_line};
use crate::report::{BenchReport, CaseResult};

use super::box_plot::{box_plot, BoxRow};
use super::distribution::{histogram, spread};
use super::markup::{dur, esc, failed_cell, name_value_row, us_opt};
use super::timeline::timeline;

/// The title and how many cases, and whether the run was cut short.
pub fn heading(r: &BenchReport) -> String {
    format!(
        "<h1>rtrec bench</h1><p>{} cases{}.</p>",
        r.cases.len(),
        if r.interrupted {
            ", interrupted"
        } else if r.complete {
            ""
        } else {
            ", incomplete"
        }
    )
}

/// Where it ran (one row per fact), the warnings and the timed thread's
/// setup.
pub fn environment(r: &BenchReport) -> String {
    let e = &r.environment;
    let mut b = String::from("<h2>Environment</h2><table>");
    for (k, v) in [
        ("kernel", e.kernel.clone()),
        ("CPU", format!("{} ({} online)", e.cpu, e.cpus)),
        ("memory", rtrec_units::format_size(e.memory_bytes)),
        ("target", format!("{} {}", e.target, e.path)),
        (
            "filesystem",
            format!("{} ({})", e.filesystem, e.mount_options),
        ),
        ("device", e.device.clone()),
        ("I/O scheduler", e.io_scheduler.clone()),
        (
            "journal",
            e.journal_bytes.map_or("?".into(), rtrec_units::format_size),
        ),
        ("timed thread", e.rt.line()),
        ("rtrec", e.rtrec_version.clone()),
        ("command", e.command_line.join(" ")),
    ] {
        b.push_str(&name_value_row(k, &v));
    }
    b.push_str("</table>");
    for w in &r.warnings {
        let _ = write!(b, r#"<p class="warn">warning: {}</p>"#, esc(w));
    }
    if let Some(l) = rt_line(r) {
        let _ = write!(b, "<p>{}.</p>", esc(&l));
    }
    b
}

/// The results table: per case, the published figures, then the measured
/// ones (or why there are none).
pub fn results(r: &BenchReport) -> String {
    let mut b = String::from("<h2>Results</h2><table><tr><th class=\"l\">case</th><th>published min</th><th>avg</th><th>max</th><th>measured min</th><th>mean</th><th>p50</th><th>p99.9</th><th>max</th><th>set maxima</th><th>missed</th></tr>");
    for c in &r.cases {
        let [min, avg, max] = published_us(c.published.as_ref()).map(us_opt);
        let _ = write!(
            b,
            r#"<tr><td class="l">{}</td><td>{min}</td><td>{avg}</td><td>{max}</td>"#,
            esc(&c.name),
        );
        match (failed_cell(c.error.as_deref(), 7), c.write_ns) {
            (Some(failed), _) => b.push_str(&failed),
            (None, None) => b.push_str(r#"<td class="l" colspan="7">no measurement</td>"#),
            (None, Some(w)) => {
                let range = c
                    .set_max_range()
                    .map_or("–".into(), |(a, z)| format!("{} – {}", dur(a), dur(z)));
                let _ = write!(b, "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{range}</td><td>{}</td>",
                    dur(w.min), dur(w.mean), dur(w.p50), dur(w.p999), dur(w.max), c.missed_periods);
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    b
}

/// The measured cases' box plots, then a section per measured case.
pub fn plots(r: &BenchReport) -> String {
    let mut b = String::new();
    let measured: Vec<&CaseResult> = r.cases.iter().filter(|c| c.write_ns.is_some()).collect();
    if !measured.is_empty() {
        b.push_str("<h2>Box plots per case (S1 Fig. 4)</h2>");
        let rows: Vec<BoxRow> = measured.iter().filter_map(|c| BoxRow::of_case(c)).collect();
        b.push_str(&box_plot(&rows));
    }
    for c in &measured {
        b.push_str(&case_section(c));
    }
    b
}

/// One measured case: its description, latency over time and histogram
/// (with raw samples), the spread across sets (with more than one) and
/// the attribution (with `--explain`).
fn case_section(c: &CaseResult) -> String {
    let mut b = format!("<h2>{}</h2><p>{}</p>", esc(&c.name), esc(&c.description));
    if !c.write_samples_ns.is_empty() {
        b.push_str("<h3>Latency over time</h3>");
        b.push_str(&timeline(c));
        b.push_str("<h3>Histogram</h3>");
        b.push_str(&histogram(&c.write_samples_ns));
    }
    if c.sets.len() > 1 {
        b.push_str("<h3>Spread across sets</h3>");
        b.push_str(&spread(c));
    }
    if let Some(x) = &c.explain {
        let _ = write!(
            b,
            "<h3>Attribution of slow calls</h3><pre>{}</pre>",
            esc(&rtrec_trace::table::render(x, None))
        );
    }
    b
}
