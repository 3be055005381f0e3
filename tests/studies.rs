//! A short S3 and S4 run for CI: `rtrec bench --study s3,s4` with one
//! fsync round, one request size, short cells and a short recording. Checks
//! the JSON's `s3` and `s4` sections (every variant, cell and
//! RTREC-ISOLATED case measured, nothing failed) and that every setting is
//! put back: the schedulers and BFQ tunables of the machine's own disks, no
//! `rtrec-<pid>-*` cgroup, no journal entry, no mount or loop device of the
//! bench. Then a tiny `--study s4 --with-fio` run: fio's cells parsed,
//! non-zero, charged to the jobs' groups, and everything put back. Asserts
//! no timing. Privileged (skips with the reason, fails under
//! RTREC_REQUIRE_PRIVILEGED=1).

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use rtrec_host::features::{self, Feature, HIDE_FEATURES_ENV};
use rtrec_host::loopfs::require_privileged;

/// The sentence S4 prints, once, for the cells a kernel without BFQ
/// cannot run.
const NO_BFQ: &str = "this kernel has no BFQ (CONFIG_IOSCHED_BFQ): S4 needs it for its";

/// Scheduler and iosched tunables of every block device that is not a
/// loop device (those are the bench's own, created and removed by it, or
/// other tests').
fn disk_settings() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("loop") {
            continue;
        }
        let q = e.path().join("queue");
        if let Ok(s) = std::fs::read_to_string(q.join("scheduler")) {
            out.insert(format!("{name}/scheduler"), s.trim().to_string());
        }
        for t in std::fs::read_dir(q.join("iosched"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(v) = std::fs::read_to_string(t.path()) {
                let key = format!("{name}/iosched/{}", t.file_name().to_string_lossy());
                out.insert(key, v.trim().to_string());
            }
        }
    }
    out
}

/// Runs `rtrec bench ARGS --json FILE`, which must exit 0: its pid, its
/// output and the JSON.
fn bench(args: &[&str]) -> (u32, std::process::Output, serde_json::Value) {
    bench_env(args, &[])
}

/// [`bench`] with environment variables set for the bench.
fn bench_env(
    args: &[&str],
    envs: &[(&str, &str)],
) -> (u32, std::process::Output, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("bench.json");
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("NO_COLOR", "1")
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", common::show(&done));
    let v = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (pid, done, v)
}

/// An S4 cell's throughput shares add up to 100 %.
fn assert_shares_add_up(c: &serde_json::Value) {
    let share: f64 = c["share_pct"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.as_f64())
        .sum();
    assert!((share - 100.0).abs() < 1.0, "the shares add up: {c}");
}

/// Everything the bench run `pid` changed is as found: the disks'
/// schedulers and tunables (`before`), no `rtrec-<pid>-*` cgroup, no
/// journal entry, no mount of the bench.
fn assert_put_back(h: &rtrec_host::cgroup::Hierarchy, pid: u32, before: &BTreeMap<String, String>) {
    assert_eq!(&disk_settings(), before, "schedulers and tunables as found");
    let prefix = format!("rtrec-{pid}-");
    let left: Vec<String> = std::fs::read_dir(&h.root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
    let journal = format!("owner-{pid}-");
    let entries: Vec<String> = std::fs::read_dir(rtrec_host::state_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&journal))
                .collect()
        })
        .unwrap_or_default();
    assert!(entries.is_empty(), "journal entries left: {entries:?}");
    let ours = format!("rtrec-loopfs-{pid}-");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&ours), "a mount left behind:\n{mounts}");
}

/// The S4 cells a run has, from `(all, direct)`: all of them where this
/// kernel and file system take O_DIRECT (checked as rtrec checks it), else
/// only the buffered ones.
fn s4_cells((all, direct): (usize, usize)) -> usize {
    if features::detect(Feature::ODirect).is_ok() {
        all
    } else {
        all - direct
    }
}

