//! `rtrec record` and `rtrec verify` given bad input: every mistake gets one
//! sentence of ours on stderr (never a panic, a backtrace or a usage dump), a
//! non-zero exit code, and leaves nothing that `rtrec verify` would accept
//! as a complete recording. Also the good path's JSON schema, which the
//! error cases are measured against.

mod common;

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::record_args::RecordArgs;
use common::show;
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};

/// `rtrec ARGS`, run in a scratch working directory (so that a forgotten
/// `--dir` can never create `./rtrec-data` in the source tree), with `input`
/// on stdin.
fn rtrec_in(cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the rtrec binary runs");
    let mut stdin = child.stdin.take().unwrap();
    // rtrec may exit before reading its input (that is the point of several
    // cases): a broken pipe here is expected.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn rtrec(args: &[&str]) -> Output {
    let cwd = tempfile::tempdir().unwrap();
    rtrec_in(cwd.path(), args, b"")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The error contract: exit `code`, and stderr is exactly one line of ours
/// (`rtrec: ...`) with no panic, backtrace or usage text.
fn assert_one_sentence(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}", show(o));
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one sentence on stderr\n{}",
        show(o)
    );
    assert!(lines[0].starts_with("rtrec: "), "{}", show(o));
    for bad in ["panicked", "backtrace", "Usage:", "RUST_BACKTRACE"] {
        assert!(!err.contains(bad), "stderr contains {bad:?}\n{}", show(o));
    }
}

/// The `*.rtr` / `*.raw` files directly in `dir`.
fn recordings(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.starts_with('.') && (name.ends_with(".rtr") || name.ends_with(".raw"))
        })
        .collect();
    v.sort();
    v
}

/// Hidden preparations (`.NAME.tmp`) in `dir` and its file pool.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for d in [dir.to_path_buf(), dir.join(".pool")] {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        v.extend(
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().ends_with(".tmp")),
        );
    }
    v
}

/// Nothing in `dir` passes `rtrec verify` as a complete recording.
fn assert_no_complete_recording(dir: &Path) {
    if recordings(dir).is_empty() {
        return;
    }
    let v = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_ne!(
        v.status.code(),
        Some(0),
        "a failed record left a recording verify accepts\n{}",
        show(&v)
    );
}

/// Runs `rtrec record ARGS --dir <fresh dir>` and checks the error contract.
fn record_refuses(args: &[&str], code: i32) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let all = RecordArgs::into_dir(&dir).with(args);
    let o = rtrec_in(tmp.path(), &all.words(), b"");
    assert_one_sentence(&o, code);
    assert_no_complete_recording(&dir);
    assert!(recordings(&dir).is_empty(), "{:?}", recordings(&dir));
    assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
    assert!(
        !tmp.path().join("rtrec-data").exists(),
        "the default directory was created"
    );
    o
}

#[test]
fn a_zero_period_is_one_sentence_and_exit_2() {
    let o = record_refuses(&["--period", "0ms", "--count", "5"], 2);
    assert!(stderr(&o).contains("--period"), "{}", show(&o));
}

#[test]
fn a_negative_period_is_one_sentence_and_exit_2() {
    let o = record_refuses(&["--period", "-5ms", "--count", "5"], 2);
    assert!(stderr(&o).contains("--period"), "{}", show(&o));
}

