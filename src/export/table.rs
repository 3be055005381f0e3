//! The table exports: `--format csv` and `--format jsonl`, one row per
//! record with its sequence number, times, length and payload (or, with
//! `--layout`, its decoded fields), and one row per gap with its reason.
//!
//! Columns (CSV header, and the JSON keys):
//! `kind` (`record` or `gap`), `seq` (a gap's first missing sequence
//! number), `wall_time` (RFC 3339 UTC with nanoseconds), `mono_ns`
//! (`CLOCK_MONOTONIC`), `exact` (false: time interpolated within a packed
//! frame, see [`super::rows`]), `len`, then `payload` or the layout's
//! fields, then `count` and `reason` (gaps only).
//!
//! Design choices:
//! - **One table, gaps in it.** A consumer that filters `kind == "record"`
//!   has the records; one that does not sees every loss where it happened.
//!   A second file of gaps would be easy to leave behind.
//! - **Payload encoding** (`--payload`): `text` (the default for a
//!   recording of lines; a record that is not UTF-8 is refused in one
//!   sentence, never altered), `hex` (the default otherwise: readable in a
//!   spreadsheet, `bytes.fromhex` in Python), or `base64` (a third smaller).
//! - **Every value as recorded**: a layout's floats are written
//!   shortest-round-trip for their width, and those that are not finite
//!   in spellings every common reader takes (`NaN`, `1e999`, `-1e999` in
//!   CSV; the strings `"NaN"`, `"Infinity"`, `"-Infinity"` in JSON): see
//!   [`Value`]'s `Display` and [`Value::to_json`], and docs/export.md.
//! - **CSV quoting** is RFC 4180's (a field with a comma, quote or line
//!   end is quoted, quotes doubled), written here: the fields are numbers,
//!   times, hex, base64 and at most one text column, which does not need a
//!   CSV library in a board's binary.

use std::io::Write;

use base64::Engine as _;
use rtrec_engine::utc_iso_ns;

use super::layout::{Layout, Value};
use super::rows::Item;
use crate::cli::{ExportFormat, PayloadEncoding};
use crate::error::usage;

/// The fixed columns a layout's field may not be named like.
pub const FIXED: [&str; 9] = [
    "kind",
    "seq",
    "wall_time",
    "mono_ns",
    "exact",
    "len",
    "payload",
    "count",
    "reason",
];

/// A record's columns before its payload.
struct Stamp {
    seq: u64,
    mono: u64,
    wall: u64,
    exact: bool,
    len: usize,
}

/// Writes rows of one format to `out`.
pub struct Table<'a> {
    format: ExportFormat,
    payload: PayloadEncoding,
    layout: Option<&'a Layout>,
    values: Vec<Value>,
    line: String,
    /// `--all`: the recording id of the rows, in a first column.
    recording: Option<String>,
}

