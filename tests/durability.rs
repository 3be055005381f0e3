//! The durability contract (`docs/durability.md`) on real ext4 loop images:
//!
//! - a full disk, inside a file (append mode) and at a file switch (every
//!   allocation mode, both write paths), ends the recording honestly: exit
//!   1 with one sentence, the summary and the last end frame agree on every
//!   counter, every dropped record is stored as a loss, `verify` says
//!   aborted and not clean, and the printed summary's lines, the failure's
//!   sentence, the JSON and `verify` tell the same counts
//!   (docs/summary.md's definitions); so do they after Ctrl-C;
//! - ring mode killed with SIGKILL keeps every record `--status` counted as
//!   written before the kill, and `verify` finds at least what the last
//!   status counted written and durable;
//! - power cuts: the ext4 image lives on a loop-mounted XFS and is
//!   snapshotted atomically with `cp --reflink=always` while recording
//!   (pool, zero and append with buffered writes; pool with O_DIRECT;
//!   zero with io_uring, append with io_uring over the page cache, 4 writes
//!   in flight); each snapshot is repaired with `e2fsck -fy` and its files are read out with `debugfs rdump` (read-only, no mount
//!   and no loop device needed for the copies); after `rtrec recover`,
//!   every record before the durable point `--status` reported just before
//!   the snapshot must be there, every record the reader accepts must hold
//!   the right bytes, no recording may be hidden, and the recording is
//!   closed ("interrupted, closed by recover": `verify` exits 0).
//!
//! Needs root and loop devices (all but the Ctrl-C test); skipped (with the reason) otherwise, and
//! failed instead under `RTREC_REQUIRE_PRIVILEGED=1`.

mod common;
use common::show;
use common::Rng;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rtrec_engine::format::{FileHeader, FrameKind, LossPayload};
use rtrec_engine::reader::walk_frames;
use rtrec_host::features;
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};
use rtrec_host::tools;
use serde_json::Value;

const MIB: u64 = 1 << 20;

fn rtrec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
}

/// An ext4 of `mib` MiB with a journal of `journal_mib`, in `parent` (the
/// temporary directory when `None`).
fn ext4(mib: u64, journal_mib: u32, parent: Option<&Path>) -> LoopFs {
    LoopFs::create(&LoopFsOptions {
        size: mib * MIB,
        journal_mib,
        parent: parent.map(Path::to_path_buf),
        ..LoopFsOptions::default()
    })
    .unwrap()
}

/// A small ext4 (64 MiB, 4 MiB journal) to fill up, and the recording
/// directory `rec` in it.
fn small_fs() -> (LoopFs, PathBuf) {
    let fs = ext4(64, 4, None);
    let dir = fs.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    (fs, dir)
}

/// A directory outside the file systems under test, with the paths of the
/// summary and the status in it.
fn outside() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let state = tempfile::tempdir().unwrap();
    let (json, status) = (
        state.path().join("summary.json"),
        state.path().join("status.json"),
    );
    (state, json, status)
}

