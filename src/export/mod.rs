//! `rtrec export`: write the valid records of a recording to one file —
//! raw by default (the records' bytes back to back, packed frames
//! unpacked), or with `--framed` an rtrec file (header and frames up to the
//! valid end, no pool flag: a file any reader and `rtrec verify` accept
//! without knowing about pools; packed frames stay packed). It reports the
//! wall-clock span of the records. The output is created new, never
//! replaced; `-` writes to stdout.
//!
//! **A whole recording.** The inputs are a recording's directory (all its
//! `*.rtr` files) or some of its files, in any order. They are put in
//! order by their headers — the recording id says which recording a file
//! belongs to, the file index its place, and sequence numbers continue
//! from one file to the next — never by name or modification time. Files
//! of different recordings are refused in one sentence (a directory often
//! holds several runs: name the files of one). Idle pool slots (header
//! flag `SLOT`, not part of any recording) are skipped and counted. A file
//! missing between two of the inputs (a hole in the file indexes or the
//! sequence numbers) is a gap like any other: refused unless
//! `--allow-gaps`, which exports and reports it. Files before the first
//! input or after the last are not a gap in what was asked for (exporting
//! part of a recording is a choice) but the summary says they exist. A
//! loop recording's (header flag `LOOP`) leading files retired by the loop
//! are said to be retired: the directory exports with no flag.
//!
//! Design choice: `--framed` takes one input file. Each file's frames are
//! chained to that file (its generation, index and recording id seed the
//! chain), so frames of several files cannot be copied into one file
//! without rewriting every frame; a framed copy per file keeps the
//! original bytes, and raw is the one-stream form.
//!
//! The inputs are verified first (one streaming pass each), then copied (a
//! second), both in constant memory. A corrupt input is refused with exit
//! 1; `--salvage` writes every frame that is valid on its own and still
//! exits 1, so a script never mistakes a salvage for a clean export.
//! Salvaged frames are copied verbatim, chain links included, so a framed
//! salvage still verifies as corrupt where frames are missing: the damage
//! never disappears.
//!
//! Gaps are refused the same way: records dropped while recording (stored
//! as loss frames) or missing without a trace make the exported stream
//! shorter than what was offered, which a consumer of the output (a video
//! decoder, a parser) cannot see. Nothing is written and the exit code is
//! 1, unless `--allow-gaps`, which exports and reports them.
//!
//! A recording made from lines (header flag `FLAG_LINES`) is exported raw
//! with a newline after each record, so the text comes back as it went in
//! (a last line that had no newline gets one).
//!
//! **Tables** (`--format csv`, `--format jsonl`): a row per record with
//! its sequence number and times and a row per gap with its reason
//! ([`table`], from [`rows`]); `--layout` decodes fixed-size binary records
//! into named, typed columns ([`layout`]). Gaps are rows there, so the
//! export is refused for gaps only without `--allow-gaps` as for raw.
//!
//! **MCAP** (`--format mcap`, [`mcap`]): the same walk as JSON messages
//! for Foxglove and MCAP's tools, a channel of records (the fields under a
//! JSON Schema with `--layout`, else the bytes in base64 or the text) and
//! a channel of gaps. It is binary: `-o -` is refused while stdout is a
//! terminal.
//!
//! **NumPy** (`--format numpy`, [`numpy`]): the same walk as fixed-width
//! binary rows after a JSON header line that gives their dtype, for
//! `np.frombuffer` (the Python package reads this). Binary: `-o -` is
//! refused while stdout is a terminal.
//!
//! **Parquet** (`--format parquet`, [`parquet`]): the same walk as one
//! Parquet table with the CSV's columns in Parquet's own types (the
//! layout's fields typed, gaps as rows whose record columns are null), for
//! pandas, polars, DuckDB and every Arrow reader. Binary: `-o -` is
//! refused while stdout is a terminal.
//!
//! **Arrow IPC** (`--format arrow` and `arrow-stream`, [`arrow`], feature
//! `arrow`): the Parquet export's table as Arrow's IPC file or stream,
//! each field in its own Arrow type, for pyarrow and polars to map or read
//! as it arrives (the Python package's `to_arrow()`). Binary, as Parquet.
//!
//! **Part of it, where it goes, all of it** ([`range`], [`output`],
//! [`all`]): `--from`/`--to` (a sequence number or a time) and
//! `--every N` select records, their gaps kept as rows; `-o`'s extension
//! names the format when `--format` does not, `.gz`/`.zst` compress it,
//! and the file is written under a temporary name and renamed when whole
//! (an existing one only replaced with `--force`); `--all` writes every
//! recording of the inputs as one table with a `recording` column.
//!
//! **As a library call** ([`convert`]): `rtrec ship --convert` writes a
//! recording's MCAP or Parquet through the same checks and writers.
//!
//! **Which recording.** A directory that holds several recordings (every
//! second run of the README's command leaves two in `./rtrec-data`)
//! exports the newest (the latest first record), and says which and how
//! to pick another; `--recording ID|FILE` picks one by its id (as `rtrec
//! ls` shows it, or a unique prefix) or by one of its files' names. Files
//! named one by one that belong to different recordings are still refused
//! without `--recording`: naming them says they were meant together.

