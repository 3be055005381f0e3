//! `rtrec ls DIR`: one line per recording in a directory (oldest first,
//! by first record, or creation while it has none) — its id, start,
//! duration, records, losses, state, files and size — as `ros2 bag info`
//! tells what a bag holds; `--json` for scripts.
//!
//! Design choices:
//! - **A recording is its id**, as everywhere (files of one directory
//!   with the same header recording id), never its file names; its first
//!   file's name is shown to pick it by (`export --recording`).
//! - **The state is the recording's worst file**, in this order: `in
//!   progress` (a live recorder holds its name claim: the other figures
//!   are what is on storage so far), `corrupt`, `unfinished` (interrupted,
//!   not yet closed: `rtrec recover DIR`), `aborted`, `recovered`
//!   (interrupted, closed by recover), `complete`; raw files are `raw`
//!   (checked against their sidecar) or `unverifiable`.
//! - **Lost** counts every record that is not in the recording: dropped
//!   while recording (stored losses and drops the end frame counts),
//!   missing without a trace, and cut by recover after a crash hole. What
//!   a loop retired on purpose is not a loss; `--json` gives it apart.
//! - **Which budget owns it** (`BUDGET`, `--json`'s `budget`): `loop`
//!   for a loop recording (header flag `LOOP`), which the next loop of its
//!   prefix may retire, oldest first, for its disk budget; `-` for any
//!   other, which no budget retires unless a loop runs with `--keep-scope
//!   dir`, and then it names each one it retired (docs/unattended.md,
//!   "What the budget owns").
//! - It only reads: it verifies each file as `verify` does (the records
//!   and losses are verify's), looks at the name claims without removing
//!   any, and changes nothing.

use std::path::{Path, PathBuf};

use rtrec_engine::reader::{
    check_continuity, recording_files, verify_file, FileReport, FileStatus,
};
use rtrec_engine::recovery::Live;
use rtrec_engine::utc_iso;
use rtrec_units::{format_duration, format_size};
use serde::Serialize;

use crate::error::{usage, Context};

/// `rtrec ls`.
#[derive(Debug, clap::Args)]
pub struct LsArgs {
    /// Recording directory.
    #[arg(value_name = "DIR", default_value = "rtrec-data")]
    pub dir: PathBuf,
    /// Print JSON (one object with a `recordings` array) instead of the
    /// table.
    #[arg(long)]
    pub json: bool,
}

/// One recording, as listed.
#[derive(Debug, Serialize)]
pub struct Listed {
    /// The header's recording id, 16 hex digits.
    pub id: String,
    /// Its first file present (by file index).
    pub first_file: PathBuf,
    /// State (see the module docs).
    pub state: &'static str,
    /// Wall time of its first record, RFC 3339 (ms), when it has one.
    pub start: Option<String>,
    /// Wall time of its first record, ns since the epoch.
    pub start_ns: Option<u64>,
    /// When its first file was created, ns since the epoch (orders a
    /// recording that has no record on storage yet).
    pub created_ns: Option<u64>,
    /// From its first record to its last, seconds.
    pub duration_s: Option<f64>,
    /// Records intact.
    pub records: u64,
    /// Payload bytes of those records.
    pub bytes: u64,
    /// Records not in the recording (see the module docs).
    pub lost: u64,
    /// Of these: dropped while recording.
    pub dropped: u64,
    /// Of these: missing without a trace.
    pub missing: u64,
    /// Of these: cut by recover after a crash hole.
    pub cut: u64,
    /// Records a loop retired before its first kept file.
    pub retired: u64,
    /// `"loop"`: a loop recording, owned by the budget of the next loop
    /// of its prefix; `"-"`: no budget owns it (see the module docs).
    pub budget: &'static str,
    /// Files present.
    pub files: usize,
    /// Their size on storage, bytes.
    pub size_bytes: u64,
}

