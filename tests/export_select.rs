//! `rtrec export --from/--to/--every`: a range by sequence number or by
//! time keeps its gaps as rows (cut to the range), `--every N` keeps the
//! records N sequence numbers apart and every gap, raw exports of a range
//! are the input's bytes of those records, and a bad or empty range is
//! one sentence, exit 2 and no file; `--all` puts every recording of a
//! directory in one table with a `recording` column and each one's gaps.

// The table exports and `info` (feature `tables`).
#![cfg(feature = "tables")]

use std::path::Path;

use serde_json::Value;

mod common;
use common::samples::{export_jsonl as jsonl, record_stdin, recording_with_a_loss};
use common::{rtrec, show};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `r3` for record 3, `g3+1` for a gap of one record at 3.
fn rows(lines: &[Value]) -> String {
    let one = |v: &Value| match v["kind"].as_str().unwrap() {
        "record" => format!("r{}", v["seq"]),
        _ => format!("g{}+{}", v["seq"], v["count"]),
    };
    lines.iter().map(one).collect::<Vec<_>>().join(" ")
}

/// One sentence on stderr, exit 2, and `out` not created.
fn refused(args: &[&str], out: &Path, says: &str) {
    let o = rtrec(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{}", show(&o));
    assert!(err.contains(says), "{args:?}: {}", show(&o));
    assert!(!out.exists(), "{args:?} left {}", out.display());
}

#[test]
fn a_range_of_sequence_numbers_or_times_keeps_its_gaps_and_every_keeps_the_spacing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // Records 0..=9, seq 3 lost (too large).
    recording_with_a_loss(&dir).finish().unwrap();

    let all = jsonl(&dir, &[]);
    assert_eq!(rows(&all), "r0 r1 r2 g3+1 r4 r5 r6 r7 r8 r9");
    assert_eq!(
        rows(&jsonl(&dir, &["--from", "2", "--to", "5"])),
        "r2 g3+1 r4 r5"
    );
    assert_eq!(rows(&jsonl(&dir, &["--from", "3", "--to", "3"])), "g3+1");
    assert_eq!(rows(&jsonl(&dir, &["--to", "1"])), "r0 r1");
    assert_eq!(rows(&jsonl(&dir, &["--every", "3"])), "r0 g3+1 r6 r9");
    assert_eq!(
        rows(&jsonl(&dir, &["--from", "1", "--every", "4"])),
        "r1 g3+1 r5 r9"
    );
    // The values are the records': seq 5's t is 5.
    let five = jsonl(
        &dir,
        &["--from", "5", "--to", "5", "--layout", "t:u32,x:f32,y:f32"],
    );
    assert_eq!(
        (&five[0]["t"], &five[0]["x"]),
        (&Value::from(5), &Value::from(2.5))
    );

    // By time: up to record 4's own wall time, and +0s from the first.
    let t4 = all[4]["wall_time"].as_str().unwrap();
    let upto: Vec<String> = all
        .iter()
        .filter(|v| v["kind"] == "record" && v["wall_time"].as_str().unwrap() <= t4)
        .map(|v| format!("r{}", v["seq"]))
        .collect();
    let by_time = jsonl(&dir, &["--from", "+0s", "--to", t4]);
    let records: Vec<String> = by_time
        .iter()
        .filter(|v| v["kind"] == "record")
        .map(|v| format!("r{}", v["seq"]))
        .collect();
    assert_eq!(records, upto);
    assert!(
        rows(&by_time).starts_with("r0 r1 r2 g3+1 r4"),
        "{}",
        rows(&by_time)
    );
    // Mixed: from a time, to a sequence number.
    let t2 = all[2]["wall_time"].as_str().unwrap();
    let mixed = rows(&jsonl(&dir, &["--from", t2, "--to", "4"]));
    assert!(
        mixed.ends_with("g3+1 r4") && !mixed.contains("r1 "),
        "{mixed}"
    );
}

