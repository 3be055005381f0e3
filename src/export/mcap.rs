//! `--format mcap`: the recording as an MCAP file, the container Foxglove
//! opens, written by Foxglove's own `mcap` crate from the walk the tables
//! are written from ([`super::rows`]), in a form every MCAP tool reads.
//!
//! What the file holds (docs/export.md, "`--format mcap`"):
//! - **Channel `--topic`** (default `/rtrec/records`): one JSON message
//!   per record under a JSON Schema (message encoding `json`, schema
//!   encoding `jsonschema`, both in MCAP's registry of well-known
//!   encodings). `log_time` is its wall time (ns since the epoch, the file
//!   header's mapping of the monotonic clock), `sequence` its sequence
//!   number. The object has `seq`, `mono_ns`, `exact` and then, with
//!   `--layout`, the layout's fields (floats shortest-round-trip for their
//!   width; schema `rtrec.Record(<layout>)`), else the record as `data`,
//!   its bytes in base64 (schema `rtrec.Bytes`, `contentEncoding:
//!   base64`), or as `text` for a recording of lines or `--payload text`
//!   (schema `rtrec.Text`). The channel's metadata has the recording id
//!   (and the layout).
//! - **Channel `TOPIC/gaps`**: one JSON message per gap (`first_seq`,
//!   `count`, `reason`, as the tables' gap rows), so a loss is never
//!   silent. Its time is that of the last record before the gap (where the
//!   stream was last intact), or the first file's creation time for a gap
//!   before any record; its `sequence` is `first_seq`.
//! - **Metadata `rtrec.recording.<recording id>`**: the recording id,
//!   rtrec's version, the files, the records, the gaps and the records in
//!   them, the topic, the layout.
//!
//! Design choices:
//! - **JSON for every channel, bytes in base64**: MCAP's tools (`mcap cat
//!   --json`) and Foxglove decode only the registry's encodings, and
//!   `application/octet-stream` is not one. Base64 under `contentEncoding:
//!   base64` is how Foxglove's own JSON schemas carry bytes (its
//!   `CompressedImage`'s `data`): Foxglove shows them as a byte array, and
//!   any JSON reader gets them back with one call. It costs a third more
//!   than the bytes before compression, which the chunks' zstd takes back.
//!   (CBOR would carry bytes as bytes, but Foxglove's JSON Schema reading
//!   is what lets it plot a layout's fields.)
//! - **A stable topic**: a saved Foxglove layout names topics, so the
//!   default is the same for every recording; which recording it is, is
//!   the channel's and the metadata's `recording_id`. `mcap merge` of two
//!   exports keeps two channels on one topic (their metadata differ).
//! - **Metadata named per recording**: `mcap merge` refuses two metadata
//!   records of one name (`--allow-duplicate-metadata`), so the name
//!   carries the recording id: exports of different recordings merge.
//! - **A float that is not finite** is the JSON string `"NaN"`,
//!   `"Infinity"` or `"-Infinity"` (the tables' JSON convention, never
//!   `null`, which would lose which one). Its schema property is
//!   `{"$ref": "#/definitions/float", "type": "number"}` in a draft-07
//!   schema: a draft-07 validator ignores a `$ref`'s siblings and checks
//!   the definition (a number, or one of the three strings), while
//!   Foxglove's schema reader, which looks at `type` only and refuses a
//!   `oneOf` that is not an enum of numbers, still sees a number it plots.
//! - **`publish_time` is the wall time too**, not the monotonic time: MCAP
//!   readers take both as one clock; the JSON carries `mono_ns`.
//! - **MCAP's `sequence` is 32 bits**: it is the sequence number modulo
//!   2^32 (it wraps after 4,294,967,295 records); the JSON message's `seq`
//!   and the gaps' `first_seq` are exact.
//! - **zstd chunks of 1 MiB by default, indexed** (`--mcap-compression
//!   zstd|lz4|none`): JSON compresses well (what `mcap compress` would do
//!   afterwards), and chunks with message indexes and a summary let
//!   Foxglove seek without reading the whole file. The compressors are the
//!   crate's (C libraries), linked only with the feature `tables`, which
//!   the board's record-only build leaves out. zstd runs on the calling
//!   thread (`compression_threads(0)`): the output is the same bytes on
//!   every machine, and the analysis host's other work keeps its cores.
//!   The writer never seeks (`NoSeek`): each chunk is assembled in memory
//!   and then written, so the output may be a pipe and memory stays at one
//!   chunk.
//! - **A failed export leaves no complete-looking file**: on an error the
//!   writer is let go without its summary and footer (`into_inner`), and
//!   the caller removes the file it began, as for the tables.

