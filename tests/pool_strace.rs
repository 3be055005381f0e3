//! Seen from the kernel: a recording that takes its file from the pool
//! makes no fallocate() or ftruncate() call at all (strace counts every
//! system call of every thread, so nothing can bypass the check), while the
//! S1 design does (the control).

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

#[test]
fn a_pooled_recording_makes_no_fallocate_or_ftruncate_call_and_the_s1_design_does() {
    if !rtrec_host::tools::require(
        "a_pooled_recording_makes_no_fallocate_or_ftruncate_call_and_the_s1_design_does",
        &[rtrec_host::tools::STRACE],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prep = rtrec()
        .args(["pool", "prepare", "--dir"])
        .arg(dir.path())
        .args(["--files", "2", "--file-size", "1MiB"])
        .output()
        .unwrap();
    assert!(
        prep.status.success(),
        "{}",
        String::from_utf8_lossy(&prep.stderr)
    );

    let pooled = traced_record(dir.path(), &dir.path().join("pooled.log"), &[]);
    let calls: Vec<&str> = pooled
        .lines()
        .filter(|l| l.contains("fallocate(") || l.contains("ftruncate("))
        .collect();
    assert!(calls.is_empty(), "a pooled recording called: {calls:?}");

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