use std::io::Write;
use std::path::PathBuf;

use rtrec_engine::format::{
    FrameKind, PackedInfo, FLAG_COPY, FLAG_LINES, FLAG_OPEN, FLAG_POOLED, HEADER_LEN,
};
use rtrec_engine::reader::{
    open_regular, read_header, FileReport, FileStatus, FrameWalker, Scope, Step,
};
use rtrec_engine::recordings::{Directory, Recording};
use rtrec_engine::utc_iso;

#[cfg(feature = "tables")]
use crate::cli::PayloadEncoding;
use crate::cli::{ExportArgs, ExportFormat};
use crate::error::usage;

#[cfg(feature = "tables")]
mod all;
#[cfg(feature = "arrow")]
mod arrow;
#[cfg(all(feature = "tables", feature = "ship"))]
pub mod convert;
#[cfg(feature = "tables")]
mod layout;
#[cfg(feature = "tables")]
mod mcap;
#[cfg(feature = "tables")]
mod numpy;
mod output;
#[cfg(feature = "tables")]
mod parquet;
pub(crate) mod part;
pub mod range;
#[cfg(feature = "tables")]
pub(crate) mod rows;
#[cfg(feature = "tables")]
mod table;

/// `ship --convert` in a build without the table exports: refused in one
/// sentence (`ship`'s `MakeConverter`; with them it is
/// `convert::for_ship`).
#[cfg(all(not(feature = "tables"), feature = "ship"))]
pub fn ship_converter_left_out(
    _: crate::ship::convert::ConvertFormat,
    _: Option<String>,
    _: bool,
) -> crate::error::Result<Box<dyn crate::ship::convert::Converter>> {
    crate::error::left_out("--convert (the MCAP and Parquet exports)", "tables")
}

/// A parsed `--layout` (nothing in a build without the table exports).
#[cfg(feature = "tables")]
type TableLayout = layout::Layout;
#[cfg(not(feature = "tables"))]
type TableLayout = ();

use part::Part;

/// The inputs read by the engine's one reader
/// (`rtrec_engine::recordings`): a directory's recordings whole (a
/// missing first or last file is lost), files named one by one checked
/// between each other.
fn read_inputs(inputs: &[PathBuf]) -> crate::error::Result<Directory> {
    Ok(Directory::read_paths(inputs, Scope::Between)?)
}

/// The recording to export (see the module docs, "Which recording"): the
/// one `--recording` names, else the only one, else (from a directory)
/// the newest, which it says on stderr; files named one by one of
/// different recordings are refused. A file named that is not a
/// recording is refused; one in a directory is skipped and said.
fn choose_recording(a: &ExportArgs, d: &Directory) -> crate::error::Result<Recording> {
    let recordings: Vec<&Recording> = d.recordings.iter().filter(|r| r.id.is_some()).collect();
    for r in d.recordings.iter().filter(|r| r.id.is_none()) {
        let f = &r.files[0];
        // The reader's note already says "not an rtrec recording (why)":
        // it is the sentence, not a reason to wrap again.
        let why = f
            .notes
            .first()
            .cloned()
            .unwrap_or_else(|| "not an rtrec recording".to_string());
        if a.inputs.contains(&f.path) {
            return usage(format!("'{}' is {why}", f.path.display()));
        }
        eprintln!("rtrec: note: skipped '{}': {why}", f.path.display());
    }
    if recordings.is_empty() {
        return usage(format!(
            "the inputs hold no recording, only {} idle pool slot(s)",
            d.slots.len()
        ));
    }
    if let Some(want) = &a.recording {
        return Ok(d.resolve(want).or_else(usage)?.clone());
    }
    if recordings.len() == 1 {
        return Ok(recordings[0].clone());
    }
    if !a.inputs.iter().any(|p| p.is_dir()) {
        return different_recordings(&recordings);
    }
    let newest = d.newest().unwrap_or(recordings[recordings.len() - 1]);
    let others: Vec<String> = recordings
        .iter()
        .rev()
        .filter(|r| !std::ptr::eq(**r, newest))
        .take(5)
        .map(|r| match r.copy {
            // A copy has its source's id: it is picked by its name.
            true => format!("'{}' (a framed copy)", r.files[0].path.display()),
            false => format!("{} ({})", r.id_hex(), utc_iso(r.started_ns().unwrap_or(0))),
        })
        .collect();
    eprintln!(
        "rtrec: note: the inputs hold {} recordings; exporting the newest, {} (from {}); --recording ID|FILE picks another: {}{}",
        recordings.len(),
        newest.id_hex(),
        utc_iso(newest.started_ns().unwrap_or(0)),
        others.join(", "),
        if recordings.len() > 6 { ", … (rtrec ls DIR lists them all)" } else { "" }
    );
    Ok(newest.clone())
}

