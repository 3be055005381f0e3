//! `rtrec export --format mcap` as Foxglove and MCAP's tools read it: the
//! file is read back by MCAP's own Python reader (`pip install mcap`, CRCs
//! checked, once through its indexes and once as a stream; the Go CLI is
//! not to be had in CI), every channel is in one of MCAP's well-known
//! encodings (JSON) with a JSON Schema every message is valid under
//! (`jsonschema`), the chunks are zstd unless asked otherwise, and every
//! message agrees with `--format jsonl` of the same recording: each
//! record's sequence number, wall time and bytes, text or fields, and each
//! gap with its reason on the gaps channel. The topic is the same for
//! every recording and the metadata's name is not, so `mcap merge` takes
//! two exports. A record that does not fit the layout is one sentence and
//! leaves no file.

#![cfg(feature = "tables")]

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use rtrec_host::tools;
use serde_json::Value;

mod common;
use common::samples::{export_jsonl as jsonl, recording_with_a_loss, sample};
use common::{rtrec, rtrec_stdin, show};

/// What MCAP's Python reader makes of the file: header, channels with
/// their schemas and metadata, statistics, metadata, every message in
/// file order (decoded as JSON, which every channel must be), how many
/// messages fail their channel's JSON Schema (Draft 7, `jsonschema`),
/// the compression of every chunk, and the messages a streaming read of
/// the whole file finds.
const READ: &str = r#"
import json, sys
import jsonschema
from mcap.reader import make_reader, NonSeekingReader
from mcap.records import Chunk
from mcap.stream_reader import StreamReader
with open(sys.argv[1], "rb") as f:
    r = make_reader(f, validate_crcs=True)
    header, summary = r.get_header(), r.get_summary()
    channels, validators = {}, {}
    for c in summary.channels.values():
        s = summary.schemas.get(c.schema_id)
        channels[c.topic] = {
            "message_encoding": c.message_encoding,
            "metadata": dict(c.metadata),
            "schema": None if s is None else {
                "name": s.name, "encoding": s.encoding, "data": json.loads(s.data)},
        }
        if s is not None and s.encoding == "jsonschema":
            schema = json.loads(s.data)
            jsonschema.Draft7Validator.check_schema(schema)
            validators[c.id] = jsonschema.Draft7Validator(schema)
    messages, invalid = [], 0
    for _, c, m in r.iter_messages(log_time_order=False):
        if c.message_encoding != "json":
            sys.exit(f"channel {c.topic}: message encoding {c.message_encoding!r} is not json")
        data = json.loads(m.data)
        if c.id not in validators or not validators[c.id].is_valid(data):
            invalid += 1
        messages.append({"topic": c.topic, "log_time": m.log_time,
                         "publish_time": m.publish_time, "sequence": m.sequence, "data": data})
    metadata = {m.name: m.metadata for m in r.iter_metadata()}
    count = summary.statistics.message_count
with open(sys.argv[1], "rb") as f:
    chunks = [rec.compression for rec in StreamReader(f, emit_chunks=True).records
              if isinstance(rec, Chunk)]
with open(sys.argv[1], "rb") as f:
    streamed = sum(1 for _ in NonSeekingReader(f, validate_crcs=True).iter_messages())
print(json.dumps({"library": header.library, "channels": channels, "message_count": count,
                  "metadata": metadata, "messages": messages, "invalid": invalid,
                  "chunks": chunks, "streamed": streamed}))
"#;

/// MCAP's registry of well-known message encodings (mcap.dev, "Registry").
const WELL_KNOWN: [&str; 8] = [
    "ros1",
    "cdr",
    "protobuf",
    "flatbuffer",
    "capnproto",
    "cbor",
    "msgpack",
    "json",
];

/// What every export must be for every MCAP tool: each channel in a
/// well-known encoding with a JSON Schema, each message valid under it,
/// chunks compressed as asked.
fn opens_everywhere(v: &Value, compression: &str) {
    for (topic, ch) in v["channels"].as_object().unwrap() {
        let enc = ch["message_encoding"].as_str().unwrap();
        assert!(WELL_KNOWN.contains(&enc), "{topic}: {enc}");
        assert_eq!(ch["schema"]["encoding"], "jsonschema", "{topic}: {ch}");
    }
    assert_eq!(v["invalid"], 0, "messages fail their schema: {v}");
    let chunks = v["chunks"].as_array().unwrap();
    assert!(!chunks.is_empty(), "{v}");
    assert!(chunks.iter().all(|c| c == compression), "{chunks:?}");
}

