//! `--layout`: the grammar that decodes a fixed-size binary record into
//! named, typed fields for the table exports (CSV, JSON lines, MCAP).
//!
//! The grammar itself (its two spellings, the canonical text a recording
//! stores) is the engine's, [`rtrec_engine::layout`]; this module decodes
//! a record by it.
//!
//! Design choice: a record must be exactly the layout's size. A shorter or
//! longer record is one sentence and a failed export (the partial output
//! is removed), never a row of guessed values: a layout that does not fit
//! is a wrong layout or a wrong recording.

use std::fmt;

pub use rtrec_engine::layout::{Field, Kind, Layout};

/// A decoded value.
///
/// Design choice: **a float keeps its width** (`F16`, `F32` and `F64`
/// apart), so it is printed shortest-round-trip for its own width: an f32
/// `0.1` is `0.1`, never its widened `0.10000000149011612`, and an f16
/// `0.1` (0.0999755859375) is `0.1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// A 16-bit float (IEEE binary16).
    F16(half::f16),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// A bool (a byte that is 0 or 1: [`Kind::Bool`]).
    Bool(bool),
    /// Text ([`Kind::Str`]): where it is in the record, its bytes without
    /// the zero padding (UTF-8, checked by [`decode`]); [`Value::text`]
    /// reads it. Design choice: a place, not a copy, so a value stays
    /// `Copy` and decoding a record allocates nothing.
    Str {
        /// Offset of its first byte in the record.
        at: usize,
        /// Its bytes.
        len: usize,
    },
}

/// The JSON strings of the floats JSON numbers cannot hold (docs/export.md,
/// "Every value as recorded"): protobuf's JSON mapping's spellings, which
/// Python's `float()`, JavaScript's `Number()` and NumPy read back.
pub const JSON_NON_FINITE: [&str; 3] = ["NaN", "Infinity", "-Infinity"];

impl fmt::Display for Value {
    /// The CSV cell.
    ///
    /// Design choices (docs/export.md, "Every value as recorded"):
    /// - **Finite floats in Rust's `{:?}` form**: the shortest digits that
    ///   read back to the same value at the float's own width, with an
    ///   exponent when the number is very large or small (`1e308`, not 309
    ///   digits; `5e-324`), and always a `.` or an exponent (`1.0`, `-0.0`),
    ///   so readers that guess types (polars, DuckDB) take the column as
    ///   floats even when every value is whole.
    /// - **`NaN`, `1e999`, `-1e999`**: the spellings pandas, polars, DuckDB
    ///   and pyarrow all read as floats, whatever row they are in. `1e999`
    ///   overflows to infinity in every IEEE parser; a word does not work
    ///   everywhere (polars takes `nan` and `Infinity` for strings, and
    ///   DuckDB's CSV sniffer takes a column that starts with `inf` for
    ///   dates, or for text when a number follows).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            Value::F16(v) if v.is_finite() => write!(f, "{:?}", f16_digits(v)),
            Value::F32(v) if v.is_finite() => write!(f, "{:?}", f32_digits(v)),
            Value::F64(v) if v.is_finite() => write!(f, "{v:?}"),
            // The spelling pandas, polars, DuckDB and pyarrow all read as
            // a bool column.
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str { .. } => unreachable!("text is written with its record (Value::text)"),
            _ => f.write_str(match self.non_finite() {
                Some(i) => ["NaN", "1e999", "-1e999"][i],
                None => unreachable!("finite floats are written above"),
            }),
        }
    }
}

impl Value {
    /// For a float that is not finite, which: 0 NaN, 1 +inf, 2 -inf.
    fn non_finite(self) -> Option<usize> {
        let v = match self {
            Value::F16(v) => v.to_f64(),
            Value::F32(v) => f64::from(v),
            Value::F64(v) => v,
            Value::U(_) | Value::I(_) | Value::Bool(_) | Value::Str { .. } => return None,
        };
        if v.is_nan() {
            Some(0)
        } else if v.is_infinite() {
            Some(if v > 0.0 { 1 } else { 2 })
        } else {
            None
        }
    }

