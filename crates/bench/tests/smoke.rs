//! A real run on the default target (our own loop-mounted ext4): NONE and
//! ALL with a few hundred writes. Checks the JSON against the documented
//! schema, and that every setting was put back: `vm.dirty_*` as found (checked
//! by the bench under the global lock), no
//! mount, no loop device, no journal entry left. Asserts no timing.
//! Needs root (skips with the reason otherwise; fails under
//! RTREC_REQUIRE_PRIVILEGED=1).

mod common;

use std::path::Path;

use rtrec_bench::report::BenchReport;
use rtrec_bench::scenario::Flusher;
use rtrec_bench::{run_with, BenchArgs, Launcher, RunOptions};

/// The tests of this file run one at a time: they share this process's
/// journal file, so one test's entries would count as "left behind" by the
/// other while it runs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn loop_backing_files() -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        if let Ok(b) = std::fs::read_to_string(e.path().join("loop/backing_file")) {
            out.push(b.trim().to_string());
        }
    }
    out
}

#[test]
fn none_and_all_run_on_our_own_ext4_and_every_setting_is_put_back() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !rtrec_host::loopfs::require_privileged(
        "none_and_all_run_on_our_own_ext4_and_every_setting_is_put_back",
    ) {
        return;
    }
    let ours = format!("rtrec-loopfs-{}-", std::process::id());
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("bench.json");
    let plot = out.path().join("bench.svg");
    let args = BenchArgs::try_from_words([
        "--cases".as_ref(),
        "NONE,ALL".as_ref(),
        "--sets".as_ref(),
        "1".as_ref(),
        "--writes".as_ref(),
        "300".as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
        "--plot".as_ref(),
        plot.as_os_str(),
    ] as [&std::ffi::OsStr; 10])
    .unwrap();
    // These cases have no background load; the launcher would run this
    // test binary, which has no load to run.
    let launcher = Launcher::via_env(
        std::env::current_exe().unwrap(),
        vec![],
        "RTREC_BENCH_SMOKE_UNUSED",
    );
    let code = run_with(
        &args,
        &RunOptions {
            launcher: Some(launcher),
        },
    )
    .unwrap();
    assert_eq!(code, 0);

    let bytes = std::fs::read(&json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    common::check(&v);
    let r: BenchReport = serde_json::from_slice(&bytes).unwrap();
    assert!(r.complete && !r.interrupted);
    assert_eq!(r.environment.target, "loop-ext4");
    assert_eq!(r.environment.filesystem, "ext4");
    assert_eq!(r.environment.journal_bytes, Some(128 << 20));
    assert!(
        r.warnings.is_empty(),
        "our own image meets every condition: {:?}",
        r.warnings
    );
    let names: Vec<&str> = r.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["NONE", "ALL"]);
    for c in &r.cases {
        assert_eq!(c.error, None, "{}", c.name);
        assert_eq!(
            c.write_samples_ns.len(),
            300,
            "{}: every write() is kept",
            c.name
        );
        assert_eq!(c.write_ns.unwrap().count, 300);
        assert!(c.write_histogram_v2_base64.is_some());
        assert_eq!(c.flusher.applied, c.flusher.requested, "{}", c.name);
    }
    assert_eq!(r.cases[1].flusher.applied, Flusher::Off);
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));

    // vm.dirty_* put back: the bench compares the values in force at the
    // end with those it found at start while it still holds the global
    // lock, and warns when they differ (`r.warnings` is empty above). A
    // comparison here, after the lock is released, would race with any
    // other rtrec on the machine, so the test relies on the locked check.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(&ours),
        "a mount was left behind:\n{mounts}"
    );
    let loops = loop_backing_files();
    assert!(
        !loops.iter().any(|b| b.contains(&ours)),
        "a loop device was left behind: {loops:?}"
    );
    let dir = rtrec_host::state_dir();
    let journal_prefix = format!("owner-{}-", std::process::id());
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !left.iter().any(|n| n.starts_with(&journal_prefix)),
        "journal entries left in {}: {left:?}",
        dir.display()
    );
    assert!(!Path::new(&std::env::temp_dir())
        .read_dir()
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&ours)));
}

/// `--study throughput`, shortened to a smoke run (coarse probes of
/// 100 ms, full-length ones of 300 ms, no bisection step, one record
/// size): every back-end gets a row from both phases, the device's
/// bandwidth was measured, and nothing is left mounted. Asserts no rate
/// (the VM is noisy).
#[test]
fn the_throughput_study_gives_every_back_end_a_row_and_leaves_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !rtrec_host::loopfs::require_privileged(
        "the_throughput_study_gives_every_back_end_a_row_and_leaves_nothing_behind",
    ) {
        return;
    }
    let ours = format!("rtrec-loopfs-{}-", std::process::id());
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("throughput.json");
    let args = BenchArgs::try_from_words([
        "--study".as_ref(),
        "throughput".as_ref(),
        "--probe-duration".as_ref(),
        "300ms".as_ref(),
        "--coarse-duration".as_ref(),
        "100ms".as_ref(),
        "--steps".as_ref(),
        "0".as_ref(),
        "--size".as_ref(),
        "16KiB".as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
    ] as [&std::ffi::OsStr; 12])
    .unwrap();
    assert_eq!(rtrec_bench::run(&args).unwrap(), 0);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["study"], "throughput");
    let run = &v["runs"][0];
    assert!(run["device_bytes_per_s"].as_f64().unwrap() > 0.0, "{v:#}");
    let ios: Vec<&str> = run["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["io"].as_str().unwrap())
        .collect();
    // Every back-end this machine can write with, and a sentence naming
    // the kernel feature for each one left out (RTREC_HIDE_FEATURES).
    let skipped: Vec<&str> = v["skipped"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    let usable: Vec<&str> = ["buffered", "direct", "uring", "uring-buffered"]
        .into_iter()
        .filter(|io| {
            let rows = format!("the throughput study's {io} rows");
            !skipped.iter().any(|s| s.contains(&rows))
        })
        .collect();
    assert_eq!(ios, usable, "{skipped:?}");
    for s in &skipped {
        assert!(s.starts_with("this ") || s.starts_with("the "), "{s}");
    }
    assert_eq!(v["hold_rule"], "drops");
    assert_eq!(v["rt"]["requested"], true);
    for r in run["rows"].as_array().unwrap() {
        assert_eq!(r["record_bytes"], 16384);
        // Every row says what stopped it, from its probes.
        assert!(r["limit"]["kind"].is_string(), "{r:#}");
        let probes = r["probes"].as_array().unwrap();
        // Both phases ran: coarse probes, then at least one full-length.
        assert_eq!(probes[0]["phase"], "coarse", "{r:#}");
        let confirm = probes.iter().filter(|p| p["phase"] == "confirm").count();
        assert!(confirm >= 1, "{r:#}");
        // The sustained rate is one that k full-length probes in a row
        // held (the search stops there), or 0: a rate that held once and
        // then failed is not confirmed.
        let k = v["confirmations"].as_u64().unwrap() as usize;
        let confirms: Vec<&serde_json::Value> =
            probes.iter().filter(|p| p["phase"] == "confirm").collect();
        let last_k_held = confirms.len() >= k
            && confirms[confirms.len() - k..].iter().all(|p| {
                p["held"] == true && p["rate_hz"] == confirms[confirms.len() - 1]["rate_hz"]
            });
        assert_eq!(r["confirmed"], last_k_held, "{r:#}");
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&ours), "a mount was left behind");
    assert!(!loop_backing_files().iter().any(|b| b.contains(&ours)));
}
