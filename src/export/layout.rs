//! `--layout`: the grammar that decodes a fixed-size binary record into
//! named, typed fields for the table exports (CSV, JSON lines, MCAP).
//!
//! Two spellings of one thing:
//! - **Named**: `t:u32,x:f32,y:f32` — `NAME:TYPE` pairs, comma-separated,
//!   with the types `u8 i8 u16 i16 u32 i32 u64 i64 f32 f64` and `pad` N
//!   bytes as `_:pad4`; little-endian unless the whole layout starts with
//!   `>` (big-endian) or `<` (little, explicit).
//! - **Python's `struct` notation**: `<Iff` (no colon): the byte-order
//!   prefixes `<`, `>`, `!`, `=` (standard sizes, no alignment: `@` and
//!   native alignment are refused), the codes `b B h H i I l L q Q f d`
//!   and `x` for a pad byte, with repeat counts (`3f`); the fields are
//!   named `f0`, `f1`, ….
//!
//! Design choice: a record must be exactly the layout's size. A shorter or
//! longer record is one sentence and a failed export (the partial output
//! is removed), never a row of guessed values: a layout that does not fit
//! is a wrong layout or a wrong recording.

use std::fmt;

/// A field's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Unsigned integer of N bytes (1, 2, 4, 8).
    U(usize),
    /// Signed integer of N bytes.
    I(usize),
    /// IEEE float of N bytes (4, 8).
    F(usize),
    /// N bytes skipped.
    Pad(usize),
}

impl Kind {
    /// Bytes the field takes.
    pub fn size(self) -> usize {
        match self {
            Kind::U(n) | Kind::I(n) | Kind::F(n) | Kind::Pad(n) => n,
        }
    }
}

/// One named field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its column name.
    pub name: String,
    /// Its type.
    pub kind: Kind,
}

/// A decoded value.
///
/// Design choice: **a float keeps its width** (`F32` apart from `F64`), so
/// it is printed shortest-round-trip for its own width: an f32 `0.1` is
/// `0.1`, never its widened `0.10000000149011612`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
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
            Value::F32(v) if v.is_finite() => write!(f, "{:?}", f32_digits(v)),
            Value::F64(v) if v.is_finite() => write!(f, "{v:?}"),
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
            Value::F32(v) => f64::from(v),
            Value::F64(v) => v,
            Value::U(_) | Value::I(_) => return None,
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
    /// An f32 is written with the digits of [`f32_digits`].
    pub fn to_json(self) -> serde_json::Value {
        if let Some(i) = self.non_finite() {
            return JSON_NON_FINITE[i].into();
        }
        let f = match self {
            Value::U(v) => return v.into(),
            Value::I(v) => return v.into(),
            Value::F32(v) => f32_digits(v),
            Value::F64(v) => v,
        };
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
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

/// A parsed layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The fields in order, pads included (they have no column).
    pub fields: Vec<Field>,
    /// Big-endian.
    pub big_endian: bool,
    /// The layout as the user wrote it (for messages).
    pub spec: String,
}