/// The recordings of `dir`, oldest first (by first record, then id).
///
/// # Errors
///
/// `dir` cannot be listed, or a file cannot be read.
pub fn list(dir: &Path) -> crate::error::Result<Vec<Listed>> {
    let files = recording_files(dir).context(format_args!("listing '{}'", dir.display()))?;
    let live = Live::of(dir)?;
    let mut reports = Vec::with_capacity(files.len());
    for f in &files {
        reports.push(verify_file(f).context(format_args!("reading '{}'", f.display()))?);
    }
    check_continuity(&mut reports);
    let mut groups: Vec<Vec<&FileReport>> = Vec::new();
    for r in &reports {
        match groups
            .iter_mut()
            .find(|g| g[0].recording_id.is_some() && g[0].recording_id == r.recording_id)
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    let mut listed: Vec<Listed> = groups
        .iter_mut()
        .map(|g| {
            g.sort_by_key(|r| r.index);
            summarize(g, &live)
        })
        .collect();
    let key = |l: &Listed| (l.start_ns.or(l.created_ns), l.id.clone());
    listed.sort_by_key(key);
    Ok(listed)
}

/// One recording's line from its files' reports (in index order).
fn summarize(g: &[&FileReport], live: &Live) -> Listed {
    let sum = |f: fn(&FileReport) -> u64| g.iter().map(|r| f(r)).sum::<u64>();
    let dropped = sum(|r| r.lost_records + r.unstored_drops);
    let (missing, cut) = (sum(|r| r.missing_records), sum(|r| r.cut_records));
    let start_ns = g.iter().find_map(|r| r.first_record_wall_ns);
    let end_ns = g.iter().rev().find_map(|r| r.last_record_wall_ns);
    let is_live = g.iter().any(|r| {
        r.path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| live.is_live(n))
    });
    Listed {
        id: g[0]
            .recording_id
            .map_or_else(|| "-".to_string(), |id| format!("{id:016x}")),
        first_file: g[0].path.clone(),
        state: if is_live { "in progress" } else { state(g) },
        start: start_ns.map(utc_iso),
        start_ns,
        created_ns: g[0].created_wall_ns,
        duration_s: start_ns
            .zip(end_ns)
            .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9),
        records: sum(|r| r.records),
        bytes: sum(|r| r.bytes),
        lost: dropped + missing + cut,
        dropped,
        missing,
        cut,
        retired: g
            .iter()
            .find_map(|r| r.retired.as_ref())
            .map_or(0, |r| r.next_seq.unwrap_or(0).saturating_sub(r.first_seq)),
        budget: if is_loop(&g[0].path) { "loop" } else { "-" },
        files: g.len(),
        size_bytes: g
            .iter()
            .filter_map(|r| std::fs::metadata(&r.path).ok())
            .map(|m| m.len())
            .sum(),
    }
}

/// True when the file at `path` is a loop recording's (header flag
/// `LOOP`).
fn is_loop(path: &Path) -> bool {
    std::fs::File::open(path)
        .ok()
        .and_then(|f| rtrec_engine::reader::read_header(&f).ok())
        .and_then(|h| h.ok())
        .is_some_and(|h| h.flags & rtrec_engine::format::FLAG_LOOP != 0)
}

/// The worst file's state (see the module docs).
fn state(g: &[&FileReport]) -> &'static str {
    const ORDER: [(FileStatus, &str); 8] = [
        (FileStatus::Corrupt, "corrupt"),
        (FileStatus::NotRtrec, "corrupt"),
        (FileStatus::Unfinished, "unfinished"),
        (FileStatus::Aborted, "aborted"),
        (FileStatus::Unverifiable, "unverifiable"),
        (FileStatus::Interrupted, "recovered"),
        (FileStatus::Raw, "raw"),
        (FileStatus::Complete, "complete"),
    ];
    ORDER
        .iter()
        .find(|(s, _)| g.iter().any(|r| r.status == *s))
        .map_or("complete", |(_, name)| name)
}

/// Runs `rtrec ls`.
pub fn run(a: &LsArgs) -> crate::error::Result<i32> {
    if !a.dir.is_dir() {
        return usage(format!("'{}' is not a directory", a.dir.display()));
    }
    let listed = list(&a.dir)?;
    if a.json {
        let doc = serde_json::json!({ "dir": a.dir, "recordings": listed });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    if listed.is_empty() {
        println!("'{}' holds no recordings", a.dir.display());
        return Ok(0);
    }
    println!(
        "{:<16}  {:<24}  {:>9}  {:>9}  {:>6}  {:<11}  {:<6}  {:>5}  {:>9}  FIRST FILE",
        "RECORDING",
        "START (UTC)",
        "DURATION",
        "RECORDS",
        "LOST",
        "STATE",
        "BUDGET",
        "FILES",
        "SIZE"
    );
    for l in &listed {
        let name = l
            .first_file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        println!(
            "{:<16}  {:<24}  {:>9}  {:>9}  {:>6}  {:<11}  {:<6}  {:>5}  {:>9}  {name}",
            l.id,
            l.start.as_deref().unwrap_or("-"),
            l.duration_s
                .map_or_else(|| "-".to_string(), |s| format_duration((s * 1e9) as u64)),
            l.records,
            l.lost,
            l.state,
            l.budget,
            l.files,
            format_size(l.size_bytes),
        );
    }
    Ok(0)
}
