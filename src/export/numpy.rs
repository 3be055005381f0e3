//! `--format numpy`: the records and gaps as fixed-width little-endian
//! binary rows after one JSON header line, which NumPy reads with
//! `np.frombuffer` and the dtype the header describes (the Python
//! package's fast path: no text per record).
//!
//! The stream:
//! 1. One line of JSON (ends at the first `\n`): `format` (`rtrec-numpy`),
//!    `version` (1), `stamp` (the row's fixed fields as `[name, NumPy type,
//!    byte offset]`), `stamp_bytes` (32), `record_bytes` (the layout's
//!    size, or `null` without `--layout`), `fields` (the layout's columns
//!    as `[name, NumPy type, offset in the record]`, `>` types for a
//!    big-endian layout; `[]` without one), `flags` (the bits of the
//!    `flags` field), `reasons` (a gap's `reason` code is an index into
//!    it), and `records` and `lost` (what verification counted before the
//!    walk: a size hint, not a promise).
//! 2. A row per record and per gap, in sequence order: the 32-byte stamp
//!    (`seq` u64, `wall_ns` i64, `mono_ns` i64, `len` u32, `flags` u16,
//!    `reason` u16), then the record's bytes as recorded. A gap row has its
//!    first sequence number in `seq`, its count in `mono_ns` (flag
//!    `count_unknown` when no file tells it), `len` 0 and its reason.
//!
//! Design choices:
//! - **Fixed width with `--layout`.** Every record is the layout's size
//!   (one that is not ends the export in the table exports' sentence), and
//!   a gap row is padded with zeros to the same width, so the whole stream
//!   after the header is one array: `np.frombuffer(body, dtype)`.
//!   Without a layout a row is its stamp and `len` bytes (records may
//!   differ in size); a reader walks the `len`s.
//! - **The record's bytes, not decoded values.** NumPy decodes them with
//!   the header's types and offsets (pads are bytes no field covers, a
//!   big-endian layout has `>` types), so every value arrives with its
//!   bits, NaN payloads included, and nothing is converted twice.
//! - **Verified first**, as every export: a corrupt input or gaps without
//!   `--allow-gaps` are refused before the header is written.

use std::io::Write;

use super::layout::{Kind, Layout};
use super::part::Part;
use super::range::{self, Selection};
use super::rows::Item;
use super::table::refuse_fixed_names;

/// Bytes gathered before a write.
const BATCH: usize = 64 * 1024;
/// Bytes of a row's stamp.
pub const STAMP_BYTES: usize = 32;
/// `flags`: the record's time is exact (not interpolated in a packed frame).
pub const FLAG_EXACT: u16 = 1;
/// `flags`: the row is a gap.
pub const FLAG_GAP: u16 = 2;
/// `flags`: a gap whose count no file tells (`mono_ns` is 0).
pub const FLAG_COUNT_UNKNOWN: u16 = 4;
/// Gap reasons by code (`reason`); 0 is a record's.
pub const REASONS: [&str; 9] = [
    "",
    "ring_full",
    "too_large",
    "writer_failed",
    "overwritten",
    "crash_hole",
    "missing",
    "retired",
    "not_saved",
];

/// Counts verification found, for the header's size hint.
pub struct Hint {
    /// Records in the inputs.
    pub records: u64,
    /// Records dropped or missing.
    pub lost: u64,
}

