//! `--explain` without tracefs access: one clear sentence, and the run goes
//! on and gives its normal result without attribution.
//!
//! As root the command runs as `nobody` (`setpriv`), which can neither
//! create a tracefs instance nor mount tracefs; as another user it runs as
//! that user.

use rtrec_host::features::{self, Feature};
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

#[test]
fn record_explain_without_tracefs_says_so_and_records_normally() {
    let d = scratch();
    let rec = d.path();
    let out = rtrec_unprivileged(
        d.path(),
        &[
            "record",
            "--dir",
            rec.to_str().unwrap(),
            "--period",
            "1ms",
            "--count",
            "50",
            "--explain",
            "--quiet",
            "--json",
            "-",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(NO_TRACEFS).count(), 1, "{stderr}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["records_written"], 50, "{s}");
    assert!(s.get("explain").is_none(), "no attribution: {s}");
}

#[test]
fn record_explain_as_root_carries_the_attribution_in_its_json() {
    let name = "record_explain_as_root_carries_the_attribution_in_its_json";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let fs = rtrec_host::loopfs::LoopFs::create(&rtrec_host::loopfs::LoopFsOptions {
        size: 256 << 20,
        journal_mib: 8,
        ..Default::default()
    })
    .unwrap();
    let raw = tempfile::tempdir().unwrap();
    let rec = fs.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir", rec.to_str().unwrap(), "--period", "1ms"])
        .args(["--count", "200", "--quiet", "--json", "-", "--explain"])
        // Every call is "slow": the split of each is checked, not its time.
        .args(["--explain-threshold", "1ns", "--explain-raw"])
        .arg(raw.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let x = &s["explain"];
    let calls = x["timed_calls"].as_u64().unwrap();
    assert!(calls > 0, "the writer's write() calls were traced: {x}");
    let trace = std::fs::read_to_string(raw.path().join("record.trace.txt")).unwrap();
    assert!(
        trace.contains("sys_write") || trace.contains("sys_pwrite64"),
        "raw trace kept"
    );
    // The trace's text counts whole microseconds: a call that begins and
    // ends inside one reads 0 ns and is slower than no threshold. Every
    // other call is slower than 1 ns, so each of them is split.
    let (traced, measurable) = timed_calls_in(&trace);
    assert_eq!(calls, traced, "every traced call is counted: {x}");
    assert_eq!(x["slow_calls"], measurable, "{x}");
    assert!(x["main_cause"].is_string(), "{x}");
}

/// The timed calls of a raw `--explain` trace (only the timed thread's
/// system calls are traced): how many, and how many last at least one
/// tick of the trace's clock.
fn timed_calls_in(trace: &str) -> (u64, u64) {
    let mut open = std::collections::HashMap::new();
    let (mut all, mut measurable) = (0, 0);
    for e in rtrec_trace::parse::parse(trace) {
        let timed = ["sys_write", "sys_pwrite64", "sys_writev", "sys_fallocate"];
        if !timed.contains(&e.name.as_str()) {
            continue;
        }
        if !e.body.starts_with("->") {
            open.insert(e.tid, (e.name, e.ts_ns));
        } else if let Some((name, t0)) = open.remove(&e.tid) {
            if name == e.name {
                all += 1;
                measurable += u64::from(e.ts_ns > t0);
            }
        }
    }
    (all, measurable)
}

#[test]
fn bench_explain_traces_the_background_loads_marks() {
    let name = "bench_explain_traces_the_background_loads_marks";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "bench",
            "--explain",
            "--cases",
            "ALL-BGTRUNC",
            "--sets",
            "1",
        ])
        .args(["--writes", "100", "--period", "1ms", "--explain-raw"])
        .arg(&raw)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let trace = std::fs::read_to_string(raw.join("ALL-BGTRUNC-set0.trace.txt")).unwrap();
    let marks: Vec<_> = rtrec_trace::parse::parse(&trace)
        .into_iter()
        .filter_map(|e| e.mark().map(|m| format!("{m:?}")))
        .collect();
    // 100 periods of 1 ms: the 5 ms load truncates about 20 times.
    assert!(
        marks
            .iter()
            .any(|m| m.starts_with("Begin(\"bgload trunc ftruncate to "))
            && marks
                .iter()
                .any(|m| m.starts_with("End(\"bgload trunc ftruncate to ")),
        "{marks:?}"
    );
}

/// `rtrec bench --explain --cases RTREC-BGALL`: the case brings its
/// same-load floor, both are traced, the case's slow `record()` calls are
/// attributed (the producer's part of the explanation) and its `record()`
/// is divided by the floor of the same run. Structure only: no timing.
#[test]
fn bench_explain_on_a_loaded_rtrec_case_attributes_record_beside_its_floor() {
    let name = "bench_explain_on_a_loaded_rtrec_case_attributes_record_beside_its_floor";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "bench",
            "--explain",
            "--cases",
            "RTREC-BGALL",
            "--sets",
            "1",
        ])
        .args(["--writes", "100", "--period", "5ms", "--json"])
        .arg(&json)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let names: Vec<&str> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["NOISE-FLOOR-BGALL", "RTREC-BGALL"]);
    let (floor, case) = (&r["cases"][0], &r["cases"][1]);
    assert_eq!(
        floor["loads"], case["loads"],
        "the floor runs under the same loads"
    );
    assert_eq!(floor["timed_call"], "memcpy");
    for c in [floor, case] {
        assert!(c["explain"]["producer"].is_object(), "{}: {c}", c["name"]);
    }
    assert!(
        case["explain"]["producer"]["slow_records"].is_object(),
        "{case}"
    );
    assert_eq!(case["same_load_floor"], "NOISE-FLOOR-BGALL");
    assert!(
        case["record_over_floor"]["max_over_same_load_floor"].is_number(),
        "{case}"
    );
    assert!(
        case["record_over_floor"]["max_over_noise_floor"].is_null(),
        "{case}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("its same-load floor NOISE-FLOOR-BGALL's"),
        "{table}"
    );
}