/// Files named one by one that belong to different recordings: refused
/// in one sentence (naming them says they were meant together).
fn different_recordings<T>(recordings: &[&Recording]) -> crate::error::Result<T> {
    let names: Vec<String> = recordings
        .iter()
        .map(|r| r.files[0].path.display().to_string())
        .collect();
    // The usual names end in `-NNNN.rtr`: suggest the glob of the first.
    let glob = names[0]
        .strip_suffix(".rtr")
        .and_then(|n| n.rsplit_once('-'))
        .map_or(String::new(), |(base, _)| format!(" (e.g. '{base}-*.rtr')"));
    let shown: Vec<String> = names.iter().take(3).map(|n| format!("'{n}'")).collect();
    usage(format!(
        "the files belong to {} different recordings ({}{}): export one recording at a time, naming its files{glob}",
        names.len(),
        shown.join(", "),
        if names.len() > 3 { ", …" } else { "" }
    ))
}

/// Opens the files of `r` for the copy: each must still be the file its
/// report was made of (same generation, recording and index).
pub(crate) fn open_parts(r: Recording) -> crate::error::Result<Vec<Part>> {
    let mut parts = Vec::with_capacity(r.files.len());
    for report in r.files {
        let name = report.path.display().to_string();
        let src =
            open_regular(&report.path).or_else(|e| usage(format!("cannot read '{name}': {e}")))?;
        let header = match read_header(&src)? {
            Ok(h)
                if Some(h.generation) == report.generation
                    && Some(h.recording_id) == report.recording_id
                    && Some(h.index) == report.index =>
            {
                h
            }
            _ => {
                return usage(format!(
                    "'{name}' changed while it was read: export it again"
                ))
            }
        };
        parts.push(Part {
            src,
            header,
            report,
        });
    }
    Ok(parts)
}

/// The header flags of the recording file at `path` (`None`: not one).
#[cfg(feature = "tables")]
pub(crate) fn header_flags(path: &std::path::Path) -> Option<u32> {
    let src = open_regular(path).ok()?;
    read_header(&src).ok()?.ok().map(|h| h.flags)
}

/// The files missing between or before the parts, one description each
/// (the records they held are in the reports' `missing_records`), and
/// the missing files after the last part (an unknown count).
fn missing_files(parts: &[Part]) -> Vec<String> {
    let mut what = Vec::new();
    let mut next_seq = Some(0);
    for p in parts {
        let n = p.report.files_missing_before;
        if n > 0 {
            let idx = p.header.index;
            let seq = match (next_seq, p.report.first_seq) {
                (Some(x), Some(y)) if y > x => format!(", sequence {x}..{}", y - 1),
                _ => String::new(),
            };
            what.push(match n {
                1 => format!("file {} of the recording is missing{seq}", idx - 1),
                _ => format!(
                    "files {} to {} of the recording are missing{seq}",
                    idx - n,
                    idx - 1
                ),
            });
        }
        next_seq = p.report.next_seq;
    }
    let last = &parts[parts.len() - 1];
    if let Some(at) = last.report.lost_after {
        what.push(format!(
            "the recording continues after '{}' in file {}, which is missing: an unknown number of records from sequence {at}",
            last.name(),
            last.header.index + 1
        ));
    }
    what
}

