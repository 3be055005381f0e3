//! `rtrec verify` and `rtrec export` trust nothing they read: files of two
//! directories never mix, a missing file is reported with the records it
//! held, damage in the middle is reported and what follows it counted as
//! salvageable, a corrupt file is never exported as if it were intact, raw
//! recordings are checked against their sidecar (and unverifiable without
//! it), and a FIFO is refused instead of read forever.

mod common;
use common::{rtrec, show};

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Records `count` records of 4 KiB into `dir` (files of 1 MiB), with
/// `extra` options; returns its files in name order.
fn record(dir: &Path, count: &str, extra: &[&str]) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let d = dir.to_str().unwrap();
    let args = [
        "record",
        "--quiet",
        "--period",
        "100us",
        "--size",
        "4KiB",
        "--count",
        count,
        "--file-size",
        "1MiB",
        "--dir",
        d,
    ];
    let o = rtrec(&[&args[..], extra].concat());
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtr" || e == "raw"))
        .collect();
    files.sort();
    files
}

fn verify(paths: &[&Path]) -> (Output, Value) {
    let mut args = vec!["verify", "--json"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    let o = rtrec(&args);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&o)));
    (o, v)
}

#[test]
fn two_directories_with_recordings_of_the_same_name_never_mix() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let fa = record(&a, "600", &[]);
    let fb = record(&b, "300", &[]);
    // Same-second recordings in two directories: give B's files A's names.
    for (i, f) in fb.iter().enumerate() {
        std::fs::rename(f, b.join(fa[i].file_name().unwrap())).unwrap();
    }
    let (o, v) = verify(&[&a, &b]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(v["records"], 900, "{v:#}");
    assert_eq!(v["missing_records"], 0);
}

#[test]
fn a_missing_middle_file_is_reported_with_the_records_it_held() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let files = record(&dir, "600", &[]);
    assert!(files.len() >= 3, "{files:?}");
    let (_, before) = verify(&[&dir]);
    let held = before["files"][1]["records"].as_u64().unwrap();
    std::fs::remove_file(&files[1]).unwrap();
    let (o, v) = verify(&[&dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(v["missing_records"], held, "{v:#}");
    let notes = v["files"][1]["notes"].to_string();
    assert!(notes.contains("missing; they held sequence"), "{notes}");
}

#[test]
fn damage_in_the_middle_is_a_range_and_the_records_after_it_are_salvageable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let files = record(&dir, "200", &[]);
    assert_eq!(files.len(), 1);
    let mut b = std::fs::read(&files[0]).unwrap();
    let mid = b.len() / 3;
    b[mid] ^= 0x40;
    std::fs::write(&files[0], &b).unwrap();
    let (o, v) = verify(&[&files[0]]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let f = &v["files"][0];
    assert_eq!(f["status"], "corrupt", "{f:#}");
    assert_eq!(f["damaged_ranges"], 1, "{f:#}");
    let salvageable = f["salvageable_records"].as_u64().unwrap();
    assert!(salvageable > 100, "{f:#}");
    assert_eq!(f["records"], 199, "all but the damaged record are intact");

    // export refuses, and says so; --salvage writes what can be saved, and
    // the result still shows the damage.
    let out = tmp.path().join("out.rtr");
    let (src, dst) = (files[0].to_str().unwrap(), out.to_str().unwrap());
    let o = rtrec(&["export", src, "-o", dst]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("corrupt"),
        "{}",
        show(&o)
    );
    assert!(!out.exists(), "nothing is exported without --salvage");
    let o = rtrec(&["export", src, "-o", dst, "--salvage", "--framed"]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let (o, v) = verify(&[&out]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the salvaged file is not clean\n{}",
        show(&o)
    );
    assert_eq!(v["files"][0]["records"], 199, "{v:#}");
    let raw = tmp.path().join("out.raw");
    let o = rtrec(&[
        "export",
        src,
        "-o",
        raw.to_str().unwrap(),
        "--salvage",
        "--raw",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(std::fs::metadata(&raw).unwrap().len(), 199 * 4096);
}

#[test]
fn export_to_dash_writes_the_same_bytes_to_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let files = record(&tmp.path().join("d"), "50", &[]);
    let out = tmp.path().join("out.rtr");
    let src = files[0].to_str().unwrap();
    let o = rtrec(&["export", "--framed", src, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let o = rtrec(&["export", "--framed", src, "-o", "-"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        o.stdout == std::fs::read(&out).unwrap(),
        "stdout holds other bytes than the exported file"
    );
    let (o, _) = verify(&[&out]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}

#[test]
fn raw_recordings_are_checked_against_their_sidecar() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let files = record(&dir, "30", &["--raw"]);
    assert_eq!(files.len(), 1, "{files:?}");
    let (o, _) = verify(&[&dir]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    let bytes = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &bytes[..100]).unwrap();
    let (o, v) = verify(&[&dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(v["files"][0]["status"], "corrupt", "{v:#}");

    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 1;
    std::fs::write(&files[0], &flipped).unwrap();
    let (o, v) = verify(&[&dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(v["files"][0]["status"], "corrupt", "{v:#}");

    std::fs::write(&files[0], &bytes).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.to_str().unwrap().ends_with(".meta.json") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let (o, v) = verify(&[&dir]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(v["files"][0]["status"], "unverifiable", "{v:#}");
}

#[test]
fn a_fifo_is_refused_in_one_sentence_instead_of_read_forever() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("x.rtr");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let out = tmp.path().join("out.rtr");
    for args in [
        vec!["verify", fifo.to_str().unwrap()],
        vec![
            "export",
            fifo.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    ] {
        let o = rtrec(&args);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("FIFO") && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}
