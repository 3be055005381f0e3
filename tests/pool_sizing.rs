//! The file size rule and the pool (issue 31, findings 1, 4 and 5;
//! docs/durability.md, "File sizes and the pool"): a short recording cannot
//! poison the pool's size, an open-ended recording fits a small card and
//! `doctor` agrees with it, a 3-byte recording writes a few hundred KiB
//! to the device, not two zero-filled 64 MiB pool files, and on a disk that
//! seeks an open-ended recording's files hold 10 s of data (issue 47). The
//! last three need root and a loop device (they skip without, and fail
//! then with `RTREC_REQUIRE_PRIVILEGED=1`).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{rtrec, show};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};
use serde_json::Value;

/// `rtrec record --dir DIR ARGS --json -`, with `stdin` on its standard
/// input: its output and its JSON result.
fn record(dir: &Path, args: &[&str], stdin: &[u8]) -> (Output, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir", dir.to_str().unwrap(), "--json", "-"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("RUST_BACKTRACE")
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let o = child.wait_with_output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, v)
}

/// `rtrec pool status DIR --json`, `Null` when the directory has no pool.
fn pool_status(dir: &Path) -> Value {
    let o = rtrec(&["pool", "status", dir.to_str().unwrap(), "--json"]);
    serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
}

#[test]
fn a_short_recording_leaves_no_pool_size_to_the_next_one() {
    // Finding 1: `--count 1` sized the pool at 20 KiB, and the next
    // `--count 200` went to 200 files with 199 fallbacks.
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = record(dir.path(), &["--size", "16KiB", "--count", "1"], b"");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(pool_status(dir.path()), Value::Null, "a pool was made");
    let args = ["--period", "1ms", "--size", "16KiB", "--count", "200"];
    let (o, v) = record(dir.path(), &args, b"");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["files"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["pool"]["fallbacks"], 0, "{v}");
    assert_eq!(v["file_sizing"]["from"], "known length", "{v}");
    // An open-ended recording then makes the pool, from the default.
    let (o, v) = record(dir.path(), &["--stdin"], b"abc");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["file_sizing"]["from"], "default", "{v}");
    let st = pool_status(dir.path());
    assert_eq!(st["size_from"], "default", "{st}");
    assert_eq!(st["file_size"], 64 << 20, "{st}");
    // A pool of 64 MiB files: the short recording takes one when it is
    // ready and never resizes it.
    let o = rtrec(&[
        "pool",
        "prepare",
        dir.path().to_str().unwrap(),
        "--files",
        "1",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let (o, v) = record(dir.path(), &["--size", "16KiB", "--count", "1"], b"");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["pool"]["taken"], 1, "{v}");
    let st = pool_status(dir.path());
    assert_eq!(
        (st["file_size"].as_u64(), st["size_from"].as_str()),
        (Some(64 << 20), Some("pool prepare")),
        "{st}"
    );
    // None ready now: a file of its own, of exactly its size.
    let (o, v) = record(dir.path(), &args, b"");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["files"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["file_sizing"]["from"], "known length", "{v}");
    assert_eq!(pool_status(dir.path())["file_size"], 64 << 20);
}

#[test]
fn a_pool_description_of_an_older_rtrec_reads_and_gives_way_to_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join(".pool");
    std::fs::create_dir(&pool).unwrap();
    // What a `--count 1` recording of 16 KiB left before issue 31.
    std::fs::write(
        pool.join("pool.json"),
        r#"{"file_size": 20480, "files": 2}"#,
    )
    .unwrap();
    let st = pool_status(dir.path());
    assert_eq!(
        (st["file_size"].as_u64(), &st["size_from"]),
        (Some(20480), &Value::Null),
        "{st}"
    );
    let o = rtrec(&["pool", "status", dir.path().to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("size from an older rtrec"),
        "{}",
        show(&o)
    );
    let (o, v) = record(dir.path(), &["--stdin"], b"abc");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["config"]["file_size"], 64 << 20, "{v}");
    assert_eq!(pool_status(dir.path())["size_from"], "default");
}

