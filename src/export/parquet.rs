//! `--format parquet`: the records and gaps as one Parquet table, the
//! columns of the CSV export with Parquet's own types, for pandas, polars,
//! DuckDB, Spark and every Arrow reader.
//!
//! The table (a row per record and per gap, in sequence order):
//!
//! | column | Parquet type | a record | a gap |
//! |---|---|---|---|
//! | `kind` | string | `record` | `gap` |
//! | `seq` | uint64 | its sequence number | the first missing one |
//! | `wall_time` | timestamp (ns, UTC) | the header's mapping | null |
//! | `mono_ns` | uint64 | `CLOCK_MONOTONIC` ns | null |
//! | `exact` | boolean | false when interpolated in a packed frame | null |
//! | `len` | uint32 | its bytes | null |
//! | the layout's fields, or `payload` | each field's type; binary | its values; its bytes | null |
//! | `count` | uint64 | null | how many (null: unknown) |
//! | `reason` | string | null | `ring_full`, `missing`, … |
//!
//! The file's key-value metadata holds `rtrec.recording`: a JSON object
//! with the recording's id, the layout's spec (when given), and the records
//! and losses verification counted.
//!
//! Design choices:
//! - **The Arrow project's `parquet` crate, its column writer only.** The
//!   rows come from our own walk ([`super::rows`]), so building Arrow
//!   arrays first would be a copy and a dependency more; the column API
//!   writes the same files.
//! - **Every value with its bits.** Integers are stored with their width
//!   and signedness as logical types (an unsigned 32-bit field is an INT32
//!   holding its bits, annotated `INTEGER(32,false)`, which pyarrow reads
//!   back as `uint32`), floats as FLOAT16 (an f16), FLOAT or DOUBLE (NaN
//!   payloads, infinities and `-0.0` included): nothing goes through text.
//! - **A gap is a row** (as in every export: docs/export.md), its record
//!   columns null, so a reader that drops nulls sees exactly the records,
//!   and one that counts `kind == 'gap'` rows sees every loss.
//! - **Snappy pages**, pyarrow's default: fast, and pure Rust here (no
//!   second zstd library beside MCAP's); `seq`, `wall_time` and `mono_ns`
//!   delta-encoded (`DELTA_BINARY_PACKED`, which every reader named above
//!   reads): they rise row by row, so a few bits a row instead of 8 bytes.
//! - **Row groups of [`ROW_GROUP`] rows**: memory stays bounded whatever
//!   the recording's length (a row group's columns are held until it is
//!   written).
//! - **Verified first**, as every export: a corrupt input or gaps without
//!   `--allow-gaps` are refused before anything is written.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray,
    FixedLenByteArrayType, FloatType, Int32Type, Int64Type,
};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::layout::{Kind, Layout, Value};
use super::part::Part;
use super::range::{self, Selection};
use super::rows::Item;
use super::table::{decode, refuse_fixed_names};

/// Rows per row group.
pub const ROW_GROUP: usize = 128 * 1024;

/// What the file's `rtrec.recording` metadata says.
pub struct Meta {
    /// The recording's id (hex).
    pub recording: String,
    /// Records in the inputs, as verification counted them.
    pub records: u64,
    /// Records dropped or missing.
    pub lost: u64,
}

impl Meta {
    /// The `rtrec.recording` metadata: a JSON object with the recording's
    /// id, the layout's spec (null without one), and the records and
    /// losses verification counted (the Parquet and Arrow exports').
    pub fn doc(&self, layout: Option<&Layout>) -> String {
        serde_json::json!({
            "recording": self.recording,
            "layout": layout.map(|l| l.spec.as_str()),
            "records": self.records,
            "lost": self.lost,
        })
        .to_string()
    }
}

/// A nullable column's values and definition levels (1: a value, 0: null).
struct Opt<T> {
    values: Vec<T>,
    defs: Vec<i16>,
}

impl<T> Opt<T> {
    fn new() -> Opt<T> {
        Opt {
            values: Vec::new(),
            defs: Vec::new(),
        }
    }

    fn push(&mut self, v: Option<T>) {
        match v {
            Some(v) => {
                self.values.push(v);
                self.defs.push(1);
            }
            None => self.defs.push(0),
        }
    }

    fn clear(&mut self) {
        self.values.clear();
        self.defs.clear();
    }
}

/// A layout field's column, by its physical type.
enum FieldCol {
    I32(Opt<i32>),
    I64(Opt<i64>),
    /// f16: Parquet's FLOAT16, two little-endian bytes.
    F16(Opt<FixedLenByteArray>),
    F32(Opt<f32>),
    F64(Opt<f64>),
    Bool(Opt<bool>),
    Str(Opt<ByteArray>),
}

