//! `export --all`: every recording of the inputs in one table (CSV or
//! JSON lines), a first column `recording` naming each row's recording.
//!
//! Design choices:
//! - **Each recording is walked on its own**, as `export` walks one: its
//!   gaps are rows with its id, a gap never spans two recordings, and its
//!   sequence numbers start over (they are the recording's).
//! - **Oldest first** (the engine's order, as `ls` lists them); framed
//!   copies are left out (their rows are their source's) and said, as
//!   are files that are not recordings.
//! - **Refused as one export is**: a corrupt recording without
//!   `--salvage`, and gaps in any recording without `--allow-gaps`, refuse
//!   the whole table (exit 1, nothing written): a table that silently
//!   holds fewer records than its recordings would be the worst answer.
//!   `--from`/`--to`/`--every` apply to each recording; a recording with
//!   nothing in the range adds no rows, and the table is refused only
//!   when none has any.

use std::io::Write;

use rtrec_engine::format::FLAG_LINES;

use rtrec_engine::reader::FileStatus;
use rtrec_engine::recordings::{Directory, Recording};

use super::part::Part;
use super::range::{self, refuse_empty, Selection};
use super::rows::Walked;
use super::table::Table;
use crate::cli::{ExportArgs, ExportFormat, PayloadEncoding};
use crate::error::usage;
use crate::error::Result;

/// One recording of the table: its id and its files.
pub type Each = (String, Vec<Part>);

/// The recordings `--all` exports (oldest first, framed copies and files
/// that are not recordings left out and said on stderr).
///
/// # Errors
/// A format other than CSV or JSON lines, or no recording.
pub fn recordings(format: ExportFormat, d: &Directory) -> Result<Vec<&Recording>> {
    if !matches!(format, ExportFormat::Csv | ExportFormat::Jsonl) {
        return usage(
            "--all writes one table of several recordings: give --format csv or jsonl (or -o NAME.csv, NAME.jsonl)",
        );
    }
    for r in d.recordings.iter().filter(|r| r.id.is_none() || r.copy) {
        let what = if r.copy {
            "a framed copy (its rows are its source's)"
        } else {
            "not a recording"
        };
        eprintln!(
            "rtrec: note: left out '{}': {what}",
            r.files[0].path.display()
        );
    }
    let recs: Vec<&Recording> = d
        .recordings
        .iter()
        .filter(|r| r.id.is_some() && !r.copy)
        .collect();
    if recs.is_empty() {
        return usage("the inputs hold no recording");
    }
    Ok(recs)
}

/// The layout the recordings store (`rtrec record --layout`), when they
/// all store the same one (or none does).
///
/// # Errors
/// Recordings of different layouts (or some with one, some without):
/// one table cannot decode them all; `--layout` names the one to use.
pub fn stored_layout<'r>(recs: &[&'r Recording]) -> Result<Option<&'r str>> {
    let first = recs.first().and_then(|r| r.layout());
    match recs.iter().find(|r| r.layout() != first) {
        None => Ok(first),
        Some(r) => usage(format!(
            "recordings {} and {} store different layouts ({} and {}): one table decodes them by one layout, give it with --layout",
            recs[0].id_hex(),
            r.id_hex(),
            first.map_or("none".into(), |l| format!("'{l}'")),
            r.layout().map_or("none".into(), |l| format!("'{l}'"))
        )),
    }
}

/// The table of `each`, with its `recording` column; its payload
/// encoding as one export's (text only when every recording is of lines).
///
/// # Errors
/// A layout field named like a fixed column or `recording`.
pub fn table<'a>(
    a: &ExportArgs,
    format: ExportFormat,
    layout: Option<&'a super::layout::Layout>,
    each: &[Each],
) -> Result<Table<'a>> {
    let lines = each
        .iter()
        .all(|(_, p)| p[0].header.flags & FLAG_LINES != 0);
    let payload = a.payload.unwrap_or(if lines {
        PayloadEncoding::Text
    } else {
        PayloadEncoding::Hex
    });
    Table::new(format, payload, layout)?.with_recording_column()
}

/// Writes the header and every recording's rows; returns the records.
///
/// # Errors
/// A row's, or a selection that kept nothing in any recording.
pub fn write(
    t: &mut Table,
    each: &[Each],
    selection: &Selection,
    out: &mut dyn Write,
) -> Result<u64> {
    t.header(out)?;
    let mut kept = Walked::default();
    for (id, parts) in each {
        t.set_recording(id);
        let w = range::walk_in(parts, selection, &mut |item| t.row(&item, out))?;
        kept.records += w.records;
        kept.gaps += w.gaps;
    }
    if !selection.is_all() {
        refuse_empty(kept)?;
    }
    Ok(kept.records)
}

/// The summary line, and the exit code: 1 when a recording was corrupt
/// (salvaged), else 0.
pub fn summary(a: &ExportArgs, each: &[Each], records: u64, written: u64) -> i32 {
    let to = match a.output.as_os_str() == "-" {
        true => "stdout".to_string(),
        false => a.output.display().to_string(),
    };
    eprintln!(
        "exported {records} records of {} recordings ({}) to {to}",
        each.len(),
        rtrec_units::format_size(written)
    );
    let corrupt = each
        .iter()
        .any(|(_, p)| p.iter().any(|p| p.report.status == FileStatus::Corrupt));
    i32::from(corrupt)
}
