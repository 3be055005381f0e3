//! What a kill leaves of a loop recording and its pool, made exactly (the
//! states tests/soak.rs meets at random), and what the next recording and
//! `rtrec recover` do with it (docs/unattended.md, docs/durability.md):
//!
//! - the budget is the directory's: a second loop recording retires the
//!   first one's files before its own, counted apart;
//! - a file before the last whose header still says `OPEN` over the
//!   writer's end frame gets its header finished;
//! - a loop file after the first that holds nothing (not even its
//!   `retired` claim) is closed with the claim the writer was about to
//!   write, and `verify` accepts it;
//! - a pool slot stranded under a recording's name goes back into the
//!   pool; a killed refill's `.slot-*.tmp` is removed;
//! - a recording whose last file says it continues in a file a power cut
//!   lost (its name was not yet durable) is closed by rewriting that end
//!   frame as recover's, its header finished if it still said `OPEN`.
//!
//! No root needed: a temporary directory on any file system.

mod common;
use common::{rtrec, show};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rtrec_engine::format::{FileHeader, FLAG_OPEN, FLAG_SLOT, HEADER_LEN};
use serde_json::Value;

/// A loop recording of `n` records of 4 KiB from stdin into `dir`, files
/// of 256 KiB, the newest `keep` kept; its `--json` summary.
fn loop_record(dir: &Path, n: usize, keep: u32) -> Value {
    let json = dir.with_extension("json");
    let data: Vec<u8> = (0..n * 4096).map(|i| (i % 251) as u8).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--size", "4KiB", "--quiet"])
        .args(["--file-size", "256KiB", "--keep-files", &keep.to_string()])
        .arg("--dir")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

/// The recording files of `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rtr"))
        .collect();
    v.sort();
    v
}

fn header(p: &Path) -> FileHeader {
    FileHeader::decode(&std::fs::read(p).unwrap()).unwrap()
}

fn write_header(p: &Path, h: &FileHeader) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
    f.write_all_at(&h.encode(), 0).unwrap();
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn verify_ok(dir: &Path) {
    let o = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
}

#[test]
fn a_second_loop_recording_retires_the_first_ones_files_for_the_directorys_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let first = loop_record(&dir, 400, 2);
    let kept: Vec<PathBuf> = files(&dir);
    assert_eq!(kept.len(), 3, "2 finished + the last: {kept:?}");
    assert_eq!(first["retired_earlier_files"], 0);
    // A second recording of the same budget: 3 of its own files' worth
    // at its end, so the first one's leave, oldest first, counted apart.
    let second = loop_record(&dir, 400, 2);
    assert_eq!(second["retired_earlier_files"], 3, "{second}");
    assert!(second["retired_earlier_bytes"].as_u64().unwrap() > 0);
    let now = files(&dir);
    assert!(kept.iter().all(|p| !p.exists()), "{now:?}");
    assert_eq!(now.len(), 3, "{now:?}");
    verify_ok(&dir);
}

#[test]
fn a_recording_a_power_cut_or_kill_left_is_not_counted_until_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    loop_record(&dir, 400, 2);
    // The first recording's last file still says OPEN (interrupted, not
    // yet recovered): the whole recording is recover's, not the loop's.
    let last = files(&dir).pop().unwrap();
    let h = header(&last);
    write_header(
        &last,
        &FileHeader {
            flags: h.flags | FLAG_OPEN,
            ..h.clone()
        },
    );
    let second = loop_record(&dir, 400, 2);
    assert_eq!(second["retired_earlier_files"], 0, "{second}");
    assert!(last.exists());
    // `recover` finishes that last header over its end frame (the close's
    // second step), and the next loop counts the recording and retires
    // it (issue 44: left open, such recordings were never retired).
    let o = rtrec(&["recover", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o).contains(&format!("finished the header of '{}'", last.display())),
        "{}",
        show(&o)
    );
    assert_eq!(header(&last), h);
    verify_ok(&dir);
    let third = loop_record(&dir, 400, 2);
    assert!(
        third["retired_earlier_files"].as_u64().unwrap() > 0,
        "{third}"
    );
    assert!(!last.exists());
}

#[test]
fn recover_finishes_the_header_a_kill_left_open_over_the_writers_end_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    loop_record(&dir, 400, 2);
    let middle = files(&dir)[1].clone();
    let done = header(&middle);
    // The writer's close at a switch: end frame, fdatasync, then the
    // header. Killed between the two: OPEN, the mark where it was.
    write_header(
        &middle,
        &FileHeader {
            flags: done.flags | FLAG_OPEN,
            ..done.clone()
        },
    );
    let o = rtrec(&["recover", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o).contains(&format!("finished the header of '{}'", middle.display())),
        "{}",
        show(&o)
    );
    assert_eq!(header(&middle), done);
    verify_ok(&dir);
    // Nothing left to do.
    let o = rtrec(&["recover", dir.to_str().unwrap()]);
    assert!(text(&o).contains("nothing to recover"), "{}", show(&o));
}