impl FieldCol {
    fn of(kind: Kind) -> FieldCol {
        match kind {
            Kind::U(8) | Kind::I(8) => FieldCol::I64(Opt::new()),
            Kind::F(2) => FieldCol::F16(Opt::new()),
            Kind::F(4) => FieldCol::F32(Opt::new()),
            Kind::F(_) => FieldCol::F64(Opt::new()),
            Kind::Bool => FieldCol::Bool(Opt::new()),
            Kind::Str(_) => FieldCol::Str(Opt::new()),
            _ => FieldCol::I32(Opt::new()),
        }
    }

    /// The column's Parquet schema line for field `name` of `kind`.
    fn schema(name: &str, kind: Kind) -> String {
        let ty = match kind {
            Kind::U(8) => "int64 {} (INTEGER(64,false))".to_string(),
            Kind::I(8) => "int64 {}".to_string(),
            Kind::U(n) => format!("int32 {{}} (INTEGER({},false))", n * 8),
            Kind::I(4) => "int32 {}".to_string(),
            Kind::I(n) => format!("int32 {{}} (INTEGER({},true))", n * 8),
            Kind::F(2) => "fixed_len_byte_array(2) {} (FLOAT16)".to_string(),
            Kind::F(4) => "float {}".to_string(),
            Kind::F(_) => "double {}".to_string(),
            Kind::Bool => "boolean {}".to_string(),
            Kind::Str(_) => "binary {} (STRING)".to_string(),
            Kind::Pad(_) => unreachable!("pads are no column"),
        };
        format!("optional {};", ty.replace("{}", name))
    }

    /// Adds a record's value (its bits, in the column's physical type), or
    /// a gap's null.
    fn push(&mut self, v: Option<Value>, record: &[u8]) {
        match self {
            FieldCol::I32(c) => c.push(v.map(|v| match v {
                // An unsigned field's bits (its logical type says unsigned).
                Value::U(u) => u as u32 as i32,
                Value::I(i) => i as i32,
                _ => unreachable!("an integer field decodes to an integer"),
            })),
            FieldCol::I64(c) => c.push(v.map(|v| match v {
                Value::U(u) => u as i64,
                Value::I(i) => i,
                _ => unreachable!("an integer field decodes to an integer"),
            })),
            FieldCol::F16(c) => c.push(v.map(|v| match v {
                Value::F16(f) => FixedLenByteArray::from(f.to_le_bytes().to_vec()),
                _ => unreachable!("a 2-byte float field decodes to an f16"),
            })),
            FieldCol::F32(c) => c.push(v.map(|v| match v {
                Value::F32(f) => f,
                _ => unreachable!("a 4-byte float field decodes to an f32"),
            })),
            FieldCol::F64(c) => c.push(v.map(|v| match v {
                Value::F64(f) => f,
                _ => unreachable!("an 8-byte float field decodes to an f64"),
            })),
            FieldCol::Bool(c) => c.push(v.map(|v| match v {
                Value::Bool(b) => b,
                _ => unreachable!("a bool field decodes to a bool"),
            })),
            FieldCol::Str(c) => c.push(v.map(|v| ByteArray::from(v.text(record)))),
        }
    }

    fn clear(&mut self) {
        match self {
            FieldCol::I32(c) => c.clear(),
            FieldCol::I64(c) => c.clear(),
            FieldCol::F16(c) => c.clear(),
            FieldCol::F32(c) => c.clear(),
            FieldCol::F64(c) => c.clear(),
            FieldCol::Bool(c) => c.clear(),
            FieldCol::Str(c) => c.clear(),
        }
    }
}

/// One row group's columns.
struct Columns {
    kind: Vec<ByteArray>,
    seq: Vec<i64>,
    wall: Opt<i64>,
    mono: Opt<i64>,
    exact: Opt<bool>,
    len: Opt<i32>,
    /// The layout's fields, or (without a layout) none and `payload`.
    fields: Vec<FieldCol>,
    payload: Opt<ByteArray>,
    count: Opt<i64>,
    reason: Opt<ByteArray>,
}

impl Columns {
    fn rows(&self) -> usize {
        self.seq.len()
    }

    fn clear(&mut self) {
        self.kind.clear();
        self.seq.clear();
        self.wall.clear();
        self.mono.clear();
        self.exact.clear();
        self.len.clear();
        self.fields.iter_mut().for_each(FieldCol::clear);
        self.payload.clear();
        self.count.clear();
        self.reason.clear();
    }
}

