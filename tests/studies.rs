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

use rtrec_host::loopfs::require_privileged;

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
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("bench.json");
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("NO_COLOR", "1")
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
    // 4 schedulers × reads/writes × direct/buffered at 2:1, and the 1:4:5
    // direct reads and writes under bfq.
    assert_eq!(cells.len(), 18, "{s4}");
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["request_bytes"], 1 << 20, "{c}");
        assert_shares_add_up(c);
        if c["scheduler"].as_str().unwrap().starts_with("bfq") {
            assert!(!c["bfq_tunables"].as_array().unwrap().is_empty(), "{c}");
        }
    }
    let iso = s4["isolated"].as_array().expect("RTREC-ISOLATED cases");
    assert_eq!(iso.len(), 6, "{s4}");
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
    let before = disk_settings();
    let (pid, done, v) = bench(&[
        "--study",
        "s4",
        "--with-fio",
        "--schedulers",
        "bfq",
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
    // bfq × reads/writes × direct/buffered at 2:1, and 1:4:5 direct.
    assert_eq!(ours.len(), 6, "{s4}");
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
        if f["direct"] == true {
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

/// `--study s3 --device FILE`: every variant's own image sits on the
/// emulated device, and each S3 case keeps that device's counters (fsyncs
/// reached it as flushes, nothing was served early); everything is put
/// back. A quick profile (the shipped emmc without GC busy) keeps it short.
#[test]
fn s3_on_an_emulated_device_runs_each_variant_through_it_and_puts_every_setting_back() {
    let name = "s3_on_an_emulated_device_runs_each_variant_through_it_and_puts_every_setting_back";
    if !require_privileged(name) {
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
    assert_eq!(rows.len(), 4, "{run}");
    assert!(run["device_bytes_per_s"].as_f64() > Some(0.0), "{run}");
    for row in rows {
        assert!(row["fraction_of_device"].is_f64(), "{row}");
        assert!(row["limit"]["kind"].is_string(), "{row}");
    }
    assert_eq!(run["verdicts"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(v["spread"].as_array().map(Vec::len), Some(4), "{v}");
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
    assert_eq!(rows.len(), 4, "{v}");
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
