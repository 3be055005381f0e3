//! Flight-recorder triggers from outside the process: `rtrec trigger DIR`,
//! and the recorder's end of it, a Unix datagram socket `DIR/.rtrec-trigger`
//! that a flight recording binds while it runs and removes when it ends.
//!
//! Design choices:
//! - A socket, not a signal or a polled file: it needs no pid (a pid file
//!   can name a recycled pid), reaches only the recorder that owns the
//!   directory, and a stale socket left by a killed recorder refuses
//!   connections, so `rtrec trigger` says that nothing is listening instead
//!   of triggering nothing.
//! - A listener thread turns each datagram into one trigger request on the
//!   same counter SIGUSR1 feeds; the recording loop takes requests from that
//!   counter for every source (see `record/session.rs`), so the producer makes no
//!   system call for this.
//! - A second recorder in the same directory does not steal the socket: it
//!   records without it and says so.
//! - The command's argument ([`TriggerArgs`]) is defined here and
//!   assembled by `cli`: `record` binds the socket and `cli` flattens
//!   `record`'s flags, so nothing here may import `cli`.

use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// `rtrec trigger`.
#[derive(Debug, clap::Args)]
pub struct TriggerArgs {
    /// The recording directory of a running flight recorder (`record --pre … --post …`).
    #[arg(value_name = "DIR", default_value = "./rtrec-data")]
    pub dir: PathBuf,
}

/// The socket's name in the recording directory.
pub const SOCKET_NAME: &str = ".rtrec-trigger";

/// The message `rtrec trigger` sends (any datagram counts as one trigger).
const MESSAGE: &[u8] = b"trigger\n";

/// The recorder's end: a bound socket and the thread that listens on it.
/// Dropping it stops the thread and removes the socket.
pub struct Listener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Binds `DIR/.rtrec-trigger` and counts each datagram into `requests`.
    ///
    /// # Errors
    ///
    /// One sentence: another recorder listens there, the name is taken by
    /// something that is not a socket, or the socket cannot be bound (e.g.
    /// the path is longer than a socket address allows).
    pub fn bind(dir: &Path, requests: &'static AtomicU64) -> Result<Listener, String> {
        let path = dir.join(SOCKET_NAME);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_socket() => {
                if UnixDatagram::unbound()
                    .and_then(|s| s.connect(&path))
                    .is_ok()
                {
                    return Err(format!(
                        "another recorder listens for triggers in '{}'",
                        dir.display()
                    ));
                }
                // Stale: its recorder is gone.
                std::fs::remove_file(&path)
                    .map_err(|e| format!("cannot remove the stale '{}': {e}", path.display()))?;
            }
            Ok(_) => {
                return Err(format!(
                    "'{}' exists and is not a socket; remove it",
                    path.display()
                ))
            }
            Err(_) => {}
        }
        let sock = UnixDatagram::bind(&path)
            .map_err(|e| format!("cannot bind '{}': {e}", path.display()))?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rtrec-trigger".into())
            .spawn(move || {
                let mut buf = [0u8; 64];
                while !s.load(Ordering::Acquire) {
                    match sock.recv(&mut buf) {
                        Ok(_) => {
                            requests.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })
            .map_err(|e| format!("cannot start the trigger listener: {e}"))?;
        Ok(Listener {
            path,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs `rtrec trigger DIR`: exit 0 when the recorder got the request, 1
/// when no recorder listens in DIR.
pub fn run(a: &TriggerArgs) -> crate::error::Result<i32> {
    let path = a.dir.join(SOCKET_NAME);
    let sent = UnixDatagram::unbound().and_then(|s| s.send_to(MESSAGE, &path));
    match sent {
        Ok(_) => {
            eprintln!("trigger sent to the recorder in '{}'", a.dir.display());
            Ok(0)
        }
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
            eprintln!(
                "rtrec: no flight recorder is running in '{}' (start one with `rtrec record --dir {} --pre … --post …`)",
                a.dir.display(),
                a.dir.display()
            );
            Ok(1)
        }
        Err(e) => crate::error::usage(format!("cannot reach '{}': {e}", path.display())),
    }
}