/// Copies one part's records (raw) or frames (framed) to `out`; returns
/// the records (the bytes are counted by the writer, [`Counted`]).
fn copy_part(
    p: &Part,
    framed: bool,
    line_end: &[u8],
    out: &mut dyn Write,
) -> crate::error::Result<u64> {
    let mut records = 0u64;
    if framed {
        let mut h = p.header.clone();
        // A copy, said in its header: never grouped with its source.
        h.flags = (h.flags & !(FLAG_POOLED | FLAG_OPEN)) | FLAG_COPY;
        h.valid_len = if p.report.stored.is_some() {
            HEADER_LEN as u64 + p.report.frame_bytes
        } else {
            0
        };
        out.write_all(&h.encode())?;
    }
    let mut walker = FrameWalker::new(&p.src, &p.header)?;
    while let Some(step) = walker.next_step()? {
        let Step::Frame(f) = step else { continue };
        if f.end() > p.report.valid_len {
            // After a crash hole: not part of the recording (verify counts
            // these records; `rtrec recover` cuts them).
            break;
        }
        if framed {
            records += match f.header.kind {
                FrameKind::Data => 1,
                FrameKind::Packed => {
                    PackedInfo::decode(&f.payload).map_or(0, |(i, _)| i.count as u64)
                }
                _ => 0,
            };
            walker.copy_range(f.off, f.end() - f.off, out)?;
        } else {
            // Packed frames are unpacked: the records' bytes back to back
            // (each followed by its newline for a recording of lines).
            records += walker.copy_records(&f, line_end, out)?.0;
        }
    }
    Ok(records)
}

/// `f` of each part's report, summed.
fn sum(parts: &[Part], f: fn(&FileReport) -> u64) -> u64 {
    parts.iter().map(|p| f(&p.report)).sum()
}

/// The flags that do not fit the format (before any input is read): one
/// sentence each.
fn check_flags(
    a: &ExportArgs,
    format: ExportFormat,
    selection: &range::Selection,
) -> crate::error::Result<()> {
    if !selection.is_all() && format == ExportFormat::Framed {
        return usage("--from, --to and --every apply to raw and the table formats, not --framed (a framed copy keeps every frame of its file)");
    }
    #[cfg(not(feature = "tables"))]
    if !selection.is_all() {
        return crate::error::left_out("--from, --to and --every", "tables");
    }
    if matches!(
        format,
        ExportFormat::Mcap
            | ExportFormat::Numpy
            | ExportFormat::Parquet
            | ExportFormat::Arrow
            | ExportFormat::ArrowStream
    ) && a.output.as_os_str() == "-"
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        let what = match format {
            ExportFormat::Mcap => "MCAP",
            ExportFormat::Parquet => "Parquet",
            ExportFormat::Arrow | ExportFormat::ArrowStream => "Arrow IPC",
            _ => "--format numpy",
        };
        return usage(format!("{what} is binary and stdout is a terminal: write it to a file with -o FILE, or pipe it into a program"));
    }
    if a.payload.is_some()
        && !matches!(
            format,
            ExportFormat::Csv | ExportFormat::Jsonl | ExportFormat::Mcap
        )
    {
        return usage("--payload applies to --format csv, jsonl or mcap");
    }
    if format != ExportFormat::Mcap {
        if a.topic.is_some() {
            return usage("--topic applies to --format mcap");
        }
        if a.mcap_compression.is_some() {
            return usage("--mcap-compression applies to --format mcap");
        }
    }
    Ok(())
}

/// Runs `rtrec export`.
pub fn run(a: &ExportArgs) -> crate::error::Result<i32> {
    let (format, compress) = output::format_of(a)?;
    #[cfg(not(feature = "arrow"))]
    if matches!(format, ExportFormat::Arrow | ExportFormat::ArrowStream) {
        return crate::error::left_out("the Arrow IPC export", "arrow");
    }
    output::check_free(&a.output, a.force)?;
    let explicit = parse_layout(a, format)?;
    let selection = range::Selection::of(a.from, a.to, a.every).or_else(usage)?;
    check_flags(a, format, &selection)?;
    #[cfg(feature = "tables")]
    if format == ExportFormat::Mcap {
        // Its flags checked before any input is read.
        mcap::Options::of(a, explicit.as_ref())?;
    }
    let mut how = How {
        format,
        compress,
        layout: explicit.as_ref(),
        selection: &selection,
    };
    let d = read_inputs(&a.inputs)?;
    #[cfg(feature = "tables")]
    if a.all {
        return run_all(a, &how, &d);
    }
    #[cfg(not(feature = "tables"))]
    if a.all {
        return crate::error::left_out("--all (one table of several recordings)", "tables");
    }
    let slots = d.slots.len();
    let chosen = choose_recording(a, &d)?;
    let layout = layout_for(how.layout, stored(a, chosen.layout()), format)?;
    how.layout = layout.as_ref();
    let live = chosen.live;
    let parts = open_parts(chosen)?;
    if format == ExportFormat::Framed && parts.len() > 1 {
        return usage(format!(
            "--framed exports one file (its frames are chained to it), not {}: leave out --framed for one raw stream of the whole recording, or export each file on its own",
            parts.len()
        ));
    }
    let gaps = match refused_or_gaps(a, &parts) {
        Ok(gaps) => gaps,
        Err(why) => {
            eprintln!("rtrec: {why}");
            return Ok(1);
        }
    };
    let (records, written) = write_output(a, how.compress, &mut |out| {
        write_format(a, &how, &parts, out)
    })?;
    eprintln!("{}", summary(a, &parts, records, written));
    Ok(notes(&parts, slots, live, gaps.as_deref()))
}