#[test]
fn a_total_below_one_record_is_one_sentence_and_a_total_rounds_down_and_says_so() {
    let o = record_refuses(&["--size", "16KiB", "--total", "1KiB"], 2);
    assert_eq!(
        stderr(&o).trim(),
        "rtrec: --total: 1 KiB is less than one record of 16 KiB (--size); give at least 16 KiB"
    );
    // 20 KiB of 16 KiB records: one record (never 32 KiB), said in the
    // summary and in the JSON.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // Not --quiet: the summary says it.
    let args = RecordArgs::into_dir("d")
        .without("--quiet")
        .set("--period", "1ms")
        .set("--size", "16KiB")
        .set("--total", "20KiB")
        .set("--json", "s.json");
    let o = rtrec_in(tmp.path(), &args.words(), b"");
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("--total 20 KiB allows 1 whole record of 16 KiB (16 KiB): rounded down"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(v["records_written"], 1);
    assert_eq!(v["total_bytes"], 20480);
    assert_eq!(v["total_records"], 1);
}

#[test]
fn a_record_larger_than_the_file_is_one_sentence_and_exit_2() {
    let o = record_refuses(
        &["--size", "2MiB", "--file-size", "1MiB", "--count", "5"],
        2,
    );
    assert!(stderr(&o).contains("does not fit"), "{}", show(&o));
}

#[test]
fn a_bad_ring_or_stall_is_one_sentence_and_exit_2() {
    for (args, flag) in [
        (["--ring", "lots"], "--ring"),
        (["--stall", "forever"], "--stall"),
    ] {
        let o = record_refuses(&[args[0], args[1], "--count", "5"], 2);
        assert!(stderr(&o).contains(flag), "{}", show(&o));
    }
}

#[test]
fn an_unknown_strategy_names_the_choices_and_exits_2() {
    for (flag, expect) in [
        ("--alloc", "append"),
        ("--flush", "window"),
        ("--mode", "inline"),
    ] {
        let o = record_refuses(&[flag, "bogus", "--count", "5"], 2);
        let err = stderr(&o);
        assert!(
            err.contains("'bogus'") && err.contains(expect),
            "{flag}: {}",
            show(&o)
        );
    }
}

#[test]
fn a_back_end_setting_out_of_range_is_one_sentence_and_exit_2() {
    for (args, expect) in [
        (&["--io", "uring", "--io-depth", "0"][..], "queue depth"),
        (
            &["--io", "uring-buffered", "--io-depth", "65"][..],
            "queue depth",
        ),
        (
            &["--io", "direct", "--alloc", "append"][..],
            "direct I/O needs",
        ),
        (
            &["--io", "uring", "--io-block", "3000B"][..],
            "power of two",
        ),
    ] {
        let mut a = args.to_vec();
        a.extend(["--count", "5"]);
        let o = record_refuses(&a, 2);
        assert!(stderr(&o).contains(expect), "{args:?}: {}", show(&o));
    }
}

#[test]
fn a_missing_directory_is_one_sentence_and_exit_2() {
    let cwd = tempfile::tempdir().unwrap();
    let args = RecordArgs::into_dir("/nonexistent/x").set("--count", "5");
    let o = rtrec_in(cwd.path(), &args.words(), b"");
    assert_one_sentence(&o, 2);
    assert!(stderr(&o).contains("/nonexistent/x"), "{}", show(&o));
    assert!(!Path::new("/nonexistent").exists());
}

#[test]
fn a_file_given_as_directory_is_one_sentence_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("plain");
    std::fs::write(&file, b"not a directory").unwrap();
    let args = RecordArgs::into_dir(&file).set("--count", "5");
    let o = rtrec_in(tmp.path(), &args.words(), b"");
    assert_one_sentence(&o, 2);
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

/// A read-only tmpfs on a directory, unmounted when dropped.
struct ReadOnlyTmpfs(PathBuf);

impl ReadOnlyTmpfs {
    fn mount(at: &Path) -> ReadOnlyTmpfs {
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
            .arg(at)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount -t tmpfs -o ro: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        ReadOnlyTmpfs(at.to_path_buf())
    }
}

impl Drop for ReadOnlyTmpfs {
    fn drop(&mut self) {
        let o = Command::new("umount").arg(&self.0).output();
        if !o.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("umount {} failed: {o:?}", self.0.display());
        }
    }
}

#[test]
fn a_read_only_directory_is_one_sentence_and_exit_2() {
    // As root, mode 0555 does not stop writes: only a read-only mount does.
    if !require_privileged("a_read_only_directory_is_one_sentence_and_exit_2") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ro");
    std::fs::create_dir(&dir).unwrap();
    let _ro = ReadOnlyTmpfs::mount(&dir);
    for alloc in ["zero", "pool"] {
        let d = dir.to_str().unwrap();
        let args = RecordArgs::into_dir(d)
            .set("--count", "5")
            .set("--alloc", alloc);
        let o = rtrec_in(tmp.path(), &args.words(), b"");
        assert_one_sentence(&o, 2);
        assert!(stderr(&o).contains(d), "{alloc}: {}", show(&o));
        assert!(recordings(&dir).is_empty());
    }
}

