//! The page of `rtrec report` for what `rtrec record --json` wrote, read
//! as its type (`rtrec_engine::result::RecordResult`): the summary in
//! readable names with units, one box row per latency, and with
//! `record --timeline` each latency over time.

use std::fmt::Write as _;

use rtrec_engine::result::RecordResult;
use rtrec_engine::LatencySummary;
use rtrec_trace::Explanation;

use super::box_plot::{box_plot, BoxRow};
use super::distribution::histogram;
use super::markup::{dur, esc, name_value_row, page};
use super::timeline::timeline_of;

/// The summary table of a recording: readable names, values with units.
fn summary_rows(r: &RecordResult) -> Vec<(&'static str, String)> {
    use rtrec_units::format_size;
    let s = &r.summary;
    let c = &s.config;
    let mut rows = vec![
        (
            "result",
            match (&s.error, &s.abort_reason, s.complete) {
                (Some(f), _, _) => format!("failed: {}", f.message),
                (None, Some(why), _) => format!("incomplete: {why}"),
                (None, None, true) => "complete".into(),
                (None, None, false) => "incomplete (records dropped)".into(),
            },
        ),
        ("records offered", s.records_offered.to_string()),
        ("records queued", s.records_queued.to_string()),
        ("records written", s.records_written.to_string()),
        ("records dropped", s.records_dropped.to_string()),
        (
            "records durable (as data or as a stored loss)",
            s.durable_seq.to_string(),
        ),
        ("payload written", format_size(s.bytes_written)),
        ("file bytes (with frames)", format_size(s.file_bytes)),
        ("files", s.files.len().to_string()),
        ("duration", dur(s.duration_ns)),
        ("missed periods", s.missed_periods.to_string()),
        (
            "strategies",
            format!(
                "mode {}, alloc {}, flush {} every {}, io {}, {}",
                c.mode,
                c.alloc,
                c.flush,
                format_size(c.flush_every),
                c.io,
                c.framing
            ),
        ),
        ("ring", format_size(c.ring_bytes as u64)),
        ("file size", format_size(c.file_size)),
        (
            "flush thread",
            format!(
                "{} flushes, {} syncs, {} CPU",
                s.flush.flushes,
                s.flush.syncs,
                dur(s.flush.cpu_ns)
            ),
        ),
    ];
    if let (Some(asked), Some(records)) = (r.total_bytes, r.total_records) {
        rows.push((
            "--total",
            format!(
                "{} asked: {records} whole records (rounded down)",
                format_size(asked)
            ),
        ));
    }
    if let Some(cpu) = s.writer_cpu_ns {
        rows.push(("writer thread CPU", dur(cpu)));
    }
    if s.ring_waits > 0 {
        rows.push((
            "waits for room in the ring",
            format!(
                "{} ({} in all, longest {})",
                s.ring_waits,
                dur(s.ring_wait_ns),
                dur(s.ring_wait_max_ns)
            ),
        ));
    }
    for w in &s.warnings {
        rows.push(("warning", w.clone()));
    }
    rows
}

/// `record --json`'s `context` (the command line, rtrec's version, the
/// host, the target and the real-time setup requested and granted) as a
/// table of its own: every field, named by its path (`host.kernel`), so
/// the page says under which settings and where it was measured, as the
/// JSON does. Design choice: drawn from the JSON value, not a typed copy,
/// so a field the context gains is on the page without a change here.
fn context_section(c: &serde_json::Value) -> String {
    let mut rows = Vec::new();
    flatten("", c, &mut rows);
    let mut b = String::from("<h2>Context</h2><table>");
    for (name, value) in rows {
        b.push_str(&name_value_row(&name, &value));
    }
    b.push_str("</table>");
    b
}

/// `v`'s leaves as (`a.b.c`, text) rows: strings as they are, arrays of
/// scalars joined by spaces (the command line), `-` for null.
fn flatten(path: &str, v: &serde_json::Value, rows: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&join(k), v, rows)),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let words: Vec<String> = a.iter().map(scalar).collect();
            rows.push((
                path.to_string(),
                if words.is_empty() {
                    "-".into()
                } else {
                    words.join(" ")
                },
            ));
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| flatten(&join(&i.to_string()), x, rows)),
        other => rows.push((path.to_string(), scalar(other))),
    }
}