#[test]
fn files_switched_more_often_than_once_a_second_are_warned_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--period",
        "1ms",
        "--size",
        "16KiB",
        "--count",
        "50",
        "--file-size",
        "64KiB",
    ];
    let (o, _) = record(dir.path(), &args, b"");
    assert!(o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("more often than once a second"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", show(&o));
    assert!(warnings[0].contains("--file-size 16MiB"), "{}", warnings[0]);
    // One that fits in its one file never switches: no warning.
    let (o, _) = record(
        dir.path(),
        &["--period", "1ms", "--size", "16KiB", "--count", "50"],
        b"",
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("once a second"),
        "{}",
        show(&o)
    );
}

/// `rtrec doctor DIR --planned PLANNED`'s `free-space` check.
fn free_space(dir: &Path, planned: &str) -> Value {
    let args = [
        "doctor",
        dir.to_str().unwrap(),
        "--planned",
        planned,
        "--json",
    ];
    let v: Value = serde_json::from_slice(&rtrec(&args).stdout).unwrap();
    let checks = v["checks"].as_array().unwrap();
    checks
        .iter()
        .find(|c| c["id"] == "free-space")
        .unwrap()
        .clone()
}

/// A loop-mounted ext4 of `size` bytes, or `None` when the test skips.
fn small_fs(test: &str, size: u64) -> Option<LoopFs> {
    if !require_privileged(test) {
        return None;
    }
    Some(
        LoopFs::create(&LoopFsOptions {
            size,
            // ext4's smallest journal: 1024 blocks (1 KiB blocks below
            // 512 MiB, 4 KiB above).
            journal_mib: if size < 512 << 20 { 1 } else { 4 },
            ..LoopFsOptions::default()
        })
        .unwrap(),
    )
}

#[test]
fn an_open_ended_recording_fits_a_small_card_and_doctor_agrees() {
    // Finding 4: on an 8 MiB partition the default 64 MiB file refused,
    // without naming --file-size, while doctor passed.
    let Some(fs) = small_fs(
        "an_open_ended_recording_fits_a_small_card_and_doctor_agrees",
        8 << 20,
    ) else {
        return;
    };
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let free = free_space(&dir, "1MiB");
    assert_ne!(free["status"], "fail", "{free}");
    assert!(
        free["why"].as_str().unwrap().contains("files of 1 MiB"),
        "{free}"
    );
    let (o, v) = record(&dir, &["--stdin"], b"abc");
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(v["records_written"], 1, "{v}");
    assert_eq!(v["file_sizing"]["from"], "small card", "{v}");
    assert_eq!(v["config"]["file_size"], 1 << 20, "{v}");
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(
        text.contains("files: 1 MiB each (small card"),
        "{}",
        show(&o)
    );
    let verify = rtrec(&["verify", dir.to_str().unwrap()]);
    assert!(verify.status.success(), "{}", show(&verify));
    // Fill it to under 4 MiB free: both refuse, naming --file-size.
    let mut fill = std::fs::File::create(fs.path().join("fill")).unwrap();
    fill.write_all(&vec![1u8; 3 << 20]).unwrap();
    fill.sync_all().unwrap();
    let free = free_space(&dir, "1KiB");
    assert_eq!(free["status"], "fail", "{free}");
    let (o, _) = record(&dir, &["--stdin"], b"abc");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--file-size") && err.contains(" MiB"), "{err}");
    drop(fill);
    fs.remove().unwrap();
}

#[test]
fn a_three_byte_recording_writes_a_few_hundred_kib_to_the_device() {
    // Finding 5: a 64 MiB pool file was zero-filled before the recording
    // and another after it (134.5 MB written for 3 bytes).
    let Some(fs) = small_fs(
        "a_three_byte_recording_writes_a_few_hundred_kib_to_the_device",
        1 << 30,
    ) else {
        return;
    };
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let device = || rtrec_host::machine::device_bytes_written(fs.path()).unwrap();
    let sync = || rtrec_sys::syncfs(std::fs::File::open(fs.path()).unwrap()).unwrap();
    for run in 0..2 {
        sync();
        let before = device();
        let (o, v) = record(&dir, &["--stdin"], b"abc");
        assert!(o.status.success(), "{}", show(&o));
        // Everything the recording left dirty, on the device.
        sync();
        let written = device() - before;
        assert!(
            written < 4 << 20,
            "run {run}: {written} bytes written to the device\n{v}"
        );
        let reported = v["device_bytes_written"].as_u64().unwrap();
        assert!(
            reported <= written,
            "run {run}: {reported} reported, {written} measured"
        );
        assert!(v["write_amplification"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(v["pool"]["refilled_on_finish"], 0, "{v}");
        assert_eq!(pool_status(&dir)["ready_files"], 0);
    }
    fs.remove().unwrap();
}

/// `rtrec record --dir DIR --json - ARGS` stopped with SIGTERM after
/// `secs`: its output and its JSON result.
fn record_until_stopped(dir: &Path, args: &[&str], secs: f64) -> (Output, Value) {
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir", dir.to_str().unwrap(), "--json", "-"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("RUST_BACKTRACE")
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, v)
}

#[test]
fn an_open_ended_recording_on_a_disk_that_seeks_gets_ten_seconds_a_file() {
    // Issue 47: on a disk a file switch costs seeks and cache flushes, and
    // 64 MiB files at 20 MiB/s took 7-9 % of a 5400 rpm disk's time. The
    // same loop device, told it is rotational, then flash.
    let test = "an_open_ended_recording_on_a_disk_that_seeks_gets_ten_seconds_a_file";
    let Some(fs) = small_fs(test, 1 << 30) else {
        return;
    };
    // 16 KiB every ms: 16 MiB/s, so 10 s are 160 MiB of payload.
    let args = ["--period", "1ms", "--size", "16KiB", "--quiet"];
    let ten_s = 10 * 1000 * (16u64 << 10);
    for (rotational, from) in [(true, "rotating media"), (false, "default")] {
        rtrec_host::loopdev::set_rotational(fs.device(), rotational).unwrap();
        let dir = fs.path().join(from.replace(' ', "-"));
        std::fs::create_dir(&dir).unwrap();
        let (o, v) = record_until_stopped(&dir, &args, 1.0);
        assert!(matches!(o.status.code(), Some(0 | 130)), "{}", show(&o));
        assert_eq!(v["file_sizing"]["from"], from, "{v}");
        let size = v["config"]["file_size"].as_u64().unwrap();
        if rotational {
            // 10 s of stored records (payload and frame headers), in
            // whole MiB.
            assert!(size >= ten_s && size < ten_s + (8 << 20), "{size}\n{v}");
            assert_eq!(size % (1 << 20), 0, "{size}");
        } else {
            assert_eq!(size, 64 << 20, "{v}");
        }
        assert!(v["records_written"].as_u64().unwrap() > 0, "{v}");
        let verify = rtrec(&["verify", dir.to_str().unwrap()]);
        assert!(verify.status.success(), "{}", show(&verify));
    }
    fs.remove().unwrap();
}
