//! `rtrec verify`: check recordings and report, per file, the records,
//! sequence gaps, stored losses, damaged byte ranges (with the records that
//! can be salvaged after them) and a torn tail. The rules are the engine
//! reader's (`rtrec_engine::reader`); files are read in constant memory.
//!
//! Wall-clock times (UTC, milliseconds) come from each file's header,
//! which maps the monotonic clock of the records to the real-time clock.
//!
//! A directory's pool (`DIR/.pool`) is looked at too: a slot holding an
//! unfinished recording (a crash came before its move out of the pool was
//! on storage) is named, with `rtrec recover DIR` as the way to get it
//! back, and makes the result not clean.
//!
//! A recording `rtrec recover` closed after it was interrupted is reported
//! as "interrupted, closed by recover" (what it cut, the last durable
//! sequence number) and is clean.
//!
//! Exit codes: 0 every file complete (or closed by recover) and clean; 1 a
//! file is corrupt, has
//! missing data, was aborted, is unfinished (interrupted: its intact prefix
//! is reported), or is a raw file that cannot be checked (no sidecar);
//! 2 usage or I/O errors (a FIFO, device or socket is refused).

use std::path::PathBuf;

use rtrec_engine::reader::{FileReport, FileStatus, Scope};
use rtrec_engine::recordings::{Directory, Summary, SCHEMA_VERSION};
use serde::Serialize;

use crate::cli::VerifyArgs;
use rtrec_engine::utc_iso;
use rtrec_units::format_size;

/// The `--json` document (docs/recordings-schema.md).
#[derive(Serialize)]
struct Report {
    /// The version of this document's fields.
    schema_version: u32,
    /// One entry per file.
    files: Vec<FileReport>,
    /// One entry per recording, as `rtrec ls --json` lists it.
    recordings: Vec<Summary>,
    /// Data records in all files.
    records: u64,
    /// Dropped records stored as loss frames in all files.
    lost_records: u64,
    /// Records missing without a loss frame, in all files (missing files
    /// included when their neighbours tell how many they held).
    missing_records: u64,
    /// Records found after damage (what `rtrec export --salvage` saves
    /// beyond the intact prefix).
    salvageable_records: u64,
    /// Damaged byte ranges in all files.
    damaged_ranges: u64,
    /// Pool slots holding an unfinished recording (`rtrec recover` moves
    /// them back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unfinished_in_pool: Vec<PathBuf>,
    /// Hidden `.NAME.tmp` recording files: a preparation in progress, or
    /// one a crash left between its two renames (`rtrec recover` moves or
    /// removes them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    leftover_tmp: Vec<PathBuf>,
    /// True when every file is complete and clean, no pool slot holds an
    /// unfinished recording and no temporary file is left (exit code 0).
    clean: bool,
}

/// Reads every recording file among `paths` (files, or directories of
/// recordings) through the engine's one reader: each file verified, the
/// files of each recording checked against each other, the pool slots
/// holding an unfinished recording and the hidden temporary recording
/// files of the directories found.
pub fn verify_paths(paths: &[PathBuf]) -> crate::error::Result<Directory> {
    Ok(Directory::read_paths(paths, Scope::Whole)?)
}

