//! `--format mcap`: the recording as an MCAP file, the container Foxglove
//! and ROS 2 (rosbag2's storage) open, written by Foxglove's own `mcap`
//! crate from the walk the tables are written from ([`super::rows`]).
//!
//! What the file holds (docs/export.md, "`--format mcap`"):
//! - **Channel `/rtrec/<recording id>`** (the id in hex, as `rtrec ls`
//!   shows it): one message per record. `log_time` is its wall time (ns
//!   since the epoch, the file header's mapping of the monotonic clock),
//!   `sequence` its sequence number. With `--layout` a message is a JSON
//!   object (`seq`, `mono_ns`, `exact` and the layout's fields, floats
//!   shortest-round-trip for their width) under a JSON Schema that types
//!   each field `integer` or `number`, so Foxglove plots them; without, it is the record's bytes
//!   (`application/octet-stream`, no schema), which Foxglove lists but
//!   cannot plot.
//! - **Channel `/rtrec/<recording id>/gaps`**: one JSON message per gap
//!   (`first_seq`, `count`, `reason`, as the tables' gap rows), so a loss
//!   is never silent. Its time is that of the last record before the gap
//!   (where the stream was last intact), or the first file's creation time
//!   for a gap before any record; its `sequence` is `first_seq`.
//! - **Metadata `rtrec`**: the recording id, rtrec's version, the files,
//!   the records, the gaps and the records in them, the layout.
//!
//! Design choices:
//! - **A float that is not finite** is the JSON string `"NaN"`,
//!   `"Infinity"` or `"-Infinity"` (the tables' JSON convention, never
//!   `null`, which would lose which one). Its schema property is
//!   `{"$ref": "#/definitions/float", "type": "number"}` in a draft-07
//!   schema: a draft-07 validator ignores a `$ref`'s siblings and checks
//!   the definition (a number, or one of the three strings), while
//!   Foxglove's schema reader, which looks at `type` only and refuses a
//!   `oneOf` that is not an enum of numbers, still sees a number it plots.
//! - **`publish_time` is the wall time too**, not the monotonic time: MCAP
//!   readers take both as one clock; a layout's JSON carries `mono_ns`.
//! - **MCAP's `sequence` is 32 bits**: it is the sequence number modulo
//!   2^32 (it wraps after 4,294,967,295 records); the JSON message's `seq`
//!   and the gaps' `first_seq` are exact (a raw message has only the
//!   wrapped one).
//! - **Uncompressed chunks of 1 MiB, indexed**: the crate is built without
//!   zstd and lz4 (C libraries the board's build has no use for), and
//!   chunks with message indexes and a summary let Foxglove seek without
//!   reading the whole file. The writer never seeks (`NoSeek`): each chunk
//!   is assembled in memory and then written, so the output may be a pipe
//!   and memory stays at one chunk.
//! - **A failed export leaves no complete-looking file**: on an error the
//!   writer is let go without its summary and footer (`into_inner`), and
//!   the caller removes the file it began, as for the tables.

use std::collections::BTreeMap;
use std::io::Write;

use ::mcap::records::{MessageHeader, Metadata};
use ::mcap::write::NoSeek;
use ::mcap::{McapError, WriteOptions, Writer};
use serde_json::{json, Map, Value as Json};

use super::layout::{Kind, Layout, Value, JSON_NON_FINITE};
use super::part::Part;
use super::rows::{walk, Item, Walked};
use super::table::{decode, refuse_fixed_names};
use crate::error::Error;

/// The MCAP writer over the export's output.
type Out<'o> = Writer<NoSeek<&'o mut dyn Write>>;

/// The two channels' ids.
struct Channels {
    records: u16,
    gaps: u16,
}

