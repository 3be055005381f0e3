//! `rtrec record --explain`: traces the recording's timed threads in our
//! own tracefs instance and, after the recording, attributes its slow
//! `write()` calls to kernel causes (`rtrec-trace`), printed after the
//! summary and carried in `--json` as `explain`.
//!
//! Design choice: the hook is two calls around the recording — [`start`]
//! once the recorder (and so its writer thread) exists, [`Tracing::finish`]
//! after `finish()`/`abort()` has drained it — so nothing in the recording
//! path knows about tracing. In ring mode the timed thread is the engine's
//! writer (`rtrec-writer`); in inline mode the producer itself calls
//! `write()`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtrec_bench::explain::Tracer;
use rtrec_trace::{Explanation, Session};

/// The `--explain` options of `rtrec record`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExplainArgs {
    /// Trace the recording and attribute its slow write() calls to kernel causes (needs root and tracefs; own tracefs instance).
    #[arg(long)]
    pub explain: bool,

    /// With --explain: calls slower than this are explained (default: 10 × the median and at least 100µs).
    #[arg(long, value_name = "DURATION", value_parser = parse_threshold, requires = "explain")]
    pub explain_threshold: Option<Duration>,

    /// With --explain: keep the raw trace (tracefs text, as trace-cmd and perf users read it) in DIR as record.trace.txt.
    #[arg(long, value_name = "DIR", requires = "explain")]
    pub explain_raw: Option<PathBuf>,
}

fn parse_threshold(s: &str) -> Result<Duration, String> {
    match rtrec_units::parse_duration(s) {
        Ok(ns) if ns >= 1 => Ok(Duration::from_nanos(ns)),
        Ok(_) => Err(format!("'{s}' is zero; give a duration of at least 1ns")),
        Err(e) => Err(e.to_string()),
    }
}

/// A running trace of one recording (the bench's [`Tracer`], with no
/// background loads).
pub struct Tracing(Tracer);

/// Starts tracing the recording in `dir` if `--explain` was given; without
/// root or tracefs prints one sentence and returns `None` (the recording
/// goes on without attribution).
pub fn start(a: &ExplainArgs, dir: &Path) -> Option<Tracing> {
    if !a.explain {
        return None;
    }
    let session = match Session::create() {
        Ok(s) => s,
        Err(sentence) => {
            eprintln!("rtrec: {sentence}");
            return None;
        }
    };
    let mut t = Tracer {
        session,
        threshold_ns: a.explain_threshold.map(|d| d.as_nanos() as u64),
        raw: a.explain_raw.clone(),
    };
    let writer = rtrec_trace::threads_named("rtrec-writer");
    let timed = if writer.is_empty() {
        vec![rtrec_sys::gettid()]
    } else {
        writer
    };
    if let Err(e) = t.start(timed, &[], dir) {
        eprintln!(
            "rtrec: --explain: starting the trace failed ({e}); recording without attribution"
        );
        return None;
    }
    Some(Tracing(t))
}

impl Tracing {
    /// Stops tracing and attributes the slow calls; a failure is one
    /// sentence on stderr and no attribution.
    pub fn finish(mut self) -> Option<Explanation> {
        let x = self.0.stop("record");
        if let Err(e) = self.0.session.remove() {
            eprintln!("rtrec: removing the tracefs instance: {e}");
        }
        x.map_err(|e| eprintln!("rtrec: --explain: reading the trace failed ({e})"))
            .ok()
    }
}

/// The attribution table, as `rtrec bench` prints it per case.
pub fn print(x: &Explanation, to_stderr: bool) {
    let text = format!(
        "attribution of the slow write() calls (--explain):\n{}",
        rtrec_trace::table::render(x, None)
    );
    if to_stderr {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
}
