//! systemd's service notification (`sd_notify`) for `rtrec record` under
//! `Type=notify` (`dist/rtrec-recorder@.service`, docs/unattended.md):
//! `READY=1` once the recorder is created and recording, `WATCHDOG=1`
//! every `WATCHDOG_USEC`/2 **only while the writer makes progress**,
//! `STATUS=` one short line with each ping, `STOPPING=1` at the end.
//!
//! Progress ([`Progress::moved`]): the writer has taken every record that
//! was queued at the last look (its heartbeat against the producer's
//! count; an idle source is not a stuck writer). A writer stuck in
//! `write()` or `fsync()` with records queued stops the pings, and systemd
//! restarts the service after `WatchdogSec`. A recording whose writing
//! failed for good gets `STATUS=failed: …` within 100 ms and no ping
//! again (docs/unattended.md, "Faults").
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

/// Half of `$WATCHDOG_USEC`: how often to ping; `None` when the watchdog
/// is off, or on for another process.
///
/// `$WATCHDOG_PID` names the process systemd expects the pings from
/// (sd_watchdog_enabled(3)): the one it started. Under the shipped unit
/// that is `/bin/sh`, and rtrec is the last command of its pipeline, a
/// child of that shell (`NotifyAccess=all` lets the child's datagrams
/// count for the service).
///
/// Design choice (issue 42, finding 1): the watchdog is ours when
/// `$WATCHDOG_PID` is our pid or our **parent's** — the shell that
/// started us and waits for us, whose only work is us. No farther
/// ancestor: a daemon that runs rtrec as a tool further down its tree
/// must not be kept alive by rtrec's pings while it hangs itself. Unset:
/// ours (sd_watchdog_enabled(3): no pid means no restriction).
pub fn watchdog_interval() -> Option<Duration> {
    watchdog_interval_for(
        std::env::var_os("WATCHDOG_PID").as_deref(),
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::process::id(),
        std::os::unix::process::parent_id(),
    )
}

