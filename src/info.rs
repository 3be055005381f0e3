//! `rtrec info RECORDING|DIR`: one recording's facts on one screen — its
//! id and state, files, records, losses, time span and rate, record
//! sizes, lines or binary, which budget owns it and how far it is durable
//! — as `ros2 bag info` tells what one bag holds; `--json` for scripts
//! (docs/recordings-schema.md, "`rtrec info --json`").
//!
//! Design choices:
//! - **The figures are `ls`'s**: the recording is read by the engine's one
//!   reader (`rtrec_engine::recordings`) and its [`Summary`] is what `ls`
//!   lists (state, records, losses, budget, files, size), flattened into
//!   the JSON as it is, so `info` and `ls` can never disagree; `info`
//!   only adds what needs one more pass over the records (the sizes, the
//!   last record's time) and what the file headers and end frames say.
//! - **Which recording**: a file names its recording, read whole from
//!   the file's directory as `ls` reads it (its other files and any
//!   missing ones count); a directory that
//!   holds several gives the newest (as `export DIR` does) and says so on
//!   stderr; `--recording ID|FILE` picks another.
//! - **The durable point** is what the files prove, never what a
//!   recorder said: a recording closed with an end frame is durable to
//!   its end; one closed by `rtrec recover` was durable up to the
//!   sequence number recover's end frame stores; an unfinished one up to
//!   its last file's durable mark (bytes, from the header).
//! - It only reads, like `ls`.

use std::path::{Path, PathBuf};

use rtrec_engine::format::{Interrupted, FLAG_LINES};
use rtrec_engine::reader::Scope;
use rtrec_engine::recordings::{Directory, Recording, Summary, SCHEMA_VERSION};
use rtrec_engine::utc_iso_ns;
use rtrec_units::{format_duration, format_size};
use serde::Serialize;

use crate::cli::InfoArgs;
use crate::error::usage;
use crate::export::rows::{self, Item};

/// What `info --json` prints: `ls`'s summary and what `info` adds.
#[derive(Debug, Serialize)]
struct Info {
    /// The document's version ([`SCHEMA_VERSION`]).
    schema_version: u32,
    /// What `ls` lists of the recording.
    #[serde(flatten)]
    summary: Summary,
    /// Its files present, in index order.
    paths: Vec<PathBuf>,
    /// Wall time of its last record, RFC 3339 with nanoseconds.
    end: Option<String>,
    /// The same, ns since the epoch.
    end_ns: Option<u64>,
    /// Records per second from the first record to the last.
    rate_per_s: Option<f64>,
    /// `lines` (recorded from lines of text) or `binary`.
    content: &'static str,
    /// The smallest record, bytes.
    record_size_min: Option<u64>,
    /// The largest record, bytes.
    record_size_max: Option<u64>,
    /// How far the recording is durable ([`Durable`]).
    durable: Durable,
}

/// How far a recording is durable, as its files prove it.
#[derive(Debug, Serialize)]
struct Durable {
    /// `end` (closed with an end frame: every record), `recovered` (closed
    /// by recover: durable before `seq`), `mark` (unfinished: up to
    /// `bytes` of its last file) or `unknown`.
    point: &'static str,
    /// Every record before this sequence number was durable (`recovered`).
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    /// The last file's durable mark, bytes from its start (`mark`).
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
}

impl Durable {
    fn of(r: &Recording) -> Durable {
        let last = r.files.last();
        let (mut seq, mut bytes) = (None, None);
        let point = match last.and_then(|f| f.stored.as_ref()) {
            Some(end) if end.interrupted => {
                seq = Interrupted::parse(&end.reason).map(|i| i.durable_seq);
                "recovered"
            }
            Some(_) => "end",
            None => match last.and_then(|f| f.durable_mark) {
                Some(m) => {
                    bytes = Some(m);
                    "mark"
                }
                None => "unknown",
            },
        };
        Durable { point, seq, bytes }
    }

    fn sentence(&self) -> String {
        match (self.point, self.seq, self.bytes) {
            ("end", _, _) => "every record (closed with an end frame)".into(),
            ("recovered", Some(s), _) => {
                format!("every record before sequence {s} (closed by `rtrec recover`)")
            }
            ("mark", _, Some(b)) => format!(
                "the last file's first {} (unfinished: `rtrec recover` closes it)",
                format_size(b)
            ),
            _ => "not known (no end frame, no durable mark)".into(),
        }
    }
}

/// The sizes of the records and the last record's time: one pass over
/// the records. `None` where the recording's files cannot be walked (raw
/// files, a file that is not a recording).
fn walk_sizes(r: &Recording) -> Option<(u64, u64, Option<u64>)> {
    let parts = crate::export::open_parts(r.clone()).ok()?;
    let (mut min, mut max, mut last) = (u64::MAX, 0u64, None);
    rows::walk(&parts, &mut |item| {
        if let Item::Record { data, wall_ns, .. } = item {
            min = min.min(data.len() as u64);
            max = max.max(data.len() as u64);
            last = Some(wall_ns);
        }
        Ok(())
    })
    .ok()?;
    (max > 0 || min != u64::MAX).then_some((min, max, last))
}