impl<'a> Table<'a> {
    /// A table of `format` (`Csv` or `Jsonl`).
    ///
    /// # Errors
    ///
    /// A layout field named like a fixed column.
    pub fn new(
        format: ExportFormat,
        payload: PayloadEncoding,
        layout: Option<&'a Layout>,
    ) -> crate::error::Result<Table<'a>> {
        if let Some(l) = layout {
            refuse_fixed_names(l)?;
        }
        Ok(Table {
            format,
            payload,
            layout,
            values: Vec::new(),
            line: String::new(),
            recording: None,
        })
    }

    /// Gives every row a first column `recording` (`export --all`): the
    /// id of the recording its rows come from ([`Table::set_recording`]).
    ///
    /// # Errors
    ///
    /// A layout field named `recording`.
    pub fn with_recording_column(mut self) -> crate::error::Result<Self> {
        if self
            .layout
            .is_some_and(|l| l.columns().any(|f| f.name == "recording"))
        {
            return usage(
                "the layout has a field named 'recording', the column --all adds: rename the field",
            );
        }
        self.recording = Some(String::new());
        Ok(self)
    }

    /// The recording id of the rows that follow.
    pub fn set_recording(&mut self, id: &str) {
        if let Some(r) = &mut self.recording {
            r.clear();
            r.push_str(id);
        }
    }

    /// The CSV header line (nothing for JSON lines).
    pub fn header(&mut self, out: &mut dyn Write) -> crate::error::Result<()> {
        if self.format != ExportFormat::Csv {
            return Ok(());
        }
        let mut cols: Vec<String> = match self.recording {
            Some(_) => vec!["recording".into()],
            None => Vec::new(),
        };
        cols.extend(FIXED[..6].iter().map(|c| c.to_string()));
        match self.layout {
            Some(l) => cols.extend(l.columns().map(|c| c.name)),
            None => cols.push("payload".into()),
        }
        cols.extend(["count".into(), "reason".into()]);
        writeln!(out, "{}", cols.join(","))?;
        Ok(())
    }

    /// Writes one item's row.
    ///
    /// # Errors
    ///
    /// A record that does not fit the layout, or is not text under
    /// `--payload text` (one sentence each), or a failed write.
    pub fn row(&mut self, item: &Item, out: &mut dyn Write) -> crate::error::Result<()> {
        self.line.clear();
        match *item {
            Item::Record {
                seq,
                mono_ns,
                wall_ns,
                exact,
                data,
            } => {
                let payload = self.payload_or_fields(seq, data)?;
                let r = Stamp {
                    seq,
                    mono: mono_ns,
                    wall: wall_ns,
                    exact,
                    len: data.len(),
                };
                match self.format {
                    ExportFormat::Csv => self.csv_record(&r, payload, data),
                    _ => self.json_record(&r, payload, data),
                }
            }
            Item::Gap {
                first_seq,
                count,
                reason,
            } => match self.format {
                ExportFormat::Csv => {
                    let empty = self.layout.map_or(1, |l| l.columns().count());
                    // An unknown count is an empty cell (a missing last file).
                    let count = count.map_or_else(String::new, |n| n.to_string());
                    self.line =
                        format!("gap,{first_seq},,,,{},{count},{reason}", ",".repeat(empty));
                }
                _ => {
                    self.line = serde_json::json!({
                        "kind": "gap", "seq": first_seq, "count": count, "reason": reason,
                    })
                    .to_string();
                }
            },
        }
        match (&self.recording, self.format) {
            (None, _) => {}
            (Some(id), ExportFormat::Csv) => self.line.insert_str(0, &format!("{id},")),
            // The id is hex: no escaping.
            (Some(id), _) => self.line.insert_str(1, &format!("\"recording\":\"{id}\",")),
        }
        out.write_all(self.line.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    }

    /// The payload column's text, or `None` with the layout's values in
    /// `self.values`.
    fn payload_or_fields(&mut self, seq: u64, data: &[u8]) -> crate::error::Result<Option<String>> {
        if let Some(l) = self.layout {
            decode(l, seq, data, &mut self.values)?;
            return Ok(None);
        }
        Ok(Some(match self.payload {
            PayloadEncoding::Hex => hex(data),
            PayloadEncoding::Base64 => base64::engine::general_purpose::STANDARD.encode(data),
            PayloadEncoding::Text => match std::str::from_utf8(data) {
                Ok(s) => s.to_string(),
                Err(_) => {
                    return usage(format!(
                        "record {seq} is not UTF-8 text; nothing was exported: `--payload hex` or `--payload base64` writes any bytes"
                    ))
                }
            },
        }))
    }

    fn csv_record(&mut self, r: &Stamp, payload: Option<String>, data: &[u8]) {
        use std::fmt::Write as _;
        let _ = write!(
            self.line,
            "record,{},{},{},{},{}",
            r.seq,
            utc_iso_ns(r.wall),
            r.mono,
            r.exact,
            r.len
        );
        match payload {
            Some(p) => {
                self.line.push(',');
                csv_field(&mut self.line, &p);
            }
            None => {
                for v in &self.values {
                    match v {
                        // Always quoted: an empty text is `""`, never the
                        // empty cell of a gap row (docs/export.md).
                        Value::Str { .. } => {
                            self.line.push_str(",\"");
                            self.line.push_str(&v.text(data).replace('"', "\"\""));
                            self.line.push('"');
                        }
                        _ => {
                            let _ = write!(self.line, ",{v}");
                        }
                    }
                }
            }
        }
        self.line.push_str(",,");
    }

    fn json_record(&mut self, r: &Stamp, payload: Option<String>, data: &[u8]) {
        let mut m = serde_json::Map::new();
        m.insert("kind".into(), "record".into());
        m.insert("seq".into(), r.seq.into());
        m.insert("wall_time".into(), utc_iso_ns(r.wall).into());
        m.insert("mono_ns".into(), r.mono.into());
        m.insert("exact".into(), r.exact.into());
        m.insert("len".into(), r.len.into());
        match (payload, self.layout) {
            (Some(p), _) => {
                m.insert("payload".into(), p.into());
            }
            (None, Some(l)) => {
                for (f, v) in l.columns().zip(&self.values) {
                    m.insert(f.name.clone(), v.to_json(data));
                }
            }
            (None, None) => {}
        }
        self.line = serde_json::Value::Object(m).to_string();
    }
}

