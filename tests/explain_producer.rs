//! `record --rt --explain` attributes the producer's late periods: a
//! competing SCHED_FIFO thread of higher priority, pinned to the
//! producer's CPU, busy for a few milliseconds at a time, makes periods
//! late on purpose, and the explanation names it. No timing is asserted
//! (the VM is noisy): every missed period is counted (attributed +
//! unattributed = the recorder's total) and the competitor's name is among
//! the causes.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The competitor's thread name (its `comm`), as the explanation prints it.
const HOG: &str = "rtrec-hog";

/// A thread named [`HOG`], SCHED_FIFO 90 on `cpu`, busy for 4 ms every
/// 25 ms until `stop`.
fn hog(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(HOG.into())
        .spawn(move || {
            rtrec_sys::pin_to_cpu(cpu).expect("pinning the competitor");
            rtrec_sys::set_fifo_priority(90).expect("SCHED_FIFO for the competitor");
            while !stop.load(Ordering::Relaxed) {
                let until = Instant::now() + Duration::from_millis(4);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        })
        .unwrap()
}

#[test]
fn a_higher_priority_competitor_on_the_producers_cpu_is_named_for_its_missed_periods() {
    if !rtrec_host::loopfs::require_privileged(
        "a_higher_priority_competitor_on_the_producers_cpu_is_named_for_its_missed_periods",
    ) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cpu = cpus - 1;
    let d = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let h = hog(cpu, stop.clone());
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(d.path())
        .args(["--rt", "--priority", "50", "--cpu", &cpu.to_string()])
        .args(["--period", "1ms", "--count", "1500", "--size", "1KiB"])
        .args(["--explain", "--quiet", "--json", "-"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &s["explain"]["producer"];
    let missed = s["missed_periods"].as_u64().unwrap();
    assert!(missed > 0, "the competitor made periods late: {s}");
    let tally = &p["missed_periods"];
    assert_eq!(tally["total"], missed, "{p}");
    let by_cause = counted_by_cause(tally);
    assert_eq!(
        by_cause, missed,
        "attributed + unattributed = every missed period: {p}"
    );
    let named = |t: &serde_json::Value| {
        t["causes"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.contains(HOG))
    };
    assert!(
        named(tally) || named(&p["late_wakeups"]),
        "the competitor is named among the causes: {p}"
    );
}

#[test]
fn the_endurance_study_runs_short_as_a_smoke_test_and_counts_every_missed_period() {
    if !rtrec_host::loopfs::require_privileged(
        "the_endurance_study_runs_short_as_a_smoke_test_and_counts_every_missed_period",
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("endurance.json");
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--study", "endurance", "--writes", "2000"])
        .args(["--period", "1ms", "--json"])
        .arg(&json)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("missed periods"), "{stdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let e = &r["endurance"];
    assert_eq!(e["records_written"], 2000, "{e}");
    let tally = &e["producer"]["missed_periods"];
    let by_cause = counted_by_cause(tally);
    assert_eq!(tally["total"], e["missed_periods"], "{e}");
    assert_eq!(by_cause, e["missed_periods"].as_u64().unwrap(), "{e}");
}

/// The sum of a tally's counts by cause (attributed and unattributed).
fn counted_by_cause(tally: &serde_json::Value) -> u64 {
    tally["causes"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}