#[test]
fn too_little_space_for_the_preallocation_is_found_before_the_first_record() {
    if !require_privileged(
        "too_little_space_for_the_preallocation_is_found_before_the_first_record",
    ) {
        return;
    }
    let fs = LoopFs::create(&LoopFsOptions {
        size: 64 << 20,
        journal_mib: 4,
        ..LoopFsOptions::default()
    })
    .unwrap();
    // Every allocation strategy: the reserving ones fail in fallocate(),
    // append checks the planned size against the free space.
    for alloc in ["pool", "zero", "fallocate", "fallocate-keep-size", "append"] {
        let dir = fs.path().join(alloc);
        std::fs::create_dir(&dir).unwrap();
        let args = RecordArgs::into_dir(&dir)
            .set("--period", "1ms")
            .set("--total", "200MiB")
            .set("--alloc", alloc);
        let o = rtrec_in(fs.path(), &args.words(), b"");
        assert_one_sentence(&o, 2);
        assert!(
            stderr(&o).contains("not enough space"),
            "{alloc}: {}",
            show(&o)
        );
        assert!(
            recordings(&dir).is_empty(),
            "{alloc}: {:?}",
            recordings(&dir)
        );
        assert!(
            temporaries(&dir).is_empty(),
            "{alloc}: {:?}",
            temporaries(&dir)
        );
    }
    fs.remove().unwrap();
}

/// `YYYYmmddTHHMMSSZ` for `secs` since the epoch: the engine's own naming rule.
fn utc_stamp(secs: i64) -> String {
    rtrec_engine::utc_stamp(secs as u64)
}

#[test]
fn the_file_name_stamp_matches_rtrec_for_known_dates() {
    assert_eq!(utc_stamp(0), "19700101T000000Z");
    assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
    assert_eq!(utc_stamp(1_795_299_322), "20261121T221522Z");
}

/// Which names of the first file get a symlink.
#[derive(Clone, Copy, Debug)]
enum Planted {
    FinalAndTemporary,
    TemporaryOnly,
    FinalOnly,
}

/// Plants symlinks to `target` at the names rtrec would give the first file
/// of a recording started in the next half minute (and the last two
/// seconds), runs a short recording with allocation strategy `alloc`, and
/// returns its output and the links.
fn record_among_symlinks(
    dir: &Path,
    target: &Path,
    which: Planted,
    alloc: &str,
) -> (Output, Vec<PathBuf>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut links = Vec::new();
    for s in now - 2..=now + 30 {
        let name = format!("rec-{}-0000.rtr", utc_stamp(s));
        let (final_name, tmp_name) = (dir.join(&name), dir.join(format!(".{name}.tmp")));
        let plant: &[&PathBuf] = match which {
            Planted::FinalAndTemporary => &[&final_name, &tmp_name],
            Planted::TemporaryOnly => &[&tmp_name],
            Planted::FinalOnly => &[&final_name],
        };
        for p in plant {
            symlink(target, p).unwrap();
            links.push(p.to_path_buf());
        }
    }
    let cwd = dir.parent().unwrap();
    let args = RecordArgs::short(dir, "1KiB", 3).set("--alloc", alloc);
    (rtrec_in(cwd, &args.words(), b""), links)
}

/// The links are still links to `target`, and rtrec either refused as bad
/// input (one sentence, exit 2: nothing was done yet) or recorded into a
/// regular file of another name.
fn assert_links_untouched_and_outcome_safe(
    o: &Output,
    dir: &Path,
    target: &Path,
    links: &[PathBuf],
) {
    for l in links {
        let m = std::fs::symlink_metadata(l).unwrap();
        assert!(m.file_type().is_symlink(), "{} was replaced", l.display());
        assert_eq!(std::fs::read_link(l).unwrap(), target);
    }
    if o.status.code() == Some(0) {
        let files = recordings(dir);
        let own: Vec<&PathBuf> = files.iter().filter(|p| !links.contains(p)).collect();
        assert_eq!(own.len(), 1, "{files:?}\n{}", show(o));
        assert!(std::fs::symlink_metadata(own[0])
            .unwrap()
            .file_type()
            .is_file());
        let v = rtrec(&["verify", own[0].to_str().unwrap()]);
        assert_eq!(v.status.code(), Some(0), "{}", show(&v));
    } else {
        assert_one_sentence(o, 2);
    }
}