    /// As a JSON value: a number, or for a float that is not finite one of
    /// [`JSON_NON_FINITE`] (never `null`, which would lose which one).
    ///
    /// An f32 is written with the digits of [`f32_digits`]; text is read
    /// from `record`, the record the value was decoded from.
    pub fn to_json(self, record: &[u8]) -> serde_json::Value {
        if let Some(i) = self.non_finite() {
            return JSON_NON_FINITE[i].into();
        }
        let f = match self {
            Value::U(v) => return v.into(),
            Value::I(v) => return v.into(),
            Value::Bool(b) => return b.into(),
            Value::Str { .. } => return self.text(record).into(),
            Value::F16(v) => f16_digits(v),
            Value::F32(v) => f32_digits(v),
            Value::F64(v) => v,
        };
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
    }

    /// The text of a [`Value::Str`] decoded from `record` ("" for any
    /// other value).
    pub fn text(self, record: &[u8]) -> &str {
        match self {
            Value::Str { at, len } => std::str::from_utf8(&record[at..at + len]).unwrap_or(""),
            _ => "",
        }
    }
}

/// The f64 whose shortest round-trip digits (Rust's `{:?}`, serde_json's
/// ryu) are how the f32 `v` is written.
///
/// Design choice: **an f32's own shortest digits, unless a reader would
/// round them twice.** Most readers parse a decimal to f64 and then round
/// that to f32 (NumPy, pandas, DuckDB and polars, and Python's json), and
/// for a few f32 values the shortest digits lie so close to the midpoint
/// between two f32 values that the f64 lands on it and the second rounding
/// goes the other way (`7.038531e-26` is the f32 `0x15ae43fd`, but via f64
/// it becomes `0x15ae43fe`). Those values are written with the digits of
/// the f32 widened to f64 (17 digits at most), which read back exactly
/// both ways; every other f32 keeps its shortest digits (`0.1`, not the
/// widened `0.10000000149011612`).
pub fn f32_digits(v: f32) -> f64 {
    let short = format!("{v:?}");
    match short.parse::<f64>() {
        Ok(d) if d as f32 == v && short.parse::<f32>() == Ok(v) => d,
        _ => f64::from(v),
    }
}

/// The f64 whose shortest round-trip digits are how the f16 `v` is
/// written: the fewest significant digits (1 to 5) that read back to `v`
/// both ways readers take them, a decimal rounded to f16 directly and
/// through f32 (pandas and polars read an f16 column's text as f32, as
/// docs/export.md's recipes do); `v` itself, exactly, if none does.
///
/// Design choice: as [`f32_digits`], an f16's own shortest digits (`0.1`
/// for the f16 0.0999755859375), never its widened 13 digits.
pub fn f16_digits(v: half::f16) -> f64 {
    let wide = v.to_f64();
    for p in 0..5 {
        let d: f64 = format!("{wide:.p$e}").parse().unwrap_or(wide);
        if half::f16::from_f64(d) == v && half::f16::from_f32(d as f32) == v {
            return d;
        }
    }
    wide
}

/// Whether `record` is what [`decode`] accepts — the layout's size, and
/// every bool field's byte 0 or 1 — without decoding the rest (for
/// exports that write the bytes, not the values: `--format numpy`).
///
/// # Errors
///
/// [`decode`]'s sentence.
pub fn check(layout: &Layout, record: &[u8]) -> Result<(), String> {
    layout.fits(record)?;
    let mut at = 0;
    for f in &layout.fields {
        for i in 0..f.count() {
            let n = f.kind.size();
            match f.kind {
                Kind::Bool if record[at] > 1 => {
                    return Err(bool_refused(record[at], &f.column_name(i)))
                }
                Kind::Str(_) => {
                    text_of(&record[at..at + n], at).map_err(|why| refused(why, f, i))?;
                }
                _ => {}
            }
            at += n;
        }
    }
    Ok(())
}