/// Writes the recording in `parts` as MCAP to `out`; returns the records.
///
/// # Errors
///
/// A layout field named like a fixed key, a record that does not fit the
/// layout (the tables' sentence), or a failed write. The output then has
/// no summary or footer.
pub fn write(
    layout: Option<&Layout>,
    parts: &[Part],
    out: &mut dyn Write,
) -> crate::error::Result<u64> {
    if let Some(l) = layout {
        refuse_fixed_names(l)?;
    }
    let options = WriteOptions::new()
        .compression(None)
        .chunk_size(Some(WriteOptions::DEFAULT_CHUNK_SIZE))
        .disable_seeking(true)
        .library(format!("rtrec {}", env!("CARGO_PKG_VERSION")));
    let mut w = options.create(NoSeek::new(out)).map_err(mcap_error)?;
    let done = channels(&mut w, layout, parts)
        .and_then(|ch| messages(&mut w, &ch, layout, parts))
        .and_then(|walked| {
            w.write_metadata(&metadata(layout, parts, walked))
                .and_then(|()| w.finish())
                .map_err(mcap_error)?;
            Ok(walked.records)
        });
    if done.is_err() {
        // Without the summary and footer `finish` (or dropping the
        // writer) would add: no reader takes it for a whole file.
        let _ = w.into_inner();
    }
    done
}

/// The topic of the recording's records.
fn topic(parts: &[Part]) -> String {
    format!("/rtrec/{:016x}", parts[0].header.recording_id)
}

/// Adds the schemas and the two channels.
fn channels(
    w: &mut Out,
    layout: Option<&Layout>,
    parts: &[Part],
) -> crate::error::Result<Channels> {
    let topic = topic(parts);
    let none = BTreeMap::new();
    let records = match layout {
        Some(l) => {
            let schema = serde_json::to_vec(&record_schema(l))?;
            let id = w
                .add_schema("rtrec.Record", "jsonschema", &schema)
                .map_err(mcap_error)?;
            let meta = BTreeMap::from([("layout".to_string(), l.spec.clone())]);
            w.add_channel(id, &topic, "json", &meta)
        }
        None => w.add_channel(0, &topic, "application/octet-stream", &none),
    }
    .map_err(mcap_error)?;
    let schema = serde_json::to_vec(&gap_schema())?;
    let id = w
        .add_schema("rtrec.Gap", "jsonschema", &schema)
        .map_err(mcap_error)?;
    let gaps = w
        .add_channel(id, &format!("{topic}/gaps"), "json", &none)
        .map_err(mcap_error)?;
    Ok(Channels { records, gaps })
}

/// A message per record and per gap, from [`walk`].
fn messages(
    w: &mut Out,
    ch: &Channels,
    layout: Option<&Layout>,
    parts: &[Part],
) -> crate::error::Result<Walked> {
    let mut last_wall = parts[0].header.created_ns;
    let (mut values, mut json) = (Vec::new(), Vec::new());
    walk(parts, &mut |item| {
        let (channel_id, seq, data): (u16, u64, &[u8]) = match item {
            Item::Record {
                seq,
                mono_ns,
                wall_ns,
                exact,
                data,
            } => {
                last_wall = wall_ns;
                match layout {
                    None => (ch.records, seq, data),
                    Some(l) => {
                        decode(l, seq, data, &mut values)?;
                        json.clear();
                        serde_json::to_writer(&mut json, &fields(l, &values, seq, mono_ns, exact))?;
                        (ch.records, seq, &json)
                    }
                }
            }
            Item::Gap {
                first_seq,
                count,
                reason,
            } => {
                json.clear();
                serde_json::to_writer(
                    &mut json,
                    &json!({"first_seq": first_seq, "count": count, "reason": reason}),
                )?;
                (ch.gaps, first_seq, &json)
            }
        };
        let header = MessageHeader {
            channel_id,
            // MCAP's sequence is 32 bits: it wraps (see the module docs).
            sequence: seq as u32,
            log_time: last_wall,
            publish_time: last_wall,
        };
        w.write_to_known_channel(&header, data).map_err(mcap_error)
    })
}