/// `export --all` ([`all`]): every recording of `d` in one table.
#[cfg(feature = "tables")]
fn run_all(a: &ExportArgs, how: &How, d: &Directory) -> crate::error::Result<i32> {
    let mut each = Vec::new();
    let mut warnings = Vec::new();
    let recordings = all::recordings(how.format, d)?;
    let layout = layout_for(
        how.layout,
        stored(a, all::stored_layout(&recordings)?),
        how.format,
    )?;
    let how = &How {
        layout: layout.as_ref(),
        ..*how
    };
    for r in recordings {
        let parts = open_parts(r.clone())?;
        match refused_or_gaps(a, &parts) {
            Ok(gaps) => warnings.extend(gaps.map(|g| format!("{}: {g}", r.id_hex()))),
            Err(why) => {
                eprintln!("rtrec: recording {}: {why}", r.id_hex());
                return Ok(1);
            }
        }
        each.push((r.id_hex(), parts));
    }
    let mut t = all::table(a, how.format, how.layout, &each)?;
    let (records, written) = write_output(a, how.compress, &mut |out| {
        all::write(&mut t, &each, how.selection, out)
    })?;
    let code = all::summary(a, &each, records, written);
    for w in &warnings {
        eprintln!("rtrec: warning: {w}; exported the others");
    }
    Ok(code)
}

/// Whether the export goes on: `Err` with the sentence why nothing is
/// exported (a corrupt input without `--salvage`, damage between the
/// inputs, gaps without `--allow-gaps`); else the gaps it reports, if any.
fn refused_or_gaps(a: &ExportArgs, parts: &[Part]) -> Result<Option<String>, String> {
    let what = match parts {
        [p] => format!("'{}'", p.name()),
        _ => format!("the {} files of the recording", parts.len()),
    };
    if let Some(p) = parts
        .iter()
        .find(|p| p.report.status == FileStatus::Corrupt)
        .filter(|_| !a.salvage)
    {
        let why = p.report.notes.first().cloned().unwrap_or_default();
        let saved = sum(parts, |r| r.records);
        return Err(format!(
            "'{}' is corrupt ({why}); nothing was exported: `--salvage` writes the {saved} intact records",
            p.name()
        ));
    }
    let missing_files = missing_files(parts);
    let dropped = sum(parts, |r| r.lost_records + r.unstored_drops);
    let untraced = sum(parts, |r| r.missing_records);
    let records_in = sum(parts, |r| r.records);
    let gaps = (dropped + untraced > 0 || !missing_files.is_empty()).then(|| {
        let files = missing_files
            .iter()
            .map(|m| format!("; {m}"))
            .collect::<String>();
        let known = dropped + untraced;
        let count = match parts[parts.len() - 1].report.lost_after {
            None => format!("{known} records are"),
            Some(_) if known == 0 => "an unknown number of records are".to_string(),
            Some(_) => format!("{known} records and an unknown number more are"),
        };
        format!(
            "{count} missing from {what} ({dropped} dropped while recording and stored as losses, {untraced} missing without a trace{files})"
        )
    });
    // A salvage has gaps by nature (it already exits 1 and says so).
    if let (Some(gaps), false) = (&gaps, a.allow_gaps || a.salvage) {
        return Err(format!(
            "{gaps}; nothing was exported: `--allow-gaps` exports the {records_in} records there are"
        ));
    }
    Ok(gaps)
}

/// Where `--layout` applies.
const LAYOUT_FORMATS: &str =
    "--layout applies to --format csv, jsonl, mcap, numpy, parquet, arrow or arrow-stream";

