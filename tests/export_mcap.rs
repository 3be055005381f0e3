//! `rtrec export --format mcap` as Foxglove and ROS 2 read it: the file is
//! read back by MCAP's own Python reader (`pip install mcap`, CRCs checked,
//! once through its indexes and once as a stream), and every message agrees
//! with `--format jsonl` of the same recording: each record's sequence
//! number, wall time and bytes or fields, and each gap with its reason on
//! the gaps channel. A record that does not fit the layout is one sentence
//! and leaves no file.

#![cfg(feature = "tables")]

use std::path::Path;
use std::process::Command;

use rtrec_host::tools;
use serde_json::Value;

mod common;
use common::samples::{recording_with_a_loss, sample};
use common::{rtrec, show};

/// What MCAP's Python reader makes of the file: header, channels with
/// their schemas, statistics, metadata, every message in file order (JSON
/// data decoded, other data in hex), and the messages a streaming read
/// of the whole file finds.
const READ: &str = r#"
import json, sys
from mcap.reader import make_reader, NonSeekingReader
with open(sys.argv[1], "rb") as f:
    r = make_reader(f, validate_crcs=True)
    header, summary = r.get_header(), r.get_summary()
    channels = {}
    for c in summary.channels.values():
        s = summary.schemas.get(c.schema_id)
        channels[c.topic] = {
            "message_encoding": c.message_encoding,
            "schema": None if s is None else {
                "name": s.name, "encoding": s.encoding, "data": json.loads(s.data)},
        }
    messages = []
    for _, c, m in r.iter_messages(log_time_order=False):
        data = json.loads(m.data) if c.message_encoding == "json" else m.data.hex()
        messages.append({"topic": c.topic, "log_time": m.log_time,
                         "publish_time": m.publish_time, "sequence": m.sequence, "data": data})
    metadata = {m.name: m.metadata for m in r.iter_metadata()}
    count = summary.statistics.message_count
with open(sys.argv[1], "rb") as f:
    streamed = sum(1 for _ in NonSeekingReader(f, validate_crcs=True).iter_messages())
print(json.dumps({"library": header.library, "channels": channels, "message_count": count,
                  "metadata": metadata, "messages": messages, "streamed": streamed}))
"#;

fn have_reader() -> bool {
    Command::new("python3")
        .args(["-c", "import mcap.reader"])
        .output()
        .is_ok_and(|o| o.status.success())
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

/// `rtrec export --format jsonl --allow-gaps` of `dir` with `extra`
/// flags: one object a row.
fn jsonl(dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["export", "--format", "jsonl", "--allow-gaps"];
    args.extend(extra);
    args.extend([s(dir), "-o", "-"]);
    let o = rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
    let name = "an_mcap_export_reads_back_with_mcaps_own_reader_as_the_json_lines_say";
    if !have_reader() && !tools::skip(name, "needs MCAP's Python reader (pip install mcap)") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let sum = recording_with_a_loss(&dir).finish().unwrap();
    assert_eq!((sum.records_written, sum.records_dropped), (9, 1));
    let rows = jsonl(&dir, &[]);
    assert_eq!(rows.iter().filter(|r| r["kind"] == "gap").count(), 1);

    // Without --layout: the records' bytes on a channel with no schema.
    let raw = export_mcap(&dir, &tmp.path().join("raw.mcap"), &[]);
    let id = raw["metadata"]["rtrec"]["recording_id"]
        .as_str()
        .unwrap()
        .to_string();
    let topic = format!("/rtrec/{id}");
    assert_eq!(
        raw["channels"][&topic],
        serde_json::json!({"message_encoding": "application/octet-stream", "schema": null})
    );
    let gaps = &raw["channels"][format!("{topic}/gaps")];
    assert_eq!(
        (&gaps["message_encoding"], &gaps["schema"]["encoding"]),
        (&"json".into(), &"jsonschema".into())
    );
    for (m, row) in same_stream(&raw, &rows, &topic) {
        assert_eq!(m["data"], row["payload"], "{m} {row}");
        let seq = row["seq"].as_u64().unwrap() as u32;
        let hex: String = sample(seq).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(m["data"], hex.as_str());
    }
    let meta = &raw["metadata"]["rtrec"];
    assert_eq!(
        (
            &meta["records"],
            &meta["gaps"],
            &meta["records_in_gaps"],
            &meta["files"]
        ),
        (&"9".into(), &"1".into(), &"1".into(), &"1".into())
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
    let ch = &lay["channels"][&topic];
    assert_eq!(
        (&ch["message_encoding"], &ch["schema"]["encoding"]),
        (&"json".into(), &"jsonschema".into())
    );
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
    for (m, row) in same_stream(&lay, &layout_rows, &topic) {
        for key in ["seq", "mono_ns", "exact", "t", "x", "y"] {
            assert_eq!(m["data"][key], row[key], "{key}: {m} {row}");
        }
        let seq = row["seq"].as_u64().unwrap();
        assert_eq!(m["data"]["x"].as_f64(), Some(seq as f64 * 0.5));
    }
    assert_eq!(lay["metadata"]["rtrec"]["layout"], "t:u32,x:f32,y:f32");

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
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
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
            "--payload applies to --format csv or jsonl",
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
}