#[test]
fn recover_writes_the_retired_claim_a_kill_kept_from_a_loops_new_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    // Three files: the last switch retired nothing. (A kill before the
    // new file's RETIRED frame comes before the files that frame retires
    // are handed over, so they are all still there; a recording whose
    // later switch did retire a file cannot show that state any more.)
    loop_record(&dir, 150, 2);
    let fs = files(&dir);
    assert_eq!(fs.len(), 3, "{fs:?}");
    let (before, last) = (&fs[1], &fs[2]);
    // The new file named, its header on storage, nothing after it: no
    // `retired` frame yet. The file before is closed, continued.
    let h = header(last);
    let open = FileHeader {
        flags: h.flags | FLAG_OPEN,
        valid_len: HEADER_LEN as u64,
        ..h
    };
    let f = std::fs::OpenOptions::new().write(true).open(last).unwrap();
    f.set_len(HEADER_LEN as u64).unwrap();
    f.set_len(256 << 10).unwrap();
    drop(f);
    write_header(last, &open);
    let o = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    let o = rtrec(&["recover", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o).contains("closed the interrupted recording"),
        "{}",
        show(&o)
    );
    let o = rtrec(&["verify", "--json", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Its claim is the file before's.
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let claim = |p: &Path| {
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str() == p.to_str())
            .map(|f| f["retired_claim"].clone())
            .unwrap()
    };
    assert!(!claim(last).is_null(), "{v}");
    assert_eq!(claim(last), claim(before));
}

#[test]
fn recover_returns_a_stranded_slot_to_the_pool_and_removes_a_killed_refills_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let o = rtrec(&[
        "pool",
        "prepare",
        "--dir",
        d,
        "--file-size",
        "256KiB",
        "--files",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let pool = dir.join(".pool");
    let slots = |_: ()| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&pool)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rtp"))
            .collect();
        v.sort();
        v
    };
    let before = slots(()).len();
    assert_eq!(before, 2);
    // A retired file caught between its slot header and its rename: a
    // slot under a recording's name. And a refill caught mid-way.
    let stranded = dir.join("rec-20260101T000000.000Z-0003.rtr");
    std::fs::rename(&slots(())[0], &stranded).unwrap();
    assert_ne!(header(&stranded).flags & FLAG_SLOT, 0);
    let tmp_slot = pool.join(".slot-00000000000000000001-1-1.rtp.tmp");
    std::fs::write(&tmp_slot, vec![0u8; 8192]).unwrap();
    let o = rtrec(&["recover", d]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o).contains(&format!("put '{}' back into the pool", stranded.display())),
        "{}",
        show(&o)
    );
    assert!(
        text(&o).contains(&format!("removed '{}'", tmp_slot.display())),
        "{}",
        show(&o)
    );
    assert!(!stranded.exists() && !tmp_slot.exists());
    assert_eq!(slots(()).len(), before);
    assert!(files(&dir).is_empty());
}

#[test]
fn recover_closes_a_recording_whose_next_file_a_power_cut_lost() {
    next_file_lost(false);
}

/// The same cut one step earlier: the header of the file that switched
/// still says `OPEN` (its finishing write was not durable either), over
/// the writer's end frame that says it continues (found by
/// tests/durability.rs's power cuts, snapshot 11, zero-buffered).
#[test]
fn recover_closes_a_recording_whose_next_file_was_lost_and_whose_header_is_still_open() {
    next_file_lost(true);
}

/// A recording of several files whose last file a power cut lost; with
/// `open_header`, the file before it keeps its header `OPEN` (durable mark
/// just after the header) over its end frame.
fn next_file_lost(open_header: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    // 400 records of 4 KiB in files of 256 KiB: 7 files, no loop.
    let data: Vec<u8> = (0..400 * 4096).map(|i| (i % 251) as u8).collect();
    let src = tmp.path().join("src.bin");
    std::fs::write(&src, &data).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--size", "4KiB", "--quiet"])
        .args(["--file-size", "256KiB", "--dir"])
        .arg(&dir)
        .stdin(std::fs::File::open(&src).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let mut fs = files(&dir);
    assert!(fs.len() >= 3, "{fs:?}");
    // The power cut: the last file's name never reached storage.
    std::fs::remove_file(fs.pop().unwrap()).unwrap();
    let last = fs.last().unwrap().clone();
    if open_header {
        let h = header(&last);
        write_header(&last, &h.with_mark(HEADER_LEN as u64));
        assert!(header(&last).flags & FLAG_OPEN != 0);
    }
    let d = dir.to_str().unwrap();
    let o = rtrec(&["verify", d]);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let o = rtrec(&["recover", d]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(
        text(&o).contains(&format!(
            "closed the interrupted recording in '{}'",
            last.display()
        )),
        "{}",
        show(&o)
    );
    let o = rtrec(&["verify", "--json", d]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    // Every record of the files kept reads back, in order.
    let out = tmp.path().join("out.bin");
    let o = rtrec(&["export", d, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let got = std::fs::read(&out).unwrap();
    assert!(!got.is_empty() && got.len() % 4096 == 0);
    assert_eq!(got[..], data[..got.len()]);
    // Nothing left to do.
    let o = rtrec(&["recover", d]);
    assert!(text(&o).contains("nothing to recover"), "{}", show(&o));
}