/// Writes the header line and a row per record and gap of `parts`; returns
/// the walk's counts (records, gap rows).
///
/// # Errors
///
/// A layout field named like a fixed column, a record that does not fit
/// the layout, or a failed write.
pub fn write(
    layout: Option<&Layout>,
    selection: &Selection,
    parts: &[Part],
    hint: &Hint,
    out: &mut dyn Write,
) -> crate::error::Result<super::rows::Walked> {
    if let Some(l) = layout {
        refuse_fixed_names(l)?;
    }
    serde_json::to_writer(&mut *out, &header(layout, hint))?;
    out.write_all(b"\n")?;
    let pad = vec![0u8; layout.map_or(0, Layout::size)];
    // Rows are gathered and written 64 KiB at a time: two small writes
    // per row through the dyn writers cost more than the walk.
    let mut batch = Vec::with_capacity(BATCH + STAMP_BYTES + pad.len());
    let walked = range::walk_selected(parts, selection, &mut |item| {
        let mut stamp = [0u8; STAMP_BYTES];
        let data: &[u8] = match item {
            // The bytes first: what this export writes of a record.
            Item::Record {
                data,
                exact,
                seq,
                wall_ns,
                mono_ns,
            } => {
                if let Some(l) = layout {
                    super::table::fits(l, seq, data)?;
                }
                let flags = if exact { FLAG_EXACT } else { 0 };
                put(&mut stamp, seq, wall_ns, mono_ns, data.len(), flags, 0);
                data
            }
            Item::Gap {
                first_seq,
                count,
                reason,
            } => {
                let Some(code) = REASONS.iter().position(|r| *r == reason) else {
                    return Err(std::io::Error::other(format!(
                        "gap reason '{reason}' has no code in the numpy export"
                    ))
                    .into());
                };
                let flags = FLAG_GAP | count.map_or(FLAG_COUNT_UNKNOWN, |_| 0);
                put(
                    &mut stamp,
                    first_seq,
                    0,
                    count.unwrap_or(0),
                    0,
                    flags,
                    code as u16,
                );
                &pad
            }
        };
        batch.extend_from_slice(&stamp);
        batch.extend_from_slice(data);
        if batch.len() >= BATCH {
            out.write_all(&batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    out.write_all(&batch)?;
    Ok(walked)
}

/// Fills a stamp (see the module docs).
fn put(
    s: &mut [u8; STAMP_BYTES],
    seq: u64,
    wall: u64,
    mono: u64,
    len: usize,
    flags: u16,
    reason: u16,
) {
    s[0..8].copy_from_slice(&seq.to_le_bytes());
    s[8..16].copy_from_slice(&wall.to_le_bytes());
    s[16..24].copy_from_slice(&mono.to_le_bytes());
    s[24..28].copy_from_slice(&(len as u32).to_le_bytes());
    s[28..30].copy_from_slice(&flags.to_le_bytes());
    s[30..32].copy_from_slice(&reason.to_le_bytes());
}

/// The header line's document (see the module docs).
fn header(layout: Option<&Layout>, hint: &Hint) -> serde_json::Value {
    let mut fields = Vec::new();
    if let Some(l) = layout {
        let order = if l.big_endian { '>' } else { '<' };
        let mut at = 0;
        for f in &l.fields {
            let code = match f.kind {
                Kind::U(n) => Some(('u', n)),
                Kind::I(n) => Some(('i', n)),
                Kind::F(n) => Some(('f', n)),
                // NumPy's bool: one byte, 0 or 1 (the export refuses any
                // other byte before a row is written).
                Kind::Bool => Some(('b', 1)),
                // NumPy's fixed-length bytes: the text, its zero padding
                // dropped by NumPy (the export refuses any other bytes).
                Kind::Str(n) => Some(('S', n)),
                Kind::Pad(_) => None,
            };
            match code {
                // An array's elements: a column each, at its own offset
                // (the columns of `Layout::columns`).
                Some((c, n)) => {
                    for i in 0..f.count() {
                        let name = f.column_name(i);
                        fields.push(serde_json::json!([name, format!("{order}{c}{n}"), at]));
                        at += n;
                    }
                }
                None => at += f.kind.size(),
            }
        }
    }
    serde_json::json!({
        "format": "rtrec-numpy",
        "version": 1,
        "stamp": [["seq", "<u8", 0], ["wall_ns", "<i8", 8], ["mono_ns", "<i8", 16],
                  ["len", "<u4", 24], ["flags", "<u2", 28], ["reason", "<u2", 30]],
        "stamp_bytes": STAMP_BYTES,
        "record_bytes": layout.map(Layout::size),
        "fields": fields,
        "flags": {"exact": FLAG_EXACT, "gap": FLAG_GAP, "count_unknown": FLAG_COUNT_UNKNOWN},
        "reasons": REASONS,
        "records": hint.records,
        "lost": hint.lost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_describes_the_row_numpy_reads() {
        let l = Layout::parse(">a:u16,_:pad2,b:f32,c:bool,d:u8[2]").unwrap();
        let h = header(
            Some(&l),
            &Hint {
                records: 3,
                lost: 1,
            },
        );
        assert_eq!(h["record_bytes"], 11);
        assert_eq!(
            h["fields"],
            serde_json::json!([
                ["a", ">u2", 0],
                ["b", ">f4", 4],
                ["c", ">b1", 8],
                ["d_0", ">u1", 9],
                ["d_1", ">u1", 10]
            ])
        );
        assert_eq!(h["reasons"][2], "too_large");
        let mut s = [0u8; STAMP_BYTES];
        put(&mut s, 7, 1, 2, 12, FLAG_GAP, 2);
        assert_eq!(u64::from_le_bytes(s[0..8].try_into().unwrap()), 7);
        assert_eq!(&s[24..32], &[12, 0, 0, 0, 2, 0, 2, 0]);
    }

    #[test]
    fn every_gap_reason_of_the_walk_has_a_code() {
        use rtrec_engine::format::LossReason::*;
        for r in [RingFull, TooLarge, WriterFailed, Overwritten, CrashHole] {
            assert!(REASONS.contains(&super::super::rows::reason_name(r)));
        }
    }
}