/// Where the text of a [`Kind::Str`] field's bytes `b` (at `at` in the
/// record) is, or why they are not text: UTF-8, then only zero bytes.
fn text_of(b: &[u8], at: usize) -> Result<Value, &'static str> {
    let len = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    if b[len..].iter().any(|&c| c != 0) {
        return Err("bytes after the zero that ends its text");
    }
    if std::str::from_utf8(&b[..len]).is_err() {
        return Err("bytes that are not UTF-8 text");
    }
    Ok(Value::Str { at, len })
}

/// The sentence for a string field's bytes that are not text (`why`).
fn refused(why: &str, f: &Field, i: usize) -> String {
    format!(
        "holds {why} in its string field '{}' (read it as u8[{}] to see them)",
        f.column_name(i),
        f.kind.size()
    )
}

/// The sentence for a bool field holding `x` (neither 0 nor 1).
fn bool_refused(x: u8, name: &str) -> String {
    format!("holds {x} in its bool field '{name}' (a bool is 0 or 1)")
}

/// Decodes `record` into `out` (cleared first), one value per column of
/// `layout`.
///
/// # Errors
///
/// The sentence for a record that is not the layout's size, or for a
/// bool field whose byte is neither 0 nor 1 (exported as recorded or not
/// at all: docs/export.md, "Every value as recorded").
pub fn decode(layout: &Layout, record: &[u8], out: &mut Vec<Value>) -> Result<(), String> {
    layout.fits(record)?;
    out.clear();
    let mut at = 0;
    for f in &layout.fields {
        let n = f.kind.size();
        // A pad may be longer than any value (`_:pad56`): skipped
        // before the 8-byte buffer below.
        if matches!(f.kind, Kind::Pad(_)) {
            at += n;
            continue;
        }
        for i in 0..f.count() {
            let b = &record[at..at + n];
            out.push(match f.kind {
                Kind::Str(_) => text_of(b, at).map_err(|why| refused(why, f, i))?,
                _ => value(f, i, b, layout.big_endian)?,
            });
            at += n;
        }
    }
    Ok(())
}

