//! `rtrec info`: one recording's facts, the same as `ls` says them (state,
//! records, losses, files), plus its record sizes, content, last record
//! and durable point; `--json` held to docs/recordings-schema.md; a file
//! gives its whole recording; a directory of two gives the newest and
//! `--recording` the other; bad input is one sentence and exit 2.

// The table exports and `info` (feature `tables`).
#![cfg(feature = "tables")]

use std::path::Path;

use serde_json::Value;

mod common;
use common::samples::{record_stdin, recording_with_a_loss};
use common::{rtrec, show};

// The bench's schema walker, pointed at docs/recordings-schema.md.
#[path = "../crates/bench/tests/common/mod.rs"]
mod schema;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json_of(args: &[&str]) -> Value {
    let o = rtrec(args);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// 100,000 bytes from stdin in 4 KiB records and 64 KiB files: 24 records
/// of 4096 bytes and one of 1696, in two files.
fn record_100k(dir: &Path) {
    let input: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    record_stdin(dir, &input);
}

#[test]
fn info_says_what_ls_says_and_the_sizes_span_and_durable_point() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    record_100k(&dir);

    let info = json_of(&["info", "--json", s(&dir)]);
    schema::check_section(&info, "recordings-schema.md", "## `rtrec info --json`");
    let ls = json_of(&["ls", "--json", s(&dir)]);
    let listed = &ls["recordings"][0];
    for key in listed.as_object().unwrap().keys() {
        assert_eq!(info[key], listed[key], "{key}: info {info:#} ls {ls:#}");
    }
    assert_eq!(info["state"], "complete");
    assert_eq!(info["records"], 25);
    assert_eq!(info["bytes"], 100_000);
    assert_eq!(info["lost"], 0);
    assert_eq!(info["files"], 2);
    assert_eq!(info["paths"].as_array().unwrap().len(), 2);
    assert_eq!(info["record_size_min"], 1696);
    assert_eq!(info["record_size_max"], 4096);
    assert_eq!(info["content"], "binary");
    assert_eq!(info["durable"]["point"], "end");
    let (start, end) = (
        info["start_ns"].as_u64().unwrap(),
        info["end_ns"].as_u64().unwrap(),
    );
    assert!(end >= start, "{info:#}");
    let span = info["duration_s"].as_f64().unwrap();
    assert!((span - (end - start) as f64 / 1e9).abs() < 1e-6, "{info:#}");

    // A file gives its whole recording, read from its directory.
    let first = info["paths"][1].as_str().unwrap().to_string();
    let of_file = json_of(&["info", "--json", &first]);
    assert_eq!(of_file["id"], info["id"]);
    assert_eq!(of_file["files"], 2);
    assert_eq!(of_file["records"], 25);

    // The text: one fact a line, the same figures.
    let o = rtrec(&["info", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let id = info["id"].as_str().unwrap();
    for line in [
        format!("recording    {id}"),
        "state        complete".to_string(),
        "records      25 (binary,".to_string(),
        "lost         0".to_string(),
        "record size  1696 B to 4096 B".to_string(),
        "durable      every record (closed with an end frame)".to_string(),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&line)),
            "{line:?} not in\n{text}"
        );
    }
}

#[test]
fn a_loss_is_counted_and_a_directory_of_two_gives_the_newest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    recording_with_a_loss(&dir).finish().unwrap();
    let lossy = json_of(&["info", "--json", s(&dir)]);
    assert_eq!(lossy["records"], 9);
    assert_eq!(lossy["lost"], 1);
    assert_eq!(lossy["dropped"], 1);
    assert_eq!(lossy["state"], "complete");
    assert_eq!(
        (&lossy["record_size_min"], &lossy["record_size_max"]),
        (&Value::from(12), &Value::from(12))
    );

    record_100k(&dir);
    let o = rtrec(&["info", "--json", s(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let newest: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(newest["records"], 25);
    let note = String::from_utf8_lossy(&o.stderr);
    assert!(
        note.contains("holds 2 recordings") && note.contains("--recording"),
        "{note}"
    );
    let id = lossy["id"].as_str().unwrap();
    let picked = json_of(&["info", "--json", s(&dir), "--recording", &id[..6]]);
    assert_eq!(picked["records"], 9);
}

#[test]
fn bad_input_is_one_sentence_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (args, says) in [
        (vec!["info", s(&missing)], "does not exist"),
        (vec!["info", s(&empty)], "holds no recordings"),
    ] {
        let o = rtrec(&args);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{}", show(&o));
        assert!(err.contains(says), "{}", show(&o));
    }
}
