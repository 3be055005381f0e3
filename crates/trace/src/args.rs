//! The `--explain` flags, defined once for every command that traces
//! (`rtrec record` and `rtrec bench` flatten them with
//! `#[command(flatten)]`), and the [`Tracer`](crate::tracer::Tracer) they configure.

use std::path::PathBuf;

/// The `--explain` options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExplainArgs {
    /// Trace the timed calls (the recording's write(); every case of the bench) and attribute the slow ones to kernel causes (needs root and tracefs; own tracefs instance).
    #[arg(long)]
    pub explain: bool,

    /// With --explain: calls slower than this are explained (default: 10 × the median and at least 100µs).
    #[arg(long, value_name = "DURATION", value_parser = rtrec_units::value::interval, requires = "explain")]
    pub explain_threshold: Option<rtrec_units::value::Duration>,

    /// With --explain: keep each raw trace (tracefs text, as trace-cmd and perf users read it) in DIR, as NAME.trace.txt (record.trace.txt; one per bench case).
    #[arg(long, value_name = "DIR", requires = "explain")]
    pub explain_raw: Option<PathBuf>,

    /// With --explain: the producer's wake-ups later than this percentage of the period are explained (default 10; a period or more late is a missed period, always explained).
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(1..=100), requires = "explain")]
    pub explain_late: Option<u64>,

    /// With --explain: the producer's record() calls (its work between two wake-ups) slower than this are explained (default 20µs, the endurance goal).
    #[arg(long, value_name = "DURATION", value_parser = rtrec_units::value::interval, requires = "explain")]
    pub explain_record: Option<rtrec_units::value::Duration>,
}

impl ExplainArgs {
    /// A tracer as these options ask, on a new tracefs instance; `None`
    /// without `--explain`.
    ///
    /// # Errors
    /// The instance could not be made (not root, no tracefs): one sentence.
    pub fn tracer(&self) -> Result<Option<crate::tracer::Tracer>, String> {
        if !self.explain {
            return Ok(None);
        }
        Ok(Some(crate::tracer::Tracer {
            session: crate::session::Session::create()?,
            threshold_ns: self.explain_threshold.map(rtrec_units::value::Duration::ns),
            raw: self.explain_raw.clone(),
            producer: crate::producer::ProducerSpec {
                tid: 0,
                period_ns: None,
                late_percent: self.explain_late.unwrap_or(crate::producer::LATE_PERCENT),
                record_threshold_ns: self.explain_record.map_or(
                    crate::producer::RECORD_THRESHOLD_NS,
                    rtrec_units::value::Duration::ns,
                ),
                cpu: None,
                // The session sets what the kernel allows.
                steal_method: crate::producer::StealMethod::ProcStat,
            },
        }))
    }
}