use std::collections::BTreeMap;
use std::io::Write;

use ::mcap::records::{MessageHeader, Metadata};
use ::mcap::write::NoSeek;
use ::mcap::{Compression, McapError, WriteOptions, Writer};
use base64::Engine as _;
use rtrec_engine::format::FLAG_LINES;
use serde_json::{json, Map, Value as Json};

use super::layout::{Kind, Layout, JSON_NON_FINITE};
use super::part::Part;
use super::range::{walk_selected, Selection};
use super::rows::{Item, Walked};
use super::table::{decode, refuse_fixed_names};
use crate::cli::{ExportArgs, McapCompression, PayloadEncoding};
use crate::error::{usage, Error};

/// The MCAP writer over the export's output.
type Out<'o> = Writer<NoSeek<&'o mut dyn Write>>;

/// The default topic of the records (see the module docs, "a stable
/// topic").
pub const DEFAULT_TOPIC: &str = "/rtrec/records";

/// What `rtrec export --format mcap` was asked for.
pub struct Options<'a> {
    /// `--layout`: the records as JSON of their fields.
    pub layout: Option<&'a Layout>,
    /// `--payload` (text or base64; `None`: by the recording).
    pub payload: Option<PayloadEncoding>,
    /// `--topic`, or [`DEFAULT_TOPIC`].
    pub topic: String,
    /// `--mcap-compression` (default zstd).
    pub compression: McapCompression,
    /// `--from`, `--to`, `--every`.
    pub selection: Selection,
}

