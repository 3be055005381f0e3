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
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// A float.
    F(f64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            // Rust's shortest round-trip form; what JSON cannot hold
            // (NaN, infinities) is spelled as Python and pandas read it.
            Value::F(v) if v.is_finite() => write!(f, "{v}"),
            Value::F(v) if v.is_nan() => f.write_str("nan"),
            Value::F(v) => f.write_str(if *v > 0.0 { "inf" } else { "-inf" }),
        }
    }
}

impl Value {
    /// As a JSON value (a non-finite float becomes `null`).
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Value::U(v) => v.into(),
            Value::I(v) => v.into(),
            Value::F(v) => {
                serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into)
            }
        }
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

    /// Decodes `record` into `out` (cleared first), one value per column.
    ///
    /// # Errors
    ///
    /// The sentence for a record that is not the layout's size.
    pub fn decode(&self, record: &[u8], out: &mut Vec<Value>) -> Result<(), String> {
        if record.len() != self.size() {
            return Err(format!(
                "is {} bytes, but the layout '{}' is {} bytes",
                record.len(),
                self.spec,
                self.size()
            ));
        }
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
                Kind::F(4) => Value::F(f32::from_bits(u as u32) as f64),
                Kind::F(_) => Value::F(f64::from_bits(u)),
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
        assert_eq!(a, vec![Value::U(7), Value::F(1.5), Value::F(-2.25)]);
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
        assert_eq!(v, vec![Value::I(-3), Value::U(0x0102_0304), Value::F(1e-3)]);
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
}
