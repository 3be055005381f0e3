//! The emulated device end to end, with the real binary: a recording on an
//! emulated eMMC verifies; every request is served no earlier than the
//! model says (lower bounds only: the VM is noisy); a SIGKILLed bench on an
//! emulated device leaves nothing after `rtrec tune --restore`; `rtrec
//! record --device emmc` leaves a clean recording and nothing mounted; a bad
//! profile is one sentence and exit 2. The first three need root and a
//! loop device (the privileged-test pattern).

mod common;
use common::{rtrec, show};
use rtrec_host::features::{self, Feature};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};

fn emulated(profile: &Path) -> LoopFs {
    LoopFs::create(&LoopFsOptions {
        size: 256 << 20,
        journal_mib: 8,
        emulator: Some(EmulatorCommand {
            program: env!("CARGO_BIN_EXE_rtrec").into(),
            args: vec![
                "__emulate".into(),
                "--profile".into(),
                profile.as_os_str().to_owned(),
            ],
        }),
        ..LoopFsOptions::default()
    })
    .unwrap()
}

/// A profile with costs large enough to see: 2 ms per write, 20 ms per
/// flush, a 50 ms GC pause every 1 MiB.
fn slow_profile(dir: &Path) -> PathBuf {
    let mut v: serde_json::Value = serde_json::from_str(rtrec_emu::profile::BUILTIN[0].1).unwrap();
    v["name"] = "slow".into();
    v["write_latency"] = "2ms".into();
    v["flush"] = "20ms".into();
    v["flush_tail_every"] = 0.into();
    v["gc_every"] = "1MiB".into();
    v["gc_pause"] = "50ms".into();
    let p = dir.join("slow.json");
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn a_recording_on_an_emulated_emmc_verifies_and_every_request_waited_its_model_time() {
    let name = "a_recording_on_an_emulated_emmc_verifies_and_every_request_waited_its_model_time";
    if !require_privileged(name) || !features::require(name, &[Feature::Fuse]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let profile = slow_profile(tmp.path());
    let fs = emulated(&profile);
    let dir = fs.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let o = rtrec(&[
        "record",
        "--quiet",
        "--period",
        "1ms",
        "--size",
        "4KiB",
        "--total",
        "2MiB",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let v = rtrec(&["verify", dir.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));

    // A direct write and an fsync through the stack: each at least its
    // model time (lower bounds only).
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(fs.path().join("probe"))
        .unwrap();
    let t = Instant::now();
    std::os::unix::fs::FileExt::write_all_at(&f, &[1u8; 4096], 0).unwrap();
    f.sync_all().unwrap();
    // At least one data write (2 ms) and one flush (20 ms) reached the device.
    assert!(
        t.elapsed() >= Duration::from_millis(22),
        "{:?}",
        t.elapsed()
    );
    drop(f);

    let stats = rtrec_emu::read_stats(fs.emulator_stats().unwrap()).unwrap();
    assert_eq!(stats.profile, "slow");
    assert_eq!(stats.early, 0, "a request was served early: {stats:?}");
    assert!(stats.served_ns >= stats.asked_ns, "{stats:?}");
    assert!(stats.flushes >= 1 && stats.writes >= 1, "{stats:?}");
    // 2 MiB recorded (and mkfs-free: the image was formatted before the
    // emulator started): at least one 50 ms GC pause was asked and served.
    assert!(stats.gc_pauses >= 1, "{stats:?}");
    assert!(stats.asked_max_ns >= 50_000_000, "{stats:?}");
    // The emulator found the image's 8 MiB journal (so jbd2's log writes
    // are served ahead of writeback) and saw the kernel's requests queued.
    assert_eq!(stats.journal_bytes, 8 << 20, "{stats:?}");
    assert!(stats.queue_max >= 1, "{stats:?}");
    fs.remove().unwrap();
}

fn emulated_mounts(pid: u32) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("rtrec-loopfs-{pid}-")))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_killed_bench_on_an_emulated_device_leaves_nothing_after_restore() {
    let name = "a_killed_bench_on_an_emulated_device_leaves_nothing_after_restore";
    if !require_privileged(name) || !features::require(name, &[Feature::Fuse]) {
        return;
    }
    let mut bench = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "bench", "--device", "emmc", "--cases", "NONE", "--sets", "1", "--writes", "5000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = bench.id();
    // Wait until the whole stack is up: the FUSE mount and ext4 on the loop
    // (the bench first waits for the global lock other rtrec runs may hold).
    let deadline = Instant::now() + Duration::from_secs(300);
    while emulated_mounts(pid).len() < 2 {
        assert!(Instant::now() < deadline, "the stack never came up");
        assert!(bench.try_wait().unwrap().is_none(), "the bench ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    bench.kill().unwrap();
    bench.wait().unwrap();
    assert!(!emulated_mounts(pid).is_empty(), "killed before it mounted");

    let o = rtrec(&["tune", "--restore"]);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        emulated_mounts(pid).is_empty(),
        "{:?}",
        emulated_mounts(pid)
    );
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(
        !loops.contains(&format!("rtrec-loopfs-{pid}-")),
        "loop device left: {loops}"
    );
    let tmp = std::env::temp_dir();
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("rtrec-loopfs-{pid}-"))
        })
        .collect();
    assert!(left.is_empty(), "left in {}: {left:?}", tmp.display());
}

