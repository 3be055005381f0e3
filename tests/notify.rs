//! Issue 31, Deliver 6: `rtrec record` under `Type=notify`, with a socket
//! of the test's own standing in for systemd (no systemd needed): the
//! recorder sends `READY=1` first, `WATCHDOG=1` pings while it records
//! (`WATCHDOG_USEC` set), and `STOPPING=1` last; over a path socket and an
//! abstract one (`@name`). The "only while the writer makes progress"
//! decision is unit-tested in `src/notify.rs`.

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