/// Whether test `name` can run: MCAP's Python reader and `jsonschema`
/// are there, or else what `tools::skip` says (a skip, or a failure
/// where CI requires every test).
fn can_read(name: &str) -> bool {
    let there = Command::new("python3")
        .args(["-c", "import mcap.reader, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    there
        || tools::skip(
            name,
            "needs MCAP's Python reader and jsonschema (pip install mcap jsonschema)",
        )
}

/// The reader's JSON of `path`.
fn read(path: &Path) -> Value {
    let o = Command::new("python3")
        .args(["-c", READ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "MCAP's reader refused the file: {}",
        show(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A temporary directory and an empty directory `d` in it.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    (tmp, dir)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` as ns since the epoch (the civil-date
/// arithmetic of Howard Hinnant's `days_from_civil`).
fn rfc3339_ns(t: &str) -> u64 {
    let n = |a: usize, b: usize| t[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    assert_eq!((t.len(), &t[19..20], &t[29..]), (30, ".", "Z"), "{t}");
    secs as u64 * 1_000_000_000 + n(20, 29) as u64
}

/// Exports `dir` as MCAP to `out` with `extra` flags; returns the reader's
/// view of it.
fn export_mcap(dir: &Path, out: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["export", "--format", "mcap", "--allow-gaps"];
    args.extend(extra);
    args.extend([s(dir), "-o", s(out)]);
    let o = rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    read(out)
}

/// Every row of the JSON lines export has its message, in order, on the
/// right channel, with the same sequence number and time; returns the
/// record messages paired with their rows.
fn same_stream<'v>(v: &'v Value, rows: &'v [Value], topic: &str) -> Vec<(&'v Value, &'v Value)> {
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages.len(), rows.len(), "{v}");
    assert_eq!(v["message_count"], rows.len());
    assert_eq!(v["streamed"], rows.len());
    let mut last_wall = None;
    let mut records = Vec::new();
    for (m, row) in messages.iter().zip(rows) {
        let seq = row["seq"].as_u64().unwrap();
        assert_eq!(m["sequence"], seq, "{m} {row}");
        if row["kind"] == "record" {
            let wall = rfc3339_ns(row["wall_time"].as_str().unwrap());
            assert_eq!(m["topic"], topic, "{m}");
            assert_eq!(
                (m["log_time"].as_u64(), m["publish_time"].as_u64()),
                (Some(wall), Some(wall))
            );
            last_wall = Some(wall);
            records.push((m, row));
        } else {
            // A gap is on the gaps channel at the last record's time.
            assert_eq!(m["topic"], format!("{topic}/gaps"), "{m}");
            assert_eq!(m["log_time"].as_u64(), last_wall, "{m}");
            let want = serde_json::json!({
                "first_seq": seq, "count": row["count"], "reason": row["reason"]});
            assert_eq!(m["data"], want, "{m}");
        }
    }
    records
}

#[test]
fn an_mcap_export_reads_back_with_mcaps_own_reader_as_the_json_lines_say() {
    if !can_read("an_mcap_export_reads_back_with_mcaps_own_reader_as_the_json_lines_say") {
        return;
    }
    let (tmp, dir) = scratch();
    let sum = recording_with_a_loss(&dir).finish().unwrap();
    assert_eq!((sum.records_written, sum.records_dropped), (9, 1));
    let rows = jsonl(&dir, &[]);
    assert_eq!(rows.iter().filter(|r| r["kind"] == "gap").count(), 1);

    // Without --layout: the records' bytes in base64 under a JSON Schema
    // that says so, on the default topic, the recording in the metadata.
    let raw = export_mcap(&dir, &tmp.path().join("raw.mcap"), &[]);
    opens_everywhere(&raw, "zstd");
    let topic = "/rtrec/records";
    let id = raw["channels"][topic]["metadata"]["recording_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ch = &raw["channels"][topic];
    assert_eq!(ch["schema"]["name"], "rtrec.Bytes", "{ch}");
    assert_eq!(
        ch["schema"]["data"]["properties"]["data"],
        serde_json::json!({"type": "string", "contentEncoding": "base64", "description": "the record's bytes"})
    );
    let gaps = &raw["channels"][format!("{topic}/gaps")];
    assert_eq!(gaps["schema"]["name"], "rtrec.Gap", "{gaps}");
    for (m, row) in same_stream(&raw, &rows, topic) {
        let seq = row["seq"].as_u64().unwrap();
        let want = base64::engine::general_purpose::STANDARD.encode(sample(seq as u32));
        assert_eq!(m["data"]["data"], want.as_str(), "{m} {row}");
        assert_eq!(m["data"]["seq"], seq);
        for key in ["mono_ns", "exact"] {
            assert_eq!(m["data"][key], row[key], "{key}: {m} {row}");
        }
    }
    let name = format!("rtrec.recording.{id}");
    assert_eq!(
        raw["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        [&name]
    );
    let meta = &raw["metadata"][&name];
    assert_eq!(
        (
            &meta["records"],
            &meta["gaps"],
            &meta["records_in_gaps"],
            &meta["files"],
            &meta["recording_id"],
            &meta["topic"],
        ),
        (
            &"9".into(),
            &"1".into(),
            &"1".into(),
            &"1".into(),
            &id.as_str().into(),
            &topic.into()
        )
    );
    assert_eq!(meta["rtrec_version"], env!("CARGO_PKG_VERSION"));
    assert!(
        raw["library"].as_str().unwrap().starts_with("rtrec "),
        "{raw}"
    );

    // With --layout: JSON of the fields under a JSON Schema that types them.
    let lay = export_mcap(
        &dir,
        &tmp.path().join("lay.mcap"),
        &["--layout", "t:u32,x:f32,y:f32"],
    );
    opens_everywhere(&lay, "zstd");
    let ch = &lay["channels"][topic];
    assert_eq!(ch["schema"]["name"], "rtrec.Record(t:u32,x:f32,y:f32)");
    assert_eq!(ch["metadata"]["layout"], "t:u32,x:f32,y:f32");
    let props = &ch["schema"]["data"]["properties"];
    for (field, ty) in [
        ("seq", "integer"),
        ("mono_ns", "integer"),
        ("t", "integer"),
        ("x", "number"),
        ("y", "number"),
    ] {
        assert_eq!(props[field]["type"], ty, "{field}: {props}");
    }
    let layout_rows = jsonl(&dir, &["--layout", "t:u32,x:f32,y:f32"]);
    for (m, row) in same_stream(&lay, &layout_rows, topic) {
        for key in ["seq", "mono_ns", "exact", "t", "x", "y"] {
            assert_eq!(m["data"][key], row[key], "{key}: {m} {row}");
        }
        let seq = row["seq"].as_u64().unwrap();
        assert_eq!(m["data"]["x"].as_f64(), Some(seq as f64 * 0.5));
    }
    assert_eq!(lay["metadata"][&name]["layout"], "t:u32,x:f32,y:f32");

    // Into a pipe, the same bytes as into a file.
    let o = rtrec(&[
        "export",
        "--format",
        "mcap",
        "--allow-gaps",
        s(&dir),
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        o.stdout,
        std::fs::read(tmp.path().join("raw.mcap")).unwrap()
    );
}

#[test]
fn an_mcap_export_that_cannot_be_made_is_one_sentence_and_leaves_no_file() {
    let (tmp, dir) = scratch();
    recording_with_a_loss(&dir).finish().unwrap();
    let out = tmp.path().join("out.mcap");
    for (extra, says) in [
        (
            vec!["--allow-gaps", "--layout", "<Ifff"],
            "record 0 is 12 bytes, but the layout '<Ifff' is 16 bytes; nothing was exported",
        ),
        (
            vec!["--allow-gaps", "--layout", "seq:u32,x:f32,y:f32"],
            "the layout's field 'seq' has the name of a column",
        ),
        (
            vec!["--allow-gaps", "--payload", "hex"],
            "--format mcap carries bytes as base64",
        ),
        (
            vec!["--allow-gaps", "--payload", "text"],
            "record 0 is not UTF-8 text; nothing was exported: `--payload base64` writes any bytes",
        ),
        (
            vec!["--allow-gaps", "--topic", ""],
            "--topic must not be empty",
        ),
        (vec![], "1 records are missing"),
    ] {
        let mut args = vec!["export", "--format", "mcap"];
        args.extend(&extra);
        args.extend([s(&dir), "-o", s(&out)]);
        let o = rtrec(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(1 | 2)),
            "{extra:?}: {}",
            show(&o)
        );
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?}: a failed export left its file");
    }
    // (Named .csv: an .mcap name with --format csv is refused first.)
    let out = out.with_extension("csv");
    for (flag, value) in [("--topic", "/x"), ("--mcap-compression", "lz4")] {
        let args = [
            "export",
            "--format",
            "csv",
            flag,
            value,
            s(&dir),
            "-o",
            s(&out),
        ];
        let o = rtrec(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        assert_eq!(
            err.trim(),
            format!("rtrec: {flag} applies to --format mcap")
        );
        assert!(!out.exists());
    }
}

#[test]
fn an_mcap_export_of_lines_is_text_and_any_compression_reads_back() {
    if !can_read("an_mcap_export_of_lines_is_text_and_any_compression_reads_back") {
        return;
    }
    let (tmp, dir) = scratch();
    let o = rtrec_stdin(
        &["record", "--stdin", "--lines", "--quiet", "--dir", s(&dir)],
        "1,0.5\nné à 2\n\n3,0.125".as_bytes(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let want = ["1,0.5", "né à 2", "", "3,0.125"];
    for (how, chunks) in [("zstd", "zstd"), ("lz4", "lz4"), ("none", "")] {
        let out = tmp.path().join(format!("{how}.mcap"));
        let v = export_mcap(&dir, &out, &["--mcap-compression", how]);
        opens_everywhere(&v, chunks);
        let ch = &v["channels"]["/rtrec/records"];
        assert_eq!(ch["schema"]["name"], "rtrec.Text", "{ch}");
        let texts: Vec<&str> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["data"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, want, "{how}");
    }
    // The same lines as base64 of their bytes, when asked.
    let v = export_mcap(&dir, &tmp.path().join("b64.mcap"), &["--payload", "base64"]);
    opens_everywhere(&v, "zstd");
    let got: Vec<Vec<u8>> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            base64::engine::general_purpose::STANDARD
                .decode(m["data"]["data"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(got, want.map(|w| w.as_bytes().to_vec()));
}

#[test]
fn two_recordings_export_to_one_topic_with_metadata_mcap_merge_takes() {
    if !can_read("two_recordings_export_to_one_topic_with_metadata_mcap_merge_takes") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for run in ["a", "b"] {
        let dir = tmp.path().join(run);
        std::fs::create_dir(&dir).unwrap();
        recording_with_a_loss(&dir).finish().unwrap();
        let lay = ["--layout", "t:u32,x:f32,y:f32"];
        let v = export_mcap(&dir, &tmp.path().join(format!("{run}.mcap")), &lay);
        let topics: Vec<&String> = v["channels"].as_object().unwrap().keys().collect();
        assert_eq!(topics, ["/rtrec/records", "/rtrec/records/gaps"], "{run}");
        let mine = ["--layout", "t:u32,x:f32,y:f32", "--topic", "/arm/joint"];
        let v2 = export_mcap(&dir, &tmp.path().join(format!("{run}2.mcap")), &mine);
        let topics: Vec<&String> = v2["channels"].as_object().unwrap().keys().collect();
        assert_eq!(topics, ["/arm/joint", "/arm/joint/gaps"], "{run}");
        opens_everywhere(&v2, "zstd");
        let id = v["channels"]["/rtrec/records"]["metadata"]["recording_id"].clone();
        let names: Vec<String> = v["metadata"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(names, [format!("rtrec.recording.{}", id.as_str().unwrap())]);
        seen.push((id, names));
    }
    // `mcap merge` (MCAP's CLI, rust/cli/src/rewrite/merge.rs) refuses a
    // metadata name met in an earlier input: the two exports share none,
    // and the same schema lets it put both recordings on one topic.
    assert_ne!(seen[0].0, seen[1].0);
    assert!(seen[0].1.iter().all(|n| !seen[1].1.contains(n)), "{seen:?}");
}