/// A JSON scalar as text.
fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// The page for an `rtrec record --json` result: its summary with units, a
/// box row per latency it holds and, with `record --timeline`, lateness,
/// `record()` and `write()` over time (`timeline_lateness_ns`,
/// `timeline_record_ns`, `timeline_write_ns`) and the `write()` histogram;
/// with `--explain`, the attribution table.
pub fn render_summary(r: &RecordResult) -> String {
    let mut b = String::from("<h1>rtrec record</h1><h2>Summary</h2><table>");
    for (name, value) in summary_rows(r) {
        b.push_str(&name_value_row(name, &value));
    }
    b.push_str("</table>");
    let s = &r.summary;
    let lat: Vec<(&str, LatencySummary)> = [
        ("write()", s.write_ns),
        ("record()", s.record_ns),
        ("lateness", s.lateness_ns),
    ]
    .into_iter()
    .filter_map(|(name, l)| Some((name, l?)))
    .collect();
    if !lat.is_empty() {
        b.push_str("<h2>Latencies</h2><table><tr><th class=\"l\">what</th><th>count</th><th>min</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>");
        for (k, s) in &lat {
            let _ = write!(
                b,
                r#"<tr><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                esc(k),
                s.count,
                dur(s.min),
                dur(s.mean),
                dur(s.p50),
                dur(s.p99),
                dur(s.p999),
                dur(s.max)
            );
        }
        b.push_str("</table>");
        // Quartiles of the raw samples when --timeline kept them all.
        let samples = |k: &str| match k {
            "write()" => &r.timeline_write_ns,
            "record()" => &r.timeline_record_ns,
            _ => &r.timeline_lateness_ns,
        };
        let rows: Vec<BoxRow> = lat
            .iter()
            .map(|(k, s)| BoxRow::of_samples(k, s, samples(k)))
            .collect();
        b.push_str(&box_plot(&rows));
    }
    // Over time: the producer's figures (lateness, record()) beside the
    // writer's (write()). The axis counts calls: the summary does not
    // carry the period.
    for (title, v) in [
        ("Lateness of each period's release", &r.timeline_lateness_ns),
        ("record() on the producer's thread", &r.timeline_record_ns),
        ("write() on the writer's thread", &r.timeline_write_ns),
    ] {
        if !v.is_empty() {
            let _ = write!(b, "<h2>{} over time</h2>", esc(title));
            b.push_str(&timeline_of(v, 0, None, None));
        }
    }
    if !r.timeline_write_ns.is_empty() {
        b.push_str("<h2>write() latency histogram</h2>");
        b.push_str(&histogram(&r.timeline_write_ns));
    }
    if let Some(c) = &r.context {
        b.push_str(&context_section(c));
    }
    // The attribution is rtrec-trace's type; a section it cannot read is
    // left out rather than drawn wrong.
    let explained = r.explain.clone().map(serde_json::from_value::<Explanation>);
    if let Some(Ok(x)) = explained {
        let _ = write!(
            b,
            "<h2>Attribution of slow write() calls</h2><pre>{}</pre>",
            esc(&rtrec_trace::table::render(&x, None))
        );
    }
    page("rtrec record report", &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_a_row_per_field_named_by_its_path() {
        let c = serde_json::json!({
            "command_line": ["rtrec", "record", "--count", "20"],
            "host": {"kernel": "6.18", "cpus": 2},
            "realtime": {"failures": [], "granted": true, "cpu": null},
        });
        let html = context_section(&c);
        for (name, value) in [
            ("command_line", "rtrec record --count 20"),
            ("host.kernel", "6.18"),
            ("host.cpus", "2"),
            ("realtime.failures", "-"),
            ("realtime.granted", "true"),
            ("realtime.cpu", "-"),
        ] {
            assert!(
                html.contains(&name_value_row(name, value)),
                "{name}: {html}"
            );
        }
    }
}