/// The table's Parquet schema (see the module docs).
fn schema(layout: Option<&Layout>) -> String {
    let mut s = String::from(
        "message rtrec {\n\
         required binary kind (STRING);\n\
         required int64 seq (INTEGER(64,false));\n\
         optional int64 wall_time (TIMESTAMP(NANOS,true));\n\
         optional int64 mono_ns (INTEGER(64,false));\n\
         optional boolean exact;\n\
         optional int32 len (INTEGER(32,false));\n",
    );
    match layout {
        Some(l) => {
            for f in l.columns() {
                s.push_str(&FieldCol::schema(&f.name, f.kind));
                s.push('\n');
            }
        }
        None => s.push_str("optional binary payload;\n"),
    }
    s.push_str(
        "optional int64 count (INTEGER(64,false));\n\
         optional binary reason (STRING);\n}",
    );
    s
}

/// The export's writer, for the Parquet writer's `Write + Send` bound.
///
/// SAFETY of the `Send` below: the Parquet writer made from it lives and
/// dies inside [`write`], on the calling thread; neither this module nor
/// the `parquet` crate's synchronous file writer moves it to another
/// thread, so the bound is never used. It lets the Parquet bytes go
/// through the same sink as every export (the temporary file renamed when
/// whole, or stdout).
struct OnThisThread<'a>(&'a mut dyn Write);

// SAFETY: see the type's docs: never sent to another thread.
unsafe impl Send for OnThisThread<'_> {}

impl Write for OnThisThread<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Writes the table of the records `selection` keeps of `parts` to `out`;
/// returns the walk's counts (records, gap rows).
///
/// # Errors
///
/// A layout field named like a fixed column, a record that does not fit
/// the layout (the table exports' sentence), or a failed write.
pub fn write(
    layout: Option<&Layout>,
    selection: &Selection,
    parts: &[Part],
    meta: &Meta,
    out: &mut dyn Write,
) -> crate::error::Result<super::rows::Walked> {
    if let Some(l) = layout {
        refuse_fixed_names(l)?;
    }
    let schema = parse_message_type(&schema(layout)).map_err(pq)?;
    let mut props = WriterProperties::builder().set_compression(Compression::SNAPPY);
    // The three counters that rise row by row take a delta encoding: a
    // few bits a row where plain takes 8 bytes.
    for name in ["seq", "wall_time", "mono_ns"] {
        let path = ColumnPath::from(name);
        props = props
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    let props = props
        .set_created_by(format!("rtrec {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "rtrec.recording".to_string(),
            meta.doc(layout),
        )]))
        .build();
    let mut w = SerializedFileWriter::new(OnThisThread(out), Arc::new(schema), Arc::new(props))
        .map_err(pq)?;
    let mut cols = Columns {
        kind: Vec::new(),
        seq: Vec::new(),
        wall: Opt::new(),
        mono: Opt::new(),
        exact: Opt::new(),
        len: Opt::new(),
        fields: layout
            .map(|l| l.columns().map(|f| FieldCol::of(f.kind)).collect())
            .unwrap_or_default(),
        payload: Opt::new(),
        count: Opt::new(),
        reason: Opt::new(),
    };
    let mut values = Vec::new();
    let walked = range::walk_selected(parts, selection, &mut |item| {
        push_row(&mut cols, layout, &mut values, item)?;
        if cols.rows() >= ROW_GROUP {
            write_group(&mut w, &cols, layout.is_some())?;
            cols.clear();
        }
        Ok(())
    })?;
    if cols.rows() > 0 {
        write_group(&mut w, &cols, layout.is_some())?;
    }
    w.close().map_err(pq)?;
    Ok(walked)
}

/// Adds one item's row to `cols`.
fn push_row(
    cols: &mut Columns,
    layout: Option<&Layout>,
    values: &mut Vec<Value>,
    item: Item<'_>,
) -> crate::error::Result<()> {
    match item {
        Item::Record {
            seq,
            mono_ns,
            wall_ns,
            exact,
            data,
        } => {
            match layout {
                Some(l) => {
                    decode(l, seq, data, values)?;
                    for (c, v) in cols.fields.iter_mut().zip(values.iter()) {
                        c.push(Some(*v), data);
                    }
                }
                None => cols.payload.push(Some(ByteArray::from(data.to_vec()))),
            }
            cols.kind.push(ByteArray::from("record"));
            cols.seq.push(seq as i64);
            cols.wall.push(Some(wall_ns as i64));
            cols.mono.push(Some(mono_ns as i64));
            cols.exact.push(Some(exact));
            cols.len.push(Some(data.len() as u32 as i32));
            cols.count.push(None);
            cols.reason.push(None);
        }
        Item::Gap {
            first_seq,
            count,
            reason,
        } => {
            cols.kind.push(ByteArray::from("gap"));
            cols.seq.push(first_seq as i64);
            cols.wall.push(None);
            cols.mono.push(None);
            cols.exact.push(None);
            cols.len.push(None);
            if layout.is_some() {
                cols.fields.iter_mut().for_each(|c| c.push(None, &[]));
            } else {
                cols.payload.push(None);
            }
            cols.count.push(count.map(|n| n as i64));
            cols.reason.push(Some(ByteArray::from(reason)));
        }
    }
    Ok(())
}