impl Layout {
    /// Parses either spelling (see the module docs).
    ///
    /// # Errors
    ///
    /// One sentence naming what is wrong.
    pub fn parse(spec: &str) -> Result<Layout, String> {
        let s = spec.trim();
        let (big_endian, body) = match s.as_bytes().first() {
            Some(b'>' | b'!') => (true, &s[1..]),
            Some(b'<' | b'=') => (false, &s[1..]),
            Some(b'@') => {
                return Err(format!(
                    "layout '{spec}': '@' means native alignment, which this export does not model; use '<' or '>'"
                ))
            }
            _ => (false, s),
        };
        let fields = if body.contains(':') {
            named(body, spec)?
        } else {
            struct_codes(body, spec)?
        };
        if fields.iter().all(|f| matches!(f.kind, Kind::Pad(_))) {
            return Err(format!("layout '{spec}' has no field"));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(f) = fields
            .iter()
            .filter(|f| !matches!(f.kind, Kind::Pad(_)))
            .find(|f| !seen.insert(f.name.as_str()))
        {
            return Err(format!(
                "layout '{spec}' names the field '{}' twice",
                f.name
            ));
        }
        Ok(Layout {
            fields,
            big_endian,
            spec: spec.to_string(),
        })
    }

    /// Bytes a record must have.
    pub fn size(&self) -> usize {
        self.fields.iter().map(|f| f.kind.size()).sum()
    }

    /// The fields that have a column (pads left out).
    pub fn columns(&self) -> impl Iterator<Item = &Field> {
        self.fields
            .iter()
            .filter(|f| !matches!(f.kind, Kind::Pad(_)))
    }

    /// Whether `record` is the layout's size.
    ///
    /// # Errors
    ///
    /// The sentence for a record that is not (`is 10 bytes, but the layout
    /// '<Iff' is 12 bytes`).
    pub fn fits(&self, record: &[u8]) -> Result<(), String> {
        if record.len() == self.size() {
            return Ok(());
        }
        Err(format!(
            "is {} bytes, but the layout '{}' is {} bytes",
            record.len(),
            self.spec,
            self.size()
        ))
    }

    /// Decodes `record` into `out` (cleared first), one value per column.
    ///
    /// # Errors
    ///
    /// The sentence for a record that is not the layout's size.
    pub fn decode(&self, record: &[u8], out: &mut Vec<Value>) -> Result<(), String> {
        self.fits(record)?;
        out.clear();
        let mut at = 0;
        for f in &self.fields {
            let n = f.kind.size();
            let b = &record[at..at + n];
            at += n;
            // A pad may be longer than any value (`_:pad56`): skipped
            // before the 8-byte buffer below.
            if matches!(f.kind, Kind::Pad(_)) {
                continue;
            }
            let mut raw = [0u8; 8];
            raw[..n].copy_from_slice(b);
            if self.big_endian {
                raw[..n].reverse();
            }
            let u = u64::from_le_bytes(raw);
            out.push(match f.kind {
                Kind::Pad(_) => continue,
                Kind::U(_) => Value::U(u),
                Kind::I(n) => {
                    let shift = 64 - 8 * n as u32;
                    Value::I(((u << shift) as i64) >> shift)
                }
                Kind::F(4) => Value::F32(f32::from_bits(u as u32)),
                Kind::F(_) => Value::F64(f64::from_bits(u)),
            });
        }
        Ok(())
    }
}

/// `NAME:TYPE,…`.
fn named(body: &str, spec: &str) -> Result<Vec<Field>, String> {
    body.split(',')
        .map(|part| {
            let (name, ty) = part.trim().split_once(':').ok_or_else(|| {
                format!("layout '{spec}': '{part}' is not NAME:TYPE (for example t:u32,x:f32)")
            })?;
            let name = name.trim();
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "layout '{spec}': the field name '{name}' is not letters, digits and '_'"
                ));
            }
            let kind = match ty.trim() {
                "u8" => Kind::U(1),
                "u16" => Kind::U(2),
                "u32" => Kind::U(4),
                "u64" => Kind::U(8),
                "i8" => Kind::I(1),
                "i16" => Kind::I(2),
                "i32" => Kind::I(4),
                "i64" => Kind::I(8),
                "f32" => Kind::F(4),
                "f64" => Kind::F(8),
                t => match t.strip_prefix("pad").and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) if n > 0 => Kind::Pad(n),
                    _ => return Err(format!(
                        "layout '{spec}': '{t}' is not a type (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64, or padN)"
                    )),
                },
            };
            Ok(Field {
                name: name.to_string(),
                kind,
            })
        })
        .collect()
}

