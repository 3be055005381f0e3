//! `rtrec export`: write the valid records of a recording to a plain file —
//! framed (header and frames up to the valid end, no pool flag: a file any
//! reader and `rtrec verify` accept without knowing about pools) or raw (the
//! records' bytes back to back). The output is created new, never replaced.

use std::io::Write;

use rtrec_engine::format::{FileHeader, FrameKind, FLAG_POOLED, FRAME_HEADER_LEN, HEADER_LEN};
use rtrec_engine::reader::walk_frames;

use crate::cli::ExportArgs;
use crate::usage;

/// Runs `rtrec export`.
pub fn run(a: &ExportArgs) -> anyhow::Result<i32> {
    let bytes = std::fs::read(&a.file)
        .or_else(|e| usage(format!("cannot read '{}': {e}", a.file.display())))?;
    let Ok(header) = FileHeader::decode(&bytes) else {
        return usage(format!("'{}' is not an rtrec recording", a.file.display()));
    };
    let mut out_bytes = Vec::new();
    let mut records = 0u64;
    let mut ended = false;
    let (end, _) = walk_frames(&bytes, &header, |off, h, payload| {
        records += (h.kind == FrameKind::Data) as u64;
        ended |= h.kind == FrameKind::End;
        if a.raw {
            if h.kind == FrameKind::Data {
                out_bytes.extend_from_slice(payload);
            }
        } else {
            let o = off as usize;
            out_bytes.extend_from_slice(&bytes[o..o + FRAME_HEADER_LEN + payload.len()]);
        }
    });
    if !a.raw {
        let mut h = header.clone();
        h.flags &= !FLAG_POOLED;
        h.valid_len = if ended { end } else { 0 };
        let mut framed = h.encode().to_vec();
        debug_assert_eq!(framed.len(), HEADER_LEN);
        framed.extend_from_slice(&out_bytes);
        out_bytes = framed;
    }
    let mut f = rtrec_sys::create_new(&a.output)
        .or_else(|e| usage(format!("cannot create '{}': {e}", a.output.display())))?;
    f.write_all(&out_bytes)?;
    rtrec_sys::fsync(&f)?;
    println!(
        "exported {records} records ({} bytes) to {}",
        out_bytes.len(),
        a.output.display()
    );
    if !ended {
        eprintln!("rtrec: warning: '{}' has no end frame (the recording was interrupted); exported its intact prefix", a.file.display());
    }
    Ok(0)
}
