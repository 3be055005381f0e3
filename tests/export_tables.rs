//! `rtrec export --format csv|jsonl` and `rtrec ls`: every record comes out
//! with its sequence number, wall time (RFC 3339, ns) and monotonic time;
//! a loss is a row with its reason, never an absence; `--layout` decodes
//! fixed binary records into typed columns and refuses a record that does
//! not fit in one sentence, leaving no file; a directory of several
//! recordings exports the newest and says so; `ls` lists each recording
//! with its state, `in progress` while its recorder holds its name.

#![cfg(feature = "tables")]

use std::path::Path;

use rtrec_engine::{Config, Recorder};

/// The Arrow IPC exports, where the build has them (feature `arrow`).
const ARROW: &[&str] = if cfg!(feature = "arrow") {
    &["arrow", "arrow-stream"]
} else {
    &[]
};

mod common;
use common::samples::{recording_with_a_loss, sample};
use common::{rtrec, show};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn csv_and_json_lines_carry_times_and_every_gap_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let s0 = recording_with_a_loss(&dir).finish().unwrap();
    assert_eq!((s0.records_written, s0.records_dropped), (9, 1));

    // A gap refuses the export without --allow-gaps, and writes nothing.
    let csv = tmp.path().join("out.csv");
    let o = rtrec(&["export", "--format", "csv", s(&dir), "-o", s(&csv)]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(!csv.exists());

    let o = rtrec(&[
        "export",
        "--format",
        "csv",
        "--allow-gaps",
        "--layout",
        "t:u32,x:f32,y:f32",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "no input, no output: {}",
        show(&o)
    );
    let o = rtrec(&[
        "export",
        "--format",
        "csv",
        "--allow-gaps",
        "--layout",
        "t:u32,x:f32,y:f32",
        s(&dir),
        "-o",
        s(&csv),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0],
        [
            "kind",
            "seq",
            "wall_time",
            "mono_ns",
            "exact",
            "len",
            "t",
            "x",
            "y",
            "count",
            "reason"
        ]
    );
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{text}");
    let gaps: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "gap").collect();
    assert_eq!(gaps.len(), 1, "{text}");
    assert_eq!(
        (gaps[0][1], gaps[0][9], gaps[0][10]),
        ("3", "1", "too_large")
    );
    let records: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "record").collect();
    assert_eq!(records.len(), 9, "{text}");
    let mut last_mono = 0u64;
    for r in &records {
        let seq: u32 = r[1].parse().unwrap();
        assert_ne!(seq, 3);
        // The layout's columns are the values recorded for that sequence.
        assert_eq!(r[6].parse::<u32>().unwrap(), seq, "{r:?}");
        assert_eq!(r[7].parse::<f32>().unwrap(), seq as f32 * 0.5, "{r:?}");
        assert_eq!(r[8].parse::<f32>().unwrap(), -(seq as f32), "{r:?}");
        // RFC 3339 with nanoseconds, UTC; monotonic time never goes back.
        assert!(
            r[2].len() == 30 && r[2].ends_with('Z') && r[2].as_bytes()[10] == b'T',
            "{r:?}"
        );
        let mono: u64 = r[3].parse().unwrap();
        assert!(mono >= last_mono, "{text}");
        last_mono = mono;
        assert_eq!(r[5], "12");
    }

    // JSON lines: the same rows, every line one object; raw bytes in hex.
    let jsonl = tmp.path().join("out.jsonl");
    let o = rtrec(&[
        "export",
        "--format",
        "jsonl",
        "--allow-gaps",
        s(&dir),
        "-o",
        s(&jsonl),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10);
    let gap = lines.iter().find(|v| v["kind"] == "gap").unwrap();
    assert_eq!(
        (gap["seq"].as_u64(), gap["count"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(gap["reason"], "too_large");
    let rec5 = lines
        .iter()
        .find(|v| v["seq"] == 5 && v["kind"] == "record")
        .unwrap();
    let hex: String = sample(5).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(rec5["payload"], hex.as_str());
}

#[test]
fn a_record_that_does_not_fit_the_layout_is_one_sentence_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    recording_with_a_loss(&dir).finish().unwrap();
    // Parquet and Arrow IPC too: their writers have begun the file (its
    // magic, Arrow's schema) before the first record is decoded.
    for format in ["csv", "parquet"].iter().chain(ARROW) {
        let out = tmp.path().join(format!("out.{format}"));
        let o = rtrec(&[
            "export",
            "--format",
            format,
            "--allow-gaps",
            "--layout",
            "<Ifff",
            s(&dir),
            "-o",
            s(&out),
        ]);
        assert_eq!(o.status.code(), Some(2), "{format}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("record 0 is 12 bytes, but the layout '<Ifff' is 16 bytes"),
            "{err}"
        );
        assert!(!out.exists(), "a failed {format} export left its file");
    }
    for (args, says) in [
        (vec!["--layout", "t:u33"], "is not a type"),
        (
            vec!["--format", "raw", "--layout", "t:u32"],
            "--layout applies to",
        ),
        (
            vec!["--format", "framed", "--payload", "hex"],
            "--payload applies to",
        ),
    ] {
        let mut all = vec!["export", "--format", "csv"];
        if args[0] == "--format" {
            all.truncate(1);
        }
        all.extend(args);
        all.extend([s(&dir), "-o", "-"]);
        let o = rtrec(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", show(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{all:?}: {}",
            show(&o)
        );
    }
}

/// Records `records` (each `size` bytes) into a new directory `name`.
fn recorded(tmp: &Path, name: &str, size: usize, records: &[&[u8]]) -> std::path::PathBuf {
    let dir = tmp.join(name);
    std::fs::create_dir(&dir).unwrap();
    let cfg = Config {
        max_record: size,
        file_size: 1 << 20,
        ..Config::default()
    };
    let mut rec = Recorder::create(&dir, cfg).unwrap();
    for r in records {
        rec.record(r).unwrap();
    }
    rec.finish().unwrap();
    dir
}

/// The CSV of `dir`'s records 0 and 1 under `layout` (the export must
/// succeed).
fn first_two_as_csv(dir: &Path, layout: &str) -> String {
    let o = rtrec(&[
        "export",
        "--format",
        "csv",
        "--layout",
        layout,
        s(dir),
        "-o",
        "-",
        "--to",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every table format refuses `dir` under `layout`: exit 2, the one
/// sentence `says`, no file left.
fn refused_in_every_table_format(tmp: &Path, dir: &Path, layout: &str, says: &str) {
    for format in ["csv", "jsonl", "mcap", "parquet", "numpy"]
        .iter()
        .chain(ARROW)
    {
        let out = tmp.join(format!("out.{format}"));
        let o = rtrec(&[
            "export",
            "--format",
            format,
            "--layout",
            layout,
            s(dir),
            "-o",
            s(&out),
        ]);
        assert_eq!(o.status.code(), Some(2), "{format}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{format}: {err}");
        assert!(err.contains(says), "{format}: {err}");
        assert!(!out.exists(), "a failed {format} export left its file");
    }
}

#[test]
fn a_bool_field_whose_byte_is_not_0_or_1_is_refused_in_one_sentence_in_every_table_format() {
    // A bool is exported as recorded or not at all: a byte 2 printed as
    // `true` would read back as 1 (docs/export.md, "Every value as
    // recorded").
    let tmp = tempfile::tempdir().unwrap();
    let dir = recorded(tmp.path(), "d", 2, &[&[5, 1], &[6, 0], &[7, 2]]);
    let csv = first_two_as_csv(&dir, "n:u8,ok:bool");
    assert!(csv.contains(",5,true") && csv.contains(",6,false"), "{csv}");
    refused_in_every_table_format(
        tmp.path(),
        &dir,
        "n:u8,ok:bool",
        "record 2 holds 2 in its bool field 'ok' (a bool is 0 or 1)",
    );
}

#[test]
fn a_text_field_that_is_not_utf8_padded_with_zeros_is_refused_in_one_sentence_in_every_table_format(
) {
    // Text leaves as recorded or not at all: bytes after its end, or not
    // UTF-8, would be dropped or replaced (docs/export.md, "--layout").
    let tmp = tempfile::tempdir().unwrap();
    for (i, (bad, says)) in [
        (b"ab\0c", "bytes after the zero that ends its text"),
        (b"a\xff\0\0", "bytes that are not UTF-8 text"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = recorded(
            tmp.path(),
            &format!("d{i}"),
            4,
            &[b"id\0\0", b"\0\0\0\0", bad],
        );
        let csv = first_two_as_csv(&dir, "name:s4");
        assert!(csv.contains(",\"id\",") && csv.contains(",\"\",,"), "{csv}");
        refused_in_every_table_format(
            tmp.path(),
            &dir,
            "<4s",
            &format!(
                "record 2 holds {says} in its string field 'f0' (read it as u8[4] to see them)"
            ),
        );
    }
}

#[test]
fn ls_lists_each_recording_with_its_state_and_export_takes_the_newest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let first = recording_with_a_loss(&dir).finish().unwrap();
    // The second, still recording: its recorder holds its name claim.
    let mut live = Recorder::create(&dir, Config::default()).unwrap();
    for i in 0..5 {
        live.record(&sample(i)).unwrap();
    }
    let ls = |dir: &Path| {
        let o = rtrec(&["ls", "--json", s(dir)]);
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["recordings"].as_array().unwrap().clone()
    };
    let listed = ls(&dir);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listed[0]["state"], "complete", "{listed:?} {names:?}");
    assert_eq!(
        (listed[0]["records"].as_u64(), listed[0]["lost"].as_u64()),
        (Some(9), Some(1))
    );
    assert_eq!(listed[0]["dropped"], 1);
    assert_eq!(listed[1]["state"], "in progress", "{listed:?}");
    let second = live.finish().unwrap();
    let listed = ls(&dir);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(listed[1]["state"], "complete", "{listed:?} {names:?}");
    assert_eq!(listed[1]["records"], 5);
    let table = rtrec(&["ls", s(&dir)]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines().nth(1).unwrap().contains(" complete "),
        "{text}"
    );

    // The directory exports its newest recording, and names the other.
    let o = rtrec(&["export", s(&dir), "-o", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let want: Vec<u8> = (0..5).flat_map(sample).collect();
    assert_eq!(o.stdout, want);
    let err = String::from_utf8_lossy(&o.stderr);
    let older = listed[0]["id"].as_str().unwrap();
    assert!(
        err.contains("exporting the newest") && err.contains(older),
        "{err}"
    );
    // --recording picks the other, by id prefix or by a file's name.
    let o = rtrec(&[
        "export",
        "--allow-gaps",
        "--recording",
        &older[..6],
        s(&dir),
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(o.stdout.len(), 9 * 12);
    let name = second.files[0].file_name().unwrap().to_str().unwrap();
    let o = rtrec(&["export", "--recording", name, s(&dir), "-o", "-"]);
    assert_eq!(o.stdout, want, "{}", show(&o));
    assert_eq!(first.files.len(), 1);
}