#[test]
fn a_raw_range_is_the_input_bytes_of_those_records() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let input: Vec<u8> = (0..100_000u32).map(|i| (i * 13 % 253) as u8).collect();
    record_stdin(&dir, &input);
    let out = tmp.path().join("part.bin");
    let o = rtrec(&[
        "export",
        s(&dir),
        "--from",
        "2",
        "--to",
        "17",
        "-o",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Records of 4 KiB: 2..=17 span two files.
    assert_eq!(std::fs::read(&out).unwrap(), &input[2 * 4096..18 * 4096]);
    let o = rtrec(&["export", s(&dir), "--every", "24", "-o", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut want = input[..4096].to_vec();
    want.extend_from_slice(&input[24 * 4096..]);
    assert_eq!(o.stdout, want);
}

#[test]
fn a_bad_or_empty_range_is_one_sentence_and_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    recording_with_a_loss(&dir).finish().unwrap();
    let out = tmp.path().join("out.csv");
    let (d, o) = (s(&dir), s(&out));
    let csv = ["export", "--format", "csv", "--allow-gaps", d, "-o", o];
    let with = |extra: &[&'static str]| -> Vec<&str> { csv.iter().chain(extra).copied().collect() };
    refused(
        &with(&["--from", "5", "--to", "2"]),
        &out,
        "--from is after --to",
    );
    refused(
        &with(&["--from", "2026-12-06T25:00:00Z"]),
        &out,
        "is neither a sequence number",
    );
    refused(&with(&["--to", "+ten"]), &out, "--to:");
    refused(&with(&["--every", "0"]), &out, "--every 0 keeps nothing");
    refused(
        &with(&["--from", "10"]),
        &out,
        "no record of the recording is between",
    );
    let rtr = out.with_extension("rtr");
    refused(
        &["export", "--framed", d, "--from", "1", "-o", s(&rtr)],
        &rtr,
        "not --framed",
    );
}

#[test]
fn all_recordings_of_a_directory_are_one_table_with_a_recording_column_and_their_gaps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // Two recordings, each of records 0..=9 with seq 3 lost.
    recording_with_a_loss(&dir).finish().unwrap();
    recording_with_a_loss(&dir).finish().unwrap();
    let o = rtrec(&["ls", "--json", s(&dir)]);
    let ls: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = ls["recordings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{ls:#}");

    let rows_of = |lines: &[Value], id: &str| {
        let of: Vec<Value> = lines
            .iter()
            .filter(|v| v["recording"] == id)
            .cloned()
            .collect();
        rows(&of)
    };
    let table = jsonl(&dir, &["--all", "--layout", "t:u32,x:f32,y:f32"]);
    assert_eq!(table.len(), 2 * 10);
    // Oldest first, each recording's rows and gap together.
    assert_eq!(table[0]["recording"], ids[0]);
    assert_eq!(table[19]["recording"], ids[1]);
    for id in &ids {
        assert_eq!(rows_of(&table, id), "r0 r1 r2 g3+1 r4 r5 r6 r7 r8 r9");
    }
    for v in table.iter().filter(|v| v["kind"] == "record") {
        assert_eq!(v["t"], v["seq"], "{v}");
    }
    // A range applies to each recording.
    let part = jsonl(&dir, &["--all", "--from", "2", "--to", "4"]);
    for id in &ids {
        assert_eq!(rows_of(&part, id), "r2 g3+1 r4");
    }

    // CSV: the column first.
    let csv = tmp.path().join("all.csv");
    let o = rtrec(&["export", "--all", "--allow-gaps", s(&dir), "-o", s(&csv)]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("recording,kind,seq,"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with(ids[1])).count(), 10);

    // Gaps without --allow-gaps: the whole table refused, nothing written.
    let out = tmp.path().join("refused.csv");
    let o = rtrec(&["export", "--all", s(&dir), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(!out.exists());
    let mcap = tmp.path().join("all.mcap");
    refused(
        &["export", "--all", s(&dir), "-o", s(&mcap)],
        &mcap,
        "--all writes one table",
    );
    refused(
        &[
            "export",
            "--all",
            "--recording",
            ids[0],
            s(&dir),
            "-o",
            s(&out),
        ],
        &out,
        "cannot be used with",
    );
}