impl<'a> Options<'a> {
    /// The options of `a`, checked.
    ///
    /// # Errors
    ///
    /// An empty `--topic`, or `--payload hex` (a message carries bytes as
    /// base64, the JSON Schema's `contentEncoding`).
    pub fn of(a: &ExportArgs, layout: Option<&'a Layout>) -> crate::error::Result<Options<'a>> {
        let topic = a.topic.clone().unwrap_or_else(|| DEFAULT_TOPIC.to_string());
        if topic.is_empty() {
            return usage("--topic must not be empty");
        }
        if a.payload == Some(PayloadEncoding::Hex) {
            return usage("--format mcap carries bytes as base64 (the encoding Foxglove's JSON schemas name), not hex: give --payload base64 or text");
        }
        Ok(Options {
            layout,
            payload: a.payload,
            topic,
            compression: a.mcap_compression.unwrap_or(McapCompression::Zstd),
            selection: Selection::of(a.from, a.to, a.every).or_else(usage)?,
        })
    }
}

/// How a record becomes a message.
#[derive(Clone, Copy)]
enum Body<'a> {
    /// JSON of the layout's fields.
    Fields(&'a Layout),
    /// `data`: its bytes in base64.
    Base64,
    /// `text`: its bytes as UTF-8 (a record that is not is refused).
    Text,
}

/// The two channels' ids.
struct Channels {
    records: u16,
    gaps: u16,
}

/// Writes the recording in `parts` as MCAP to `out`; returns the walk's
/// counts (records, gaps).
///
/// # Errors
///
/// A layout field named like a fixed key, a record that does not fit the
/// layout (the tables' sentence) or is not text for `text`, or a failed
/// write. The output then has no summary or footer.
pub fn write(o: &Options, parts: &[Part], out: &mut dyn Write) -> crate::error::Result<Walked> {
    let lines = parts[0].header.flags & FLAG_LINES != 0;
    let body = match (o.layout, o.payload) {
        (Some(l), _) => {
            refuse_fixed_names(l)?;
            Body::Fields(l)
        }
        (None, Some(PayloadEncoding::Text)) => Body::Text,
        (None, None) if lines => Body::Text,
        (None, _) => Body::Base64,
    };
    let compression = match o.compression {
        McapCompression::Zstd => Some(Compression::Zstd),
        McapCompression::Lz4 => Some(Compression::Lz4),
        McapCompression::Uncompressed => None,
    };
    let options = WriteOptions::new()
        .compression(compression)
        .compression_threads(0)
        .chunk_size(Some(WriteOptions::DEFAULT_CHUNK_SIZE))
        .disable_seeking(true)
        .library(format!("rtrec {}", env!("CARGO_PKG_VERSION")));
    let mut w = options.create(NoSeek::new(out)).map_err(mcap_error)?;
    let done = channels(&mut w, o, body, parts)
        .and_then(|ch| messages(&mut w, &ch, body, &o.selection, parts))
        .and_then(|walked| {
            w.write_metadata(&metadata(o, parts, walked))
                .and_then(|()| w.finish())
                .map_err(mcap_error)?;
            Ok(walked)
        });
    if done.is_err() {
        // Without the summary and footer `finish` (or dropping the
        // writer) would add: no reader takes it for a whole file.
        let _ = w.into_inner();
    }
    done
}

/// The recording's id in hex, as `rtrec ls` shows it.
fn recording_id(parts: &[Part]) -> String {
    format!("{:016x}", parts[0].header.recording_id)
}

/// Adds the schemas and the two channels.
fn channels(
    w: &mut Out,
    o: &Options,
    body: Body,
    parts: &[Part],
) -> crate::error::Result<Channels> {
    let mut meta = BTreeMap::from([("recording_id".to_string(), recording_id(parts))]);
    let (name, schema) = match body {
        Body::Fields(l) => {
            meta.insert("layout".to_string(), l.spec.clone());
            (format!("rtrec.Record({})", l.spec), record_schema(l))
        }
        Body::Base64 => ("rtrec.Bytes".to_string(), bytes_schema(false)),
        Body::Text => ("rtrec.Text".to_string(), bytes_schema(true)),
    };
    let id = w
        .add_schema(&name, "jsonschema", &serde_json::to_vec(&schema)?)
        .map_err(mcap_error)?;
    let records = w
        .add_channel(id, &o.topic, "json", &meta)
        .map_err(mcap_error)?;
    meta.remove("layout");
    let schema = serde_json::to_vec(&gap_schema())?;
    let id = w
        .add_schema("rtrec.Gap", "jsonschema", &schema)
        .map_err(mcap_error)?;
    let gaps = w
        .add_channel(id, &format!("{}/gaps", o.topic), "json", &meta)
        .map_err(mcap_error)?;
    Ok(Channels { records, gaps })
}

/// A message per record and per gap, from [`walk_selected`].
fn messages(
    w: &mut Out,
    ch: &Channels,
    body: Body,
    selection: &Selection,
    parts: &[Part],
) -> crate::error::Result<Walked> {
    let mut last_wall = parts[0].header.created_ns;
    let (mut values, mut json) = (Vec::new(), Vec::new());
    walk_selected(parts, selection, &mut |item| {
        json.clear();
        let (channel_id, seq) = match item {
            Item::Record {
                seq,
                mono_ns,
                wall_ns,
                exact,
                data,
            } => {
                last_wall = wall_ns;
                let mut m = Map::new();
                m.insert("seq".into(), seq.into());
                m.insert("mono_ns".into(), mono_ns.into());
                m.insert("exact".into(), exact.into());
                match body {
                    Body::Fields(l) => {
                        decode(l, seq, data, &mut values)?;
                        for (f, v) in l.columns().zip(&values) {
                            m.insert(f.name.clone(), v.to_json(data));
                        }
                    }
                    Body::Base64 => {
                        let b64 = base64::engine::general_purpose::STANDARD.encode(data);
                        m.insert("data".into(), b64.into());
                    }
                    Body::Text => {
                        let Ok(text) = std::str::from_utf8(data) else {
                            return usage(format!(
                                "record {seq} is not UTF-8 text; nothing was exported: `--payload base64` writes any bytes"
                            ));
                        };
                        m.insert("text".into(), text.into());
                    }
                }
                serde_json::to_writer(&mut json, &Json::Object(m))?;
                (ch.records, seq)
            }
            Item::Gap {
                first_seq,
                count,
                reason,
            } => {
                serde_json::to_writer(
                    &mut json,
                    &json!({"first_seq": first_seq, "count": count, "reason": reason}),
                )?;
                (ch.gaps, first_seq)
            }
        };
        let header = MessageHeader {
            channel_id,
            // MCAP's sequence is 32 bits: it wraps (see the module docs).
            sequence: seq as u32,
            log_time: last_wall,
            publish_time: last_wall,
        };
        w.write_to_known_channel(&header, &json).map_err(mcap_error)
    })
}

/// The properties every record's message has: `seq`, `mono_ns`, `exact`.
fn fixed_properties() -> Map<String, Json> {
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
    props
}

/// The JSON Schema of a record's message without a layout: its bytes as
/// `data` in base64, or (`text`) as the string `text`.
fn bytes_schema(text: bool) -> Json {
    let mut props = fixed_properties();
    let (title, key) = if text {
        props.insert(
            "text".into(),
            json!({"type": "string", "description": "the record (a line without its newline)"}),
        );
        ("rtrec record as text", "text")
    } else {
        props.insert(
            "data".into(),
            json!({"type": "string", "contentEncoding": "base64", "description": "the record's bytes"}),
        );
        ("rtrec record: its bytes in base64", "data")
    };
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": title,
        "type": "object",
        "properties": props,
        "required": ["seq", "mono_ns", "exact", key],
    })
}

