//! The disk a recording holds: a short pooled recording gives back its
//! unused tail when no other recording in the directory is writing, keeps
//! it (and says how to give it back) while one is, and the summary says
//! what the recording and the pool hold.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `seq 1 1000 | rtrec record --stdin --lines --dir DIR`.
fn thousand_lines(dir: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["record", "--stdin", "--lines", "--dir"])
        .arg(dir)
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
    o
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

    // Alone: the tail is given back, and the summary says what is held.
    let o = thousand_lines(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("of unused tail given back"), "{out}");
    assert!(out.contains("the pool holds"), "{out}");
    let files = recordings(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].1 < 1 << 20, "the tail is still held: {files:?}");
    let v = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("verify")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));

    // Beside a running recording: kept, and the summary says how to give
    // it back.
    let mut other = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "record", "--period", "1ms", "--size", "4KiB", "--count", "1000000",
        ])
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
    let o = thousand_lines(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    let _ = Command::new("kill")
        .args(["-INT", &other.id().to_string()])
        .status();
    let _ = other.wait();
    assert!(
        out.contains("of unused tail kept in") && out.contains("truncate -s"),
        "{out}"
    );
}
