//! One traced run: which threads are timed and which are rtrec's own
//! others, started and stopped around each run (a bench set, a recording)
//! and attributed when stopped.

use std::path::{Path, PathBuf};

use crate::{Explanation, Session, Watch};

/// The tracing of the runs of one command.
pub struct Tracer {
    /// The session (this process's tracefs instance).
    pub session: Session,
    /// `--explain-threshold`, ns.
    pub threshold_ns: Option<u64>,
    /// `--explain-raw`: where raw traces go.
    pub raw: Option<PathBuf>,
}

impl Tracer {
    /// Starts tracing a run: the timed threads `timed`, rtrec's own other
    /// threads (`rtrec-flush`, `rtrec-pool`) and `loads` (pids), on the
    /// device holding `dir`.
    ///
    /// # Errors
    /// The kernel refused the core events.
    pub fn start(&mut self, timed: Vec<i32>, loads: &[i32], dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut other = crate::threads_named("rtrec-flush");
        other.extend(crate::threads_named("rtrec-pool"));
        other.extend_from_slice(loads);
        other.retain(|t| !timed.contains(t));
        self.session.start(Watch {
            timed_tids: timed,
            other_tids: other,
            device: std::fs::metadata(dir).ok().map(|m| m.dev()),
            threshold_ns: self.threshold_ns,
        })
    }

    /// The instance's `trace_marker`: the background loads and rtrec's own
    /// threads mark their operations there.
    pub fn marker_path(&self) -> PathBuf {
        self.session.path().join("trace_marker")
    }

    /// Stops tracing the run `name` and attributes it.
    ///
    /// # Errors
    /// The trace could not be read, or `--explain-raw` not written.
    pub fn stop(&mut self, name: &str) -> std::io::Result<Explanation> {
        let raw = self.raw.clone();
        self.session.stop(raw.as_deref().map(|d| (d, name)))
    }
}