/// Writes one row group of `cols`, its columns in the schema's order.
fn write_group<W: Write + Send>(
    w: &mut SerializedFileWriter<W>,
    cols: &Columns,
    with_layout: bool,
) -> crate::error::Result<()> {
    let mut rg = w.next_row_group().map_err(pq)?;
    let mut fields = cols.fields.iter();
    let mut at = 0usize;
    while let Some(mut col) = rg.next_column().map_err(pq)? {
        // The schema's order: 6 fixed columns, the fields (or payload),
        // then count and reason.
        let n_mid = if with_layout { cols.fields.len() } else { 1 };
        match at {
            0 => put::<ByteArrayType>(&mut col, &cols.kind, None)?,
            1 => put::<Int64Type>(&mut col, &cols.seq, None)?,
            2 => put::<Int64Type>(&mut col, &cols.wall.values, Some(&cols.wall.defs))?,
            3 => put::<Int64Type>(&mut col, &cols.mono.values, Some(&cols.mono.defs))?,
            4 => put::<BoolType>(&mut col, &cols.exact.values, Some(&cols.exact.defs))?,
            5 => put::<Int32Type>(&mut col, &cols.len.values, Some(&cols.len.defs))?,
            i if i < 6 + n_mid => match (with_layout, fields.next()) {
                (false, _) => {
                    put::<ByteArrayType>(&mut col, &cols.payload.values, Some(&cols.payload.defs))?
                }
                (true, Some(FieldCol::I32(c))) => {
                    put::<Int32Type>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::I64(c))) => {
                    put::<Int64Type>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::F16(c))) => {
                    put::<FixedLenByteArrayType>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::F32(c))) => {
                    put::<FloatType>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::F64(c))) => {
                    put::<DoubleType>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::Bool(c))) => {
                    put::<BoolType>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, Some(FieldCol::Str(c))) => {
                    put::<ByteArrayType>(&mut col, &c.values, Some(&c.defs))?
                }
                (true, None) => unreachable!("a column per layout field"),
            },
            i if i == 6 + n_mid => {
                put::<Int64Type>(&mut col, &cols.count.values, Some(&cols.count.defs))?
            }
            _ => put::<ByteArrayType>(&mut col, &cols.reason.values, Some(&cols.reason.defs))?,
        }
        col.close().map_err(pq)?;
        at += 1;
    }
    rg.close().map_err(pq)?;
    Ok(())
}

/// Writes `values` (and the definition levels of a nullable column).
fn put<T: DataType>(
    col: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    values: &[T::T],
    defs: Option<&[i16]>,
) -> crate::error::Result<()> {
    col.typed::<T>()
        .write_batch(values, defs, None)
        .map_err(pq)?;
    Ok(())
}

/// A Parquet writer's error, as this crate's.
fn pq(e: parquet::errors::ParquetError) -> crate::error::Error {
    std::io::Error::other(format!("writing Parquet: {e}")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parses_with_every_field_type() {
        let l = Layout::parse("<BHIQbhiqfd2x?4se").unwrap();
        let s = schema(Some(&l));
        let t = parse_message_type(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
        // 6 fixed, 13 fields (the pad is no column), count and reason.
        assert_eq!(t.get_fields().len(), 21, "{s}");
        assert!(
            s.contains("optional fixed_len_byte_array(2) f12 (FLOAT16);"),
            "{s}"
        );
        assert!(s.contains("optional binary f11 (STRING);"), "{s}");
        assert!(s.contains("optional boolean f10;"), "{s}");
        assert!(s.contains("optional int32 f0 (INTEGER(8,false));"), "{s}");
        assert!(s.contains("optional int64 f3 (INTEGER(64,false));"), "{s}");
        assert!(s.contains("optional int32 f5 (INTEGER(16,true));"), "{s}");
        assert!(s.contains("optional int32 f6;"), "{s}");
        assert!(s.contains("optional double f9;"), "{s}");
        let raw = schema(None);
        assert_eq!(parse_message_type(&raw).unwrap().get_fields().len(), 9);
    }
}