/// `--layout none`: the records' bytes, not the layout the recording
/// stores (not a layout in either spelling: `n` is no struct code).
const NO_LAYOUT: &str = "none";

/// `--layout`, parsed, for a table format (`none`: no layout); refused
/// for the others.
#[cfg(feature = "tables")]
fn parse_layout(a: &ExportArgs, format: ExportFormat) -> crate::error::Result<Option<TableLayout>> {
    match (&a.layout, format) {
        (None, _) => Ok(None),
        (Some(l), _) if l == NO_LAYOUT => Ok(None),
        (
            Some(l),
            ExportFormat::Csv
            | ExportFormat::Jsonl
            | ExportFormat::Mcap
            | ExportFormat::Numpy
            | ExportFormat::Parquet
            | ExportFormat::Arrow
            | ExportFormat::ArrowStream,
        ) => Ok(Some(layout::Layout::parse(l).or_else(usage)?)),
        (Some(_), _) => usage(LAYOUT_FORMATS),
    }
}

/// The layout the recording stores, unless the export asks for the
/// records' bytes (`--layout none`, or `--payload`, which names how the
/// bytes are written).
fn stored<'r>(a: &ExportArgs, layout: Option<&'r str>) -> Option<&'r str> {
    let bytes = a.payload.is_some() || a.layout.as_deref() == Some(NO_LAYOUT);
    layout.filter(|_| !bytes)
}

/// The layout the export decodes by (docs/export.md, "The recording's
/// own layout"): `--layout` when given (said on stderr when it is not the
/// recording's own, `stored`), else, for a table format, the one the
/// recording stores; none for the raw and framed copies.
///
/// Design choice: the stored layout is the default and `--layout` always
/// wins, so a recording made with a wrong layout can still be read by the
/// right one; the line on stderr makes the override visible.
#[cfg(feature = "tables")]
fn layout_for(
    explicit: Option<&TableLayout>,
    stored: Option<&str>,
    format: ExportFormat,
) -> crate::error::Result<Option<TableLayout>> {
    let table = matches!(
        format,
        ExportFormat::Csv
            | ExportFormat::Jsonl
            | ExportFormat::Mcap
            | ExportFormat::Numpy
            | ExportFormat::Parquet
            | ExportFormat::Arrow
            | ExportFormat::ArrowStream
    );
    match (explicit, stored) {
        (Some(l), Some(s)) if l.canonical() != s => {
            eprintln!(
                "rtrec: --layout '{}' overrides the recording's own layout '{s}'",
                l.spec
            );
            Ok(Some(l.clone()))
        }
        (Some(l), _) => Ok(Some(l.clone())),
        (None, Some(s)) if table => Ok(Some(layout::Layout::parse_stored(s).or_else(usage)?)),
        (None, _) => Ok(None),
    }
}

/// Without the table exports there is no layout to decode by.
#[cfg(not(feature = "tables"))]
fn layout_for(
    _: Option<&TableLayout>,
    _: Option<&str>,
    _: ExportFormat,
) -> crate::error::Result<Option<TableLayout>> {
    Ok(None)
}

/// The table exports are left out of this build: refused in one sentence.
#[cfg(not(feature = "tables"))]
fn parse_layout(a: &ExportArgs, format: ExportFormat) -> crate::error::Result<Option<TableLayout>> {
    match (a.layout.is_some(), format) {
        (_, ExportFormat::Csv | ExportFormat::Jsonl) => {
            crate::error::left_out("the CSV and JSON lines exports", "tables")
        }
        (_, ExportFormat::Mcap) => crate::error::left_out("the MCAP export", "tables"),
        (_, ExportFormat::Numpy) => crate::error::left_out("the numpy export", "tables"),
        (_, ExportFormat::Parquet) => crate::error::left_out("the Parquet export", "tables"),
        (_, ExportFormat::Arrow | ExportFormat::ArrowStream) => {
            crate::error::left_out("the Arrow IPC export", "arrow")
        }
        (true, _) => usage(LAYOUT_FORMATS),
        (false, _) => Ok(None),
    }
}

/// What an export writes: its format, compression, layout and selection.
#[derive(Clone, Copy)]
struct How<'a> {
    /// The format.
    format: ExportFormat,
    /// The compression `-o`'s name asks for.
    compress: output::Compress,
    /// `--layout` (read by the table writers only: a build without them
    /// has none).
    #[cfg_attr(not(feature = "tables"), allow(dead_code))]
    layout: Option<&'a TableLayout>,
    /// `--from`, `--to`, `--every`.
    selection: &'a range::Selection,
}

