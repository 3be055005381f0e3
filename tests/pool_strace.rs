//! Seen from the kernel: a recording that takes its file from the pool
//! makes no fallocate() call at all and no ftruncate() but the one that
//! gives back a finished file's unused tail, to its final length, when no
//! other recording writes there (strace counts every system call of every
//! thread, so nothing can bypass the check), while the S1 design does (the
//! control).

use std::path::Path;
use std::process::Command;

fn rtrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
}

/// Runs `rtrec record ARGS` under strace; returns the traced calls.
fn traced_record(dir: &Path, log: &Path, extra: &[&str]) -> String {
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fallocate,ftruncate", "-o"])
        .arg(log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(dir)
        .args([
            "--period",
            "1ms",
            "--size",
            "4KiB",
            "--count",
            "100",
            "--file-size",
            "1MiB",
            "--no-refill",
            "--quiet",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rtrec record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(log).unwrap()
}

/// `rtrec pool prepare --dir DIR ARGS`, which must succeed.
fn prepare_pool(dir: &Path, args: &[&str]) {
    let prep = rtrec()
        .args(["pool", "prepare", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        prep.status.success(),
        "{}",
        String::from_utf8_lossy(&prep.stderr)
    );
}

#[test]
fn a_pooled_recording_makes_no_fallocate_call_and_truncates_only_its_finished_tail() {
    if !rtrec_host::tools::require(
        "a_pooled_recording_makes_no_fallocate_call_and_truncates_only_its_finished_tail",
        &[rtrec_host::tools::STRACE],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    prepare_pool(dir.path(), &["--files", "2", "--file-size", "1MiB"]);

    let pooled = traced_record(dir.path(), &dir.path().join("pooled.log"), &[]);
    let calls: Vec<&str> = pooled
        .lines()
        .filter(|l| l.contains("fallocate("))
        .collect();
    assert!(calls.is_empty(), "a pooled recording called: {calls:?}");
    // The only ftruncate: the tail given back after the recording, to the
    // final length of one of its files.
    let finals: Vec<u64> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtr"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    let truncates: Vec<&str> = pooled
        .lines()
        .filter(|l| l.contains("ftruncate("))
        .collect();
    assert!(truncates.len() <= finals.len(), "{truncates:?}");
    for t in &truncates {
        let len: u64 = t
            .split(", ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unreadable: {t}"));
        assert!(
            finals.contains(&len),
            "a truncate while recording: {t} ({finals:?})"
        );
    }

    let s1 = traced_record(
        dir.path(),
        &dir.path().join("s1.log"),
        &["--alloc", "fallocate"],
    );
    assert!(
        s1.contains("fallocate(") && s1.contains("ftruncate("),
        "control saw no calls: {s1}"
    );

    let v = rtrec().arg("verify").arg(dir.path()).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// One rule for the file size: a recording without `--file-size` in a
/// directory that has a pool takes the pool's size. Before it, a default
/// `pool prepare` (64 MiB files) followed by a default recording of 200
/// records (sized to 832 KiB) deleted both prepared files and called
/// `fallocate` for a new one: the allocation the pool exists to avoid.
#[test]
fn a_default_recording_uses_the_prepared_pool_and_never_deletes_or_fallocates_it() {
    let name = "a_default_recording_uses_the_prepared_pool_and_never_deletes_or_fallocates_it";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    prepare_pool(&rec, &[]);
    let slots = |d: &Path| -> Vec<String> {
        std::fs::read_dir(d.join(".pool"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("slot-"))
            .collect()
    };
    let prepared = slots(&rec);
    assert_eq!(prepared.len(), 2, "{prepared:?}");

    let log = dir.path().join("default.log");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fallocate,unlink,unlinkat,rename,renameat,renameat2",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(&rec)
        .args(["--period", "1ms", "--size", "4KiB", "--count", "200"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("removed"),
        "the pool was resized: {stderr}"
    );
    let trace = std::fs::read_to_string(&log).unwrap();
    let fallocates: Vec<&str> = trace.lines().filter(|l| l.contains("fallocate(")).collect();
    assert!(
        fallocates.is_empty(),
        "fallocate on the default path: {fallocates:?}"
    );
    // No prepared file is unlinked; one is renamed into the recording.
    for slot in &prepared {
        let gone: Vec<&str> = trace
            .lines()
            .filter(|l| l.contains("unlink") && l.contains(slot.as_str()))
            .collect();
        assert!(gone.is_empty(), "a prepared file was deleted: {gone:?}");
    }
    assert!(
        trace
            .lines()
            .any(|l| l.contains("rename") && prepared.iter().any(|s| l.contains(s.as_str()))),
        "no prepared file was taken: {trace}"
    );
    // The recording in the pool's file verifies.
    let v = rtrec().arg("verify").arg(&rec).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// What a recording of known length beside a prepared pool did, seen by
/// the kernel and by the tools.
struct KnownRun {
    /// Its `--json` result.
    json: serde_json::Value,
    /// The traced `fallocate`, `ftruncate` and `fdatasync` calls, in order.
    trace: Vec<String>,
    /// The sizes of its files when it ended.
    finals: Vec<u64>,
    /// What `rtrec pool status --json` says after it.
    pool: serde_json::Value,
}

impl KnownRun {
    /// Index of the recording's last `fdatasync` in the trace.
    fn last_sync(&self) -> usize {
        self.trace
            .iter()
            .rposition(|l| l.contains("fdatasync("))
            .expect("the recording syncs")
    }

    /// The `fallocate` calls, each as `(trace index, length)`.
    fn fallocates(&self) -> Vec<(usize, u64)> {
        calls(&self.trace, "fallocate(", 3)
    }

    /// The `ftruncate` calls, each as `(trace index, length)`.
    fn ftruncates(&self) -> Vec<(usize, u64)> {
        calls(&self.trace, "ftruncate(", 1)
    }
}

/// The calls to `name` in `trace`, each with its argument number `arg`
/// (from 0) read as a length.
fn calls(trace: &[String], name: &str, arg: usize) -> Vec<(usize, u64)> {
    trace
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains(name))
        .map(|(i, l)| {
            let len = l
                .split(name)
                .nth(1)
                .and_then(|a| a.split(')').next())
                .and_then(|a| a.split(", ").nth(arg))
                // A call another thread interrupted: `... 4096 <unfinished ...>`.
                .and_then(|n| n.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unreadable: {l}"));
            (i, len)
        })
        .collect()
}

/// In a fresh directory with a pool of `ready` files of 1 MiB, records
/// `count` records of 4 KiB (253 to a pool file), one every `period`,
/// under strace, then
/// checks what every such recording must show: `rtrec verify` accepts
/// it, `rtrec ls` counts all its records, nothing lost, and the pool kept
/// its size.
fn known_beside_pool(ready: u32, count: u32, period: &str) -> KnownRun {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    prepare_pool(
        &rec,
        &["--files", &ready.to_string(), "--file-size", "1MiB"],
    );
    let log = dir.path().join("known.log");
    let json = dir.path().join("known.json");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=fallocate,ftruncate,fdatasync",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--dir"])
        .arg(&rec)
        .args(["--period", period, "--size", "4KiB", "--count"])
        .arg(count.to_string())
        .args(["--no-refill", "--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let trace = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let finals = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtr"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    let v = rtrec().arg("verify").arg(&rec).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    let ls = rtrec().args(["ls", "--json"]).arg(&rec).output().unwrap();
    assert!(
        ls.status.success(),
        "{}",
        String::from_utf8_lossy(&ls.stderr)
    );
    let ls: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    let listed = &ls["recordings"][0];
    assert_eq!(ls["recordings"].as_array().unwrap().len(), 1, "{ls}");
    assert_eq!(listed["records"], count, "{ls}");
    assert_eq!(listed["lost"], 0, "{ls}");
    assert_eq!(listed["state"], "complete", "{ls}");
    assert_eq!(
        listed["files"],
        json["files"].as_array().unwrap().len(),
        "{ls}"
    );
    let st = rtrec()
        .args(["pool", "status", "--json"])
        .arg(&rec)
        .output()
        .unwrap();
    let pool: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(pool["file_size"], 1 << 20, "the pool was resized: {pool}");
    KnownRun {
        json,
        trace,
        finals,
        pool,
    }
}

/// Issue 47, "A prepared pool is used": a recording of known length
/// takes pool files, one after another when it is longer than one,
/// switching between them as an open-ended recording does, instead of
/// `fallocate`-ing one fresh file of its whole length beside the idle
/// pool (before: `pool: 0 taken`, one `fallocate` of the whole need
/// before the first record). Seen by the kernel, whatever the
/// recording's length (within one pool file, three, exactly all four):
/// no `fallocate` at all, and every `ftruncate` after the recording's
/// last `fdatasync`, to a finished file's final length (the last files'
/// unused tails given back).
#[test]
fn a_recording_longer_than_one_pool_file_takes_pool_files_and_allocates_nothing() {
    let name = "a_recording_longer_than_one_pool_file_takes_pool_files_and_allocates_nothing";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    // 4 KiB records, 253 to a 1 MiB pool file: 1, 3 and 4 files' worth.
    for (count, files) in [(100, 1), (600, 3), (1012, 4)] {
        let run = known_beside_pool(4, count, "100us");
        let v = &run.json;
        assert_eq!(v["pool"]["taken"], files, "{count}: {v}");
        assert_eq!(v["pool"]["fallbacks"], 0, "{count}: {v}");
        assert_eq!(v["files"].as_array().unwrap().len(), files, "{count}: {v}");
        assert_eq!(v["file_sizing"]["pool"], true, "{count}: {v}");
        assert_eq!(
            run.fallocates(),
            vec![],
            "{count}: fallocate with a prepared pool: {:?}",
            run.trace
        );
        let last_sync = run.last_sync();
        for (i, len) in run.ftruncates() {
            assert!(
                i > last_sync,
                "{count}: ftruncate before the last sync: {:?}",
                run.trace
            );
            assert!(
                run.finals.contains(&len),
                "{count}: {len} ({:?})",
                run.finals
            );
        }
        // The pool is what it was less what was taken: no resize.
        assert_eq!(run.pool["ready_files"], 4 - files, "{}", run.pool);
    }
}

/// Issue 47's design choice for a pool with fewer ready files than a
/// recording of known length needs: it takes what is there, then
/// allocates the rest in one file of its own, of exactly what the pool's
/// files left over (before: the pool left idle, one file of the whole
/// need). One `fallocate`, of less than the whole need; two files; every
/// record verified and listed. Unless a pool file would last less than a
/// second at the recording's rate: then the pool is left alone and the
/// whole need gets one file (the switches would buy nothing, the
/// allocation is made anyway).
#[test]
fn a_pool_short_of_the_need_is_taken_and_only_the_rest_allocated() {
    let name = "a_pool_short_of_the_need_is_taken_and_only_the_rest_allocated";
    if !rtrec_host::tools::require(name, &[rtrec_host::tools::STRACE]) {
        return;
    }
    let stored = rtrec_engine::format::framed_len(4096) as u64;
    // 600 records of 4 KiB: one pool file holds 253 of them, 1.01 s at
    // one every 4 ms; 25 ms at one every 100 µs.
    let tiny = known_beside_pool(1, 600, "100us");
    assert_eq!(tiny.json["pool"]["taken"], 0, "{}", tiny.json);
    assert_eq!(tiny.json["files"].as_array().unwrap().len(), 1);
    let whole = tiny.fallocates();
    assert_eq!(whole.len(), 1, "{:?}", tiny.trace);
    assert!(whole[0].1 >= 600 * stored, "{whole:?}");
    assert_eq!(tiny.pool["ready_files"], 1, "{}", tiny.pool);
    let run = known_beside_pool(1, 600, "4ms");
    let v = &run.json;
    assert_eq!(v["pool"]["taken"], 1, "{v}");
    assert_eq!(v["pool"]["fallbacks"], 1, "{v}");
    assert_eq!(v["files"].as_array().unwrap().len(), 2, "{v}");
    let fallocates = run.fallocates();
    assert_eq!(fallocates.len(), 1, "{:?}", run.trace);
    let (_, rest) = fallocates[0];
    // The rest: the 347 records the pool file left over, in whole pages,
    // not the whole need of 600.
    assert!(rest >= 347 * stored && rest < 600 * stored, "{rest}");
    assert_eq!(run.pool["ready_files"], 0, "{}", run.pool);
}