/// The JSON Schema of a record's message under `l`: each field typed, so
/// Foxglove offers it for plotting.
fn record_schema(l: &Layout) -> Json {
    let mut props = fixed_properties();
    for f in l.columns() {
        let prop = match f.kind {
            // See the module docs, "a float that is not finite".
            Kind::F(n) => json!({
                "$ref": "#/definitions/float",
                "type": "number",
                "description": format!("f{} (\"NaN\", \"Infinity\" or \"-Infinity\" when not finite)", 8 * n),
            }),
            Kind::I(n) => json!({"type": "integer", "description": format!("i{}", 8 * n)}),
            Kind::Bool => json!({"type": "boolean", "description": "bool"}),
            Kind::Str(n) => {
                json!({"type": "string", "description": format!("s{n}: UTF-8 text of at most {n} bytes")})
            }
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

/// The metadata record `rtrec.recording.<id>`: what a reader needs to
/// tell a whole recording from part of one.
fn metadata(o: &Options, parts: &[Part], walked: Walked) -> Metadata {
    let id = recording_id(parts);
    let mut m = BTreeMap::from([
        ("recording_id".to_string(), id.clone()),
        (
            "rtrec_version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("files".to_string(), parts.len().to_string()),
        ("records".to_string(), walked.records.to_string()),
        ("gaps".to_string(), walked.gaps.to_string()),
        ("records_in_gaps".to_string(), walked.missing.to_string()),
        ("topic".to_string(), o.topic.clone()),
    ]);
    if let Some(l) = o.layout {
        m.insert("layout".to_string(), l.spec.clone());
    }
    Metadata {
        name: format!("rtrec.recording.{id}"),
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
