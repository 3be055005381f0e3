//! `--export-csv` and `--export-markdown`: one row per case, as hyperfine
//! exports, for spreadsheets and for pasting into a pull request. CSV
//! numbers are integers with the unit in the column name (`max_ns`); a
//! loaded case names its same-load floor, whose row is in the same file,
//! beside its `record()` p99 and max;
//! Markdown prints them as rtrec prints durations (`12.5 ms`).

use std::fmt::Write as _;

use crate::output::table::published_us;
use crate::report::{BenchReport, CaseResult};

use super::exporter::Exporter;

/// Writes one CSV row per case.
pub struct CsvExporter;

/// Writes a Markdown table, one row per case.
pub struct MarkdownExporter;

/// The CSV header.
pub const CSV_HEADER: &str = "case,study,timed_call,published_min_us,published_avg_us,published_max_us,\
count,min_ns,mean_ns,p50_ns,p99_ns,p999_ns,max_ns,set_max_min_ns,set_max_max_ns,missed_periods,records_dropped,\
same_load_floor,record_p99_ns,record_max_ns,error";

fn opt(v: Option<u64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// A CSV field, quoted when it holds a comma, quote or newline.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn study(c: &CaseResult) -> String {
    serde_json::to_value(c.study)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

impl Exporter for CsvExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        let mut s = format!("{CSV_HEADER}\n");
        for c in &report.cases {
            let [pmin, pavg, pmax] = published_us(c.published.as_ref()).map(opt);
            let w = c.write_ns;
            let range = c.set_max_range();
            let row = [
                field(&c.name),
                field(&study(c)),
                field(&c.timed_call),
                pmin,
                pavg,
                pmax,
                opt(w.map(|w| w.count)),
                opt(w.map(|w| w.min)),
                opt(w.map(|w| w.mean)),
                opt(w.map(|w| w.p50)),
                opt(w.map(|w| w.p99)),
                opt(w.map(|w| w.p999)),
                opt(w.map(|w| w.max)),
                opt(range.map(|r| r.0)),
                opt(range.map(|r| r.1)),
                c.missed_periods.to_string(),
                c.records_dropped.to_string(),
                field(c.same_load_floor.as_deref().unwrap_or("")),
                opt(c.record_ns.map(|r| r.p99)),
                opt(c.record_ns.map(|r| r.max)),
                field(c.error.as_deref().unwrap_or("")),
            ];
            let _ = writeln!(s, "{}", row.join(","));
        }
        Ok(s.into_bytes())
    }
}

impl Exporter for MarkdownExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        let d = |v: Option<u64>| v.map_or("–".to_string(), rtrec_units::format_duration);
        let us = |v: Option<u64>| d(v.map(|u| u * 1000));
        let mut s = String::from(
            "| case | published max | min | mean | p50 | p99.9 | max | set maxima | missed |\n\
             |:---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for c in &report.cases {
            let w = c.write_ns;
            let range = c.set_max_range().map_or("–".to_string(), |(a, b)| {
                format!("{} – {}", d(Some(a)), d(Some(b)))
            });
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.name,
                us(c.published.as_ref().and_then(|p| p.max_us)),
                d(w.map(|w| w.min)),
                d(w.map(|w| w.mean)),
                d(w.map(|w| w.p50)),
                d(w.map(|w| w.p999)),
                d(w.map(|w| w.max)),
                range,
                c.missed_periods
            );
        }
        Ok(s.into_bytes())
    }
}