#[test]
fn s3_and_s4_run_briefly_and_put_every_setting_back() {
    if !require_privileged("s3_and_s4_run_briefly_and_put_every_setting_back") {
        return;
    }
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    let before = disk_settings();
    let (pid, _, v) = bench(&[
        "--study",
        "s3,s4",
        "--rounds",
        "1",
        "--cell",
        "300ms",
        "--request-sizes",
        "1MiB",
        "--writes",
        "100",
    ]);
    let s3 = v["s3"]["cases"]
        .as_array()
        .expect("an s3 section with cases");
    let names: Vec<&str> = s3.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "S3-FSYNC-ORDERED",
            "S3-FSYNC-JOURNAL",
            "S3-FSYNC-ORDERED-WINDOW"
        ],
        "{}",
        v["s3"]
    );
    for c in s3 {
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["rounds"], 1, "{c}");
        assert_eq!(
            c["fsync_samples_ns"].as_array().map(Vec::len),
            Some(1),
            "{c}"
        );
    }
    let s4 = &v["s4"];
    assert_eq!(s4["cgroup_interface"], h.version.describe(), "{s4}");
    let cells = s4["cells"].as_array().expect("S4 cells");
    // With BFQ: 4 schedulers × reads/writes × direct/buffered at 2:1, and
    // the 1:4:5 direct reads and writes under bfq; 6 recordings. Without
    // it (this kernel's, checked as rtrec checks it): none and mq-deadline,
    // unweighted, and their 2 recordings, with one sentence naming BFQ.
    // Where O_DIRECT is missing (hidden: the loop file system is ext4),
    // the direct cells and the recordings (one of whose writers is
    // direct) are left out too.
    let bfq = features::detect(Feature::Bfq).is_ok();
    let weighted = features::detect(Feature::BfqCgroup).is_ok();
    assert_eq!(
        cells.len(),
        s4_cells(if bfq { (18, 10) } else { (8, 4) }),
        "{s4}"
    );
    let skipped = s4["skipped"].as_array().expect("s4.skipped");
    assert_eq!(
        skipped
            .iter()
            .filter(|l| l.as_str().is_some_and(|l| l.starts_with(NO_BFQ)))
            .count(),
        usize::from(!bfq),
        "{s4}"
    );
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["request_bytes"], 1 << 20, "{c}");
        assert_eq!(c["weights_applied"], weighted, "{c}");
        assert_shares_add_up(c);
        if c["scheduler"].as_str().unwrap().starts_with("bfq") {
            assert!(!c["bfq_tunables"].as_array().unwrap().is_empty(), "{c}");
        }
    }
    let iso = s4["isolated"].as_array().expect("RTREC-ISOLATED cases");
    // Every isolated case has a direct writer.
    let all_iso = if bfq { 6 } else { 2 };
    assert_eq!(iso.len(), s4_cells((all_iso, all_iso)), "{s4}");
    for c in iso {
        assert!(c["error"].is_null(), "{c}");
        assert!(c["write_ns"]["count"].as_u64() > Some(0), "{c}");
        assert!(c["records_dropped"].is_u64(), "{c}");
    }

    assert_put_back(&h, pid, &before);
}

