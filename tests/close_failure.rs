//! Issue 42's leftover: when closing the last file fails after its end
//! frame already says the recording is complete (the writer's final
//! `fdatasync` made to fail by strace's syscall injection), `record`
//! says what the file holds: a complete end frame whose final sync did not
//! complete, so whether its tail is durable is unknown. It does not say
//! the recording is marked aborted, which the file (and `verify`)
//! contradicts.

mod common;

use std::process::Command;

use common::record_args::RecordArgs;
use common::{rtrec, show};

#[test]
fn a_failing_final_sync_after_a_complete_end_frame_is_not_called_aborted() {
    let name = "a_failing_final_sync_after_a_complete_end_frame_is_not_called_aborted";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let log = tmp.path().join("strace.log");
    // `--flush none`: the writer thread's only `fdatasync` calls are the
    // two of closing the file (before and after the final header), so the
    // second call of each thread that makes one is the last sync of all
    // (strace counts `when` per thread).
    let args = RecordArgs::short(&dir, "4KiB", 50).set("--flush", "none");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fdatasync"])
        .args(["-e", "inject=fdatasync:error=EIO:when=2"])
        .arg("-o")
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(args.words())
        .output()
        .unwrap();
    let trace = std::fs::read_to_string(&log).unwrap();
    let syncs: Vec<&str> = trace.lines().filter(|l| l.contains("fdatasync(")).collect();
    assert!(
        syncs.last().is_some_and(|l| l.contains("INJECTED")),
        "the injected failure is not the last fdatasync, so this is not the final sync:\n{trace}"
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("its end frame says complete, but the final sync did not complete: whether its tail is durable is unknown"),
        "{stderr}"
    );
    assert!(!stderr.contains("marked aborted"), "{stderr}");
    // What the file holds: the end frame says complete, as the sentence
    // says (the page cache still has what the failed sync did not flush).
    let verified = rtrec(&["verify", dir.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&verified.stdout);
    assert!(
        report.contains("complete - 50 records"),
        "{}",
        show(&verified)
    );
}
