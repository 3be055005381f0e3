//! `--explain` without tracefs access: one clear sentence, and the run goes
//! on and gives its normal result without attribution.
//!
//! As root the command runs as `nobody` (`setpriv`), which can neither
//! create a tracefs instance nor mount tracefs; as another user it runs as
//! that user.

use std::path::Path;
use std::process::{Command, Output};

/// The sentence `--explain` prints when it cannot trace.
const NO_TRACEFS: &str = "--explain needs root (tracefs); running without attribution";

/// `rtrec ARGS` in `cwd`, as `nobody` when we are root.
fn rtrec_unprivileged(cwd: &Path, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_rtrec");
    let mut cmd = if rtrec_sys::effective_uid() == 0 {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", exe]);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("TMPDIR", cwd)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("rtrec runs (setpriv is util-linux's)")
}

/// A scratch directory `nobody` may write into.
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    d
}

#[test]
fn bench_explain_without_tracefs_says_so_and_runs_normally() {
    let d = scratch();
    let json = d.path().join("out.json");
    let out = rtrec_unprivileged(
        d.path(),
        &[
            "bench",
            "--explain",
            "--cases",
            "NONE",
            "--sets",
            "1",
            "--writes",
            "20",
            "--period",
            "1ms",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(NO_TRACEFS).count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let case = &r["cases"][0];
    assert_eq!(case["name"], "NONE");
    assert_eq!(case["write_ns"]["count"], 20, "a normal result: {case}");
    assert!(case["explain"].is_null(), "no attribution: {case}");
}
