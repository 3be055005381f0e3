//! `rtrec doctor` and `rtrec tune status` on this machine: every check the
//! documentation promises is in the JSON with a verdict, a reason and (for
//! warn and fail) a fix; the exit code follows the failures.

mod common;
use common::rtrec;

/// Every check of docs/doctor.md, in its order.
const CHECKS: [&str; 27] = [
    "fs-type",
    "mount-noatime",
    "mount-lazytime",
    "mount-delalloc",
    "mount-data-mode",
    "mount-discard",
    "journal-size",
    "free-space",
    "device-kind",
    "io-scheduler",
    "io-scheduler-tunables",
    "bfq-weight",
    "device-probe",
    "vm-dirty",
    "journal-leftovers",
    "cpu-governor",
    "cpu-idle",
    "isolcpus",
    "nohz_full",
    "rt-throttling",
    "preempt",
    "thp",
    "swap",
    "memlock",
    "tracefs",
    "hypervisor",
    "steal-time",
];

fn doctor_json(args: &[&str]) -> (serde_json::Value, i32) {
    let out = rtrec(&[&["doctor", "--json"], args].concat());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (v, out.status.code().unwrap())
}

#[test]
fn doctor_lists_every_check_with_a_verdict_a_reason_and_a_fix_where_needed() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not-yet");
    let (v, code) = doctor_json(&[missing.to_str().unwrap()]);
    let checks = v["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, CHECKS);
    for c in checks {
        let status = c["status"].as_str().unwrap();
        assert!(["pass", "warn", "fail", "skip"].contains(&status), "{c}");
        assert!(!c["why"].as_str().unwrap().is_empty(), "{c}");
        assert_eq!(
            c["fix"].is_string(),
            status == "warn" || status == "fail",
            "a fix exactly for warn and fail: {c}"
        );
    }
    // The nearest existing parent is what was checked.
    assert_eq!(
        v["checked"].as_str().unwrap(),
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
    let fails = v["counts"]["fail"].as_u64().unwrap();
    assert_eq!(code, if fails == 0 { 0 } else { 1 });
}

#[test]
fn doctor_fails_when_the_planned_recording_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = doctor_json(&[dir.path().to_str().unwrap(), "--planned", "1000TiB"]);
    let free = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "free-space")
        .unwrap();
    assert_eq!(free["status"], "fail", "{free}");
    assert_eq!(code, 1);
}

#[test]
fn doctor_refuses_a_bad_size_in_one_sentence() {
    let out = rtrec(&["doctor", "--planned", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rtrec: --planned: '5' needs a unit"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn tune_status_names_the_journal_and_the_lock_in_words_and_json() {
    let out = rtrec(&["tune", "status"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("journal: "), "{text}");
    assert!(text.contains("global lock: "), "{text}");
    let out = rtrec(&["tune", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["journal"]["owners"].is_array(), "{v}");
    assert!(v["vm_dirty"]["dirty_ratio"].is_u64(), "{v}");
}

/// The check named `id` in a doctor document.
fn check(v: &serde_json::Value, id: &str) -> serde_json::Value {
    let checks = v["checks"].as_array().expect("checks");
    checks.iter().find(|c| c["id"] == id).expect(id).clone()
}

#[test]
fn doctor_probe_measures_the_device_inside_dir_and_leaves_nothing_there() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) = doctor_json(&["--probe", dir.path().to_str().unwrap()]);
    let c = check(&v, "device-probe");
    let status = c["status"].as_str().unwrap();
    assert!(["pass", "warn"].contains(&status), "{c}");
    let found = c["found"].as_str().unwrap();
    assert!(
        found.contains("flush") && found.contains("/s"),
        "measured figures expected: {c}"
    );
    assert_eq!(c["fix"].is_string(), status == "warn", "{c}");
    // The scratch file is gone: the probe writes only inside DIR and
    // removes what it wrote.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // A DIR that does not exist is not probed (nothing is written in its
    // parent).
    let missing = dir.path().join("not-yet");
    let (v, _) = doctor_json(&["--probe", missing.to_str().unwrap()]);
    let c = check(&v, "device-probe");
    assert_eq!(c["status"], "skip", "{c}");
    assert!(c["why"].as_str().unwrap().contains("does not exist"), "{c}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
