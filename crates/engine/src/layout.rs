//! The record layout grammar: the names and types of a fixed-size binary
//! record's fields, as `rtrec record --layout` stores it with a recording
//! (docs/format.md, "The layout frame") and `rtrec export --layout` reads
//! it. This module owns parsing, the canonical text a recording stores and
//! the size; decoding a record into values is the export's.
//!
//! Two spellings of one thing:
//! - **Named**: `t:u32,x:f32,y:f32` — `NAME:TYPE` pairs, comma-separated,
//!   with the types `u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64 bool`, each
//!   also as an array of N (`acc:f32[3]`), text of N bytes as `sN`
//!   (`name:s16`), and `pad` N bytes as `_:pad4`; little-endian unless the whole layout starts with
//!   `>` (big-endian) or `<` (little, explicit).
//! - **Python's `struct` notation**: `<Iff` (no colon): the byte-order
//!   prefixes `<`, `>`, `!`, `=` (standard sizes, no alignment: `@` and
//!   native alignment are refused), the codes `b B h H i I l L q Q e f d ?`
//!   and `x` for a pad byte, with repeat counts (`3f`), and `Ns` for text
//!   of N bytes (one field, as in `struct`); the fields are named `f0`,
//!   `f1`, ….
//!
//! Design choice: **an array is N columns** (`acc:f32[3]` is the columns
//! `acc_0`, `acc_1`, `acc_2`, [`Layout::columns`]) in every table format,
//! so each element is a column every reader types and plots alike; the
//! stored text keeps the array (`acc:f32[3]`). Python's `struct` notation
//! has no arrays (`3f` is three fields).
//!
//! Design choice: the engine holds the grammar (not the export) so that
//! the record-only build, `rtrec record` and the C API check a layout at
//! the start and store one canonical text ([`Layout::canonical`]), which
//! every reader parses back the same way.

use std::fmt;

/// A field's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Unsigned integer of N bytes (1, 2, 4, 8).
    U(usize),
    /// Signed integer of N bytes.
    I(usize),
    /// IEEE float of N bytes (2: binary16, `f16`; 4; 8).
    F(usize),
    /// N bytes skipped.
    Pad(usize),
    /// One byte that is 0 (false) or 1 (true), C's `_Bool` and Python
    /// `struct`'s `?`. Design choice: any other byte is not a bool; the
    /// exports refuse it rather than print it as `true` and lose the byte.
    Bool,
    /// Text of N bytes: UTF-8, padded with zero bytes to N (C's
    /// `char name[N]`, Python `struct`'s `Ns`, NumPy's `SN`). Design
    /// choice: bytes that are not UTF-8, or not zero after the text's
    /// end, are refused by the exports (read such a field as `u8[N]`).
    Str(usize),
}

impl fmt::Display for Kind {
    /// The type's name in the named spelling (`u32`, `f64`, `pad4`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Kind::U(n) => write!(f, "u{}", 8 * n),
            Kind::I(n) => write!(f, "i{}", 8 * n),
            Kind::F(n) => write!(f, "f{}", 8 * n),
            Kind::Pad(n) => write!(f, "pad{n}"),
            Kind::Bool => f.write_str("bool"),
            Kind::Str(n) => write!(f, "s{n}"),
        }
    }
}

impl Kind {
    /// Bytes the field takes.
    pub fn size(self) -> usize {
        match self {
            Kind::U(n) | Kind::I(n) | Kind::F(n) | Kind::Pad(n) | Kind::Str(n) => n,
            Kind::Bool => 1,
        }
    }
}

/// One named field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name (an array's columns add `_0`, `_1`, …).
    pub name: String,
    /// Its type (of each element of an array).
    pub kind: Kind,
    /// `Some(n)`: an array of `n` elements (`acc:f32[3]`); `None`: one
    /// value.
    pub array: Option<usize>,
}

