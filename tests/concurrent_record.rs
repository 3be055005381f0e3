//! Many `rtrec record` processes in one directory: 8 at once, 20 rounds,
//! with the file pool (the default) and without it. Every run exits 0,
//! `rtrec verify DIR` is clean, no file is named twice, and the pool's
//! files add up over all runs (each prepared file is still ready or was
//! taken by exactly one run). The threads' side, flight-recorder event
//! files included, is in `crates/engine/tests/concurrent.rs`.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{rtrec, show};

const PROCS: usize = 8;
const ROUNDS: usize = 20;

/// Runs ROUNDS rounds of PROCS recorders started together in `dir`;
/// returns every run's JSON summary.
fn rounds(dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut summaries = Vec::new();
    for round in 0..ROUNDS {
        let children: Vec<_> = (0..PROCS)
            .map(|p| {
                let json = dir.join(format!(".summary-{round}-{p}.json"));
                let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
                    .args(["record", "--quiet", "--period", "1ms", "--size", "1KiB"])
                    .args(["--count", "100", "--file-size", "1MiB", "--dir"])
                    .arg(dir)
                    .arg("--json")
                    .arg(&json)
                    .args(extra)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                (child, json)
            })
            .collect();
        for (p, (child, json)) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}, recorder {p}: {}",
                show(&out)
            );
            let s: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            std::fs::remove_file(&json).unwrap();
            summaries.push(s);
        }
    }
    summaries
}

/// `rtrec verify DIR` is clean and every file is named by one run only.
fn check(dir: &Path, summaries: &[Value]) -> usize {
    let v = rtrec(&["verify", dir.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert!(stdout.contains("clean"), "{}", show(&v));
    let mut files: Vec<&str> = summaries
        .iter()
        .flat_map(|s| s["files"].as_array().unwrap())
        .map(|f| f.as_str().unwrap())
        .collect();
    let n = files.len();
    files.sort();
    files.dedup();
    assert_eq!(files.len(), n, "a file named by two runs");
    let on_disk = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().ends_with(".rtr")
        })
        .count();
    assert_eq!(on_disk, n, "recording files on disk vs in the summaries");
    n
}

#[test]
fn eight_recorders_at_once_share_a_directory_and_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = rounds(dir.path(), &[]);
    check(dir.path(), &summaries);
    let sum = |k: &str| {
        summaries
            .iter()
            .map(|s| s["pool"][k].as_u64().unwrap())
            .sum::<u64>()
    };
    let prepared = sum("prepared_at_start") + sum("refilled_on_finish");
    let taken = sum("taken");
    let status = rtrec(&[
        "pool",
        "status",
        "--dir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    assert!(status.status.success(), "{}", show(&status));
    let st: Value = serde_json::from_slice(&status.stdout).unwrap();
    let ready = st["ready_files"].as_u64().unwrap();
    assert!(taken > 0, "the pool was used");
    assert_eq!(
        ready + taken,
        prepared,
        "pool files lost or taken twice: ready {ready}, taken {taken}, prepared {prepared}"
    );
}

#[test]
fn eight_recorders_at_once_share_a_directory_without_a_pool() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = rounds(dir.path(), &["--alloc", "fallocate"]);
    assert_eq!(check(dir.path(), &summaries), PROCS * ROUNDS);
}