/// `--study s4 --with-fio` on a tiny matrix (scheduler `bfq`, whose group
/// statistics show what each group was charged; one request size, short
/// cells): fio's table is in the JSON beside ours, every fio
/// cell parsed with non-zero throughput for each job, the direct cells'
/// I/O charged to the jobs' own groups (fio ran inside them), and every
/// setting put back. Needs fio (installed by .ci/run).
#[test]
fn s4_with_fio_parses_fios_jobs_in_their_groups_and_puts_every_setting_back() {
    let name = "s4_with_fio_parses_fios_jobs_in_their_groups_and_puts_every_setting_back";
    if !require_privileged(name) {
        return;
    }
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::FIO]) {
        return;
    }
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    // bfq where the kernel has it (its group statistics), else mq-deadline,
    // whose groups count their device bytes in blkio.throttle.*.
    let bfq = features::detect(Feature::Bfq).is_ok();
    let before = disk_settings();
    let (pid, done, v) = bench(&[
        "--study",
        "s4",
        "--with-fio",
        "--schedulers",
        if bfq { "bfq" } else { "mq-deadline" },
        "--request-sizes",
        "1MiB",
        "--cell",
        "300ms",
        "--writes",
        "50",
    ]);
    let s4 = &v["s4"];
    let fio = &s4["fio"];
    assert!(
        fio["version"]
            .as_str()
            .is_some_and(|s| s.starts_with("fio-")),
        "{fio}"
    );
    assert!(
        fio["cgroup_join"].as_str().is_some_and(|s| !s.is_empty()),
        "{fio}"
    );
    let ours = s4["cells"].as_array().expect("S4 cells");
    let theirs = fio["cells"].as_array().expect("fio cells");
    // The scheduler × reads/writes × direct/buffered at 2:1, and under bfq
    // 1:4:5 direct; only the buffered ones without O_DIRECT.
    assert_eq!(
        ours.len(),
        s4_cells(if bfq { (6, 4) } else { (4, 2) }),
        "{s4}"
    );
    assert_eq!(theirs.len(), ours.len(), "{s4}");
    for (o, f) in ours.iter().zip(theirs) {
        for k in [
            "scheduler",
            "direction",
            "direct",
            "request_bytes",
            "weights",
        ] {
            assert_eq!(o[k], f[k], "the same cell: {o} / {f}");
        }
        assert!(f["error"].is_null(), "{f}");
        let bytes = f["job_bytes_per_s"].as_array().unwrap();
        assert_eq!(bytes.len(), f["weights"].as_array().unwrap().len(), "{f}");
        assert!(bytes.iter().all(|b| b.as_f64() > Some(0.0)), "{f}");
        assert_shares_add_up(f);
        // Without BFQ this kernel's groups count no device bytes
        // (blkio.throttle.io_service_bytes stays empty without a throttle
        // rule: measured on 6.18), so the charge is checked under bfq.
        if f["direct"] == true && bfq {
            let charged = f["cgroup_device_bytes"].as_array().unwrap();
            assert!(
                charged.iter().all(|b| b.as_u64() > Some(0)),
                "each fio job's direct I/O is charged to its own group: {f}"
            );
        }
    }
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(text.contains("S4 the same matrix with fio-"), "{text}");
    assert_put_back(&h, pid, &before);
}

/// `--study s4` on a kernel without BFQ (hidden from rtrec's detection,
/// so this runs the same on every kernel): the mq-deadline cells and their
/// recording run, unweighted; the bfq cells are named once in one sentence
/// naming the kernel option, never as an errno; everything is put back.
#[test]
fn s4_on_a_kernel_without_bfq_runs_the_rest_and_names_bfq_in_one_sentence() {
    let name = "s4_on_a_kernel_without_bfq_runs_the_rest_and_names_bfq_in_one_sentence";
    if !require_privileged(name) {
        return;
    }
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    let before = disk_settings();
    let (pid, done, v) = bench_env(
        &[
            "--study",
            "s4",
            "--schedulers",
            "mq-deadline,bfq",
            "--request-sizes",
            "1MiB",
            "--cell",
            "300ms",
            "--writes",
            "50",
        ],
        &[(HIDE_FEATURES_ENV, "bfq")],
    );
    let s4 = &v["s4"];
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(err.matches(NO_BFQ).count(), 1, "printed once: {err}");
    for errno in ["Invalid argument", "os error", "is missing"] {
        assert!(!err.contains(errno), "a sentence, not {errno:?}: {err}");
    }
    assert_eq!(s4["skipped"].as_array().map(Vec::len), Some(1), "{s4}");
    assert!(
        s4["skipped"][0].as_str().unwrap().starts_with(NO_BFQ),
        "{s4}"
    );
    let cells = s4["cells"].as_array().expect("S4 cells");
    assert_eq!(
        cells.len(),
        4,
        "mq-deadline × read/write × direct/buffered: {s4}"
    );
    for c in cells {
        assert_eq!(c["scheduler"], "mq-deadline", "{c}");
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["weights_applied"], false, "{c}");
        assert_shares_add_up(c);
    }
    let iso = s4["isolated"].as_array().expect("RTREC-ISOLATED cases");
    let names: Vec<&str> = iso.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["RTREC-ISOLATED-MQ-DEADLINE"], "{s4}");
    assert!(iso[0]["error"].is_null(), "{s4}");
    let table = String::from_utf8_lossy(&done.stdout);
    assert!(table.contains("not run: this kernel has no BFQ"), "{table}");
    assert_put_back(&h, pid, &before);
}

