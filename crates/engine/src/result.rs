//! The result of one recording as a document: what `rtrec record --json`
//! writes and `rtrec report` reads, one typed struct ([`RecordResult`])
//! with a kind tag and a schema version, documented field by field in
//! `docs/record-schema.md`.
//!
//! Design choices:
//! - The engine's [`Summary`] is flattened in: its fields stay at the top
//!   level with their names (`records_written`, `write_ns`), so the JSON
//!   of earlier versions and the programs reading it keep working; the
//!   document only gains `kind` and `schema_version`.
//! - The sections that other crates make (`explain`: `rtrec-trace`'s
//!   attribution; `device`: the emulated device's report; `isolation`:
//!   the recording's cgroup) are carried as JSON values whose schema is
//!   their owner's, documented in `docs/record-schema.md`. The engine is
//!   the one crate every build of the recorder has, and it must not pull
//!   the tracer or the emulator into a recorder that has neither; a
//!   reader that has them (the report) reads the section with the owner's
//!   type.
//! - The sections' type is a parameter (`V`, [`serde_json::Value`] unless
//!   said): a reader takes them as values, and `rtrec record --json`
//!   serialises each straight from its owner's type, with no value built
//!   first (the board's record-only binary has no room for serde_json's
//!   value serialiser: docs/embedded.md, "Under 1 MB,
//!   position-independent").
//! - Missing optional sections are left out, not `null`.

use serde::{Deserialize, Serialize};

use crate::recorder::Summary;

/// Version of the record schema; raised on any incompatible change.
/// Version 0 is a summary from before the versioned schema (no `kind`, no
/// `schema_version`), read the same way.
pub const RECORD_SCHEMA_VERSION: u32 = 1;

/// What a result document is: the tag that tells a recording's result
/// from a bench result without looking at its other keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultKind {
    /// `rtrec record --json`.
    #[default]
    Record,
}

/// `rtrec record --json`: one recording's result, its optional sections
/// of type `V` (see the module docs).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecordResult<V = serde_json::Value> {
    /// Always `"record"` (absent in version 0).
    #[serde(default)]
    pub kind: ResultKind,
    /// [`RECORD_SCHEMA_VERSION`] when written (absent, read as 0, in a
    /// summary from before the versioned schema).
    #[serde(default)]
    pub schema_version: u32,
    /// The engine's summary; its fields are at the top level of the JSON.
    #[serde(flatten)]
    pub summary: Summary,
    /// `--timeline`: the latency of every `write()` in call order, ns (at
    /// most 1,000,000); left out without `--timeline`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline_write_ns: Vec<u64>,
    /// `--timeline`: the time of every `record()` call on the producer's
    /// thread in call order, ns (at most 1,000,000); left out without
    /// `--timeline`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline_record_ns: Vec<u64>,
    /// `--timeline` with the synthetic source: the lateness of every
    /// period's release in order, ns (at most 1,000,000); left out without
    /// `--timeline` and for records from stdin (no schedule).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline_lateness_ns: Vec<u64>,
    /// `--total` as asked, bytes; left out without `--total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    /// The whole records `--total` allows: `total_bytes / size`, rounded
    /// down (a total is never exceeded); left out without `--total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_records: Option<u64>,
    /// The flight recorder's resident memory, sampled after so many events;
    /// left out without the flight recorder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resident_after_events: Vec<ResidentSample>,
    /// `--io-class` / `--io-weight`: what was applied (schema in
    /// `docs/record-schema.md`); left out without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<V>,
    /// `--explain`: the attribution of the slow `write()` calls, an
    /// `rtrec_trace::Explanation`; left out without `--explain` or when
    /// tracing was not possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<V>,
    /// `--explain-baseline`: the producer's loop copied each record into a
    /// buffer instead of calling `record()`, so nothing was recorded and
    /// the summary's counts are of an empty recording; `explain` is the
    /// platform's own part, the baseline of an endurance run
    /// (docs/endurance.md). Left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_baseline: bool,
    /// `--device`: the emulated device and how the recording fared on it
    /// (schema in `docs/record-schema.md`); left out without `--device`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<V>,
    /// Ring mode: how the ring was sized, a
    /// [`crate::sizing::RingSizing`] (docs/embedded.md); left out in
    /// direct mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<V>,
    /// What the recording and the pool hold on disk when it ended, and the
    /// unused tail given back or kept (`disk:` lines of the summary;
    /// schema in `docs/record-schema.md`); left out when the command did
    /// not measure it (the C library, the bench).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<V>,
    /// Bytes written to the recording directory's block device from just
    /// before the recorder was created to the end (the device's sectors
    /// written: every writer of the device, metadata and journal
    /// included); left out where the device is unknown (tmpfs, overlay)
    /// and by the C library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_bytes_written: Option<u64>,
    /// Bytes this process sent to storage over the same span
    /// (`/proc/self/io` `write_bytes`); left out where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_write_bytes: Option<u64>,
    /// Where and how the recording was made: rtrec's version, the command
    /// line, the host, the target's file system and the real-time setup
    /// asked for and granted (schema in `docs/record-schema.md`); left out
    /// by the C library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<V>,
    /// What the recording cost in CPU: each thread's and the process's
    /// time and each per MiB of payload (`rtrec record`; absent from the
    /// C library's summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<V>,
    /// `device_bytes_written` (else `process_write_bytes`) per byte of
    /// payload (`bytes_written`); left out without payload or counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_amplification: Option<f64>,
}

/// The process's resident memory after so many flight-recorder events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidentSample {
    /// Events served when it was sampled.
    pub events: u64,
    /// Resident set size (`VmRSS`), bytes.
    pub resident_bytes: u64,
}

