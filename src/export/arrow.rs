//! `--format arrow` and `--format arrow-stream`: the records and gaps as
//! Apache Arrow IPC, the columns of the Parquet export with Arrow's own
//! types, for pyarrow, polars and every Arrow reader without a file
//! format's decoding: `arrow` is the IPC file format (`.arrow`, Feather
//! version 2: `pyarrow.ipc.open_file`, `pyarrow.feather.read_table`,
//! `polars.read_ipc`, memory-mapped), `arrow-stream` the IPC stream
//! format (`.arrows`: `pyarrow.ipc.open_stream`, `polars.read_ipc_stream`)
//! for a pipe into Python, which the Python package's `to_arrow()` reads.
//!
//! The table is the Parquet export's ([`super::parquet`]), a row per
//! record and per gap in sequence order:
//!
//! | column | Arrow type | a record | a gap |
//! |---|---|---|---|
//! | `kind` | utf8 | `record` | `gap` |
//! | `seq` | uint64 | its sequence number | the first missing one |
//! | `wall_time` | timestamp\[ns, tz=UTC\] | the header's mapping | null |
//! | `mono_ns` | uint64 | `CLOCK_MONOTONIC` ns | null |
//! | `exact` | bool | false when interpolated in a packed frame | null |
//! | `len` | uint32 | its bytes | null |
//! | the layout's fields, or `payload` | each field's type (`f16` as float16); binary | its values; its bytes | null |
//! | `count` | uint64 | null | how many (null: unknown) |
//! | `reason` | utf8 | null | `ring_full`, `missing`, … |
//!
//! The schema's metadata holds `rtrec.recording`, the Parquet export's
//! JSON object (the recording's id, the layout's spec, the records and
//! losses verification counted).
//!
//! Design choices:
//! - **The Arrow project's own `arrow-ipc` writer** over arrays built with
//!   `arrow-array`'s builders: the format's flatbuffers, alignment and
//!   footer are the project's code, not ours.
//! - **Every value with its bits**, in the field's own Arrow type (`u16`
//!   is `uint16`, not a widened integer as Parquet must store it): Arrow
//!   has every width and signedness, and floats keep NaN payloads,
//!   infinities and `-0.0`.
//! - **Uncompressed buffers.** IPC's LZ4 and zstd body compression would
//!   bring two more codecs into every build, and the point of IPC is that
//!   a reader maps it without decoding; Parquet is the compact format.
//!   So `-o x.arrow.gz` is refused (a reader cannot map it).
//! - **Record batches of [`super::parquet::ROW_GROUP`] rows**: memory
//!   stays bounded whatever the recording's length, and a stream reader
//!   gets its first rows after the first batch, not at the end.
//! - **Verified first**, as every export: a corrupt input or gaps without
//!   `--allow-gaps` are refused before anything is written.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, Float16Builder, Float32Builder, Float64Builder,
    Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder,
    TimestampNanosecondBuilder, UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::layout::{Kind, Layout, Value};
use super::parquet::{Meta, ROW_GROUP};
use super::part::Part;
use super::range::{self, Selection};
use super::rows::Item;
use super::table::{decode, refuse_fixed_names};

/// Which of Arrow's two IPC formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipc {
    /// The file format (random access, a footer): `.arrow`.
    File,
    /// The stream format (read as it arrives): `.arrows`, pipes.
    Stream,
}

/// The Arrow type of a layout field of `kind`.
fn data_type(kind: Kind) -> DataType {
    match kind {
        Kind::U(1) => DataType::UInt8,
        Kind::U(2) => DataType::UInt16,
        Kind::U(4) => DataType::UInt32,
        Kind::U(_) => DataType::UInt64,
        Kind::I(1) => DataType::Int8,
        Kind::I(2) => DataType::Int16,
        Kind::I(4) => DataType::Int32,
        Kind::I(_) => DataType::Int64,
        Kind::F(2) => DataType::Float16,
        Kind::F(4) => DataType::Float32,
        Kind::F(_) => DataType::Float64,
        Kind::Bool => DataType::Boolean,
        Kind::Str(_) => DataType::Utf8,
        Kind::Pad(_) => unreachable!("pads are no column"),
    }
}

