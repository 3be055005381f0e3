//! Helpers shared by the integration tests: state directories, and child
//! processes that change state and then get killed.
#![allow(dead_code)] // each test file uses some of them

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// Env var telling a re-executed test binary which child role to play.
pub const CHILD_ENV: &str = "RTREC_TEST_CHILD";

/// The state directory of every test that changes machine-wide state, in
/// every test binary of this crate: one directory, so one global lock, so
/// such tests never interleave (and never touch /run/rtrec).
pub fn shared_state_dir() -> PathBuf {
    std::env::temp_dir().join("rtrec-host-tests")
}

/// A journal in [`shared_state_dir`], after putting back what dead test
/// processes left there (a test binary killed mid-test leaves its mounts).
/// For tests whose leftovers matter: mounts, loop devices.
pub fn shared_journal() -> rtrec_host::Journal {
    let dir = shared_state_dir();
    let report = rtrec_host::restore_stale_in(&dir).unwrap();
    if !report.is_empty() {
        eprint!("left by earlier test processes:\n{report}");
    }
    rtrec_host::Journal::open_in(&dir).unwrap()
}

/// A fresh private state directory (mode 0700, removed when dropped).
pub fn private_state_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("rtrec-state-")
        .tempdir()
        .unwrap()
}

/// Whether this process is the child `test` was re-executed as.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test)
}

/// Child side: tell the parent we are ready (with `words`), then wait to be
/// killed.
pub fn ready_and_wait(words: &[&str]) -> ! {
    println!("READY {}", words.join(" "));
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// A child process running one test of this binary; SIGKILLed when dropped.
pub struct Child {
    child: std::process::Child,
    /// The words after `READY` it printed.
    pub ready: Vec<String>,
}

/// Re-executes this test binary running only test `test` in child mode, with
/// `RTREC_STATE_DIR=state_dir` and the given extra environment, and waits
/// for its `READY` line.
pub fn spawn_child(test: &str, state_dir: &Path, env: &[(&str, &Path)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, test)
        .env("RTREC_STATE_DIR", state_dir)
        .stdout(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    // libtest prints "test NAME ... " before the test's own output, on the
    // same line: look for READY anywhere. Read in a thread, so that a child
    // that never gets ready fails the test instead of hanging it.
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if let Some((_, words)) = line.split_once("READY") {
                let _ = tx.send(words.split_whitespace().map(String::from).collect());
                break;
            }
        }
    });
    let mut child = Child {
        child,
        ready: Vec::new(),
    };
    match rx.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(words) => {
            child.ready = words;
            child
        }
        Err(_) => panic!("child {test} did not get ready in 30 s; see its stderr above"),
    }
}

impl Child {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs it and reaps it, so that `/proc` forgets it too.
    pub fn kill(mut self) -> ExitStatus {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(9) /* SIGKILL */, "{status}");
        status
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether anything is mounted on `path` (per /proc/self/mounts).
pub fn is_mounted(path: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let path = path.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(path))
}

/// The backing file of loop device `/dev/loopN`, if attached.
pub fn loop_backing_file(device: &Path) -> Option<String> {
    let name = device.file_name().unwrap();
    std::fs::read_to_string(Path::new("/sys/block").join(name).join("loop/backing_file"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Waits up to a second for `cond` (the kernel frees auto-clear loop devices
/// asynchronously).
pub fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    cond()
}

/// The journal files (`owner-*.json`) in `dir`.
pub fn journal_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("owner-") && name.ends_with(".json")
        })
        .collect()
}
