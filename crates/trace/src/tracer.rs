//! One traced run: which threads are timed and which are rtrec's own
//! others (found by name, [`threads_named`]), started and stopped around
//! each run (a bench set, a recording) and attributed when stopped.

use std::path::{Path, PathBuf};

use crate::attribute::Explanation;
use crate::producer::ProducerSpec;
use crate::session::{raw_path, Session, Watch};

/// The raw trace of the run in progress, renamed to its run's name when
/// it stops.
const RAW_IN_PROGRESS: &str = "in-progress.trace.txt";

/// The tracing of the runs of one command.
pub struct Tracer {
    /// The session (this process's tracefs instance).
    pub session: Session,
    /// `--explain-threshold`, ns.
    pub threshold_ns: Option<u64>,
    /// `--explain-raw`: where raw traces go.
    pub raw: Option<PathBuf>,
    /// How the producer (the thread that calls [`Tracer::start`]) is
    /// explained: its period (`None`: read from its timer), thresholds and
    /// CPU. `tid` is filled in by [`Tracer::start`].
    pub producer: ProducerSpec,
}

impl Tracer {
    /// Starts tracing a run: the timed threads `timed`, rtrec's own other
    /// threads (`rtrec-flush`, `rtrec-pool`) and `loads` (pids), on the
    /// device holding `dir`.
    ///
    /// # Errors
    /// The kernel refused the core events.
    ///
    /// The calling thread is the producer: its wake-ups and its work
    /// between them are explained too ([`crate::producer`]).
    pub fn start(&mut self, timed: Vec<i32>, loads: &[i32], dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut other = threads_named("rtrec-flush");
        other.extend(threads_named("rtrec-pool"));
        other.extend_from_slice(loads);
        other.retain(|t| !timed.contains(t));
        let raw = match &self.raw {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                Some(std::fs::File::create(d.join(RAW_IN_PROGRESS))?)
            }
            None => None,
        };
        let mut producer = self.producer.clone();
        producer.tid = rtrec_sys::gettid();
        self.session.start_raw(
            Watch {
                timed_tids: timed,
                other_tids: other,
                device: std::fs::metadata(dir).ok().map(|m| m.dev()),
                threshold_ns: self.threshold_ns,
                producer: Some(producer),
            },
            raw,
        )
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
        let x = self.session.stop()?;
        if let Some(d) = &self.raw {
            std::fs::rename(d.join(RAW_IN_PROGRESS), raw_path(d, name))?;
        }
        Ok(x)
    }
}

/// The threads of this process named `name` (`rtrec-writer`), from
/// `/proc/self/task/*/comm`.
pub fn threads_named(name: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|d| {
            std::fs::read_to_string(d.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .filter_map(|d| d.file_name().to_str()?.parse().ok())
        .collect()
}