/// The file pool (the default) names files by renaming a prepared slot;
/// `zero` prepares them under the hidden temporary name: both paths.
const NAMING_PATHS: [&str; 2] = ["pool", "zero"];

#[test]
fn a_symlink_at_the_file_name_to_an_existing_file_is_never_followed() {
    for alloc in NAMING_PATHS {
        for which in [
            Planted::FinalAndTemporary,
            Planted::TemporaryOnly,
            Planted::FinalOnly,
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("d");
            std::fs::create_dir(&dir).unwrap();
            let victim = tmp.path().join("victim");
            std::fs::write(&victim, b"precious").unwrap();
            let before = std::fs::metadata(&victim).unwrap();
            let (o, links) = record_among_symlinks(&dir, &victim, which, alloc);
            let after = std::fs::metadata(&victim).unwrap();
            let what = format!("{alloc} {which:?}");
            assert_eq!(
                std::fs::read(&victim).unwrap(),
                b"precious",
                "{what}: the victim was written\n{}",
                show(&o)
            );
            assert_eq!(
                (after.len(), after.modified().unwrap()),
                (before.len(), before.modified().unwrap()),
                "{what}"
            );
            assert_links_untouched_and_outcome_safe(&o, &dir, &victim, &links);
        }
    }
}

/// A dangling symlink is the dangerous case: following it would create its
/// target.
fn dangling_symlinks_are_never_followed(which: Planted) {
    for alloc in NAMING_PATHS {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let victim = tmp.path().join("victim-not-yet");
        let (o, links) = record_among_symlinks(&dir, &victim, which, alloc);
        let what = format!("{alloc} {which:?}");
        assert!(
            !victim.exists(),
            "{what}: rtrec created a file through a symlink\n{}",
            show(&o)
        );
        assert!(
            temporaries(&dir).iter().all(|t| links.contains(t)),
            "{what}: {:?}",
            temporaries(&dir)
        );
        assert_links_untouched_and_outcome_safe(&o, &dir, &victim, &links);
    }
}

#[test]
fn a_dangling_symlink_at_the_temporary_name_is_never_followed() {
    dangling_symlinks_are_never_followed(Planted::TemporaryOnly);
}

#[test]
fn a_dangling_symlink_at_the_final_name_is_skipped_or_refused_as_bad_input() {
    // Path::exists follows the link, so rtrec takes the name, prepares the
    // file, and then fails to rename it into place (RENAME_NOREPLACE):
    // safe, but exit 1 ("naming ...: File exists", or with the pool
    // "taking a pool file as ...: File exists") where an existing file at
    // the name makes rtrec pick another name.
    dangling_symlinks_are_never_followed(Planted::FinalOnly);
    dangling_symlinks_are_never_followed(Planted::FinalAndTemporary);
}

/// Records from stdin with `--size 16B --count 10`, given `input`.
fn record_stdin(input: &[u8]) -> (tempfile::TempDir, PathBuf, Output) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let args = RecordArgs::into_dir(&dir)
        .switch("--stdin")
        .set("--size", "16B")
        .set("--count", "10");
    let o = rtrec_in(tmp.path(), &args.words(), input);
    (tmp, dir, o)
}

fn verify_json(path: &Path) -> (Output, serde_json::Value) {
    let o = rtrec(&["verify", "--json", path.to_str().unwrap()]);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("verify --json: {e}\n{}", show(&o)));
    (o, v)
}

fn assert_aborted_with(dir: &Path, records: u64) {
    let (o, v) = verify_json(dir);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(v["files"][0]["status"], "aborted", "{v:#}");
    assert_eq!(v["records"], records, "{v:#}");
    assert_eq!(v["clean"], false);
    let text = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(text.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("ABORTED"),
        "{}",
        show(&text)
    );
}