/// `--study s3 --device FILE`: every variant's own image sits on the
/// emulated device, and each S3 case keeps that device's counters (fsyncs
/// reached it as flushes, nothing was served early); everything is put
/// back. A quick profile (the shipped emmc without GC busy) keeps it short.
#[test]
fn s3_on_an_emulated_device_runs_each_variant_through_it_and_puts_every_setting_back() {
    let name = "s3_on_an_emulated_device_runs_each_variant_through_it_and_puts_every_setting_back";
    if !require_privileged(name) || !features::require(name, &[Feature::Fuse]) {
        return;
    }
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    let tmp = tempfile::tempdir().unwrap();
    let mut p: serde_json::Value = serde_json::from_str(rtrec_emu::profile::BUILTIN[0].1).unwrap();
    // Quick: the stream's dirty data (up to its 2 GiB file) is synced
    // between the phases, which at eMMC's 40 MB/s took 40 s per variant.
    p["name"] = "quick".into();
    p["gc_every"] = "0B".into();
    p["write_bandwidth"] = "2GB".into();
    p["cache_bandwidth"] = "2GB".into();
    let profile = tmp.path().join("quick.json");
    std::fs::write(&profile, p.to_string()).unwrap();
    let before = disk_settings();
    let (pid, _, v) = bench(&[
        "--study",
        "s3",
        "--rounds",
        "1",
        "--device",
        profile.to_str().unwrap(),
    ]);
    let s3 = v["s3"]["cases"].as_array().expect("an s3 section");
    assert_eq!(s3.len(), 3, "{}", v["s3"]);
    for c in s3 {
        assert!(c["error"].is_null(), "{c}");
        let e = &c["emulator"];
        assert_eq!(e["profile"], "quick", "{c}");
        assert!(e["writes"].as_u64() > Some(0), "{c}");
        assert!(e["flushes"].as_u64() > Some(0), "{c}");
        assert_eq!(e["early"], 0, "{c}");
    }
    assert_put_back(&h, pid, &before);
}

/// `rtrec bench --study throughput --json -`: standard output is the JSON
/// alone (the table goes to standard error), as for the other studies, so
/// it can be piped into a JSON reader. A smoke-length run (coarse probes of
/// 100 ms, full-length ones of 300 ms, one record size); asserts no rate.
#[test]
fn throughput_with_json_to_stdout_prints_only_the_json_there() {
    let name = "throughput_with_json_to_stdout_prints_only_the_json_there";
    if !require_privileged(name) {
        return;
    }
    let (done, v) = throughput_smoke(&[]);
    assert_eq!(v["study"], "throughput");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("Throughput on native:"),
        "the table is on stderr: {stderr}"
    );
    // One run: every row judged against the device, with what stopped it
    // and a verdict for the size; the spread has one cell per row.
    let run = &v["runs"][0];
    let rows = run["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4 - skipped_rows(&v), "{run}");
    assert!(run["device_bytes_per_s"].as_f64() > Some(0.0), "{run}");
    for row in rows {
        assert!(row["fraction_of_device"].is_f64(), "{row}");
        assert!(row["limit"]["kind"].is_string(), "{row}");
    }
    assert_eq!(run["verdicts"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(
        v["spread"].as_array().map(Vec::len),
        Some(4 - skipped_rows(&v)),
        "{v}"
    );
    // `--combine` reads it back: one table and one plot naming the device.
    let (table, drawn) = combined(&done.stdout, true);
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["native", "buffered"])),
        "{table}"
    );
    assert!(drawn.contains("native: "), "{drawn}");
}