/// Writes the output with `write` (a temporary file renamed into place
/// when whole and durable, [`output`]; or stdout); returns the records
/// and bytes written (of a compressed file: its size). A failed export
/// removes its temporary file: nothing under the output's name.
fn write_output(
    a: &ExportArgs,
    compress: output::Compress,
    write: &mut dyn FnMut(&mut dyn Write) -> crate::error::Result<u64>,
) -> crate::error::Result<(u64, u64)> {
    let target = if a.output.as_os_str() == "-" {
        None
    } else {
        Some(output::Target::create(&a.output, a.force)?)
    };
    let done = {
        let plain: Box<dyn Write + '_> = match &target {
            None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            Some(t) => Box::new(std::io::BufWriter::new(&t.file)),
        };
        let mut out = output::Sink::new(plain, compress)?;
        let mut counted = Counted {
            inner: &mut out,
            bytes: 0,
        };
        let records = write(&mut counted);
        let bytes = counted.bytes;
        records.and_then(|r| out.finish().map(|()| (r, bytes)).map_err(Into::into))
    };
    match (target, done) {
        (Some(t), Ok((records, bytes))) => {
            let size = t.commit()?;
            let compressed = compress != output::Compress::None;
            Ok((records, if compressed { size } else { bytes }))
        }
        (Some(t), Err(e)) => {
            t.abandon();
            Err(e)
        }
        (None, done) => done,
    }
}

/// The records of `parts` in `how.format`, to `out`; returns the records.
#[cfg_attr(not(feature = "tables"), allow(unused_variables))]
fn write_format(
    a: &ExportArgs,
    how: &How,
    parts: &[Part],
    out: &mut dyn Write,
) -> crate::error::Result<u64> {
    match how.format {
        #[cfg(feature = "tables")]
        ExportFormat::Csv
        | ExportFormat::Jsonl
        | ExportFormat::Mcap
        | ExportFormat::Numpy
        | ExportFormat::Parquet => write_walked(a, how, parts, out).map(|w| w.records),
        #[cfg(feature = "arrow")]
        ExportFormat::Arrow | ExportFormat::ArrowStream => {
            write_walked(a, how, parts, out).map(|w| w.records)
        }
        format => write_copy(format, how.selection, parts, out),
    }
}

/// A table format (CSV, JSON lines, MCAP, NumPy, Parquet, Arrow) of `parts`
/// to `out`; returns what the walk wrote (records, gap rows).
#[cfg(feature = "tables")]
fn write_walked(
    a: &ExportArgs,
    how: &How,
    parts: &[Part],
    out: &mut dyn Write,
) -> crate::error::Result<rows::Walked> {
    let (format, layout, selection) = (how.format, how.layout, how.selection);
    let lost = sum(parts, |r| {
        r.lost_records + r.unstored_drops + r.missing_records
    });
    // The Parquet and Arrow files' `rtrec.recording` metadata.
    let meta = || parquet::Meta {
        recording: format!("{:016x}", parts[0].header.recording_id),
        records: sum(parts, |r| r.records),
        lost,
    };
    match format {
        ExportFormat::Mcap => {
            mcap::Options::of(a, layout).and_then(|o| mcap::write(&o, parts, out))
        }
        ExportFormat::Numpy => {
            let hint = numpy::Hint {
                records: sum(parts, |r| r.records) / selection.every,
                lost,
            };
            numpy::write(layout, selection, parts, &hint, out)
        }
        ExportFormat::Parquet => parquet::write(layout, selection, parts, &meta(), out),
        #[cfg(feature = "arrow")]
        ExportFormat::Arrow | ExportFormat::ArrowStream => {
            let ipc = if format == ExportFormat::Arrow {
                arrow::Ipc::File
            } else {
                arrow::Ipc::Stream
            };
            arrow::write(ipc, layout, selection, parts, &meta(), out)
        }
        _ => write_table(a, format, layout, selection, parts, out),
    }
}

