//! `rtrec events`: lists the flight-recorder events found in recording
//! directories, one line each (or `--json`): the trigger's wall-clock
//! time, the pre-trigger span and records captured before it, the
//! post-trigger span and records after it, the files, records, losses and
//! the recording's state (the engine's, as `rtrec ls` says it).
//!
//! The paths are read by the engine's one reader
//! (`rtrec_engine::recordings`, as `rtrec verify`): an event is a
//! recording whose file 0 opens with a trigger frame.
//!
//! Exit codes: 0 every event listed is complete and clean (or there are
//! none); 1 an event is in any other state; 2 usage or I/O errors.

use std::path::PathBuf;

use rtrec_engine::recordings::{Recording, State, SCHEMA_VERSION};
use rtrec_engine::utc_iso;
use serde::Serialize;

use crate::cli::EventsArgs;
use crate::verify::verify_paths;

/// One flight-recorder event: an entry of the `--json` document's
/// `events` (docs/recordings-schema.md). The fields are in the order of
/// their names, as the `serde_json::Value` the document was built as
/// before wrote them, so the text is the same.
#[derive(Debug, Serialize)]
struct Event {
    /// The event's files, in order.
    files: Vec<PathBuf>,
    /// The event's recording id, 16 hex digits (as `rtrec ls` shows it).
    id: String,
    /// Dropped records stored as loss frames.
    lost_records: u64,
    /// Records missing without a loss frame.
    missing_records: u64,
    /// Span of post-trigger data captured, ns (absent while unfinished).
    #[serde(skip_serializing_if = "Option::is_none")]
    post_ns: Option<u64>,
    /// Post-trigger records captured (absent while unfinished).
    #[serde(skip_serializing_if = "Option::is_none")]
    post_records: Option<u64>,
    /// Span of pre-trigger data captured, ns.
    pre_ns: u64,
    /// Pre-trigger records captured.
    pre_records: u64,
    /// Data records in its files.
    records: u64,
    /// The recording's state, as `rtrec ls` says it (the engine's one
    /// precedence, docs/recordings.md).
    state: State,
    /// `CLOCK_MONOTONIC` ns of the trigger (the records' clock).
    trigger_mono_ns: u64,
    /// `trigger_wall_ns` as `YYYY-mm-ddTHH:MM:SS.mmmZ` (UTC).
    trigger_time: String,
    /// Wall-clock time of the trigger, ns since the epoch.
    trigger_wall_ns: u64,
}

/// The events among the recordings (those whose file 0 opens with a
/// trigger), sorted by trigger time.
fn events(recordings: &[Recording]) -> Vec<Event> {
    let mut out = Vec::new();
    for r in recordings.iter().filter(|r| r.is_event()) {
        let (first, last) = (&r.files[0], &r.files[r.files.len() - 1]);
        let Some(t) = first.triggers.first() else {
            continue;
        };
        let ended = last.stored.as_ref().filter(|e| !e.continued);
        let sum = |f: fn(&rtrec_engine::reader::FileReport) -> u64| r.files.iter().map(f).sum();
        out.push(Event {
            id: r.id_hex(),
            trigger_wall_ns: t.trigger_wall_ns,
            trigger_time: utc_iso(t.trigger_wall_ns),
            trigger_mono_ns: t.trigger_ns,
            pre_ns: t.pre_ns,
            pre_records: t.pre_records,
            post_ns: ended.map(|e| e.post_ns),
            post_records: ended.map(|e| e.post_records),
            files: r.files.iter().map(|f| f.path.clone()).collect(),
            records: sum(|f| f.records),
            lost_records: sum(|f| f.lost_records),
            missing_records: sum(|f| f.missing_records),
            state: r.state,
        });
    }
    out.sort_by_key(|e| e.trigger_wall_ns);
    out
}

/// A span in three significant digits and its unit, as every rtrec
/// figure (`rtrec_units::format_duration`).
fn secs(ns: u64) -> String {
    rtrec_units::format_duration(ns)
}

/// Runs `rtrec events`.
pub fn run(a: &EventsArgs) -> crate::error::Result<i32> {
    let d = verify_paths(&a.paths)?;
    let list = events(&d.recordings);
    let clean = list.iter().all(|e| e.state.is_clean());
    if a.json {
        // Keys in the order of their names, as before (see `Event`).
        #[derive(Serialize)]
        struct Doc<'a> {
            events: &'a [Event],
            schema_version: u32,
        }
        let doc = Doc {
            events: &list,
            schema_version: SCHEMA_VERSION,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if list.is_empty() {
        println!("no flight-recorder events");
    } else {
        println!(
            "{:<24}  {:>18}  {:>18}  {:>8}  {:>6}  {:>7}  {:<10}  FILE",
            "TRIGGER (UTC)", "PRE", "POST", "RECORDS", "LOST", "MISSING", "STATE"
        );
        for e in &list {
            let post = match (e.post_ns, e.post_records) {
                (Some(ns), Some(n)) => format!("{} ({n})", secs(ns)),
                _ => "-".into(),
            };
            let status = e.state.name();
            let file = e
                .files
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let more = if e.files.len() > 1 {
                format!(" (+{} more)", e.files.len() - 1)
            } else {
                String::new()
            };
            println!(
                "{:<24}  {:>18}  {post:>18}  {:>8}  {:>6}  {:>7}  {status:<10}  {file}{more}",
                e.trigger_time,
                format!("{} ({})", secs(e.pre_ns), e.pre_records),
                e.records,
                e.lost_records,
                e.missing_records,
            );
        }
    }
    Ok(if clean { 0 } else { 1 })
}