/// Refuses a layout with a field named like a fixed column: the table
/// exports and MCAP's messages (whose keys are a subset) share the rule, so
/// a layout that works for one works for all.
///
/// # Errors
///
/// The sentence naming the field.
pub fn refuse_fixed_names(layout: &Layout) -> crate::error::Result<()> {
    match layout.columns().find(|f| FIXED.contains(&f.name.as_str())) {
        Some(f) => usage(format!(
            "the layout's field '{}' has the name of a column every row has ({}); rename it",
            f.name,
            FIXED.join(", ")
        )),
        None => Ok(()),
    }
}

/// Decodes record `seq` into `values`, or refuses it in the sentence every
/// table export gives (`record 17 is 10 bytes, but the layout …`).
///
/// # Errors
///
/// A record that is not the layout's size.
pub fn decode(
    layout: &Layout,
    seq: u64,
    data: &[u8],
    values: &mut Vec<Value>,
) -> crate::error::Result<()> {
    super::layout::decode(layout, data, values)
        .or_else(|why| usage(format!("record {seq} {why}; nothing was exported")))
}

/// Refuses record `seq` when [`decode`] would (not the layout's size, a
/// bool that is not 0 or 1), in its sentence, for exports that write the
/// bytes, not the values.
///
/// # Errors
///
/// A record [`decode`] refuses.
pub fn fits(layout: &Layout, seq: u64, data: &[u8]) -> crate::error::Result<()> {
    super::layout::check(layout, data)
        .or_else(|why| usage(format!("record {seq} {why}; nothing was exported")))
}

/// Lower-case hex.
pub fn hex(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(data.len() * 2);
    for b in data {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Appends `s` as one CSV field (RFC 4180).
fn csv_field(line: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        line.push('"');
        line.push_str(&s.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_as_rfc_4180_says_and_hex_is_lower_case() {
        let mut l = String::new();
        csv_field(&mut l, "plain");
        l.push(',');
        csv_field(&mut l, "a,b \"q\"\nz");
        assert_eq!(l, "plain,\"a,b \"\"q\"\"\nz\"");
        assert_eq!(hex(&[0, 0xab, 0x0f]), "00ab0f");
    }

    #[test]
    fn rows_of_records_and_gaps_line_up_with_the_header() {
        let layout = Layout::parse("t:u32,x:f32").unwrap();
        let mut t = Table::new(ExportFormat::Csv, PayloadEncoding::Hex, Some(&layout)).unwrap();
        let mut out = Vec::new();
        t.header(&mut out).unwrap();
        let mut rec = 5u32.to_le_bytes().to_vec();
        rec.extend_from_slice(&0.5f32.to_le_bytes());
        t.row(
            &Item::Record {
                seq: 3,
                mono_ns: 10,
                wall_ns: 1_000_000_000_000_000_123,
                exact: true,
                data: &rec,
            },
            &mut out,
        )
        .unwrap();
        t.row(
            &Item::Gap {
                first_seq: 4,
                count: Some(2),
                reason: "ring_full",
            },
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "kind,seq,wall_time,mono_ns,exact,len,t,x,count,reason"
        );
        assert_eq!(
            lines[1],
            "record,3,2001-09-09T01:46:40.000000123Z,10,true,8,5,0.5,,"
        );
        assert_eq!(lines[2], "gap,4,,,,,,,2,ring_full");
        let width = |l: &str| l.split(',').count();
        assert!(lines.iter().all(|l| width(l) == width(lines[0])), "{text}");
        let short = Item::Record {
            seq: 9,
            mono_ns: 0,
            wall_ns: 0,
            exact: true,
            data: &[1],
        };
        let e = t.row(&short, &mut Vec::new()).unwrap_err().to_string();
        assert_eq!(
            e,
            "record 9 is 1 bytes, but the layout 't:u32,x:f32' is 8 bytes; nothing was exported"
        );
        let named = Layout::parse("seq:u32").unwrap();
        assert!(Table::new(ExportFormat::Jsonl, PayloadEncoding::Hex, Some(&named)).is_err());
    }
}
