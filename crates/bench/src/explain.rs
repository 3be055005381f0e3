//! `--explain`: which threads of a set are traced, the published cause
//! of the cases whose cause a study names, and keeping the explanation of
//! the reported set. The tracing and the attribution themselves are
//! `rtrec-trace`'s.

use std::path::{Path, PathBuf};

use rtrec_trace::{Explanation, Session, Watch};

use crate::scenario::{Load, Scenario, Study};

/// The tracing of one bench run.
pub struct Tracer {
    /// The session (this process's tracefs instance).
    pub session: Session,
    /// `--explain-threshold`, ns.
    pub threshold_ns: Option<u64>,
    /// `--explain-raw`: where raw traces go.
    pub raw: Option<PathBuf>,
}

impl Tracer {
    /// Starts tracing a set: the timed threads `timed`, rtrec's own other
    /// threads and `loads` (pids), on the device holding `dir`.
    ///
    /// # Errors
    /// The kernel refused the core events.
    pub fn start(&mut self, timed: Vec<i32>, loads: &[i32], dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut other = rtrec_trace::threads_named("rtrec-flush");
        other.extend(rtrec_trace::threads_named("rtrec-pool"));
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

    /// [`Tracer::marker_path`] opened for the engine
    /// ([`rtrec_engine::Config::trace_marker`]); `None` if it cannot be
    /// opened (the run then goes on without marks).
    pub fn marker(&self) -> Option<rtrec_engine::TraceMarker> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.marker_path())
            .ok()
            .map(rtrec_engine::TraceMarker::new)
    }

    /// Stops tracing the set `name` and attributes it.
    ///
    /// # Errors
    /// The trace could not be read, or `--explain-raw` not written.
    pub fn stop(&mut self, name: &str) -> std::io::Result<Explanation> {
        let raw = self.raw.clone();
        self.session.stop(raw.as_deref().map(|d| (d, name)))
    }
}

/// The cause a study publishes for `s`, if it names one (S1: the
/// background-load cases wait for a jbd2 journal handle while the running
/// transaction is locked for commit; NONE: writeback holds `i_data_sem`
/// while it reads block-group descriptors).
pub fn published_cause(s: &Scenario) -> Option<&'static str> {
    match s.study {
        Study::S1Table1 if s.name == "NONE" => {
            Some("S1: i_data_sem held by writeback reading block-group descriptors")
        }
        Study::S1Table1
            if s.loads
                .iter()
                .any(|l| matches!(l, Load::Trunc | Load::Falloc)) =>
        {
            Some("S1: jbd2 handle wait (running transaction locked for commit)")
        }
        _ => None,
    }
}