/// Starts `rtrec record ARGS --quiet --dir DIR --status STATUS`.
fn start(args: &[&str], dir: &Path, status: &Path) -> Child {
    rtrec()
        .arg("record")
        .args(args)
        .args(["--quiet", "--dir"])
        .arg(dir)
        .arg("--status")
        .arg(status)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `rtrec verify --json PATH`: exit code and report.
fn verify(path: &Path) -> (i32, Value) {
    let o = rtrec()
        .args(["verify", "--json"])
        .arg(path)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", show(&o)));
    (o.status.code().unwrap_or(-1), v)
}

/// [`verify`], or `None` when `path` holds no recording yet: a power cut
/// before the first file's name reached the disk (after the pool's), where
/// verify says so in a sentence and exits 2 (nothing was promised then).
fn verify_if_any(path: &Path) -> Option<(i32, Value)> {
    let o = rtrec()
        .args(["verify", "--json"])
        .arg(path)
        .output()
        .unwrap();
    if o.status.code() == Some(2)
        && String::from_utf8_lossy(&o.stderr).contains("holds no recordings")
    {
        return None;
    }
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", show(&o)));
    Some((o.status.code().unwrap_or(-1), v))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

/// The live status `--status` keeps, when it can be read.
fn status(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Waits until the status says `key` reached `at_least` (or the recorder
/// ended); returns the last status.
fn wait_status(child: &mut Child, path: &Path, key: &str, at_least: u64) -> Value {
    let t0 = Instant::now();
    loop {
        if let Some(s) = status(path) {
            if s[key].as_u64().unwrap_or(0) >= at_least || s["done"] == true {
                return s;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the recorder ended early"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What every recording ended by a write error must show: exit 1 with a
/// sentence, an aborted summary whose counters add up and match the last
/// end frame, every drop stored as a loss, and a verify that says so.
fn check_aborted(what: &str, dir: &Path, o: &Output, summary: &Value) {
    assert_eq!(o.status.code(), Some(1), "{what}: {}", show(o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("the recording failed") && stderr.lines().count() <= 2,
        "{what}: {stderr}"
    );
    assert_eq!(summary["complete"], false, "{what}");
    assert_eq!(summary["error"]["kind"], "no-space", "{what}: {summary}");
    let (offered, written, dropped) = (
        u(summary, "records_offered"),
        u(summary, "records_written"),
        u(summary, "records_dropped"),
    );
    assert!(dropped > 0, "{what}: nothing dropped");
    assert_eq!(offered, written + dropped, "{what}: {summary}");
    assert_eq!(u(summary, "losses_stored"), dropped, "{what}");
    assert_eq!(u(summary, "durable_seq"), offered, "{what}");

    let (code, report) = verify(dir);
    assert_eq!(code, 1, "{what}: verify accepted an aborted recording");
    assert_eq!(report["clean"], false, "{what}");
    let files = report["files"].as_array().unwrap();
    let last = files
        .iter()
        .max_by_key(|f| f["index"].as_u64())
        .unwrap_or_else(|| panic!("{what}: no file"));
    assert_eq!(last["status"], "aborted", "{what}: {last}");
    for f in files {
        assert_ne!(f["status"], "corrupt", "{what}: {f}");
    }
    // The file and the summary agree on every counter.
    let stored = &last["stored"];
    assert_eq!(u(stored, "records_written"), written, "{what}");
    assert_eq!(u(stored, "records_dropped"), dropped, "{what}");
    assert_eq!(
        u(stored, "bytes_written"),
        u(summary, "bytes_written"),
        "{what}"
    );
    assert_eq!(u(&report, "records"), written, "{what}");
    assert_eq!(u(&report, "lost_records"), dropped, "{what}");
    assert_eq!(u(&report, "missing_records"), 0, "{what}");
}

/// The integers of `line`, in order.
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// The line of `text` that starts with `prefix`.
fn line_of<'a>(what: &str, text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("{what}: no '{prefix}' line in: {text}"))
}

/// Every count the printed summary shows agrees with the JSON and with
/// `verify` (the definitions are docs/summary.md's): offered = written +
/// dropped, queued, durable, and verify's records and lost records.
fn check_counts_agree(what: &str, text: &str, summary: &Value, report: &Value) {
    let (offered, queued, written, dropped, durable) = (
        u(summary, "records_offered"),
        u(summary, "records_queued"),
        u(summary, "records_written"),
        u(summary, "records_dropped"),
        u(summary, "durable_seq"),
    );
    assert_eq!(offered, written + dropped, "{what}: {summary}");
    let records = numbers(line_of(what, text, "records: "));
    assert_eq!(
        records[..4],
        [offered, written, dropped, queued],
        "{what}: {text}"
    );
    if queued > written {
        assert_eq!(records[4], queued - written, "{what}: {text}");
    }
    let durable_line = numbers(line_of(what, text, "durable: "));
    assert_eq!(durable_line[0], durable, "{what}: {text}");
    let dropped_line = numbers(line_of(what, text, "dropped "));
    assert_eq!(dropped_line[0], dropped, "{what}: {text}");
    assert_eq!(
        numbers(line_of(what, text, "recorded "))[0],
        written,
        "{what}"
    );
    assert_eq!(u(report, "records"), written, "{what}: {report}");
    assert_eq!(u(report, "lost_records"), dropped, "{what}: {report}");
}

#[test]
fn a_full_disk_at_a_file_switch_ends_the_recording_honestly_in_every_allocation_mode() {
    if !require_privileged(
        "a_full_disk_at_a_file_switch_ends_the_recording_honestly_in_every_allocation_mode",
    ) {
        return;
    }
    let allocs = ["append", "fallocate", "fallocate-keep-size", "zero", "pool"];
    // Every allocation mode with both write paths and buffered write(); the
    // io_uring back-ends (4 writes in flight) with an allocation each takes.
    let runs = allocs
        .iter()
        .flat_map(|&a| [(a, "ring", "buffered"), (a, "inline", "buffered")])
        .chain([
            ("fallocate", "ring", "uring"),
            ("pool", "inline", "uring"),
            ("append", "ring", "uring-buffered"),
        ]);
    {
        for (alloc, mode, io) in runs {
            let what = format!("{mode} {alloc} {io}");
            let (fs, dir) = small_fs();
            if !features::require_io(
                "a_full_disk_at_a_file_switch_ends_the_recording_honestly_in_every_allocation_mode",
                io,
                &dir,
            ) {
                continue;
            }
            let (_state, json, _) = outside();
            // 4 MiB files on a 64 MiB file system: a file switch finds no
            // room long before 256 MiB are recorded (64 MB/s: the writer
            // keeps up, so the disk fills rather than the ring).
            let o = rtrec()
                .args(["record", "--mode", mode, "--alloc", alloc, "--io", io])
                .args(["--io-depth", "4", "--io-block", "256KiB"])
                .args(["--period", "1ms", "--size", "64KiB", "--total", "256MiB"])
                .args(["--file-size", "4MiB", "--pool-files", "1", "--no-refill"])
                .args(["--ring", "32MiB", "--dir"])
                .arg(&dir)
                .arg("--json")
                .arg(&json)
                .output()
                .unwrap();
            let summary: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
                .unwrap_or_else(|_| panic!("{what}: {}", show(&o)));
            check_aborted(&what, &dir, &o, &summary);
            // The printed summary, the failure's sentence, the JSON and
            // verify tell the same counts.
            let text = String::from_utf8_lossy(&o.stdout);
            check_counts_agree(&what, &text, &summary, &verify(&dir).1);
            let err = String::from_utf8_lossy(&o.stderr);
            let said = numbers(line_of(&what, &err, "rtrec: the recording failed"));
            let tail = &said[said.len() - 3..];
            assert_eq!(
                tail,
                [
                    u(&summary, "records_written"),
                    u(&summary, "records_offered"),
                    u(&summary, "records_dropped")
                ],
                "{what}: {err}"
            );
            assert!(
                summary["files"].as_array().unwrap().len() > 1,
                "{what}: {summary}"
            );
            fs.remove().unwrap();
        }
    }
}

/// Fills the file system of `dir` completely (as root: reserved blocks
/// too) with one file; returns it.
fn fill_up(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    for chunk in [1 << 20, 64 << 10, 4 << 10] {
        let zeros = vec![0u8; chunk];
        while f.write_all(&zeros).is_ok() {}
    }
    let _ = f.sync_all();
    path
}

#[test]
fn a_full_disk_inside_an_appended_file_ends_the_recording_honestly() {
    if !require_privileged("a_full_disk_inside_an_appended_file_ends_the_recording_honestly") {
        return;
    }
    // io_uring over the page cache: the full disk shows in a completion
    // (with writes in flight), not in the call that submitted it.
    for (mode, io) in [
        ("ring", "buffered"),
        ("inline", "buffered"),
        ("ring", "uring-buffered"),
        ("inline", "uring-buffered"),
    ] {
        let what = format!("{mode} append {io}, disk filled while recording");
        let (fs, dir) = small_fs();
        if !features::require_io(
            "a_full_disk_inside_an_appended_file_ends_the_recording_honestly",
            io,
            &dir,
        ) {
            continue;
        }
        // The summary and status go outside the file system being filled.
        let (_state, json, status_path) = outside();
        let json_arg = json.to_str().unwrap();
        let mut child = start(
            &[
                "--mode",
                mode,
                "--io",
                io,
                "--alloc",
                "append",
                "--period",
                "1ms",
                "--size",
                "16KiB",
                "--count",
                "100000",
                "--file-size",
                "24MiB",
                "--json",
                json_arg,
            ],
            &dir,
            &status_path,
        );
        wait_status(&mut child, &status_path, "records_written", 100);
        let filler = fill_up(fs.path());
        let o = child.wait_with_output().unwrap();
        let summary: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
            .unwrap_or_else(|_| panic!("{what}: {}", show(&o)));
        check_aborted(&what, &dir, &o, &summary);
        // One file: the loss and the end frame went into the space the
        // reserve file gave back; the reserve itself is gone.
        assert_eq!(summary["files"].as_array().unwrap().len(), 1, "{what}");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{what}: left behind: {left:?}");
        std::fs::remove_file(filler).unwrap();
        fs.remove().unwrap();
    }
}

#[test]
fn a_full_disk_ends_only_the_flight_recorders_current_event() {
    if !require_privileged("a_full_disk_ends_only_the_flight_recorders_current_event") {
        return;
    }
    let (fs, dir) = small_fs();
    let (_state, json, status_path) = outside();
    let mut child = start(
        &[
            "--alloc",
            "append",
            "--period",
            "1ms",
            "--size",
            "4KiB",
            "--count",
            "6000",
            "--file-size",
            "2MiB",
            "--pre",
            "100ms",
            "--post",
            "100ms",
            "--trigger-every",
            "300ms",
            "--json",
            json.to_str().unwrap(),
        ],
        &dir,
        &status_path,
    );
    wait_status(&mut child, &status_path, "events", 2);
    let filler = fill_up(fs.path());
    std::thread::sleep(Duration::from_millis(800));
    std::fs::remove_file(&filler).unwrap();
    // Events that start from now on find room again.
    let after = u(&status(&status_path).unwrap(), "events");
    let o = child.wait_with_output().unwrap();
    let summary: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
        .unwrap_or_else(|_| panic!("{}", show(&o)));
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!(summary["error"]["kind"], "no-space", "{summary}");
    assert_eq!(summary["complete"], false);
    let (_, report) = verify(&dir);
    let files = report["files"].as_array().unwrap();
    let event_of = |f: &Value| -> u64 {
        let name = f["path"].as_str().unwrap();
        let at = name.rfind("-ev").unwrap() + 3;
        name[at..at + 5].parse().unwrap()
    };
    for f in files {
        assert_ne!(f["status"], "corrupt", "{f}");
    }
    assert!(
        files
            .iter()
            .any(|f| f["status"] == "complete" && event_of(f) > after),
        "no event after the disk had room again was recorded: {report}"
    );
    fs.remove().unwrap();
}

/// What the frames of the `.rtr` files in `dir` hold, read with the
/// engine's chained walk (what verify and export accept as the intact
/// prefix): data sequence numbers, records lost (stored), and records whose
/// bytes are not what `rtrec record`'s synthetic source wrote.
#[derive(Default, Debug)]
struct Content {
    seqs: BTreeSet<u64>,
    lost: BTreeSet<u64>,
    wrong: u64,
    files: usize,
}

fn read_content(dir: &Path, size: usize) -> Content {
    let mut c = Content::default();
    // A directory the snapshot does not hold holds no recording.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return c;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("rtr") {
            continue;
        }
        c.files += 1;
        let bytes = std::fs::read(&p).unwrap();
        let Ok(header) = FileHeader::decode(&bytes) else {
            continue;
        };
        walk_frames(&bytes, &header, |_, h, payload| match h.kind {
            FrameKind::Data => {
                let ok = payload.len() == size
                    && payload[..8] == h.seq.to_le_bytes()
                    && payload
                        .iter()
                        .enumerate()
                        .skip(8)
                        .all(|(i, &b)| b == (i % 251) as u8);
                if ok {
                    c.seqs.insert(h.seq);
                } else {
                    c.wrong += 1;
                }
            }
            FrameKind::Loss => {
                if let Some(l) = LossPayload::decode(payload) {
                    c.lost.extend(l.first_seq..l.first_seq + l.count);
                }
            }
            _ => {}
        });
    }
    c
}

#[test]
fn ring_mode_killed_keeps_every_record_counted_as_written() {
    if !require_privileged("ring_mode_killed_keeps_every_record_counted_as_written") {
        return;
    }
    let fs = ext4(256, 8, None);
    let state = tempfile::tempdir().unwrap();
    let mut rng = Rng::from_env("RTREC_DURABILITY_SEED");
    for round in 0..8 {
        let dir = fs.path().join(format!("kill-{round}"));
        std::fs::create_dir(&dir).unwrap();
        let status_path = state.path().join(format!("status-{round}.json"));
        // Rounds take turns with the back-ends: "written" means the same
        // with each.
        let io = ["buffered", "direct", "uring", "uring-buffered"][round % 4];
        if !features::require_io(
            "ring_mode_killed_keeps_every_record_counted_as_written",
            io,
            &dir,
        ) {
            continue;
        }
        let mut child = start(
            &[
                "--io",
                io,
                "--mode",
                "ring",
                "--alloc",
                "pool",
                "--period",
                "500us",
                "--size",
                "4KiB",
                "--count",
                "1000000",
                "--file-size",
                "2MiB",
            ],
            &dir,
            &status_path,
        );
        wait_status(&mut child, &status_path, "records_written", 1);
        std::thread::sleep(Duration::from_millis(100 + rng.below(1200)));
        let s = status(&status_path).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let written = u(&s, "written_seq");
        assert!(written > 0, "round {round}: {s}");
        let c = read_content(&dir, 4096);
        assert_eq!(c.wrong, 0, "round {round}");
        let missing: Vec<u64> = (0..written)
            .filter(|q| !c.seqs.contains(q) && !c.lost.contains(q))
            .take(5)
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: records counted as written before the kill are missing: {missing:?} (written_seq {written}, {} found)",
            c.seqs.len()
        );
        let (code, report) = verify(&dir);
        assert_eq!(code, 1, "round {round}: a killed recording verified clean");
        // The last status before the kill and verify after it agree: what
        // was counted written (or durable, as data or loss) is found.
        assert!(
            u(&report, "records") >= u(&s, "records_written"),
            "round {round}: status {s}, verify {report}"
        );
        assert!(
            u(&report, "records") + u(&report, "lost_records") >= u(&s, "durable_seq"),
            "round {round}: status {s}, verify {report}"
        );
        for f in report["files"].as_array().unwrap() {
            assert_ne!(f["status"], "corrupt", "round {round}: {f}");
        }
    }
    fs.remove().unwrap();
}

fn run_ok(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", show(&o));
    o
}

/// One snapshot: where it is, the directory (named for the allocation
/// mode and back-end) recording, and the status read just before it was
/// taken.
struct Snapshot {
    image: PathBuf,
    name: String,
    status: Value,
}

#[test]
fn power_cuts_lose_nothing_before_the_durable_point_and_hide_no_recording() {
    let name = "power_cuts_lose_nothing_before_the_durable_point_and_hide_no_recording";
    if !require_privileged(name)
        || !tools::require(name, &[tools::MKFS_XFS, tools::E2FSCK, tools::DEBUGFS])
    {
        return;
    }
    // XFS under the ext4 image: `cp --reflink=always` freezes the image in
    // one step, as a power cut would (writes the loop device had not
    // submitted are not in it).
    let xfs = LoopFs::create(&LoopFsOptions {
        size: 2048 * MIB,
        mount_options: "noatime".into(),
        xfs: true,
        ..LoopFsOptions::default()
    })
    .unwrap();
    let ext4 = ext4(256, 8, Some(xfs.path()));
    let state = tempfile::tempdir().unwrap();
    let mut rng = Rng::from_env("RTREC_DURABILITY_SEED");
    const ROUNDS: usize = 6;
    const SIZE: usize = 4096;
    let mut snaps = Vec::new();
    // The runs whose back-end this machine has (the others skip, named).
    let mut ran = 0;
    // Buffered write() with each allocation mode; O_DIRECT with pool files;
    // io_uring with 4 writes in flight, direct (zeroed files) and over the
    // page cache (appending): a durable point waits for every write before
    // it to complete.
    let runs = [
        ("pool", "buffered"),
        ("zero", "buffered"),
        ("append", "buffered"),
        ("pool", "direct"),
        ("zero", "uring"),
        ("append", "uring-buffered"),
    ];
    for (alloc, io) in runs {
        let name = format!("{alloc}-{io}");
        let dir = ext4.path().join(&name);
        std::fs::create_dir(&dir).unwrap();
        if !features::require_io(
            "power_cuts_lose_nothing_before_the_durable_point_and_hide_no_recording",
            io,
            &dir,
        ) {
            continue;
        }
        ran += 1;
        let status_path = state.path().join(format!("status-{name}.json"));
        // 1 MiB files fill in about a second: snapshots fall before, in and
        // after file switches.
        let mut child = start(
            &[
                "--mode",
                "ring",
                "--alloc",
                alloc,
                "--io",
                io,
                "--io-depth",
                "4",
                "--io-block",
                "64KiB",
                "--period",
                "1ms",
                "--size",
                "4KiB",
                "--count",
                "1000000",
                "--file-size",
                "1MiB",
                "--pool-files",
                "3",
                "--refill-while-recording",
                "--sync-every",
                "200ms",
            ],
            &dir,
            &status_path,
        );
        wait_status(&mut child, &status_path, "records_written", 1);
        for round in 0..ROUNDS {
            std::thread::sleep(Duration::from_millis(rng.below(700)));
            let status = status(&status_path).unwrap();
            let image = xfs.path().join(format!("snap-{name}-{round}.img"));
            run_ok(
                Command::new("cp")
                    .arg("--reflink=always")
                    .arg(ext4.image())
                    .arg(&image),
            );
            snaps.push(Snapshot {
                image,
                name: name.clone(),
                status,
            });
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    let (mut lost_beyond, mut hidden, mut in_pool, mut wrong) = (0u64, 0u64, 0u64, 0u64);
    let mut durable_records = 0u64;
    for (k, s) in snaps.iter().enumerate() {
        let what = format!("snapshot {k} ({}, status {})", s.name, s.status);
        // Repair as after a power cut (exit 0 or 1: clean or repaired).
        let o = Command::new("e2fsck")
            .args(["-f", "-y"])
            .arg(&s.image)
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{what}: {}",
            show(&o)
        );
        let out = state.path().join(format!("out-{k}"));
        std::fs::create_dir(&out).unwrap();
        run_ok(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("rdump /{} {}", s.name, out.display()))
                .arg(&s.image),
        );
        let dir = out.join(&s.name);
        // A recording a power cut left in the pool is named by verify and
        // moved back by recover; every interrupted recording is closed by
        // it.
        if dir.join(".pool/pool.json").is_file() {
            if let Some((_, report)) = verify_if_any(&dir) {
                in_pool += report["unfinished_in_pool"]
                    .as_array()
                    .map_or(0, |v| v.len() as u64);
            }
        }
        if dir.is_dir() {
            run_ok(rtrec().arg("recover").arg(&dir));
            if let Some((_, report)) = verify_if_any(&dir) {
                assert!(report.get("unfinished_in_pool").is_none(), "{what}");
            }
        }
        let durable = u(&s.status, "durable_seq");
        durable_records += durable;
        let c = read_content(&dir, SIZE);
        wrong += c.wrong;
        if durable > 0 && c.files == 0 {
            eprintln!("{what}: no recording file, but records were durable");
            hidden += 1;
        }
        let missing = (0..durable)
            .filter(|q| !c.seqs.contains(q) && !c.lost.contains(q))
            .count() as u64;
        if missing > 0 {
            eprintln!("{what}: {missing} records before the durable point missing");
        }
        lost_beyond += missing;
        // Before the first durable point the file may not be there yet
        // (nothing was promised): verify then finds no recording at all.
        // Otherwise recover closed it: interrupted, closed by recover, and
        // clean.
        if c.files > 0 {
            let (code, report) = verify(&dir);
            assert_eq!(code, 0, "{what}: after recover: {report:#}");
            let last = report["files"].as_array().unwrap().last().unwrap();
            assert_eq!(last["status"], "interrupted", "{what}: {report:#}");
        }
        std::fs::remove_file(&s.image).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }
    eprintln!(
        "power cuts: {} rounds, {durable_records} records before durable points, {lost_beyond} of them lost, {hidden} hidden recordings, {in_pool} recordings found in the pool and recovered, {wrong} records with wrong bytes accepted",
        snaps.len()
    );
    // At least 20 snapshots over the 6 runs, in proportion where a run's
    // back-end was skipped.
    assert!(
        ran > 0 && snaps.len() >= 20 * ran / runs.len(),
        "{} of {ran}",
        snaps.len()
    );
    assert_eq!(lost_beyond, 0, "records before the durable point were lost");
    assert_eq!(hidden, 0, "a recording with durable records was not found");
    assert_eq!(wrong, 0, "records with wrong bytes were accepted");
    ext4.remove().unwrap();
    xfs.remove().unwrap();
}

#[test]
fn verify_names_a_recording_left_in_the_pool_and_recover_moves_it_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = rtrec()
        .args([
            "record", "--period", "1ms", "--size", "1KiB", "--count", "50",
        ])
        .args(["--file-size", "1MiB", "--quiet", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // A power cut after the header of a taken slot reached storage but
    // before its rename did: the recording is still named as a slot.
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "rtr"))
        .unwrap();
    let slot = dir.join(".pool/slot-00000000000000000001-1.rtp");
    std::fs::rename(&file, &slot).unwrap();

    let o = rtrec().arg("verify").arg(dir).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(
        text.contains("UNFINISHED RECORDING IN THE POOL") && text.contains("rtrec recover"),
        "{text}"
    );
    let o = rtrec().arg("recover").arg(dir).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("moved back"));
    let (code, report) = verify(dir);
    assert_eq!(code, 0, "{report}");
    assert_eq!(u(&report, "records"), 50);
    assert!(!slot.exists());
}

#[test]
fn after_ctrl_c_the_summary_lines_the_json_and_verify_tell_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (_state, json, status_path) = outside();
    let mut child = rtrec()
        .args([
            "record", "--period", "1ms", "--size", "4KiB", "--count", "100000",
        ])
        .args(["--file-size", "1MiB", "--dir"])
        .arg(dir.path())
        .arg("--status")
        .arg(&status_path)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_status(&mut child, &status_path, "records_written", 300);
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", show(&o));
    let summary: Value = serde_json::from_slice(&std::fs::read(&json).unwrap())
        .unwrap_or_else(|_| panic!("{}", show(&o)));
    // Stopped, not failed: the files closed cleanly, every offered record
    // is durable as data or as its loss.
    assert_eq!(u(&summary, "durable_seq"), u(&summary, "records_offered"));
    let text = String::from_utf8_lossy(&o.stdout);
    check_counts_agree("Ctrl-C", &text, &summary, &verify(dir.path()).1);
}