impl Field {
    /// Values it holds: an array's length, else 1.
    pub fn count(&self) -> usize {
        self.array.unwrap_or(1)
    }

    /// The column name of its element `i`: its name, or for an array
    /// `NAME_I`.
    pub fn column_name(&self, i: usize) -> String {
        match self.array {
            Some(_) => format!("{}_{i}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One column of a layout: a field, or one element of an array field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its name: the field's, or for an array's element `NAME_I`.
    pub name: String,
    /// Its type.
    pub kind: Kind,
}

/// The longest array a field may be, and the most values (pads included)
/// a layout may have: a layout's text is at most [`MAX_LAYOUT_LEN`]
/// bytes, and its columns are bounded alike.
pub const MAX_ARRAY: usize = 4096;

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

/// The longest canonical layout text a recording stores (its layout frame
/// is a marker frame: at most
/// [`MAX_MARKER_PAYLOAD`](crate::format::MAX_MARKER_PAYLOAD) bytes).
pub const MAX_LAYOUT_LEN: usize = 4096;

impl Layout {
    /// Parses either spelling (see the module docs).
    ///
    /// # Errors
    ///
    /// One sentence naming what is wrong.
    pub fn parse(spec: &str) -> Result<Layout, String> {
        Layout::parse_as(spec, true)
    }

    /// [`Layout::parse`], of the named spelling only when
    /// `struct_notation` is false: what a recording stores is always
    /// named ([`Layout::parse_stored`]).
    fn parse_as(spec: &str, struct_notation: bool) -> Result<Layout, String> {
        let s = spec.trim();
        let (big_endian, body) = match s.as_bytes().first() {
            Some(b'>' | b'!') => (true, &s[1..]),
            Some(b'<' | b'=') => (false, &s[1..]),
            Some(b'@') => {
                return Err(format!(
                    "layout '{spec}': '@' means native alignment, which rtrec does not model; use '<' or '>'"
                ))
            }
            _ => (false, s),
        };
        let fields = if body.contains(':') {
            named(body, spec)?
        } else if struct_notation {
            struct_codes(body, spec)?
        } else {
            return Err(format!(
                "layout '{spec}': a stored layout is NAME:TYPE fields (e.g. t:u32,x:f32)"
            ));
        };
        if fields.iter().all(|f| matches!(f.kind, Kind::Pad(_))) {
            return Err(format!("layout '{spec}' has no field"));
        }
        let l = Layout {
            fields,
            big_endian,
            spec: spec.to_string(),
        };
        let columns: usize = l.fields.iter().map(Field::count).sum();
        if columns > MAX_ARRAY {
            return Err(format!(
                "layout '{spec}' has {columns} values, more than the {MAX_ARRAY} a layout may have"
            ));
        }
        // Every column's name once: two fields of one name, or an array's
        // element and another field (`a:u8[2],a_1:u8`). A scan, not a set:
        // a layout is a few fields (at most 4 KiB of text), and no hash
        // table is compiled for it.
        let cols: Vec<Column> = l.columns().collect();
        if let Some(c) = cols
            .iter()
            .enumerate()
            .find(|(i, c)| cols[..*i].iter().any(|d| d.name == c.name))
            .map(|(_, c)| c)
        {
            return Err(format!(
                "layout '{spec}' names the column '{}' twice",
                c.name
            ));
        }
        Ok(l)
    }

    /// The canonical text of the layout, which a recording stores (its
    /// layout frame) and readers parse back to the same fields: the named
    /// spelling, `>` first when big-endian, pads as `_:padN`
    /// (`<Iff` is `f0:u32,f1:f32,f2:f32`). Two layouts are the same when
    /// their canonical texts are.
    pub fn canonical(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::from(if self.big_endian { ">" } else { "" });
        for (i, f) in self.fields.iter().enumerate() {
            let name = if f.name.is_empty() { "_" } else { &f.name };
            let comma = if i == 0 { "" } else { "," };
            let _ = write!(out, "{comma}{name}:{}", f.kind);
            if let Some(n) = f.array {
                let _ = write!(out, "[{n}]");
            }
        }
        out
    }

    /// Parses the layout a recording stores ([`Layout::canonical`]'s
    /// text: the named spelling only), refusing one longer than
    /// [`MAX_LAYOUT_LEN`].
    ///
    /// # Errors
    ///
    /// One sentence naming what is wrong.
    pub fn parse_stored(spec: &str) -> Result<Layout, String> {
        let l = Layout::parse_as(spec, false)?;
        if l.canonical().len() > MAX_LAYOUT_LEN {
            return Err(format!(
                "layout '{spec}' is longer than {MAX_LAYOUT_LEN} bytes once written out"
            ));
        }
        Ok(l)
    }

    /// Bytes a record must have.
    pub fn size(&self) -> usize {
        self.fields.iter().map(|f| f.kind.size() * f.count()).sum()
    }

    /// The columns, in order: each field's, an array's one per element
    /// (`acc_0`, `acc_1`, …), pads left out.
    pub fn columns(&self) -> impl Iterator<Item = Column> + '_ {
        self.fields
            .iter()
            .filter(|f| !matches!(f.kind, Kind::Pad(_)))
            .flat_map(|f| {
                (0..f.count()).map(move |i| Column {
                    name: f.column_name(i),
                    kind: f.kind,
                })
            })
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
}

/// `NAME:TYPE,…`.
fn named(body: &str, spec: &str) -> Result<Vec<Field>, String> {
    body.split(',')
        .map(|part| {
            let (name, ty) = part.trim().split_once(':').ok_or_else(|| {
                format!("layout '{spec}': '{part}' is not NAME:TYPE (for example t:u32,x:f32)")
            })?;
            let name = name.trim();
            let (ty, array) = array_of(ty.trim(), spec)?;
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
                "f16" => Kind::F(2),
                "f32" => Kind::F(4),
                "f64" => Kind::F(8),
                "bool" => Kind::Bool,
                t => match sized(t, "pad").map(Kind::Pad).or_else(|| sized(t, "s").map(Kind::Str)) {
                    Some(k) => k,
                    _ => return Err(format!(
                        "layout '{spec}': '{t}' is not a type (u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64 bool, sN or padN)"
                    )),
                },
            };
            if array.is_some() && matches!(kind, Kind::Pad(_)) {
                return Err(format!(
                    "layout '{spec}': a pad is not an array (write _:padN with N its bytes)"
                ));
            }
            Ok(Field {
                name: name.to_string(),
                kind,
                array,
            })
        })
        .collect()
}

/// `N` of a type `PREFIXN` (`pad4`, `s16`), at least 1.
fn sized(t: &str, prefix: &str) -> Option<usize> {
    t.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
}

/// A type with an optional `[N]` after it: the type, and N.
fn array_of<'t>(ty: &'t str, spec: &str) -> Result<(&'t str, Option<usize>), String> {
    let Some((ty, n)) = ty.strip_suffix(']').and_then(|t| t.split_once('[')) else {
        return Ok((ty, None));
    };
    match n.parse::<usize>() {
        Ok(n) if (1..=MAX_ARRAY).contains(&n) => Ok((ty, Some(n))),
        _ => Err(format!(
            "layout '{spec}': '[{n}]' is not an array length (1 to {MAX_ARRAY})"
        )),
    }
}

/// The name `struct` notation gives the field after `fields`: `f0`, `f1`,
/// … counting the fields that are not pads.
fn next_name(fields: &[Field]) -> String {
    let k = fields
        .iter()
        .filter(|f| !matches!(f.kind, Kind::Pad(_)))
        .count();
    format!("f{k}")
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
            // Bounded: a count makes as many fields.
            count
                .parse()
                .ok()
                .filter(|&n| n <= MAX_LAYOUT_LEN)
                .ok_or_else(|| format!("layout '{spec}': the count '{count}' is too large"))?
        };
        count.clear();
        let kind = match c {
            'x' => {
                fields.push(Field {
                    name: String::new(),
                    kind: Kind::Pad(n),
                    array: None,
                });
                continue;
            }
            // `8s`: one field of 8 bytes, not eight (`struct`'s rule).
            's' => {
                fields.push(Field {
                    name: next_name(&fields),
                    kind: Kind::Str(n),
                    array: None,
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
            'e' => Kind::F(2),
            'f' => Kind::F(4),
            'd' => Kind::F(8),
            '?' => Kind::Bool,
            c => {
                return Err(format!(
                    "layout '{spec}': '{c}' is not a struct code this export reads (b B h H i I l L q Q e f d ? s x)"
                ))
            }
        };
        for _ in 0..n {
            fields.push(Field {
                name: next_name(&fields),
                kind,
                array: None,
            });
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
    fn both_spellings_have_one_canonical_text_that_parses_back_the_same() {
        let (named, code) = (
            Layout::parse("t:u32,x:f32,y:f32").unwrap(),
            Layout::parse("<Iff").unwrap(),
        );
        assert_eq!(
            (named.canonical().as_str(), code.canonical().as_str()),
            ("t:u32,x:f32,y:f32", "f0:u32,f1:f32,f2:f32")
        );
        let arr = Layout::parse(">t:u32,acc:f32[3],ok:bool[2]").unwrap();
        assert_eq!(arr.canonical(), ">t:u32,acc:f32[3],ok:bool[2]");
        assert_eq!(arr.size(), 4 + 12 + 2);
        let cols: Vec<String> = arr.columns().map(|c| c.name).collect();
        assert_eq!(cols, ["t", "acc_0", "acc_1", "acc_2", "ok_0", "ok_1"]);
        let text = Layout::parse("<H8sx?").unwrap();
        assert_eq!(text.canonical(), "f0:u16,f1:s8,_:pad1,f2:bool");
        assert_eq!(text.size(), 12);
        let flags = Layout::parse("<H?x?").unwrap();
        assert_eq!(flags.canonical(), "f0:u16,f1:bool,_:pad1,f2:bool");
        assert_eq!(flags.size(), 5);
        let half = Layout::parse("<e2e").unwrap();
        assert_eq!(half.canonical(), "f0:f16,f1:f16,f2:f16");
        assert_eq!(half.size(), 6);
        assert_eq!(Layout::parse("h:f16[2]").unwrap().size(), 4);
        let be = Layout::parse("!2hx2B").unwrap();
        assert_eq!(be.canonical(), ">f0:i16,f1:i16,_:pad1,f2:u8,f3:u8");
        for l in [named, code, be, flags, arr, text, half] {
            let back = Layout::parse_stored(&l.canonical()).unwrap();
            assert_eq!(back.canonical(), l.canonical());
            assert_eq!(back.size(), l.size());
        }
    }

    #[test]
    fn a_wrong_layout_is_one_sentence() {
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
            ("a:u8[0]", "not an array length"),
            ("a:u8[x]", "not an array length"),
            ("a:u8[4097]", "not an array length"),
            ("_:pad2[2]", "a pad is not an array"),
            ("a:u8[2],a_1:u8", "names the column 'a_1' twice"),
            ("a:u8[4000],b:u8[97]", "more than the 4096"),
        ] {
            let e = Layout::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let l = Layout::parse("t:u32").unwrap();
        let e = l.fits(&[1, 2, 3]).unwrap_err();
        assert_eq!(e, "is 3 bytes, but the layout 't:u32' is 4 bytes");
        let long = format!("a:u8,{}", vec!["_:pad1"; 700].join(","));
        assert!(Layout::parse_stored(&long)
            .unwrap_err()
            .contains("longer than 4096"));
    }
}
