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
//!
//! A build without the cargo feature `trace` (the record-only build) has
//! no tracer: it keeps the `--explain` flag, so that asking for it gets one
//! sentence instead of clap's "unexpected argument"
//! (`record`'s plan refuses it before anything starts),
//! and an empty [`Explanation`] that no recording can produce.

#[cfg(feature = "trace")]
use std::path::Path;

#[cfg(feature = "trace")]
use rtrec_trace::Tracer;
#[cfg(feature = "trace")]
pub use rtrec_trace::{ExplainArgs, Explanation};

/// `--explain` in a build without the tracer: the flag alone, refused.
#[cfg(not(feature = "trace"))]
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExplainArgs {
    /// Trace the recording's write() calls and attribute the slow ones to kernel causes (not in this build: it needs the cargo feature `trace`).
    #[arg(long)]
    pub explain: bool,
}

/// The attribution of a build without the tracer: none can exist.
#[cfg(not(feature = "trace"))]
#[derive(Debug, serde::Serialize)]
pub enum Explanation {}

/// A running trace of one recording (a [`Tracer`] with no background
/// loads).
#[cfg(feature = "trace")]
pub struct Tracing(Tracer);

/// A running trace in a build without the tracer: none can exist.
#[cfg(not(feature = "trace"))]
pub enum Tracing {}

/// `--explain` was refused before the recording started: nothing traces.
#[cfg(not(feature = "trace"))]
pub fn start(
    _: &ExplainArgs,
    _: &std::path::Path,
    _: Option<u64>,
    _: Option<usize>,
) -> Option<Tracing> {
    None
}

#[cfg(not(feature = "trace"))]
impl Tracing {
    /// Never called: no [`Tracing`] exists.
    pub fn finish(self, _: u64) -> Option<Explanation> {
        match self {}
    }
}

/// Never called: no [`Explanation`] exists.
#[cfg(not(feature = "trace"))]
pub fn print(x: &Explanation, _: bool) {
    match *x {}
}

/// Starts tracing the recording in `dir` if `--explain` was given; without
/// root or tracefs prints one sentence and returns `None` (the recording
/// goes on without attribution).
#[cfg(feature = "trace")]
pub fn start(
    a: &ExplainArgs,
    dir: &Path,
    period_ns: Option<u64>,
    cpu: Option<usize>,
) -> Option<Tracing> {
    let mut t = match a.tracer() {
        Ok(t) => t?,
        Err(sentence) => {
            eprintln!("rtrec: {sentence}");
            return None;
        }
    };
    // The caller (this thread) is the producer.
    t.producer.period_ns = period_ns;
    t.producer.cpu = cpu.map(|c| c as u32);
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

#[cfg(feature = "trace")]
impl Tracing {
    /// Stops tracing and attributes the slow calls; a failure is one
    /// sentence on stderr and no attribution.
    /// The missed periods the recorder counted (`missed_periods`) and the
    /// trace did not see are counted as unattributed.
    pub fn finish(mut self, missed_periods: u64) -> Option<Explanation> {
        let x = self.0.stop("record").map(|mut x| {
            if let Some(p) = x.producer.as_mut() {
                p.reconcile(missed_periods);
            }
            x
        });
        if let Err(e) = self.0.session.remove() {
            eprintln!("rtrec: removing the tracefs instance: {e}");
        }
        x.map_err(|e| eprintln!("rtrec: --explain: reading the trace failed ({e})"))
            .ok()
    }
}

/// The attribution table, as `rtrec bench` prints it per case.
#[cfg(feature = "trace")]
pub fn print(x: &Explanation, to_stderr: bool) {
    let text = format!(
        "attribution of the slow write() calls and the producer's figures (--explain):\n{}",
        rtrec_trace::table::render(x, None)
    );
    if to_stderr {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
}