/// A file's whole recording, as `ls` sees it in the file's directory
/// (its other files and the missing ones count); `None` for a directory,
/// or a file whose directory does not read.
fn in_its_directory(path: &Path) -> Option<Recording> {
    if path.is_dir() {
        return None;
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let d = Directory::read(&dir).ok()?;
    let name = path.file_name()?.to_string_lossy().into_owned();
    d.resolve(&name).ok().cloned()
}

/// The recording `a` names (see the module docs, "Which recording").
fn choose(a: &InfoArgs, d: &Directory) -> crate::error::Result<Recording> {
    if let Some(want) = &a.recording {
        return Ok(d.resolve(want).or_else(usage)?.clone());
    }
    let with_id: Vec<&Recording> = d.recordings.iter().filter(|r| r.id.is_some()).collect();
    match (with_id.as_slice(), d.newest()) {
        ([only], _) => Ok((*only).clone()),
        (_, Some(newest)) => {
            eprintln!(
                "rtrec: note: '{}' holds {} recordings; this is the newest, {}; --recording ID|FILE picks another (`rtrec ls` lists them)",
                a.path.display(),
                with_id.len(),
                newest.id_hex()
            );
            Ok(newest.clone())
        }
        (_, None) => match d.recordings.first() {
            Some(r) => Ok(r.clone()),
            None => usage(format!("'{}' holds no recording", a.path.display())),
        },
    }
}

/// Runs `rtrec info`.
pub fn run(a: &InfoArgs) -> crate::error::Result<i32> {
    if !a.path.exists() {
        return usage(format!("'{}' does not exist", a.path.display()));
    }
    let r = match in_its_directory(&a.path) {
        Some(r) if a.recording.is_none() => r,
        _ => choose(
            a,
            &Directory::read_paths(std::slice::from_ref(&a.path), Scope::Between)?,
        )?,
    };
    let summary = r.summary();
    let walked = walk_sizes(&r);
    let end_ns = walked.and_then(|w| w.2);
    let rate_per_s = match (summary.duration_s, summary.records) {
        (Some(s), n) if s > 0.0 && n > 1 => Some((n - 1) as f64 / s),
        _ => None,
    };
    let lines = r
        .files
        .first()
        .and_then(|f| crate::export::header_flags(&f.path))
        .is_some_and(|flags| flags & FLAG_LINES != 0);
    let info = Info {
        schema_version: SCHEMA_VERSION,
        paths: r.files.iter().map(|f| f.path.clone()).collect(),
        end: end_ns.map(utc_iso_ns),
        end_ns,
        rate_per_s,
        content: if lines { "lines" } else { "binary" },
        record_size_min: walked.map(|w| w.0),
        record_size_max: walked.map(|w| w.1),
        durable: Durable::of(&r),
        summary,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        print!("{}", text(&info));
    }
    Ok(0)
}

/// The `layout` row: the layout the recording stores (`record
/// --layout`), its record size, and whether every record fits it; `-`
/// without one.
fn layout_row(i: &Info) -> String {
    let Some(text) = &i.summary.layout else {
        return "-".to_string();
    };
    let Ok(l) = rtrec_engine::layout::Layout::parse_stored(text) else {
        return text.clone();
    };
    let size = l.size() as u64;
    let fit = match (i.record_size_min, i.record_size_max) {
        (Some(a), Some(b)) if a == size && b == size => "every record fits it",
        (Some(_), Some(_)) => "some records are of another size",
        _ => "no record yet",
    };
    format!("{text} ({size} B a record; {fit})")
}

/// The text form: one fact a line.
fn text(i: &Info) -> String {
    let s = &i.summary;
    let name = |p: &PathBuf| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let files = match i.paths.as_slice() {
        [] => "none".to_string(),
        [one] => name(one),
        [first, .., last] => format!("{} to {}", name(first), name(last)),
    };
    let mut lost = s.lost.to_string();
    if s.lost > 0 {
        lost += &format!(
            " ({} dropped while recording, {} missing, {} cut by recover)",
            s.dropped, s.missing, s.cut
        );
    }
    if let Some(at) = s.lost_after {
        lost += &format!("; an unknown number from sequence {at} (its last files are missing)");
    }
    let sizes = match (i.record_size_min, i.record_size_max) {
        (Some(a), Some(b)) if a == b => format!("{a} B, every record"),
        (Some(a), Some(b)) => format!("{a} B to {b} B"),
        _ => "-".to_string(),
    };
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    let layout = layout_row(i);
    let rows = [
        ("recording", s.id.clone()),
        (
            "state",
            format!(
                "{}{}",
                s.state.name(),
                if s.copy { " (a framed copy)" } else { "" }
            ),
        ),
        (
            "files",
            format!("{} ({files}), {}", s.files, format_size(s.size_bytes)),
        ),
        (
            "records",
            format!(
                "{} ({}, {} of payload)",
                s.records,
                i.content,
                format_size(s.bytes)
            ),
        ),
        ("lost", lost),
        ("retired", s.retired.to_string()),
        ("first", or_dash(s.start_ns.map(utc_iso_ns))),
        ("last", or_dash(i.end.clone())),
        (
            "duration",
            or_dash(s.duration_s.map(|d| format_duration((d * 1e9) as u64))),
        ),
        (
            "rate",
            or_dash(i.rate_per_s.map(|r| format!("{r:.3} records/s"))),
        ),
        ("record size", sizes),
        ("layout", layout),
        ("budget", s.budget.to_string()),
        ("durable", i.durable.sentence()),
    ];
    rows.iter().map(|(k, v)| format!("{k:<12} {v}\n")).collect()
}