/// Runs `rtrec verify`.
pub fn run(a: &VerifyArgs) -> crate::error::Result<i32> {
    let d = verify_paths(&a.paths)?;
    let recordings: Vec<Summary> = d.recordings.iter().map(|r| r.summary()).collect();
    let mut files: Vec<FileReport> = d.recordings.into_iter().flat_map(|r| r.files).collect();
    files.sort_by(|x, y| x.path.cmp(&y.path));
    let (in_pool, tmp) = (d.unfinished_in_pool, d.leftover_tmp);
    let report = Report {
        schema_version: SCHEMA_VERSION,
        records: files.iter().map(|f| f.records).sum(),
        lost_records: files.iter().map(|f| f.lost_records).sum(),
        missing_records: files.iter().map(|f| f.missing_records).sum(),
        salvageable_records: files.iter().map(|f| f.salvageable_records).sum(),
        damaged_ranges: files.iter().map(|f| f.damaged_ranges).sum(),
        clean: files.iter().all(|f| f.is_clean())
            && recordings.iter().all(|r| r.state.is_clean())
            && in_pool.is_empty()
            && tmp.is_empty(),
        unfinished_in_pool: in_pool,
        leftover_tmp: tmp,
        recordings,
        files,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(if report.clean { 0 } else { 1 })
}

fn status_word(s: FileStatus) -> &'static str {
    match s {
        FileStatus::Complete => "complete",
        FileStatus::Interrupted => "interrupted, closed by recover",
        FileStatus::Aborted => "ABORTED",
        FileStatus::Unfinished => "UNFINISHED",
        FileStatus::Corrupt => "CORRUPT",
        FileStatus::Incomplete => "INCOMPLETE (files of its recording before it are missing)",
        FileStatus::NotRtrec => "NOT AN RTREC FILE",
        FileStatus::Raw => "raw, matches its sidecar",
        FileStatus::Unverifiable => "UNVERIFIABLE",
    }
}

fn print_text(r: &Report) {
    for f in &r.files {
        let seq = match (f.first_seq, f.next_seq) {
            (Some(a), Some(b)) if b > a => format!(", sequence {a}..{}", b - 1),
            _ => String::new(),
        };
        let salvage = if f.salvageable_records > 0 {
            format!(
                " ({} of them after damage, salvageable)",
                f.salvageable_records
            )
        } else {
            String::new()
        };
        println!(
            "{}: {} - {} records{salvage} ({}){seq}, {} lost (stored), {} missing",
            f.path.display(),
            status_word(f.status),
            f.records,
            format_size(f.bytes),
            f.lost_records,
            f.missing_records
        );
        if let (Some(a), Some(b)) = (f.first_record_wall_ns, f.last_record_wall_ns) {
            println!(
                "  records from {} to {} ({})",
                utc_iso(a),
                utc_iso(b),
                rtrec_units::format_duration(b.saturating_sub(a))
            );
        } else if let Some(c) = f.created_wall_ns {
            println!("  created {}", utc_iso(c));
        }
        for t in &f.triggers {
            println!(
                "  flight-recorder trigger at {}",
                utc_iso(t.trigger_wall_ns)
            );
        }
        for n in &f.notes {
            println!("  {n}");
        }
        if f.notes_omitted > 0 {
            println!("  ... and {} more finding(s) (see --json)", f.notes_omitted);
        }
    }
    for slot in &r.unfinished_in_pool {
        let dir = slot
            .parent()
            .and_then(|p| p.parent())
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        println!(
            "{}: UNFINISHED RECORDING IN THE POOL (a crash interrupted it); `rtrec recover {dir}` moves it back",
            slot.display()
        );
    }
    for t in &r.leftover_tmp {
        let dir = t
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        println!(
            "{}: A TEMPORARY RECORDING FILE (being prepared, or left by a crash between its renames); `rtrec recover {dir}` moves it into place or removes it",
            t.display()
        );
    }
    print_recordings(r);
    println!(
        "{} file(s), {} records, {} lost (stored), {} missing, {} damaged range(s): {}",
        r.files.len(),
        r.records,
        r.lost_records,
        r.missing_records,
        r.damaged_ranges,
        if r.clean { "clean" } else { "NOT CLEAN" }
    );
}

/// One line per recording: its id, the state's sentence, its records and
/// losses (docs/recordings.md).
fn print_recordings(r: &Report) {
    for rec in &r.recordings {
        let unknown = rec.lost_after.map_or(String::new(), |s| {
            format!(", and an unknown number from sequence {s}")
        });
        println!(
            "recording {}: {} - {} records, {} lost{unknown}",
            rec.id,
            rec.state.sentence(),
            rec.records,
            rec.lost
        );
    }
}
