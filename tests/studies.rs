//! A short S3 and S4 run for CI: `rtrec bench --study s3,s4` with one
//! fsync round, one request size, short cells and a short recording. Checks
//! the JSON's `s3` and `s4` sections (every variant, cell and
//! RTREC-ISOLATED case measured, nothing failed) and that every setting is
//! put back: the schedulers and BFQ tunables of the machine's own disks, no
//! `rtrec-<pid>-*` cgroup, no journal entry, no mount or loop device of the
//! bench. Asserts no timing. Privileged (skips with the reason, fails
//! under RTREC_REQUIRE_PRIVILEGED=1).

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

#[test]
fn s3_and_s4_run_briefly_and_put_every_setting_back() {
    if !require_privileged("s3_and_s4_run_briefly_and_put_every_setting_back") {
        return;
    }
    let h = rtrec_host::cgroup::detect().expect("an I/O cgroup hierarchy");
    let before = disk_settings();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("bench.json");
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "bench", "--study", "s3,s4", "--rounds", "1", "--cell", "300ms",
        ])
        .args(["--request-sizes", "1MiB", "--writes", "100", "--json"])
        .arg(&json)
        .env("NO_COLOR", "1")
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", common::show(&done));

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
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
        let share: f64 = c["share_pct"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_f64())
            .sum();
        assert!((share - 100.0).abs() < 1.0, "the shares add up: {c}");
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

    // Everything put back.
    assert_eq!(disk_settings(), before, "schedulers and tunables as found");
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