/// Counts the bytes written through it.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Raw or framed: the parts copied; returns the records. A selection
/// (tables build) writes the records it keeps from the walk.
fn write_copy(
    format: ExportFormat,
    selection: &range::Selection,
    parts: &[Part],
    out: &mut dyn Write,
) -> crate::error::Result<u64> {
    let line_end: &[u8] = if parts[0].header.flags & FLAG_LINES != 0 {
        b"\n"
    } else {
        b""
    };
    #[cfg(feature = "tables")]
    if !selection.is_all() {
        let walked = range::walk_selected(parts, selection, &mut |item| {
            if let rows::Item::Record { data, .. } = item {
                out.write_all(data)?;
                out.write_all(line_end)?;
            }
            Ok(())
        })?;
        return Ok(walked.records);
    }
    #[cfg(not(feature = "tables"))]
    let _ = selection;
    let mut records = 0;
    for p in parts {
        records += copy_part(p, format == ExportFormat::Framed, line_end, out)?;
    }
    Ok(records)
}

/// CSV or JSON lines: a row per record and per gap; returns the walk's
/// counts.
#[cfg(feature = "tables")]
fn write_table(
    a: &ExportArgs,
    format: ExportFormat,
    layout: Option<&TableLayout>,
    selection: &range::Selection,
    parts: &[Part],
    out: &mut dyn Write,
) -> crate::error::Result<rows::Walked> {
    let lines = parts[0].header.flags & FLAG_LINES != 0;
    let payload = a.payload.unwrap_or(if lines {
        PayloadEncoding::Text
    } else {
        PayloadEncoding::Hex
    });
    let mut t = table::Table::new(format, payload, layout)?;
    t.header(out)?;
    range::walk_selected(parts, selection, &mut |item| t.row(&item, out))
}

/// `exported N records from M files (B bytes, recorded T0 to T1) to OUT`.
fn summary(a: &ExportArgs, parts: &[Part], records: u64, written: u64) -> String {
    let span = match (
        parts.iter().find_map(|p| p.report.first_record_wall_ns),
        parts
            .iter()
            .rev()
            .find_map(|p| p.report.last_record_wall_ns),
    ) {
        (Some(t0), Some(t1)) => format!(", recorded {} to {}", utc_iso(t0), utc_iso(t1)),
        _ => String::new(),
    };
    let from = match parts.len() {
        1 => String::new(),
        n => format!(" from {n} files"),
    };
    format!(
        "exported {records} records{from} ({}{span}) to {}",
        rtrec_units::format_size(written),
        if a.output.as_os_str() == "-" {
            "stdout".into()
        } else {
            a.output.display().to_string()
        }
    )
}

/// What the summary leaves out, on stderr: skipped slots, files of the
/// recording outside the inputs, a salvage's damage, the gaps exported, a
/// missing end frame. The exit code: 1 for a salvage, else 0.
fn notes(parts: &[Part], slots: usize, live: bool, gaps: Option<&str>) -> i32 {
    let first = &parts[0];
    let last = &parts[parts.len() - 1];
    if slots > 0 {
        eprintln!("skipped {slots} idle pool slot(s): they hold no recording");
    }
    if first.header.index > 0
        && !first.report.opens_with_trigger
        && first.report.files_missing_before == 0
    {
        if first.report.retired.is_some() {
            // Retired by the loop, or by a later loop's budget (`verify`
            // checks the claims and the directory's retirement record):
            // no gap.
            let seq = first
                .report
                .first_seq
                .filter(|&s| s > 0)
                .map_or(String::new(), |s| format!(", sequence 0–{}", s - 1));
            eprintln!(
                "rtrec: note: files 0–{} of this recording were retired before it{seq}",
                first.header.index - 1
            );
        } else {
            eprintln!(
                "rtrec: note: the recording's files before file {} are not among the inputs",
                first.header.index
            );
        }
    }
    if last.report.stored.as_ref().is_some_and(|e| e.continued) && last.report.lost_after.is_none()
    {
        eprintln!(
            "rtrec: note: the recording continues after '{}' in a file that is not among the inputs",
            last.name()
        );
    }
    if let Some(p) = parts
        .iter()
        .find(|p| p.report.status == FileStatus::Corrupt)
    {
        let ranges = sum(parts, |r| r.damaged_ranges);
        eprintln!(
            "rtrec: '{}' is corrupt: {ranges} damaged byte range(s) were skipped; the export holds the records that could be saved",
            p.name()
        );
        return 1;
    }
    if let Some(gaps) = gaps {
        eprintln!("rtrec: warning: {gaps}; exported the others");
    }
    if live {
        eprintln!("rtrec: note: the recording is in progress (a recorder is writing it); exported what is on storage so far");
    } else if last.report.stored.is_none() {
        eprintln!("rtrec: warning: '{}' has no end frame (the recording was interrupted); exported its intact prefix", last.name());
    }
    0
}
