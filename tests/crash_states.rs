//! Every crash a card with a volatile write cache can produce, in CI:
//! `rtrec bench --study crash` records each variant (default pool, append,
//! `--stdin`, pool of 1 MiB files) on the emulated eMMC with its write log
//! on, builds 200 crash states from the logs (everything up to a flush plus
//! a subset of the later writes, some torn at 512 bytes), and checks each
//! against `docs/durability.md`: no durable record lost or changed, no
//! recording hidden, no wrong bytes accepted, nothing corrupt after
//! `recover`, and `export DIR` reads every durable record.
//!
//! Needs root, loop devices, FUSE and e2fsprogs; skipped (with the reason)
//! otherwise, and failed instead under `RTREC_REQUIRE_PRIVILEGED=1`. The
//! seed comes from `RTREC_CRASH_SEED` when set (a failure prints it).

mod common;
use common::show;

use std::process::Command;

use rtrec_host::loopfs::require_privileged;
use rtrec_host::tools;
use serde_json::Value;

#[test]
fn two_hundred_crash_states_over_the_variants_break_no_rule_of_the_contract() {
    let name = "two_hundred_crash_states_over_the_variants_break_no_rule_of_the_contract";
    if !require_privileged(name) || !tools::require(name, &[tools::E2FSCK, tools::DEBUGFS]) {
        return;
    }
    if !std::path::Path::new("/dev/fuse").exists() {
        assert!(
            std::env::var_os(tools::REQUIRE_PRIVILEGED_ENV).is_none_or(|v| v != "1"),
            "{name} needs /dev/fuse"
        );
        eprintln!("skipped {name}: no /dev/fuse");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("crash.json");
    let seed = std::env::var("RTREC_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(rtrec_sys::time::realtime_ns);
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--study", "crash", "--crash-states", "200"])
        .args(["--crash-count", "1000", "--crash-seed", &seed.to_string()])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|_| panic!("seed {seed}: no report: {}", show(&o)));
    let crash = &report["crash"];
    let violations = crash["violations"].as_array().unwrap();
    for v in violations {
        eprintln!("violation: {v}");
    }
    assert!(
        violations.is_empty(),
        "seed {seed} (RTREC_CRASH_SEED={seed} repeats the draws): {} violations, first: {}",
        violations.len(),
        violations[0]
    );
    assert_eq!(o.status.code(), Some(0), "seed {seed}: {}", show(&o));
    assert!(crash["states_checked"].as_u64().unwrap() >= 200, "{crash}");
    assert!(crash["fs_repaired"].is_u64(), "{crash}");
    // Every variant got its share of the states.
    let variants = crash["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4, "{crash}");
    for v in variants {
        assert!(v["states"].as_u64().unwrap() >= 50, "{v}");
        assert!(v["log_flushes"].as_u64().unwrap() > 0, "{v}");
    }
    assert!(report["environment"]["kernel"].is_string());
}

/// What a power cut leaves when the writes after the last durable point
/// land out of order: a file without its valid length (unfinished), whose
/// frames stop at a hole and go on after it. `verify` calls it unfinished
/// with a torn tail (not corrupt), `recover` cuts the tail and counts it,
/// and `export DIR` without flags then reads every record before the hole.
#[test]
fn a_hole_in_an_unfinished_file_is_a_torn_tail_that_recover_cuts() {
    use rtrec_engine::format::{FileHeader, HEADER_LEN};
    use rtrec_engine::reader::walk_frames;

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let rtrec = || Command::new(env!("CARGO_BIN_EXE_rtrec"));
    let o = rtrec()
        .args([
            "record", "--period", "1ms", "--size", "4KiB", "--count", "100",
        ])
        .args(["--alloc", "append", "--quiet", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rtr"))
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mut header = FileHeader::decode(&bytes).unwrap();
    let mut frames = Vec::new();
    walk_frames(&bytes, &header, |off, h, _| frames.push((off, h.seq)));
    // Record 40's frame never landed; 41.. did, the end frame too, but not
    // the final header.
    let (hole, seq) = frames[40];
    assert_eq!(seq, 40);
    let hole_end = frames[41].0 as usize;
    bytes[hole as usize..hole_end].fill(0);
    header.valid_len = 0;
    bytes[..HEADER_LEN].copy_from_slice(&header.encode());
    std::fs::write(&file, &bytes).unwrap();

    let verify = || {
        let o = rtrec()
            .args(["verify", "--json"])
            .arg(&dir)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", show(&o)));
        v["files"][0].clone()
    };
    let f = verify();
    assert_eq!(f["status"], "unfinished", "{f}");
    assert!(f["torn_tail_bytes"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(f["records"], 40, "{f}");
    assert_eq!(f["salvageable_records"], 59, "{f}");

    let o = rtrec().arg("recover").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("cut a torn tail") && text.contains("59 record(s)"),
        "{text}"
    );
    let f = verify();
    assert_eq!(f["status"], "unfinished", "{f}");
    assert_eq!(f["torn_tail_bytes"], 0, "{f}");
    assert_eq!(f["salvageable_records"], 0, "{f}");

    let out = tmp.path().join("out.bin");
    let o = rtrec()
        .arg("export")
        .arg(&dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 40 * 4096);
}