/// What a process `pid` left of its loop images: mounts, loop devices,
/// directories in the temporary directory.
fn left_by(pid: u32) -> Vec<String> {
    let mut left = emulated_mounts(pid);
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    left.extend(
        String::from_utf8_lossy(&loops.stdout)
            .lines()
            .filter(|l| l.contains(&format!("rtrec-loopfs-{pid}-")))
            .map(str::to_string),
    );
    left.extend(
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("rtrec-loopfs-{pid}-"))),
    );
    left
}

#[test]
fn record_on_an_emulated_emmc_keeps_a_clean_recording_and_leaves_nothing_mounted() {
    let name = "record_on_an_emulated_emmc_keeps_a_clean_recording_and_leaves_nothing_mounted";
    if !require_privileged(name) || !features::require(name, &[Feature::Fuse]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kept");
    let summary = tmp.path().join("summary.json");
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "record", "--device", "emmc", "--count", "300", "--period", "1ms",
        ])
        .args(["--size", "16KiB", "--dir"])
        .arg(&dir)
        .arg("--json")
        .arg(&summary)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("device emmc: writer's longest write()")
            && out.contains("emulator timing error (served − asked): mean"),
        "{}",
        show(&o)
    );
    assert!(left_by(pid).is_empty(), "{:?}", left_by(pid));
    // The JSON summary names the device and the emulator's timing error.
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let d = &s["device"];
    assert_eq!(d["profile"], "emmc", "{d}");
    assert_eq!(d["profile_file"]["name"], "emmc", "{d}");
    assert_eq!(d["ring_bytes"], s["config"]["ring_bytes"], "{d}");
    assert!(d["ring_seconds"].as_f64().unwrap() > 0.0, "{d}");
    assert_eq!(d["emulator"]["profile"], "emmc", "{d}");
    assert!(d["emulator"]["writes"].as_u64().unwrap() > 0, "{d}");
    assert_eq!(d["emulator"]["early"], 0, "{d}");
    assert!(d["emulator"]["error_max_ns"].is_u64(), "{d}");

    let v = rtrec(&["verify", "--json", dir.to_str().unwrap()]);
    assert!(v.status.success(), "{}", show(&v));
    let report: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(report["records"], 300, "{report}");
    assert_eq!(report["clean"], true, "{report}");
}

#[test]
fn a_bad_device_profile_is_one_sentence_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("bad.json");
    std::fs::write(&p, r#"{"name":"x"}"#).unwrap();
    for device in [p.to_str().unwrap(), "no-such-profile"] {
        let o = rtrec(&["bench", "--device", device, "--cases", "NONE"]);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{}", show(&o));
        assert!(
            err.contains("device profile") || err.contains("emmc, sd"),
            "{err}"
        );
    }
    let o = rtrec(&[
        "device",
        "probe",
        tmp.path().join("missing").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}
