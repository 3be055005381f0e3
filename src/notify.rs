//! systemd's service notification (`sd_notify`) for `rtrec record` under
//! `Type=notify` (`dist/rtrec-recorder@.service`, docs/unattended.md):
//! `READY=1` once the recorder is created and recording, `WATCHDOG=1`
//! every `WATCHDOG_USEC`/2 **only while the writer makes progress**,
//! `STATUS=` one short line with each ping, `STOPPING=1` at the end.
//!
//! Progress ([`Progress::moved`]): the written count moved since the last
//! ping, or nothing is queued (an idle source is not a stuck writer). A
//! writer stuck in `write()` or `fsync()` with records queued stops the
//! pings, and systemd restarts the service after `WatchdogSec`.
//!
//! Design choice: the documented datagram protocol (sd_notify(3): one
//! datagram of `KEY=VALUE` lines to the `AF_UNIX` socket in
//! `$NOTIFY_SOCKET`, an abstract one when it starts with `@`), written
//! with the standard library's `UnixDatagram`: no crate of the registry
//! lists we may use offers it, and it is a dozen lines. It runs on its own
//! thread beside the recording, never on the producer's path; nothing is
//! sent when `$NOTIFY_SOCKET` is unset, and a failed send is ignored (the
//! recording matters more than its supervisor). The socket does not block:
//! a receiver that stops reading (its queue full) loses datagrams, it
//! never holds the recorder (a blocking send kept `rtrec record` from
//! exiting: found by tests/notify.rs's stuck-writer test).

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rtrec_engine::LiveStats;

/// The notification socket of `$NOTIFY_SOCKET`.
pub struct Notifier {
    sock: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// The socket `$NOTIFY_SOCKET` names (`@name`: abstract); `None` when
    /// it is unset or unusable.
    pub fn from_env() -> Option<Notifier> {
        let path = std::env::var_os("NOTIFY_SOCKET")?;
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        let addr = match bytes.strip_prefix(b"@") {
            Some(name) => SocketAddr::from_abstract_name(name).ok()?,
            None => SocketAddr::from_pathname(&path).ok()?,
        };
        let sock = UnixDatagram::unbound().ok()?;
        sock.set_nonblocking(true).ok()?;
        Some(Notifier { sock, addr })
    }

    /// Sends `msg` (`KEY=VALUE` lines) in one datagram; errors are ignored.
    pub fn send(&self, msg: &str) {
        let _ = self.sock.send_to_addr(msg.as_bytes(), &self.addr);
    }
}

/// Half of `$WATCHDOG_USEC` (when `$WATCHDOG_PID` is unset or ours): how
/// often to ping; `None` when the watchdog is off.
pub fn watchdog_interval() -> Option<Duration> {
    if let Some(pid) = std::env::var_os("WATCHDOG_PID") {
        if pid.to_str()?.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// The watchdog's decision: does the writer make progress?
#[derive(Debug, Default)]
pub struct Progress {
    last_written: Option<u64>,
}

impl Progress {
    /// True when `written` moved since the last call, or `queued` bytes
    /// wait for the writer is 0 (nothing to do is not being stuck).
    pub fn moved(&mut self, written: u64, queued: u64) -> bool {
        let moved = self.last_written != Some(written);
        self.last_written = Some(written);
        moved || queued == 0
    }
}

/// The notifier's thread: `READY=1` now, then pings while progress is
/// made until `done`; `STOPPING=1` is [`stopping`]'s. `None` without
/// `$NOTIFY_SOCKET`.
pub fn spawn(live: Arc<LiveStats>, done: Arc<AtomicBool>) -> Option<std::thread::JoinHandle<()>> {
    let n = Notifier::from_env()?;
    n.send("READY=1\nSTATUS=recording");
    let every = watchdog_interval()?;
    Some(std::thread::spawn(move || {
        let mut p = Progress::default();
        let tick = every.min(Duration::from_millis(100));
        let mut waited = Duration::ZERO;
        while !done.load(Ordering::Acquire) {
            std::thread::sleep(tick);
            waited += tick;
            if waited < every || done.load(Ordering::Acquire) {
                continue;
            }
            waited = Duration::ZERO;
            let s = live.snapshot();
            if p.moved(s.records_written, s.ring_used_bytes) {
                n.send(&format!(
                    "WATCHDOG=1\nSTATUS=recording: {} records written, {} durable",
                    s.records_written, s.durable_seq
                ));
            } else {
                n.send("STATUS=the writer makes no progress: no watchdog ping");
            }
        }
    }))
}

/// `STOPPING=1` when `$NOTIFY_SOCKET` is set.
pub fn stopping() {
    if let Some(n) = Notifier::from_env() {
        n.send("STOPPING=1\nSTATUS=finishing the recording");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_is_making_progress_while_its_count_moves_or_nothing_waits() {
        let mut p = Progress::default();
        assert!(p.moved(0, 4096), "the first look is progress");
        assert!(!p.moved(0, 4096), "records wait, none written: stuck");
        assert!(p.moved(0, 0), "nothing waits: idle, not stuck");
        assert!(p.moved(5, 4096));
        assert!(!p.moved(5, 100));
    }
}
