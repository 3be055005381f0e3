//! `--json`: the report as pretty-printed JSON (schema in
//! `docs/bench-schema.md`).

use crate::report::BenchReport;

use super::exporter::Exporter;

/// Writes [`BenchReport`] as JSON.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>> {
        let mut v = serde_json::to_vec_pretty(report)?;
        v.push(b'\n');
        Ok(v)
    }
}