/// A record's JSON message: `seq`, `mono_ns`, `exact`, then the fields.
fn fields(l: &Layout, values: &[Value], seq: u64, mono_ns: u64, exact: bool) -> Json {
    let mut m = Map::new();
    m.insert("seq".into(), seq.into());
    m.insert("mono_ns".into(), mono_ns.into());
    m.insert("exact".into(), exact.into());
    for (f, v) in l.columns().zip(values) {
        m.insert(f.name.clone(), v.to_json());
    }
    Json::Object(m)
}

/// The JSON Schema of a record's message under `l`: each field typed, so
/// Foxglove offers it for plotting.
fn record_schema(l: &Layout) -> Json {
    let mut props = Map::new();
    props.insert(
        "seq".into(),
        json!({"type": "integer", "description": "the record's sequence number (MCAP's sequence is it modulo 2^32)"}),
    );
    props.insert(
        "mono_ns".into(),
        json!({"type": "integer", "description": "CLOCK_MONOTONIC ns, as the recorder stamped it"}),
    );
    props.insert(
        "exact".into(),
        json!({"type": "boolean", "description": "false: the time is interpolated within a packed frame"}),
    );
    for f in l.columns() {
        let prop = match f.kind {
            // See the module docs, "a float that is not finite".
            Kind::F(n) => json!({
                "$ref": "#/definitions/float",
                "type": "number",
                "description": format!("f{} (\"NaN\", \"Infinity\" or \"-Infinity\" when not finite)", 8 * n),
            }),
            Kind::I(n) => json!({"type": "integer", "description": format!("i{}", 8 * n)}),
            Kind::U(n) | Kind::Pad(n) => {
                json!({"type": "integer", "description": format!("u{}", 8 * n)})
            }
        };
        props.insert(f.name.clone(), prop);
    }
    let required: Vec<String> = props.keys().cloned().collect();
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": format!("rtrec record, layout '{}'", l.spec),
        "type": "object",
        "properties": props,
        "required": required,
        "definitions": {
            "float": {
                "oneOf": [{"type": "number"}, {"enum": JSON_NON_FINITE}],
            },
        },
    })
}

/// The JSON Schema of a gap's message.
fn gap_schema() -> Json {
    json!({
        "title": "rtrec gap: records that are not in the stream",
        "type": "object",
        "properties": {
            "first_seq": {"type": "integer", "description": "the first missing sequence number"},
            "count": {"type": ["integer", "null"], "description": "how many are missing (null: not known, the files after the last one present are missing)"},
            "reason": {"type": "string", "description": "ring_full, too_large, writer_failed, overwritten, crash_hole, missing, retired or not_saved (docs/export.md)"},
        },
        "required": ["first_seq", "count", "reason"],
    })
}

/// The `rtrec` metadata record: what a reader needs to tell a whole
/// recording from part of one.
fn metadata(layout: Option<&Layout>, parts: &[Part], walked: Walked) -> Metadata {
    let mut m = BTreeMap::from([
        (
            "recording_id".to_string(),
            format!("{:016x}", parts[0].header.recording_id),
        ),
        (
            "rtrec_version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("files".to_string(), parts.len().to_string()),
        ("records".to_string(), walked.records.to_string()),
        ("gaps".to_string(), walked.gaps.to_string()),
        ("records_in_gaps".to_string(), walked.missing.to_string()),
    ]);
    if let Some(l) = layout {
        m.insert("layout".to_string(), l.spec.clone());
    }
    Metadata {
        name: "rtrec".to_string(),
        metadata: m,
    }
}

/// The crate's error as ours: an I/O error stays one (a broken pipe is
/// still recognised), anything else is a failed write of the MCAP file.
fn mcap_error(e: McapError) -> Error {
    match e {
        McapError::Io(e) => e.into(),
        e => Error::Io {
            context: "writing MCAP".into(),
            source: std::io::Error::other(e),
        },
    }
}
