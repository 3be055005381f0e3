//! `rtrec export`: write the valid records of a recording to a plain file —
//! framed (header and frames up to the valid end, no pool flag: a file any
//! reader and `rtrec verify` accept without knowing about pools; packed
//! frames stay packed) or raw (the records' bytes back to back, packed
//! frames unpacked). It reports the wall-clock span of the records. The output is created new, never replaced;
//! `-` writes to stdout.
//!
//! The input is verified first (one streaming pass), then copied (a
//! second), both in constant memory. A corrupt input is refused with exit 1;
//! `--salvage` writes every frame that is valid on its own and still exits
//! 1, so a script never mistakes a salvage for a clean export. Design
//! choice: salvaged frames are copied verbatim, chain links included, so a
//! framed salvage still verifies as corrupt where frames are missing: the
//! damage never disappears.
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

use std::io::Write;

use rtrec_engine::format::{FrameKind, PackedInfo, FLAG_LINES, FLAG_POOLED, HEADER_LEN};
use rtrec_engine::reader::{
    open_regular, read_header, verify_source, FileStatus, FrameWalker, Step,
};
use rtrec_engine::utc_iso;

use crate::cli::ExportArgs;
use crate::usage;

/// Runs `rtrec export`.
pub fn run(a: &ExportArgs) -> crate::Result<i32> {
    let name = a.file.display();
    let src = open_regular(&a.file).or_else(|e| usage(format!("cannot read '{name}': {e}")))?;
    let report = verify_source(&a.file, &src)?;
    let header = match read_header(&src)? {
        Ok(h) if report.status != FileStatus::NotRtrec => h,
        _ => {
            let why = report.notes.first().cloned().unwrap_or_default();
            return usage(format!("'{name}' is not an rtrec recording ({why})"));
        }
    };
    let corrupt = report.status == FileStatus::Corrupt;
    if corrupt && !a.salvage {
        let why = report.notes.first().cloned().unwrap_or_default();
        eprintln!(
            "rtrec: '{name}' is corrupt ({why}); nothing was exported: `--salvage` writes the {} intact records",
            report.records
        );
        return Ok(1);
    }
    let missing = report.lost_records + report.missing_records + report.unstored_drops;
    let gaps = (missing > 0).then(|| {
        format!(
            "{missing} records are missing from '{name}' ({} dropped while recording and stored as losses, {} missing without a trace)",
            report.lost_records + report.unstored_drops,
            report.missing_records
        )
    });
    // A salvage has gaps by nature (it already exits 1 and says so).
    if let (Some(gaps), false) = (&gaps, a.allow_gaps || a.salvage) {
        eprintln!(
            "rtrec: {gaps}; nothing was exported: `--allow-gaps` exports the {} records there are",
            report.records
        );
        return Ok(1);
    }
    let line_end: &[u8] = if header.flags & FLAG_LINES != 0 {
        b"\n"
    } else {
        b""
    };
    let to_stdout = a.output.as_os_str() == "-";
    // A new file (O_EXCL|O_NOFOLLOW relative to its directory): an existing
    // name or a planted symlink is refused, never followed or truncated.
    let file = if to_stdout {
        None
    } else {
        Some(
            rtrec_sys::create_new(&a.output)
                .or_else(|e| usage(format!("cannot create '{}': {e}", a.output.display())))?,
        )
    };
    let mut out: Box<dyn Write + '_> = match &file {
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
        Some(f) => Box::new(std::io::BufWriter::new(f)),
    };
    let ended = report.stored.is_some();
    let mut written = 0u64;
    if !a.raw {
        let mut h = header.clone();
        h.flags &= !FLAG_POOLED;
        h.valid_len = if ended {
            HEADER_LEN as u64 + report.frame_bytes
        } else {
            0
        };
        out.write_all(&h.encode())?;
        written += HEADER_LEN as u64;
    }
    let mut walker = FrameWalker::new(&src, &header)?;
    let mut records = 0u64;
    while let Some(step) = walker.next_step()? {
        let Step::Frame(f) = step else { continue };
        if a.raw {
            // Packed frames are unpacked: the records' bytes back to back
            // (each followed by its newline for a recording of lines).
            let (n, bytes) = walker.copy_records(&f, line_end, &mut out)?;
            records += n;
            written += bytes;
        } else {
            records += match f.header.kind {
                FrameKind::Data => 1,
                FrameKind::Packed => {
                    PackedInfo::decode(&f.payload).map_or(0, |(i, _)| i.count as u64)
                }
                _ => 0,
            };
            walker.copy_range(f.off, f.end() - f.off, &mut out)?;
            written += f.end() - f.off;
        }
    }
    out.flush()?;
    drop(out);
    if let Some(f) = &file {
        rtrec_sys::fsync(f)?;
    }
    let span = match (report.first_record_wall_ns, report.last_record_wall_ns) {
        (Some(t0), Some(t1)) => format!(", recorded {} to {}", utc_iso(t0), utc_iso(t1)),
        _ => String::new(),
    };
    eprintln!(
        "exported {records} records ({written} bytes{span}) to {}",
        if to_stdout {
            "stdout".into()
        } else {
            a.output.display().to_string()
        }
    );
    if corrupt {
        eprintln!(
            "rtrec: '{name}' is corrupt: {} damaged byte range(s) were skipped; the export holds the records that could be saved",
            report.damaged_ranges
        );
        return Ok(1);
    }
    if let Some(gaps) = &gaps {
        eprintln!("rtrec: warning: {gaps}; exported the others");
    }
    if !ended {
        eprintln!("rtrec: warning: '{name}' has no end frame (the recording was interrupted); exported its intact prefix");
    }
    Ok(0)
}