/// The throughput study's back-ends left out for a missing kernel
/// feature, each named in one sentence in `skipped`.
fn skipped_rows(v: &serde_json::Value) -> usize {
    let skipped = v["skipped"].as_array().map_or(0, Vec::len);
    for s in v["skipped"].as_array().into_iter().flatten() {
        assert!(
            s.as_str()
                .is_some_and(|s| s.contains("the throughput study's")),
            "{s}"
        );
    }
    skipped
}

/// `rtrec bench --study throughput` at smoke length (coarse probes of 100
/// ms, full-length ones of 300 ms, 16 KiB records, no bisection), with
/// `extra` arguments and the JSON to stdout: the run, which must succeed,
/// and its JSON, which must be the whole of stdout.
fn throughput_smoke(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let done = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--study", "throughput"])
        .args(extra)
        .args(["--probe-duration", "300ms", "--coarse-duration", "100ms"])
        .args(["--steps", "0", "--size", "16KiB", "--json", "-"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", common::show(&done));
    let v: serde_json::Value = serde_json::from_slice(&done.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON document ({e}): {}", common::show(&done)));
    (done, v)
}

/// `rtrec bench --combine` of one throughput result (`json`, with `--plot`
/// when `plot`), which must succeed: its table and the plot's SVG (empty
/// without `plot`).
fn combined(json: &[u8], plot: bool) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("result.json");
    std::fs::write(&path, json).unwrap();
    let svg = dir.path().join("all.svg");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtrec"));
    cmd.args(["bench", "--combine"]).arg(&path);
    if plot {
        cmd.arg("--plot").arg(&svg);
    }
    let done = cmd.output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", common::show(&done));
    let drawn = if plot {
        std::fs::read_to_string(&svg).unwrap()
    } else {
        String::new()
    };
    (String::from_utf8_lossy(&done.stdout).into_owned(), drawn)
}

/// `rtrec bench --study throughput --alloc pool`: the probes record into a
/// pool zero-filled once per back-end and recycled into; the report says
/// so, every probe counts its fallbacks to `fallocate`, and a combined
/// table keeps the pool run apart from a fallocate run of the same device.
/// Smoke length, one record size; asserts no rate.
#[test]
fn throughput_with_alloc_pool_says_so_and_counts_fallbacks() {
    let name = "throughput_with_alloc_pool_says_so_and_counts_fallbacks";
    if !require_privileged(name) {
        return;
    }
    let (done, v) = throughput_smoke(&["--alloc", "pool"]);
    assert_eq!(v["alloc"], "pool", "{v}");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("probes' files: a pool zero-filled once and recycled into"),
        "{stderr}"
    );
    let rows = v["runs"][0]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4 - skipped_rows(&v), "{v}");
    for p in rows.iter().flat_map(|r| r["probes"].as_array().unwrap()) {
        assert!(p["pool_fallbacks"].is_u64(), "{p}");
    }
    let (table, _) = combined(&done.stdout, false);
    assert!(table.contains("native pool"), "{table}");
}

/// `bench --alloc` names the two allocations the study models and refuses
/// the others in one sentence, before anything runs.
#[test]
fn throughput_refuses_an_allocation_it_does_not_model() {
    let done = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--study", "throughput", "--alloc", "zero"])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(2), "{}", common::show(&done));
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("not an allocation the throughput study models: fallocate or pool"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `rtrec bench --combine` of a file that is not a throughput result:
/// one sentence naming it, a non-zero exit, no panic.
#[test]
fn combine_refuses_a_file_that_is_not_a_throughput_result() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"study\": \"s1\"}").unwrap();
    let done = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--combine"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_ne!(done.status.code(), Some(0), "{}", common::show(&done));
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("bad.json") && stderr.contains("not a --study throughput result"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
