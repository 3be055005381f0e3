//! Issue 31, Deliver 6: `rtrec record` under `Type=notify`, with a socket
//! of the test's own standing in for systemd (no systemd needed): the
//! recorder sends `READY=1` first, `WATCHDOG=1` pings while it records
//! (`WATCHDOG_USEC` set), and `STOPPING=1` last; over a path socket and an
//! abstract one (`@name`). The "only while the writer makes progress"
//! decision is unit-tested in `src/notify.rs`, and proven end to end on a
//! stuck writer: the recording's ext4 image frozen (`fsfreeze`) blocks its
//! writes, the pings stop and the status says why, and they come back once
//! it is thawed (root and a loop device; skipped otherwise, failed under
//! `RTREC_REQUIRE_PRIVILEGED=1`).

mod common;
use common::show;

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::process::Command;
use std::time::Duration;

/// Records 1,500 records at 1 ms with `NOTIFY_SOCKET=name` and a 200 ms
/// watchdog; returns the datagrams `sock` received.
fn record_with(sock: &UnixDatagram, name: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args([
            "record", "--period", "1ms", "--size", "64B", "--count", "1500",
        ])
        .args(["--quiet", "--dir"])
        .arg(dir.path())
        .env("NOTIFY_SOCKET", name)
        .env("WATCHDOG_USEC", "200000")
        .env_remove("WATCHDOG_PID")
        .spawn()
        .unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match sock.recv(&mut buf) {
            Ok(n) => got.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(_) => {
                if let Some(st) = child.try_wait().unwrap() {
                    assert!(st.success(), "{st}");
                    break;
                }
            }
        }
    }
    while let Ok(n) = sock.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("verify")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    got
}

fn check(got: &[String]) {
    assert!(got.len() >= 3, "{got:?}");
    assert!(got[0].starts_with("READY=1\n"), "{got:?}");
    assert!(got.last().unwrap().starts_with("STOPPING=1\n"), "{got:?}");
    let pings = got.iter().filter(|d| d.starts_with("WATCHDOG=1\n")).count();
    assert!(pings >= 1, "no watchdog ping while recording: {got:?}");
    assert!(got
        .iter()
        .filter(|d| d.starts_with("WATCHDOG=1\n"))
        .all(|d| d.contains("\nSTATUS=recording: ")));
}

#[test]
fn ready_watchdog_and_stopping_reach_a_path_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    check(&record_with(&sock, path.to_str().unwrap()));
}

#[test]
fn ready_watchdog_and_stopping_reach_an_abstract_socket() {
    let name = format!("rtrec-notify-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let sock = UnixDatagram::bind_addr(&addr).unwrap();
    check(&record_with(&sock, &format!("@{name}")));
}

/// Thaws the file system at `0` when dropped (also when the test fails),
/// before the loop file system is removed.
struct Thaw(std::path::PathBuf);

impl Drop for Thaw {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).status();
    }
}

/// Kills the recorder when dropped (a failed assertion must not leave it
/// writing into the loop file system the test then removes).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The datagrams `sock` receives within `span`.
fn collect(sock: &UnixDatagram, span: Duration) -> Vec<String> {
    let end = std::time::Instant::now() + span;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while std::time::Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    got
}

/// The datagrams `sock` receives until `enough` says so of them, or
/// `limit` passed (a loaded machine starts a recorder slowly).
fn collect_until(
    sock: &UnixDatagram,
    limit: Duration,
    enough: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let end = std::time::Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while std::time::Instant::now() < end && !enough(&got) {
        if let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    got
}

fn pings(got: &[String]) -> usize {
    got.iter().filter(|d| d.starts_with("WATCHDOG=1\n")).count()
}

#[test]
fn a_stuck_writer_gets_no_watchdog_ping_until_it_moves_again() {
    let name = "a_stuck_writer_gets_no_watchdog_ping_until_it_moves_again";
    if !rtrec_host::loopfs::require_privileged(name) {
        return;
    }
    use rtrec_host::loopfs::{LoopFs, LoopFsOptions};
    let fs = LoopFs::create(&LoopFsOptions {
        size: 256 << 20,
        journal_mib: 8,
        ..LoopFsOptions::default()
    })
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notify");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    // 4 MB/s for 12 s into a 64 MiB ring: the ring holds what the frozen
    // seconds queue, and the recording outlasts the phases below on a
    // loaded machine.
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_rtrec"))
            .args([
                "record",
                "--period",
                "1ms",
                "--size",
                "4KiB",
                "--duration",
                "8s",
            ])
            .args(["--ring", "64MiB", "--quiet", "--dir"])
            .arg(fs.path())
            .env("NOTIFY_SOCKET", &path)
            .env("WATCHDOG_USEC", "200000")
            .env_remove("WATCHDOG_PID")
            .spawn()
            .unwrap(),
    );
    let before = collect_until(&sock, Duration::from_secs(20), |g| pings(g) >= 2);
    assert!(
        before.first().is_some_and(|d| d.starts_with("READY=1\n")),
        "{before:?}"
    );
    assert!(
        pings(&before) >= 2,
        "no ping while the writer moves: {before:?}"
    );

    let frozen = Thaw(fs.path().to_path_buf());
    let o = Command::new("fsfreeze")
        .arg("-f")
        .arg(fs.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    // The look that began before the freeze may still see progress.
    collect(&sock, Duration::from_millis(400));
    let stuck = collect(&sock, Duration::from_millis(1200));
    drop(frozen);
    assert_eq!(
        pings(&stuck),
        0,
        "a ping while the writer was stuck: {stuck:?}"
    );
    assert!(
        stuck
            .iter()
            .any(|d| d.contains("STATUS=stuck: the writer makes no progress")),
        "{stuck:?}"
    );

    let after = collect_until(&sock, Duration::from_secs(20), |g| pings(g) >= 1);
    assert!(
        pings(&after) >= 1,
        "no ping once the writer moved again: {after:?}"
    );
    // Read on until it ends (a receiver that stops reading must not hold
    // the recorder either: the notifier's socket does not block).
    let st = loop {
        collect(&sock, Duration::from_millis(100));
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
    };
    assert!(st.success(), "{st}");
    let o = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .arg("verify")
        .arg(fs.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    fs.remove().unwrap();
}
