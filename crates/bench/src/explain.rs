//! `--explain` in the bench: the engine's trace marker, and the published
//! cause of the cases whose cause a study names. The flags, the tracing of
//! a set and the attribution are `rtrec-trace`'s ([`rtrec_trace::Tracer`],
//! [`rtrec_trace::ExplainArgs`]).

use rtrec_trace::Tracer;

use crate::scenario::{Load, Scenario, Study};

/// The tracer's `trace_marker` opened for the engine
/// ([`rtrec_engine::Config::trace_marker`]); `None` if it cannot be opened
/// (the run then goes on without marks).
pub fn marker(t: &Tracer) -> Option<rtrec_engine::TraceMarker> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(t.marker_path())
        .ok()
        .map(rtrec_engine::TraceMarker::new)
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
