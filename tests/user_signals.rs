//! A recording that has nothing for SIGUSR1 or SIGUSR2 to trigger does
//! not die of them (their default action would end the process and leave
//! the recording unfinished): it counts them, says so after the summary,
//! exits 0, and its recording verifies clean.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{rtrec, show};

/// Whether `dir` holds a recording file yet (the handlers are installed
/// before the recorder creates its first file).
fn has_recording(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| {
        d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "rtr")))
    })
}

#[test]
fn sigusr1_and_sigusr2_are_counted_not_fatal_to_a_plain_recording() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "record",
            "--period",
            "1ms",
            "--size",
            "64B",
            "--duration",
            "3s",
            "--dir",
        ])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !has_recording(&dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(has_recording(&dir), "no recording file appeared");
    for sig in ["-USR1", "-USR2", "-USR1"] {
        let k = Command::new("kill")
            .arg(sig)
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(k.success());
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("3 SIGUSR1/SIGUSR2 signal(s) arrived"),
        "{}",
        show(&o)
    );
    let v = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
}