/// Element `i` of field `f` (not a pad) from its bytes `b`.
fn value(f: &Field, i: usize, b: &[u8], big_endian: bool) -> Result<Value, String> {
    if f.kind == Kind::Bool {
        return match b[0] {
            0 => Ok(Value::Bool(false)),
            1 => Ok(Value::Bool(true)),
            x => Err(bool_refused(x, &f.column_name(i))),
        };
    }
    let n = b.len();
    let mut raw = [0u8; 8];
    raw[..n].copy_from_slice(b);
    if big_endian {
        raw[..n].reverse();
    }
    let u = u64::from_le_bytes(raw);
    Ok(match f.kind {
        Kind::Pad(_) | Kind::Bool | Kind::Str(_) => {
            unreachable!("pads, bools and text are taken above")
        }
        Kind::U(_) => Value::U(u),
        Kind::I(n) => {
            let shift = 64 - 8 * n as u32;
            Value::I(((u << shift) as i64) >> shift)
        }
        Kind::F(2) => Value::F16(half::f16::from_bits(u as u16)),
        Kind::F(4) => Value::F32(f32::from_bits(u as u32)),
        Kind::F(_) => Value::F64(f64::from_bits(u)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_give_the_same_fields_and_decode_alike() {
        let named = Layout::parse("t:u32,x:f32,y:f32").unwrap();
        let code = Layout::parse("<Iff").unwrap();
        assert_eq!(named.size(), 12);
        assert_eq!(code.size(), 12);
        let mut rec = Vec::new();
        rec.extend_from_slice(&7u32.to_le_bytes());
        rec.extend_from_slice(&1.5f32.to_le_bytes());
        rec.extend_from_slice(&(-2.25f32).to_le_bytes());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        decode(&named, &rec, &mut a).unwrap();
        decode(&code, &rec, &mut b).unwrap();
        assert_eq!(a, vec![Value::U(7), Value::F32(1.5), Value::F32(-2.25)]);
        assert_eq!(a, b);
        let cols: Vec<String> = code.columns().map(|f| f.name).collect();
        assert_eq!(cols, ["f0", "f1", "f2"]);
    }

    #[test]
    fn big_endian_signed_and_pads_decode() {
        let l = Layout::parse(">a:i16,_:pad2,b:u32,c:f64").unwrap();
        assert_eq!(l.size(), 16);
        let mut rec = Vec::new();
        rec.extend_from_slice(&(-3i16).to_be_bytes());
        rec.extend_from_slice(&[0xee, 0xee]);
        rec.extend_from_slice(&0x0102_0304u32.to_be_bytes());
        rec.extend_from_slice(&1e-3f64.to_be_bytes());
        let mut v = Vec::new();
        decode(&l, &rec, &mut v).unwrap();
        assert_eq!(
            v,
            vec![Value::I(-3), Value::U(0x0102_0304), Value::F64(1e-3)]
        );
        let l = Layout::parse("!2hx2B").unwrap();
        assert_eq!(l.size(), 7);
        decode(&l, &[0xff, 0xfe, 0, 1, 9, 200, 3], &mut v).unwrap();
        assert_eq!(
            v,
            vec![Value::I(-2), Value::I(1), Value::U(200), Value::U(3)]
        );
        // Pads longer than a value: the synthetic source's 64-byte record.
        for spec in ["n:u64,_:pad56", "<Q56x"] {
            let l = Layout::parse(spec).unwrap();
            let mut rec = 7u64.to_le_bytes().to_vec();
            rec.resize(64, 0xab);
            decode(&l, &rec, &mut v).unwrap();
            assert_eq!(v, vec![Value::U(7)], "{spec}");
        }
    }

    #[test]
    fn a_bool_is_0_or_1_and_any_other_byte_is_refused() {
        let l = Layout::parse("n:u8,ok:bool,f:bool").unwrap();
        let mut v = Vec::new();
        decode(&l, &[7, 1, 0], &mut v).unwrap();
        assert_eq!(v, vec![Value::U(7), Value::Bool(true), Value::Bool(false)]);
        assert_eq!(
            (v[1].to_string(), v[2].to_json(&[]).to_string()),
            ("true".into(), "false".into())
        );
        let e = decode(&l, &[7, 2, 0], &mut v).unwrap_err();
        assert_eq!(e, "holds 2 in its bool field 'ok' (a bool is 0 or 1)");
        assert_eq!(check(&l, &[7, 2, 0]), Err(e));
        assert_eq!(check(&l, &[255, 1, 0]), Ok(()));
        assert!(check(&l, &[7, 1]).unwrap_err().contains("is 2 bytes"));
    }

    #[test]
    fn an_array_is_a_value_per_element_in_column_order() {
        let l = Layout::parse(">n:u8,acc:i16[3],ok:bool[2]").unwrap();
        let mut rec = vec![9];
        for v in [-1i16, 2, -3] {
            rec.extend_from_slice(&v.to_be_bytes());
        }
        rec.extend_from_slice(&[0, 1]);
        let mut v = Vec::new();
        decode(&l, &rec, &mut v).unwrap();
        assert_eq!(
            v,
            vec![
                Value::U(9),
                Value::I(-1),
                Value::I(2),
                Value::I(-3),
                Value::Bool(false),
                Value::Bool(true)
            ]
        );
        assert_eq!(v.len(), l.columns().count());
        *rec.last_mut().unwrap() = 7;
        let e = decode(&l, &rec, &mut v).unwrap_err();
        assert_eq!(e, "holds 7 in its bool field 'ok_1' (a bool is 0 or 1)");
        assert_eq!(check(&l, &rec), Err(e));
    }

    #[test]
    fn text_is_utf8_padded_with_zeros_and_anything_else_is_refused() {
        let l = Layout::parse("n:u8,name:s6").unwrap();
        let mut v = Vec::new();
        let rec = [1, b'a', b',', 0xc3, 0xa9, 0, 0];
        decode(&l, &rec, &mut v).unwrap();
        assert_eq!(v[1], Value::Str { at: 1, len: 4 });
        assert_eq!(v[1].text(&rec), "a,\u{e9}");
        assert_eq!(v[1].to_json(&rec), serde_json::json!("a,\u{e9}"));
        decode(&l, &[1, 0, 0, 0, 0, 0, 0], &mut v).unwrap();
        assert_eq!(v[1], Value::Str { at: 1, len: 0 });
        for (rec, says) in [
            (
                [1, b'a', 0, b'b', 0, 0, 0],
                "bytes after the zero that ends its text",
            ),
            ([1, 0xff, 0, 0, 0, 0, 0], "bytes that are not UTF-8 text"),
        ] {
            let e = decode(&l, &rec, &mut v).unwrap_err();
            assert_eq!(
                e,
                format!("holds {says} in its string field 'name' (read it as u8[6] to see them)")
            );
            assert_eq!(check(&l, &rec), Err(e));
        }
    }

    #[test]
    fn a_record_of_another_size_is_one_sentence() {
        let l = Layout::parse("t:u32").unwrap();
        let e = decode(&l, &[1, 2, 3], &mut Vec::new()).unwrap_err();
        assert_eq!(e, "is 3 bytes, but the layout 't:u32' is 4 bytes");
    }

    #[test]
    fn floats_are_written_shortest_for_their_width_and_non_finite_by_name() {
        let csv = |v: Value| v.to_string();
        let json = |v: Value| v.to_json(&[]).to_string();
        assert_eq!(csv(Value::F32(0.1)), "0.1");
        assert_eq!(json(Value::F32(0.1)), "0.1");
        assert_eq!(csv(Value::F64(1e308)), "1e308");
        assert_eq!(json(Value::F64(1e308)), "1e+308");
        assert_eq!(csv(Value::F64(-0.0)), "-0.0");
        assert_eq!(json(Value::F32(-0.0)), "-0.0");
        assert_eq!(csv(Value::F64(5e-324)), "5e-324");
        assert_eq!(csv(Value::F32(3.0)), "3.0");
        // Shortest digits a reader would round twice: the widened f64's.
        let twice = Value::F32(f32::from_bits(0x15ae_43fd));
        assert_eq!(csv(twice), "7.038530691851209e-26");
        assert_eq!(json(twice), "7.038530691851209e-26");
        assert_eq!(
            "7.038530691851209e-26".parse::<f64>().unwrap() as f32,
            f32::from_bits(0x15ae_43fd)
        );
        for (v, c, j) in [
            (f64::NAN, "NaN", "\"NaN\""),
            (f64::INFINITY, "1e999", "\"Infinity\""),
            (f64::NEG_INFINITY, "-1e999", "\"-Infinity\""),
        ] {
            assert_eq!(
                (csv(Value::F64(v)), json(Value::F64(v))),
                (c.into(), j.into())
            );
            let w = Value::F32(v as f32);
            assert_eq!((csv(w), json(w)), (c.into(), j.into()));
        }
        let h = |x: f32| Value::F16(half::f16::from_f32(x));
        assert_eq!((csv(h(0.1)), json(h(0.1))), ("0.1".into(), "0.1".into()));
        assert_eq!(csv(h(65504.0)), "65500.0");
        assert_eq!(csv(h(-0.0)), "-0.0");
        assert_eq!(
            (csv(h(f32::NAN)), json(h(f32::INFINITY))),
            ("NaN".into(), "\"Infinity\"".into())
        );
        assert_eq!(json(Value::U(u64::MAX)), "18446744073709551615");
        assert_eq!(csv(Value::I(i64::MIN)), "-9223372036854775808");
    }

    #[test]
    fn every_f16_reads_back_from_its_digits_directly_and_through_f32() {
        for bits in 0..=u16::MAX {
            let v = half::f16::from_bits(bits);
            if !v.is_finite() {
                continue;
            }
            let text = Value::F16(v).to_string();
            let d: f64 = text.parse().unwrap();
            assert_eq!(half::f16::from_f64(d).to_bits(), bits, "{text}");
            assert_eq!(half::f16::from_f32(d as f32).to_bits(), bits, "{text}");
            let j: f64 = Value::F16(v).to_json(&[]).as_f64().unwrap();
            assert_eq!(half::f16::from_f64(j).to_bits(), bits, "{text}");
        }
    }
}
