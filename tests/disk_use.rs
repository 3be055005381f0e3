//! The disk a recording holds: a short pooled recording gives back its
//! unused tail when no other recording in the directory is writing, keeps
//! it (and says how to give it back) while one is, and the summary says
//! what the recording and the pool hold.

mod common;

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `seq 1 1000 | rtrec record --stdin --lines --dir DIR --json DIR.json`,
/// with the JSON's `disk` object.
fn thousand_lines(dir: &Path) -> (Output, serde_json::Value) {
    let json = dir.with_extension("json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--lines", "--dir"])
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (o, v["disk"].clone())
}

/// The recordings' files in `dir`, with their sizes.
fn recordings(dir: &Path) -> Vec<(String, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".rtr"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn a_short_recording_gives_back_its_tail_alone_and_keeps_it_beside_a_running_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // Pool files ready for the three recordings below (a directory with
    // none gives each first file with fallocate, and the engine truncates
    // a file of its own when it closes it: no tail to give back or keep).
    let d = dir.to_str().unwrap();
    let prep = common::rtrec(&["pool", "prepare", d, "--files", "3", "--file-size", "8MiB"]);
    assert!(prep.status.success(), "{}", common::show(&prep));

    // Alone: the tail is given back, and the summary says what is held.
    let (o, disk) = thousand_lines(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("of unused tail given back"), "{out}");
    assert!(out.contains("the pool holds"), "{out}");
    let files = recordings(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].1 < 1 << 20, "the tail is still held: {files:?}");
    // The JSON says the same, in bytes: the tail given back is the file's
    // old size less what it keeps, and the pool's ready file is counted.
    let held = std::fs::metadata(dir.join(&files[0].0)).unwrap().blocks() * 512;
    assert_eq!(disk["held_bytes"], held, "{disk}");
    assert!(
        disk["given_back_bytes"].as_u64().unwrap() > 1 << 20,
        "{disk}"
    );
    assert_eq!(disk["kept"], serde_json::json!([]), "{disk}");
    assert!(disk["pool"]["ready_files"].as_u64().unwrap() >= 1, "{disk}");
    let v = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("verify")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));

    // Beside a running recording: kept, and the summary says how to give
    // it back.
    let mut other = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--period", "10ms", "--size", "4KiB"])
        .args(["--quiet", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while recordings(&dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the other never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (o, disk) = thousand_lines(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    let _ = Command::new("kill")
        .args(["-INT", &other.id().to_string()])
        .status();
    let _ = other.wait();
    assert!(
        out.contains("of unused tail kept in") && out.contains("truncate -s"),
        "{out}"
    );
    // The kept tail in the JSON: its file, and valid length plus tail is
    // the file's size.
    assert_eq!(disk["given_back_bytes"], 0, "{disk}");
    let kept = disk["kept"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{disk}");
    let file = Path::new(kept[0]["file"].as_str().unwrap());
    assert_eq!(
        kept[0]["valid_len"].as_u64().unwrap() + kept[0]["tail_bytes"].as_u64().unwrap(),
        std::fs::metadata(file).unwrap().len(),
        "{disk}"
    );
}