/// Python `struct` codes with repeat counts.
fn struct_codes(body: &str, spec: &str) -> Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    let mut count = String::new();
    for c in body.chars().filter(|c| !c.is_whitespace()) {
        if c.is_ascii_digit() {
            count.push(c);
            continue;
        }
        let n: usize = if count.is_empty() {
            1
        } else {
            count
                .parse()
                .map_err(|_| format!("layout '{spec}': the count '{count}' is too large"))?
        };
        count.clear();
        let kind = match c {
            'x' => {
                fields.push(Field {
                    name: String::new(),
                    kind: Kind::Pad(n),
                });
                continue;
            }
            'b' => Kind::I(1),
            'B' => Kind::U(1),
            'h' => Kind::I(2),
            'H' => Kind::U(2),
            'i' | 'l' => Kind::I(4),
            'I' | 'L' => Kind::U(4),
            'q' => Kind::I(8),
            'Q' => Kind::U(8),
            'f' => Kind::F(4),
            'd' => Kind::F(8),
            c => {
                return Err(format!(
                    "layout '{spec}': '{c}' is not a struct code this export reads (b B h H i I l L q Q f d x)"
                ))
            }
        };
        for _ in 0..n {
            let name = format!(
                "f{}",
                fields
                    .iter()
                    .filter(|f| !matches!(f.kind, Kind::Pad(_)))
                    .count()
            );
            fields.push(Field { name, kind });
        }
    }
    if !count.is_empty() {
        return Err(format!("layout '{spec}' ends in a count without a code"));
    }
    Ok(fields)
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
        named.decode(&rec, &mut a).unwrap();
        code.decode(&rec, &mut b).unwrap();
        assert_eq!(a, vec![Value::U(7), Value::F32(1.5), Value::F32(-2.25)]);
        assert_eq!(a, b);
        let cols: Vec<&str> = code.columns().map(|f| f.name.as_str()).collect();
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
        l.decode(&rec, &mut v).unwrap();
        assert_eq!(
            v,
            vec![Value::I(-3), Value::U(0x0102_0304), Value::F64(1e-3)]
        );
        let l = Layout::parse("!2hx2B").unwrap();
        assert_eq!(l.size(), 7);
        l.decode(&[0xff, 0xfe, 0, 1, 9, 200, 3], &mut v).unwrap();
        assert_eq!(
            v,
            vec![Value::I(-2), Value::I(1), Value::U(200), Value::U(3)]
        );
        // Pads longer than a value: the synthetic source's 64-byte record.
        for spec in ["n:u64,_:pad56", "<Q56x"] {
            let l = Layout::parse(spec).unwrap();
            let mut rec = 7u64.to_le_bytes().to_vec();
            rec.resize(64, 0xab);
            l.decode(&rec, &mut v).unwrap();
            assert_eq!(v, vec![Value::U(7)], "{spec}");
        }
    }

    #[test]
    fn a_wrong_layout_or_record_is_one_sentence() {
        for (bad, says) in [
            ("t:u33", "is not a type"),
            ("t", "not a struct code"),
            ("", "no field"),
            ("@I", "native alignment"),
            ("Iz", "not a struct code"),
            ("a:u8,a:u8", "twice"),
            ("a b:u8", "not letters"),
            ("I3", "count without a code"),
            ("_:pad4", "no field"),
        ] {
            let e = Layout::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let l = Layout::parse("t:u32").unwrap();
        let e = l.decode(&[1, 2, 3], &mut Vec::new()).unwrap_err();
        assert_eq!(e, "is 3 bytes, but the layout 't:u32' is 4 bytes");
    }

    #[test]
    fn floats_are_written_shortest_for_their_width_and_non_finite_by_name() {
        let csv = |v: Value| v.to_string();
        let json = |v: Value| v.to_json().to_string();
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
        assert_eq!(json(Value::U(u64::MAX)), "18446744073709551615");
        assert_eq!(csv(Value::I(i64::MIN)), "-9223372036854775808");
    }
}
