//! `record --rt --explain` attributes the producer's late periods: a
//! competing SCHED_FIFO thread of higher priority, pinned to the
//! producer's CPU, busy for a few milliseconds at a time, makes periods
//! late on purpose, and the explanation names it. No timing is asserted
//! (the VM is noisy): every missed period is counted (attributed +
//! unattributed = the recorder's total) and the competitor's name is among
//! the causes.

use rtrec_host::features::{self, Feature};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One traced recording at a time: a second `record --explain` started
/// while another one traces records without attribution, and the tests
/// of this file run in parallel.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _serial = serial();
    let name = "a_higher_priority_competitor_on_the_producers_cpu_is_named_for_its_missed_periods";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cpu = cpus - 1;
    let d = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let h = hog(cpu, stop.clone());
    let cpu_arg = cpu.to_string();
    let s = record_rt_explain(
        d.path(),
        &["--priority", "50", "--cpu", &cpu_arg, "--count", "1500"],
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    // A real run is not marked as a baseline.
    assert!(s.get("explain_baseline").is_none(), "{s}");
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
    let _serial = serial();
    let name = "the_endurance_study_runs_short_as_a_smoke_test_and_counts_every_missed_period";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
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

#[test]
fn the_steal_method_is_reported_and_the_producers_runtime_is_traced_at_each_of_its_sleeps() {
    let _serial = serial();
    let name =
        "the_steal_method_is_reported_and_the_producers_runtime_is_traced_at_each_of_its_sleeps";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let cpu = std::thread::available_parallelism().map_or(1, usize::from) - 1;
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let (cpu_arg, raw_arg) = (cpu.to_string(), raw.display().to_string());
    let s = record_rt_explain(
        d.path(),
        &[
            "--cpu",
            &cpu_arg,
            "--count",
            "1000",
            "--explain-raw",
            &raw_arg,
        ],
    );
    let p = &s["explain"]["producer"];
    let method = p["steal_method"]
        .as_str()
        .unwrap_or_else(|| panic!("the producer's attribution names its steal method: {s}"));
    assert!(
        ["sched-runtime", "proc-stat"].contains(&method),
        "the steal method is named: {p}"
    );
    let slow = &p["slow_records"];
    assert!(slow["own_over_threshold"].as_u64().unwrap() <= slow["total"].as_u64().unwrap());
    if method != "sched-runtime" {
        eprintln!("skipped the runtime half: this kernel has no paravirt steal accounting");
        return;
    }
    // The kernel charges the producer at every switch-out: each of its
    // sleeps seen from its switch-in on carries a runtime event, and the
    // filter lets only the producer's through.
    let tid = p["tid"].as_i64().unwrap();
    let text = std::fs::read_to_string(raw.join("record.trace.txt")).unwrap();
    let (mut sleeps, mut uncharged, mut others) = (0, 0, 0);
    let mut charged: Option<bool> = None;
    for line in text.lines() {
        let num = |key: &str| -> Option<i64> {
            let v = line.split(&format!(" {key}=")).nth(1)?;
            v.split(' ').next()?.parse().ok()
        };
        if line.contains(" sched_stat_runtime: ") {
            if num("pid") == Some(tid) {
                charged = charged.map(|_| true);
            } else {
                others += 1;
            }
        } else if line.contains(" sched_switch: ") {
            if num("next_pid") == Some(tid) {
                charged = Some(false);
            } else if num("prev_pid") == Some(tid) && line.contains("prev_state=S") {
                if let Some(c) = charged {
                    sleeps += 1;
                    uncharged += u64::from(!c);
                }
                charged = None;
            }
        }
    }
    assert!(sleeps > 0, "the producer slept in the trace");
    assert_eq!(
        uncharged, 0,
        "{uncharged} of {sleeps} sleeps had no runtime event"
    );
    assert_eq!(others, 0, "runtime events of other tasks passed the filter");
}

#[test]
fn the_baseline_runs_the_producers_loop_traced_without_calling_record() {
    let _serial = serial();
    let name = "the_baseline_runs_the_producers_loop_traced_without_calling_record";
    if !rtrec_host::loopfs::require_privileged(name)
        || !features::require(name, &[Feature::Tracefs])
    {
        return;
    }
    let cpu = std::thread::available_parallelism().map_or(1, usize::from) - 1;
    let d = tempfile::tempdir().unwrap();
    let cpu_arg = cpu.to_string();
    let s = record_rt_explain(
        d.path(),
        &["--cpu", &cpu_arg, "--count", "500", "--explain-baseline"],
    );
    // record() was never called: the recorder saw nothing, and its
    // record() histogram is empty.
    assert_eq!(s["records_offered"], 0, "{s}");
    assert_eq!(s["records_written"], 0, "{s}");
    assert!(s["record_ns"].is_null(), "{s}");
    // And the document says so: an empty recording by design.
    assert_eq!(s["explain_baseline"], true, "{s}");
    // The loop ran and was traced as a real run's is: its wake-ups are
    // counted, and its slow stretches are judged the same way.
    let p = &s["explain"]["producer"];
    let wakeups = p["wakeups"].as_u64().unwrap();
    assert!(
        wakeups > 0 && wakeups <= 501,
        "the producer's 500 periods were traced: {p}"
    );
    let slow = &p["slow_records"];
    assert!(slow["own_over_threshold"].as_u64().unwrap() <= slow["total"].as_u64().unwrap());
}

#[test]
fn the_baseline_is_refused_without_explain_and_with_another_source() {
    let d = tempfile::tempdir().unwrap();
    for (extra, needle) in [
        (&["--explain-baseline"][..], "--explain"),
        (
            &["--explain", "--explain-baseline", "--stdin"][..],
            "--stdin",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
            .args(["record", "--dir"])
            .arg(d.path())
            .args(["--count", "10"])
            .args(extra)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "nothing was made"
    );
}

/// `rtrec record --rt --period 1ms --size 1KiB --explain` into `dir` with
/// `extra` arguments; its JSON summary, the exit checked.
fn record_rt_explain(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(dir)
        .args(["--rt", "--period", "1ms", "--size", "1KiB"])
        .args(extra)
        .args(["--explain", "--quiet", "--json", "-"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
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