impl<V> RecordResult<V> {
    /// The result of a recording whose summary is `summary`, with no
    /// optional section; the writer of the document adds those it has.
    /// The `write()` and `record()` samples (`Config::keep_write_samples`)
    /// move into `timeline_write_ns` and `timeline_record_ns`.
    pub fn new(mut summary: Summary) -> RecordResult<V> {
        RecordResult {
            kind: ResultKind::Record,
            schema_version: RECORD_SCHEMA_VERSION,
            timeline_write_ns: std::mem::take(&mut summary.write_samples),
            timeline_record_ns: std::mem::take(&mut summary.record_samples),
            summary,
            timeline_lateness_ns: Vec::new(),
            total_bytes: None,
            total_records: None,
            resident_after_events: Vec::new(),
            isolation: None,
            explain: None,
            explain_baseline: false,
            device: None,
            ring: None,
            disk: None,
            device_bytes_written: None,
            process_write_bytes: None,
            write_amplification: None,
            context: None,
            cost: None,
        }
    }
}

impl RecordResult {
    /// Reads a document written by `rtrec record --json`, of this version
    /// or an earlier one.
    ///
    /// # Errors
    /// One sentence: not JSON of a recording's result (with serde's
    /// reason), or written by a newer rtrec.
    pub fn from_json(bytes: &[u8]) -> Result<RecordResult, String> {
        let not_ours =
            |e: serde_json::Error| format!("not the result of `rtrec record --json` ({e})");
        // The version first: a newer document may not read as this type.
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            schema_version: u32,
        }
        let v: Version = serde_json::from_slice(bytes).map_err(not_ours)?;
        if v.schema_version > RECORD_SCHEMA_VERSION {
            return Err(format!(
                "written by a newer rtrec (record schema {}; this one reads up to {RECORD_SCHEMA_VERSION})",
                v.schema_version
            ));
        }
        serde_json::from_slice(bytes).map_err(not_ours)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::stats::Latency;

    fn summary() -> Summary {
        let mut l = Latency::new();
        [1_000, 2_000, 30_000].iter().for_each(|&v| l.record(v));
        Summary {
            file_sizing: None,
            config: Config::default(),
            complete: true,
            abort_reason: None,
            records_offered: 3,
            records_queued: 3,
            records_written: 3,
            records_dropped: 0,
            durable_seq: 3,
            drops: Default::default(),
            layout_misfits: 0,
            losses_stored: 0,
            bytes_written: 3 << 14,
            file_bytes: 50_000,
            files: vec!["rec-0001.rtr".into()],
            missed_periods: 0,
            write_ns: l.summary(),
            record_ns: l.summary(),
            lateness_ns: None,
            flush: Default::default(),
            writer_cpu_ns: Some(12_345),
            pool: Default::default(),
            retired_files: 0,
            retired_bytes: 0,
            retired_seq_to: 0,
            retired_events: 0,
            retired_earlier_files: 0,
            retired_earlier_bytes: 0,
            retired_late_files: 0,
            retired_unclaimed: 0,
            retired_unshipped_files: 0,
            retired_unshipped_bytes: 0,
            retired_empty_recordings: 0,
            retired_other_recordings: Vec::new(),
            io_resubmitted: 0,
            flight: None,
            triggers: 0,
            ring_waits: 0,
            ring_wait_ns: 0,
            ring_wait_max_ns: 0,
            duration_ns: 15_000_000,
            error: None,
            end_complete: true,
            warnings: vec![],
            write_samples: vec![1_000, 2_000, 30_000],
            record_samples: vec![],
            write_latency: l.clone(),
            record_latency: l,
        }
    }

    #[test]
    fn a_result_reads_back_as_written_with_its_kind_and_version() {
        let mut r = RecordResult::<serde_json::Value>::new(summary());
        r.resident_after_events.push(ResidentSample {
            events: 1,
            resident_bytes: 4 << 20,
        });
        r.explain = Some(serde_json::json!({"timed_calls": 3}));
        let text = serde_json::to_string(&r).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["kind"], "record");
        assert_eq!(v["schema_version"], RECORD_SCHEMA_VERSION);
        assert_eq!(
            v["records_written"], 3,
            "the summary stays at the top level"
        );
        assert!(v.get("device").is_none(), "absent sections are left out");
        let back = RecordResult::from_json(text.as_bytes()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), v);
        assert_eq!(back.timeline_write_ns, vec![1_000, 2_000, 30_000]);
        assert_eq!(back.summary.write_ns, r.summary.write_ns);
    }

    #[test]
    fn a_summary_from_before_the_schema_reads_as_version_0() {
        let mut v = serde_json::to_value(summary()).unwrap();
        assert!(v.get("kind").is_none());
        v["timeline_write_ns"] = serde_json::json!([5]);
        let r = RecordResult::from_json(v.to_string().as_bytes()).unwrap();
        assert_eq!(r.schema_version, 0);
        assert_eq!(r.timeline_write_ns, vec![5]);
    }

    #[test]
    fn a_newer_version_or_another_document_is_one_sentence() {
        let mut v =
            serde_json::to_value(RecordResult::<serde_json::Value>::new(summary())).unwrap();
        v["schema_version"] = (RECORD_SCHEMA_VERSION + 1).into();
        let e = RecordResult::from_json(v.to_string().as_bytes()).unwrap_err();
        assert!(e.starts_with("written by a newer rtrec"), "{e}");
        let e = RecordResult::from_json(br#"{"cases": []}"#).unwrap_err();
        assert!(
            e.starts_with("not the result of `rtrec record --json`"),
            "{e}"
        );
    }
}