/// A layout field's column builder, by its Arrow type.
enum FieldCol {
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    I8(Int8Builder),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    F16(Float16Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl FieldCol {
    fn of(kind: Kind) -> FieldCol {
        match data_type(kind) {
            DataType::UInt8 => FieldCol::U8(UInt8Builder::new()),
            DataType::UInt16 => FieldCol::U16(UInt16Builder::new()),
            DataType::UInt32 => FieldCol::U32(UInt32Builder::new()),
            DataType::UInt64 => FieldCol::U64(UInt64Builder::new()),
            DataType::Int8 => FieldCol::I8(Int8Builder::new()),
            DataType::Int16 => FieldCol::I16(Int16Builder::new()),
            DataType::Int32 => FieldCol::I32(Int32Builder::new()),
            DataType::Int64 => FieldCol::I64(Int64Builder::new()),
            DataType::Float16 => FieldCol::F16(Float16Builder::new()),
            DataType::Float32 => FieldCol::F32(Float32Builder::new()),
            DataType::Float64 => FieldCol::F64(Float64Builder::new()),
            DataType::Boolean => FieldCol::Bool(BooleanBuilder::new()),
            _ => FieldCol::Str(StringBuilder::new()),
        }
    }

    /// Adds a record's value (its bits, in the field's own width), or a
    /// gap's null. The casts narrow a value the layout decoded from a
    /// field of exactly that width, so they lose nothing.
    fn push(&mut self, v: Option<Value>, record: &[u8]) {
        let u = |v: Value| match v {
            Value::U(u) => u,
            _ => unreachable!("an unsigned field decodes to an unsigned integer"),
        };
        let i = |v: Value| match v {
            Value::I(i) => i,
            _ => unreachable!("a signed field decodes to a signed integer"),
        };
        match self {
            FieldCol::U8(b) => b.append_option(v.map(|v| u(v) as u8)),
            FieldCol::U16(b) => b.append_option(v.map(|v| u(v) as u16)),
            FieldCol::U32(b) => b.append_option(v.map(|v| u(v) as u32)),
            FieldCol::U64(b) => b.append_option(v.map(u)),
            FieldCol::I8(b) => b.append_option(v.map(|v| i(v) as i8)),
            FieldCol::I16(b) => b.append_option(v.map(|v| i(v) as i16)),
            FieldCol::I32(b) => b.append_option(v.map(|v| i(v) as i32)),
            FieldCol::I64(b) => b.append_option(v.map(i)),
            FieldCol::F16(b) => b.append_option(v.map(|v| match v {
                Value::F16(f) => f,
                _ => unreachable!("a 2-byte float field decodes to an f16"),
            })),
            FieldCol::F32(b) => b.append_option(v.map(|v| match v {
                Value::F32(f) => f,
                _ => unreachable!("a 4-byte float field decodes to an f32"),
            })),
            FieldCol::F64(b) => b.append_option(v.map(|v| match v {
                Value::F64(f) => f,
                _ => unreachable!("an 8-byte float field decodes to an f64"),
            })),
            FieldCol::Bool(b) => b.append_option(v.map(|v| match v {
                Value::Bool(x) => x,
                _ => unreachable!("a bool field decodes to a bool"),
            })),
            FieldCol::Str(b) => b.append_option(v.map(|v| v.text(record))),
        }
    }

    /// The column so far, as an array; the builder starts over.
    fn finish(&mut self) -> ArrayRef {
        match self {
            FieldCol::U8(b) => Arc::new(b.finish()),
            FieldCol::U16(b) => Arc::new(b.finish()),
            FieldCol::U32(b) => Arc::new(b.finish()),
            FieldCol::U64(b) => Arc::new(b.finish()),
            FieldCol::I8(b) => Arc::new(b.finish()),
            FieldCol::I16(b) => Arc::new(b.finish()),
            FieldCol::I32(b) => Arc::new(b.finish()),
            FieldCol::I64(b) => Arc::new(b.finish()),
            FieldCol::F16(b) => Arc::new(b.finish()),
            FieldCol::F32(b) => Arc::new(b.finish()),
            FieldCol::F64(b) => Arc::new(b.finish()),
            FieldCol::Bool(b) => Arc::new(b.finish()),
            FieldCol::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// One batch's columns.
struct Columns {
    kind: StringBuilder,
    seq: UInt64Builder,
    wall: TimestampNanosecondBuilder,
    mono: UInt64Builder,
    exact: BooleanBuilder,
    len: UInt32Builder,
    /// The layout's fields, or (without a layout) none and `payload`.
    fields: Vec<FieldCol>,
    payload: BinaryBuilder,
    count: UInt64Builder,
    reason: StringBuilder,
}

impl Columns {
    fn new(layout: Option<&Layout>) -> Columns {
        Columns {
            kind: StringBuilder::new(),
            seq: UInt64Builder::new(),
            wall: TimestampNanosecondBuilder::new().with_timezone("UTC"),
            mono: UInt64Builder::new(),
            exact: BooleanBuilder::new(),
            len: UInt32Builder::new(),
            fields: layout
                .map(|l| l.columns().map(|f| FieldCol::of(f.kind)).collect())
                .unwrap_or_default(),
            payload: BinaryBuilder::new(),
            count: UInt64Builder::new(),
            reason: StringBuilder::new(),
        }
    }

    fn rows(&self) -> usize {
        self.seq.len()
    }

    /// The rows so far as a batch of `schema`; the builders start over.
    fn batch(
        &mut self,
        schema: &SchemaRef,
        with_layout: bool,
    ) -> crate::error::Result<RecordBatch> {
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(self.kind.finish()),
            Arc::new(self.seq.finish()),
            Arc::new(self.wall.finish()),
            Arc::new(self.mono.finish()),
            Arc::new(self.exact.finish()),
            Arc::new(self.len.finish()),
        ];
        if with_layout {
            cols.extend(self.fields.iter_mut().map(FieldCol::finish));
        } else {
            cols.push(Arc::new(self.payload.finish()));
        }
        cols.push(Arc::new(self.count.finish()));
        cols.push(Arc::new(self.reason.finish()));
        RecordBatch::try_new(schema.clone(), cols).map_err(ar)
    }
}

/// The table's Arrow schema (see the module docs), with the recording's
/// metadata.
fn schema(layout: Option<&Layout>, doc: String) -> Schema {
    let mut fields = vec![
        Field::new("kind", DataType::Utf8, false),
        Field::new("seq", DataType::UInt64, false),
        Field::new(
            "wall_time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            true,
        ),
        Field::new("mono_ns", DataType::UInt64, true),
        Field::new("exact", DataType::Boolean, true),
        Field::new("len", DataType::UInt32, true),
    ];
    match layout {
        Some(l) => fields.extend(
            l.columns()
                .map(|f| Field::new(&f.name, data_type(f.kind), true)),
        ),
        None => fields.push(Field::new("payload", DataType::Binary, true)),
    }
    fields.push(Field::new("count", DataType::UInt64, true));
    fields.push(Field::new("reason", DataType::Utf8, true));
    Schema::new(fields).with_metadata(HashMap::from([("rtrec.recording".to_string(), doc)]))
}

/// The IPC writer of either format.
enum Writer<'a> {
    File(arrow_ipc::writer::FileWriter<&'a mut dyn Write>),
    Stream(arrow_ipc::writer::StreamWriter<&'a mut dyn Write>),
}

impl Writer<'_> {
    fn write(&mut self, b: &RecordBatch) -> crate::error::Result<()> {
        match self {
            Writer::File(w) => w.write(b),
            Writer::Stream(w) => w.write(b),
        }
        .map_err(ar)
    }

    fn finish(&mut self) -> crate::error::Result<()> {
        match self {
            Writer::File(w) => w.finish(),
            Writer::Stream(w) => w.finish(),
        }
        .map_err(ar)
    }
}

/// Writes the table of the records `selection` keeps of `parts` to `out`
/// in the IPC format `ipc`; returns the walk's counts (records, gap rows).
///
/// # Errors
///
/// A layout field named like a fixed column, a record that does not fit
/// the layout (the table exports' sentence), or a failed write.
pub fn write(
    ipc: Ipc,
    layout: Option<&Layout>,
    selection: &Selection,
    parts: &[Part],
    meta: &Meta,
    out: &mut dyn Write,
) -> crate::error::Result<super::rows::Walked> {
    if let Some(l) = layout {
        refuse_fixed_names(l)?;
    }
    let schema: SchemaRef = Arc::new(schema(layout, meta.doc(layout)));
    let mut w = match ipc {
        Ipc::File => {
            Writer::File(arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(ar)?)
        }
        Ipc::Stream => {
            Writer::Stream(arrow_ipc::writer::StreamWriter::try_new(out, &schema).map_err(ar)?)
        }
    };
    let mut cols = Columns::new(layout);
    let mut values = Vec::new();
    let with_layout = layout.is_some();
    let walked = range::walk_selected(parts, selection, &mut |item| {
        push_row(&mut cols, layout, &mut values, item)?;
        if cols.rows() >= ROW_GROUP {
            w.write(&cols.batch(&schema, with_layout)?)?;
        }
        Ok(())
    })?;
    if cols.rows() > 0 {
        w.write(&cols.batch(&schema, with_layout)?)?;
    }
    w.finish()?;
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
                None => cols.payload.append_value(data),
            }
            cols.kind.append_value("record");
            cols.seq.append_value(seq);
            cols.wall.append_value(wall_ns as i64);
            cols.mono.append_value(mono_ns);
            cols.exact.append_value(exact);
            cols.len.append_value(data.len() as u32);
            cols.count.append_null();
            cols.reason.append_null();
        }
        Item::Gap {
            first_seq,
            count,
            reason,
        } => {
            cols.kind.append_value("gap");
            cols.seq.append_value(first_seq);
            cols.wall.append_null();
            cols.mono.append_null();
            cols.exact.append_null();
            cols.len.append_null();
            if layout.is_some() {
                cols.fields.iter_mut().for_each(|c| c.push(None, &[]));
            } else {
                cols.payload.append_null();
            }
            cols.count.append_option(count);
            cols.reason.append_value(reason);
        }
    }
    Ok(())
}

/// An Arrow writer's error, as this crate's.
fn ar(e: arrow_schema::ArrowError) -> crate::error::Error {
    std::io::Error::other(format!("writing Arrow IPC: {e}")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_type_has_its_own_arrow_type() {
        let l = Layout::parse("<BHIQbhiqfd2x?4se").unwrap();
        let s = schema(Some(&l), "{}".into());
        // 6 fixed, 13 fields (the pad is no column), count and reason.
        assert_eq!(s.fields().len(), 21);
        let types: Vec<String> = s.fields()[6..19]
            .iter()
            .map(|f| f.data_type().to_string())
            .collect();
        assert_eq!(
            types,
            [
                "UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64",
                "Float32", "Float64", "Boolean", "Utf8", "Float16"
            ]
        );
        assert!(s.fields()[6..19].iter().all(|f| f.is_nullable()));
        assert_eq!(s.metadata()["rtrec.recording"], "{}");
        assert_eq!(schema(None, "{}".into()).fields().len(), 9);
    }
}
