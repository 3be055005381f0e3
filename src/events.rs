//! `rtrec events`: lists the flight-recorder events found in recording
//! directories, one line each (or `--json`): the trigger's wall-clock
//! time, the pre-trigger span and records captured before it, the
//! post-trigger span and records after it, the files, records, losses and
//! the verdict of `verify` on the event's files.
//!
//! Every file is verified first (the same streaming pass as `rtrec
//! verify`): an event is a recording whose file 0 opens with a trigger
//! frame, and its files are grouped by recording id, never by name.
//!
//! Exit codes: 0 every event listed is complete and clean (or there are
//! none); 1 an event is corrupt, aborted or unfinished; 2 usage or I/O
//! errors.

use std::path::PathBuf;

use rtrec_engine::reader::{FileReport, FileStatus};
use rtrec_engine::utc_iso;
use serde::Serialize;

use crate::cli::EventsArgs;
use crate::verify::verify_paths;

/// One flight-recorder event: the `--json` schema (one array of these).
#[derive(Debug, Serialize)]
struct Event {
    /// Wall-clock time of the trigger, ns since the epoch.
    trigger_wall_ns: u64,
    /// The same, as `YYYY-mm-ddTHH:MM:SS.mmmZ` (UTC).
    trigger_time: String,
    /// `CLOCK_MONOTONIC` ns of the trigger (the records' clock).
    trigger_mono_ns: u64,
    /// Span of pre-trigger data captured, ns.
    pre_ns: u64,
    /// Pre-trigger records captured.
    pre_records: u64,
    /// Span of post-trigger data captured, ns (absent while unfinished).
    #[serde(skip_serializing_if = "Option::is_none")]
    post_ns: Option<u64>,
    /// Post-trigger records captured (absent while unfinished).
    #[serde(skip_serializing_if = "Option::is_none")]
    post_records: Option<u64>,
    /// The event's files, in order.
    files: Vec<PathBuf>,
    /// Data records in its files.
    records: u64,
    /// Dropped records stored as loss frames.
    lost_records: u64,
    /// Records missing without a loss frame.
    missing_records: u64,
    /// The worst verdict among its files.
    status: FileStatus,
}

/// How bad a verdict is, for "the worst of an event's files".
fn badness(s: FileStatus) -> u8 {
    match s {
        FileStatus::Complete | FileStatus::Interrupted | FileStatus::Raw => 0,
        FileStatus::Unfinished => 1,
        FileStatus::Aborted => 2,
        FileStatus::Unverifiable | FileStatus::NotRtrec => 3,
        FileStatus::Corrupt => 4,
    }
}

/// The events among verified files (grouped by directory and recording
/// id, file 0 opening with a trigger), sorted by trigger time.
fn events(files: &[FileReport]) -> Vec<Event> {
    let mut out = Vec::new();
    for first in files.iter().filter(|f| f.index == Some(0)) {
        let Some(t) = first.triggers.first().filter(|_| first.opens_with_trigger) else {
            continue;
        };
        let mut group: Vec<&FileReport> = files
            .iter()
            .filter(|f| {
                f.recording_id == first.recording_id && f.path.parent() == first.path.parent()
            })
            .collect();
        group.sort_by_key(|f| f.index);
        let last = group.last().copied().unwrap_or(first);
        let ended = last.stored.as_ref().filter(|e| !e.continued);
        out.push(Event {
            trigger_wall_ns: t.trigger_wall_ns,
            trigger_time: utc_iso(t.trigger_wall_ns),
            trigger_mono_ns: t.trigger_ns,
            pre_ns: t.pre_ns,
            pre_records: t.pre_records,
            post_ns: ended.map(|e| e.post_ns),
            post_records: ended.map(|e| e.post_records),
            files: group.iter().map(|f| f.path.clone()).collect(),
            records: group.iter().map(|f| f.records).sum(),
            lost_records: group.iter().map(|f| f.lost_records).sum(),
            missing_records: group.iter().map(|f| f.missing_records).sum(),
            status: group
                .iter()
                .map(|f| f.status)
                .max_by_key(|s| badness(*s))
                .unwrap_or(first.status),
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
    let (files, _in_pool, _tmp) = verify_paths(&a.paths)?;
    let list = events(&files);
    let clean = list.iter().all(|e| badness(e.status) == 0);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else if list.is_empty() {
        println!("no flight-recorder events");
    } else {
        println!(
            "{:<24}  {:>18}  {:>18}  {:>8}  {:>6}  {:>7}  {:<10}  FILE",
            "TRIGGER (UTC)", "PRE", "POST", "RECORDS", "LOST", "MISSING", "STATUS"
        );
        for e in &list {
            let post = match (e.post_ns, e.post_records) {
                (Some(ns), Some(n)) => format!("{} ({n})", secs(ns)),
                _ => "-".into(),
            };
            let status = serde_json::to_value(e.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
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
