//! `record --json` says where and how it was made (`context`: version,
//! command line, host, target, the real-time setup asked for, granted and
//! what failed); `--require-rt` refuses before recording when the setup
//! cannot be had; a `--json` or `--status` file that could not be written
//! is refused before anything is recorded, not after the recording ran;
//! and it says what the recording cost in CPU (`cost`), per thread and
//! per MiB, consistent with the engine's own counters.

use std::path::Path;
use std::process::Command;

mod common;
use common::{rtrec, show};

/// `rtrec record ARGS…` run as the unprivileged user `nobody` (setpriv):
/// no SCHED_FIFO, no memory lock beyond the default limit.
fn record_as_nobody(args: &[&str]) -> std::process::Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .arg("record")
        .args(args)
        .output()
        .unwrap()
}

fn no_recording_in(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .all(|e| e.unwrap().path().extension().is_none_or(|x| x != "rtr"))
}

#[test]
fn the_json_carries_the_context_and_every_real_time_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let json = tmp.path().join("s.json");
    let d = dir.to_str().unwrap();
    let o = rtrec(&[
        "record",
        "--dir",
        d,
        "--count",
        "20",
        "--period",
        "1ms",
        "--size",
        "64B",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = &v["context"];
    assert_eq!(c["rtrec_version"], env!("CARGO_PKG_VERSION"));
    assert!(
        c["command_line"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "--count"),
        "{c}"
    );
    assert!(
        c["host"]["kernel"].as_str().is_some_and(|k| !k.is_empty()),
        "{c}"
    );
    assert!(
        c["host"]["cpus"].as_u64() > Some(0) && c["host"]["memory_bytes"].as_u64() > Some(0),
        "{c}"
    );
    assert!(
        c["target"]["filesystem"].is_string() && c["target"]["mount_options"].is_string(),
        "{c}"
    );
    assert_eq!(c["realtime"]["requested"], false);
    assert_eq!(c["realtime"]["granted"], true);

    // Unprivileged, --rt: recorded without it, and the JSON lists the
    // producer's and the writer's failures; --require-rt refuses first.
    if !rtrec_host::loopfs::require_privileged(
        "the_json_carries_the_context_and_every_real_time_failure",
    ) {
        return;
    }
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    Command::new("chmod")
        .arg("777")
        .arg(&open)
        .arg(tmp.path())
        .status()
        .unwrap();
    let o_dir = open.to_str().unwrap();
    let j = open.join("u.json");
    let o = record_as_nobody(&[
        "--dir",
        o_dir,
        "--count",
        "20",
        "--period",
        "1ms",
        "--size",
        "64B",
        "--rt",
        "--quiet",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let rt = &v["context"]["realtime"];
    assert_eq!(
        (rt["requested"].as_bool(), rt["granted"].as_bool()),
        (Some(true), Some(false)),
        "{rt}"
    );
    let failures: Vec<&str> = rt["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        failures
            .iter()
            .any(|f| f.contains("SCHED_FIFO priority 80")),
        "{rt}"
    );
    assert!(
        failures.iter().any(|f| f.starts_with("the writer thread")),
        "{rt}"
    );
    let warned = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        warned.matches("real-time setup is incomplete").count(),
        1,
        "{warned}"
    );

    let fresh = open.join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    Command::new("chmod")
        .arg("777")
        .arg(&fresh)
        .status()
        .unwrap();
    let o = record_as_nobody(&[
        "--dir",
        fresh.to_str().unwrap(),
        "--count",
        "20",
        "--rt",
        "--require-rt",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.trim().lines().count() == 1 && err.contains("--require-rt: could not"),
        "{err}"
    );
    assert!(no_recording_in(&fresh), "a refused --require-rt recorded");
}

#[test]
fn an_output_file_that_cannot_be_written_is_refused_before_recording() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    for (flag, path, says) in [
        (
            "--json",
            "/nonexistent/x.json",
            "its directory '/nonexistent'",
        ),
        (
            "--status",
            "/nonexistent/s.prom",
            "its directory '/nonexistent'",
        ),
        ("--json", d, "is a directory"),
    ] {
        let o = rtrec(&[
            "record", "--dir", d, "--count", "300", "--period", "1ms", "--size", "64B", "--quiet",
            flag, path,
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag} {path}: {}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.trim().lines().count() == 1 && err.contains(flag) && err.contains(says),
            "{err}"
        );
        assert!(
            no_recording_in(tmp.path()),
            "{flag} {path}: recorded before refusing"
        );
    }
}

#[test]
fn the_json_says_what_each_thread_cost_per_mib_of_the_payload() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("s.json");
    let o = rtrec(&[
        "record",
        "--dir",
        tmp.path().to_str().unwrap(),
        "--count",
        "200",
        "--period",
        "1ms",
        "--size",
        "16KiB",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("CPU per MiB recorded: producer "),
        "{stdout}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = &v["cost"];
    let n = |x: &serde_json::Value| x.as_u64().unwrap();
    assert_eq!(n(&c["payload_bytes"]), n(&v["bytes_written"]));
    assert_eq!(n(&c["payload_bytes"]), 200 * 16384);
    // The engine's own counters, not a second measurement of them.
    assert_eq!(c["writer_cpu_ns"], v["writer_cpu_ns"]);
    assert_eq!(c["flusher_cpu_ns"], v["flush"]["cpu_ns"]);
    let r = &v["record_ns"];
    assert_eq!(n(&c["record_calls_ns"]), n(&r["mean"]) * n(&r["count"]));
    // Every thread that ran took some CPU, and the summary's per-MiB
    // figure of the writer is its total over the payload's MiB.
    for total in [
        "producer_cpu_ns",
        "record_calls_ns",
        "writer_cpu_ns",
        "process_cpu_ns",
    ] {
        assert!(n(&c[total]) > 0, "{total} is 0: {c}");
    }
    let mib = 200.0 * 16384.0 / 1048576.0;
    let writer_ns = n(&c["writer_cpu_ns"]) as f64 / mib;
    let shown = rtrec_units::format_duration(writer_ns.round() as u64);
    assert!(
        stdout.contains(&format!(", writer {shown}, flusher ")),
        "writer {shown} per MiB: {stdout}"
    );
}
