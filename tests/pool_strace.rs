//! Seen from the kernel: a recording that takes its file from the pool
//! makes no fallocate() call at all and no ftruncate() but the one that
//! gives back a finished file's unused tail, to its final length, when no
//! other recording writes there (strace counts every system call of every
//! thread, so nothing can bypass the check), while the S1 design does (the
//! control).

use std::path::Path;
use std::process::Command;

fn rtrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
}

/// Runs `rtrec record ARGS` under strace; returns the traced calls.
fn traced_record(dir: &Path, log: &Path, extra: &[&str]) -> String {
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fallocate,ftruncate", "-o"])
        .arg(log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(dir)
        .args([
            "--period",
            "1ms",
            "--size",
            "4KiB",
            "--count",
            "100",
            "--file-size",
            "1MiB",
            "--no-refill",
            "--quiet",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rtrec record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(log).unwrap()
}

/// `rtrec pool prepare --dir DIR ARGS`, which must succeed.
fn prepare_pool(dir: &Path, args: &[&str]) {
    let prep = rtrec()
        .args(["pool", "prepare", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        prep.status.success(),
        "{}",
        String::from_utf8_lossy(&prep.stderr)
    );
}

#[test]
fn a_pooled_recording_makes_no_fallocate_call_and_truncates_only_its_finished_tail() {
    if !rtrec_host::tools::require(
        "a_pooled_recording_makes_no_fallocate_call_and_truncates_only_its_finished_tail",
        &[rtrec_host::tools::STRACE],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    prepare_pool(dir.path(), &["--files", "2", "--file-size", "1MiB"]);

    let pooled = traced_record(dir.path(), &dir.path().join("pooled.log"), &[]);
    let calls: Vec<&str> = pooled
        .lines()
        .filter(|l| l.contains("fallocate("))
        .collect();
    assert!(calls.is_empty(), "a pooled recording called: {calls:?}");
    // The only ftruncate: the tail given back after the recording, to the
    // final length of one of its files.
    let finals: Vec<u64> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtr"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    let truncates: Vec<&str> = pooled
        .lines()
        .filter(|l| l.contains("ftruncate("))
        .collect();
    assert!(truncates.len() <= finals.len(), "{truncates:?}");
    for t in &truncates {
        let len: u64 = t
            .split(", ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unreadable: {t}"));
        assert!(
            finals.contains(&len),
            "a truncate while recording: {t} ({finals:?})"
        );
    }

    let s1 = traced_record(
        dir.path(),
        &dir.path().join("s1.log"),
        &["--alloc", "fallocate"],
    );
    assert!(
        s1.contains("fallocate(") && s1.contains("ftruncate("),
        "control saw no calls: {s1}"
    );

    let v = rtrec().arg("verify").arg(dir.path()).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// One rule for the file size: a recording without `--file-size` in a
/// directory that has a pool takes the pool's size. Before it, a default
/// `pool prepare` (64 MiB files) followed by a default recording of 200
/// records (sized to 832 KiB) deleted both prepared files and called
/// `fallocate` for a new one: the allocation the pool exists to avoid.
#[test]
fn a_default_recording_uses_the_prepared_pool_and_never_deletes_or_fallocates_it() {
    let name = "a_default_recording_uses_the_prepared_pool_and_never_deletes_or_fallocates_it";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    prepare_pool(&rec, &[]);
    let slots = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d.join(".pool"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("slot-"))
            .collect()
    };
    let prepared = slots(&rec);
    assert_eq!(prepared.len(), 2, "{prepared:?}");

    let log = dir.path().join("default.log");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fallocate,unlink,unlinkat,rename,renameat,renameat2",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(&rec)
        .args(["--period", "1ms", "--size", "4KiB", "--count", "200"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("removed"),
        "the pool was resized: {stderr}"
    );
    let trace = std::fs::read_to_string(&log).unwrap();
    let fallocates: Vec<&str> = trace.lines().filter(|l| l.contains("fallocate(")).collect();
    assert!(
        fallocates.is_empty(),
        "fallocate on the default path: {fallocates:?}"
    );
    // No prepared file is unlinked; one is renamed into the recording.
    for slot in &prepared {
        let gone: Vec<&str> = trace
            .lines()
            .filter(|l| l.contains("unlink") && l.contains(slot.as_str()))
            .collect();
        assert!(gone.is_empty(), "a prepared file was deleted: {gone:?}");
    }
    assert!(
        trace
            .lines()
            .any(|l| l.contains("rename") && prepared.iter().any(|s| l.contains(s.as_str()))),
        "no prepared file was taken: {trace}"
    );
    // The recording in the pool's file verifies.
    let v = rtrec().arg("verify").arg(&rec).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// Issue 47, "A prepared pool is used": a recording of known length longer
/// than one pool file takes pool files one after another, switching
/// between them, instead of `fallocate`-ing one fresh file of its whole
/// length beside the idle pool (before: `pool: 0 taken`, one
/// `fallocate` of the whole need before the first record). Seen by the
/// kernel: no `fallocate` at all, and every `ftruncate` after the
/// recording's last `fdatasync`, to a finished file's final length (the
/// last file's unused tail given back).
#[test]
fn a_recording_longer_than_one_pool_file_takes_pool_files_and_allocates_nothing() {
    let name = "a_recording_longer_than_one_pool_file_takes_pool_files_and_allocates_nothing";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    prepare_pool(&rec, &["--files", "4", "--file-size", "1MiB"]);
    let log = dir.path().join("known.log");
    let json = dir.path().join("known.json");
    // 600 records of 4 KiB: about 2.4 MiB, three pool files' worth.
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fallocate,ftruncate,fdatasync",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(&rec)
        .args(["--period", "100us", "--size", "4KiB", "--count", "600"])
        .args(["--no-refill", "--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["pool"]["taken"], 3, "{v}");
    assert_eq!(v["pool"]["fallbacks"], 0, "{v}");
    assert_eq!(v["files"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["file_sizing"]["pool"], true, "{v}");
    let trace = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    assert!(
        !lines.iter().any(|l| l.contains("fallocate(")),
        "fallocate with a prepared pool: {trace}"
    );
    let last_sync = lines
        .iter()
        .rposition(|l| l.contains("fdatasync("))
        .expect("the recording syncs");
    let finals: Vec<u64> = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtr"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("ftruncate(") {
            continue;
        }
        assert!(i > last_sync, "ftruncate before the last sync: {trace}");
        let len: u64 = l
            .split(", ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unreadable: {l}"));
        assert!(finals.contains(&len), "{l} ({finals:?})");
    }
    // The pool is what it was: no resize, one file left.
    let st = rtrec()
        .args(["pool", "status", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["file_size"], 1 << 20, "{st}");
    assert_eq!(st["ready_files"], 1, "{st}");
    let v = rtrec().arg("verify").arg(&rec).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}