/// [`watchdog_interval`] of these values (the environment's, our pid and
/// our parent's).
fn watchdog_interval_for(
    pid: Option<&std::ffi::OsStr>,
    usec: Option<&str>,
    ours: u32,
    parent: u32,
) -> Option<Duration> {
    if let Some(pid) = pid {
        let pid = pid.to_str()?.parse::<u32>().ok()?;
        if pid != ours && pid != parent {
            return None;
        }
    }
    let usec: u64 = usec?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// The watchdog's decision: does the writer make progress?
///
/// Design choice (issue 42, finding 3): the writer is making progress
/// when it has taken every record that was queued at the last look
/// ([`rtrec_engine::LiveStats::records_taken`], a heartbeat only the
/// writer advances once it is done with a record, against
/// `records_queued`, which the producer advances). An idle source queues
/// nothing, so an idle writer passes; a writer stuck in `write()` or
/// `fsync()` leaves the records of the last look waiting, and fails. The
/// writer's own sample of the ring's fill is not used: it is taken before
/// a drain, so it is stale exactly while the writer hangs (it said "empty"
/// through a 41 s freeze).
#[derive(Debug, Default)]
pub struct Progress {
    queued_at_last_look: Option<u64>,
}

impl Progress {
    /// True when `taken` (records the writer is done with) reached what
    /// was queued at the last call; `queued` is what is queued now.
    pub fn moved(&mut self, taken: u64, queued: u64) -> bool {
        let moved = self.queued_at_last_look.is_none_or(|q| taken >= q);
        self.queued_at_last_look = Some(queued);
        moved
    }
}

/// The records the writer is done with: the heartbeat in ring mode; in
/// inline mode (no ring) the producer writes them itself, so what it
/// queued is written.
fn taken(s: &rtrec_engine::LiveSnapshot) -> u64 {
    if s.ring_capacity_bytes == 0 {
        s.records_queued
    } else {
        s.records_taken
    }
}

/// The `STATUS=` line once writing failed for good. The durable point is
/// a sequence number, not a count (`durable_seq`: every record before it
/// is on storage, or its loss is), so it is said as one: "1051 durable"
/// beside "1043 records written" read as more durable than written when 8
/// were dropped and stored as a loss.
pub fn failed_status(s: &rtrec_engine::LiveSnapshot) -> String {
    format!(
        "STATUS=failed: writing failed after {} records written (durable before seq {}: records or stored losses); the recording ends and rtrec exits 1",
        s.records_written, s.durable_seq
    )
}

/// The `STATUS=` line of a ping (the durable point said as in
/// [`failed_status`]).
pub fn recording_status(s: &rtrec_engine::LiveSnapshot) -> String {
    format!(
        "STATUS=recording: {} records written, durable before seq {}",
        s.records_written, s.durable_seq
    )
}

/// The notifier's thread: `READY=1` now; then, until `done`, pings every
/// [`watchdog_interval`] while the writer makes progress and the
/// recording has not failed, and `STATUS=` at once when it fails (looked
/// at every 100 ms); `STOPPING=1` is [`stopping`]'s. `None` without
/// `$NOTIFY_SOCKET`.
pub fn spawn(live: Arc<LiveStats>, done: Arc<AtomicBool>) -> Option<std::thread::JoinHandle<()>> {
    let n = Notifier::from_env()?;
    n.send("READY=1\nSTATUS=recording");
    let every = watchdog_interval();
    Some(std::thread::spawn(move || {
        let mut p = Progress::default();
        let tick = every.unwrap_or(TICK).min(TICK);
        let mut waited = Duration::ZERO;
        let mut said_failed = false;
        while !done.load(Ordering::Acquire) {
            std::thread::sleep(tick);
            waited += tick;
            let s = live.snapshot();
            if s.writer_failed {
                // Never a ping again: the service is restarted or ends.
                if !said_failed {
                    n.send(&failed_status(&s));
                    said_failed = true;
                }
                continue;
            }
            let Some(every) = every else { continue };
            if waited < every || done.load(Ordering::Acquire) {
                continue;
            }
            waited = Duration::ZERO;
            if p.moved(taken(&s), s.records_queued) {
                n.send(&format!("WATCHDOG=1\n{}", recording_status(&s)));
            } else {
                n.send(&format!(
                    "STATUS=stuck: the writer makes no progress ({} records wait): no watchdog ping",
                    s.records_queued.saturating_sub(taken(&s))
                ));
            }
        }
    }))
}

/// How often the notifier looks for a failed writer (and the longest
/// between two looks at the watchdog's interval).
const TICK: Duration = Duration::from_millis(100);

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
    fn a_writer_is_making_progress_while_it_takes_what_was_queued_at_the_last_look() {
        let mut p = Progress::default();
        assert!(p.moved(0, 10), "the first look is progress");
        assert!(!p.moved(9, 20), "10 were queued, 9 taken: stuck");
        assert!(p.moved(20, 20), "all 20 taken");
        assert!(p.moved(20, 20), "nothing queued since: idle, not stuck");
        assert!(
            p.moved(20, 21),
            "one queued just now is not yet the writer's to take"
        );
        assert!(!p.moved(20, 30), "queued at the last look, still waiting");
        assert!(!p.moved(20, 30), "and still: no ping while it hangs");
        assert!(p.moved(30, 30), "moving again");
    }

    #[test]
    fn the_status_lines_say_the_durable_point_as_a_sequence_number_not_a_count() {
        // The card-full run of tests/service.rs: 1,043 written, 8 dropped
        // and stored as a loss, so the durable point is seq 1,051.
        let s = rtrec_engine::LiveSnapshot {
            records_written: 1043,
            records_dropped: 8,
            durable_seq: 1051,
            ..Default::default()
        };
        let failed = failed_status(&s);
        assert!(!failed.contains("1051 durable"), "{failed}");
        assert!(
            failed.contains(
                "after 1043 records written (durable before seq 1051: records or stored losses)"
            ),
            "{failed}"
        );
        assert_eq!(
            recording_status(&s),
            "STATUS=recording: 1043 records written, durable before seq 1051"
        );
    }

    #[test]
    fn the_watchdog_is_ours_when_its_pid_is_ours_or_our_parents() {
        let os = |s: &'static str| Some(std::ffi::OsStr::new(s));
        let half = Some(Duration::from_secs(15));
        let w = |pid, usec| watchdog_interval_for(pid, usec, 100, 50);
        assert_eq!(w(None, Some("30000000")), half, "no pid: ours");
        assert_eq!(w(os("100"), Some("30000000")), half, "our own pid");
        assert_eq!(
            w(os("50"), Some("30000000")),
            half,
            "the shell that started us (systemd's main process)"
        );
        assert_eq!(w(os("7"), Some("30000000")), None, "another process's");
        assert_eq!(w(os("x"), Some("30000000")), None, "not a pid");
        assert_eq!(w(None, Some("0")), None, "off");
        assert_eq!(w(os("100"), None), None, "no interval");
    }
}