#[test]
fn stdin_closing_after_whole_records_aborts_the_recording_with_exit_1() {
    let (_tmp, dir, o) = record_stdin(&[b'a'; 5 * 16]);
    assert_one_sentence(&o, 1);
    assert!(stderr(&o).contains("5 of 10"), "{}", show(&o));
    assert_aborted_with(&dir, 5);
}

#[test]
fn stdin_closing_in_the_middle_of_a_record_stores_the_piece_and_aborts_short_of_the_count() {
    // The 8 bytes read are never dropped: they are the shorter record 5.
    let (_tmp, dir, o) = record_stdin(&[b'a'; 5 * 16 + 8]);
    assert_one_sentence(&o, 1);
    assert!(stderr(&o).contains("6 of 10"), "{}", show(&o));
    assert_aborted_with(&dir, 6);
}

#[test]
fn an_unknown_option_exits_2_without_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let o = rtrec_in(tmp.path(), &["record", "--bogus"], b"");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(stderr(&o).contains("--bogus"), "{}", show(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", show(&o));
    assert!(!tmp.path().join("rtrec-data").exists());
}

#[test]
fn a_normal_recording_reports_every_json_key_and_verifies_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let args = RecordArgs::short(&dir, "1KiB", 50)
        .without("--quiet")
        .set("--json", "-");
    let o = rtrec_in(tmp.path(), &args.words(), b"");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // With --json -, stdout is the JSON document alone (the table goes to stderr).
    let s: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&o)));
    assert_eq!(s["records_written"], 50, "{s:#}");
    assert_eq!(s["records_dropped"], 0, "{s:#}");
    assert_eq!(s["bytes_written"], 50 * 1024, "{s:#}");
    assert!(s["missed_periods"].is_u64(), "{s:#}");
    // The auto ring: sized for the default stall, four times, at this rate.
    let ring = &s["ring"];
    assert_eq!(ring["auto"], true, "{s:#}");
    assert_eq!(ring["stall_source"], "default", "{s:#}");
    assert_eq!(ring["ring_bytes"], s["config"]["ring_bytes"], "{s:#}");
    let stall_s = ring["stall_ns"].as_f64().unwrap() / 1e9;
    assert!(
        ring["covers_stall_s"].as_f64().unwrap() >= 4.0 * stall_s,
        "{s:#}"
    );
    assert!(
        stderr(&o).contains("ring ") && stderr(&o).contains("(auto: "),
        "{}",
        show(&o)
    );
    for key in ["write_ns", "record_ns", "lateness_ns"] {
        for stat in ["min", "mean", "p50", "p99", "p999", "max"] {
            assert!(s[key][stat].is_number(), "{key}.{stat} missing: {s:#}");
        }
        assert!(
            s[key]["min"].as_f64() <= s[key]["max"].as_f64(),
            "{key}: {s:#}"
        );
    }

    let (v, report) = verify_json(&dir);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
    assert_eq!(report["records"], 50, "{report:#}");
    assert_eq!(report["clean"], true, "{report:#}");
    assert_eq!(report["files"][0]["status"], "complete", "{report:#}");
}

#[test]
fn verify_of_a_nonexistent_path_is_one_sentence_and_exit_2() {
    let o = rtrec(&["verify", "/nonexistent/recording.rtr"]);
    assert_one_sentence(&o, 2);
}

#[test]
fn verify_of_a_directory_without_recordings_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let o = rtrec(&["verify", tmp.path().to_str().unwrap()]);
    assert_one_sentence(&o, 2);
}

#[test]
fn verify_calls_a_file_with_one_flipped_byte_in_the_middle_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let args = RecordArgs::short(&dir, "1KiB", 50);
    let o = rtrec_in(tmp.path(), &args.words(), b"");
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let file = recordings(&dir).pop().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&file, &bytes).unwrap();
    let (v, report) = verify_json(&file);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert_eq!(report["files"][0]["status"], "corrupt", "{report:#}");
    assert_eq!(report["clean"], false);
}
