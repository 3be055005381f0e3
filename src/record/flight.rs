//! `record`'s flight-recorder flags — the spans kept before and recorded
//! after a trigger, the window's bound in bytes, the trigger sources, the
//! events kept —
//! and their part of the plan ([`FlightArgs::apply`]): the engine's
//! flight configuration and the [`TriggerSources`] the recording listens
//! to.

use clap::Args;
use rtrec_engine::{Config, FlightConfig};
use rtrec_units::value::{Duration, Size};

use crate::error::{usage, Result};

/// The flight recorder's `--pre` when only `--post` or `--pre-bytes` is given.
pub const DEFAULT_PRE: Duration = Duration::from_ns(2_000_000_000);
/// The flight recorder's `--post` when only `--pre` or `--pre-bytes` is given.
pub const DEFAULT_POST: Duration = Duration::from_ns(5_000_000_000);

/// The flight recorder: what it keeps around a trigger, and what triggers it.
#[derive(Debug, Args)]
pub struct FlightArgs {
    /// Flight recorder: keep this span before a trigger in memory (e.g. 2s).
    #[arg(long, value_parser = rtrec_units::value::span, value_name = "DURATION")]
    pub pre: Option<Duration>,

    /// Flight recorder: record this span after a trigger [default: 5s].
    #[arg(long, value_parser = rtrec_units::value::span, value_name = "DURATION")]
    pub post: Option<Duration>,

    /// Flight recorder: also bound the pre-trigger window in bytes [default: what --pre needs at this rate].
    #[arg(long, value_parser = rtrec_units::value::size, value_name = "SIZE")]
    pub pre_bytes: Option<Size>,

    /// Flight recorder trigger: SIGUSR1, or stdin (each line triggers; not with --stdin). Repeatable.
    /// SIGUSR1 and `rtrec trigger DIR` trigger every flight recorder, whatever the source.
    #[arg(long, value_name = "SOURCE")]
    pub trigger_on: Vec<String>,

    /// Flight recorder: trigger every DURATION (synthetic faults, for trying it out).
    #[arg(long, value_parser = rtrec_units::value::span, value_name = "DURATION")]
    pub trigger_every: Option<Duration>,

    /// Flight recorder: keep the newest N event recordings of this recorder; older ones are retired (recycled into the pool, or deleted) when a new event starts. Events are never retired by --keep, --keep-files or --keep-for.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub keep_events: Option<u32>,
}

/// The trigger sources a flight recording listens to, besides SIGUSR1 and
/// `rtrec trigger DIR`, which every flight recorder takes.
#[derive(Clone, Copy, Debug, Default)]
pub struct TriggerSources {
    /// `--trigger-on stdin`: each line on stdin.
    pub stdin: bool,
    /// `--trigger-on SIGUSR1`.
    pub sigusr1: bool,
    /// `--trigger-every`, ns.
    pub every_ns: Option<u64>,
}

impl FlightArgs {
    /// Its part of the engine's configuration (the flight recorder when
    /// any of its spans is given; a window of 0 bytes is sized when the
    /// plan is settled), and the trigger sources. `stdin_records`: stdin
    /// carries the records (`--stdin`), so it cannot carry triggers.
    ///
    /// # Errors
    /// An unknown trigger source, stdin asked for both, or a trigger
    /// without the flight recorder: one sentence.
    pub fn apply(&self, cfg: &mut Config, stdin_records: bool) -> Result<TriggerSources> {
        let mut t = TriggerSources::default();
        for source in &self.trigger_on {
            match source.as_str() {
                "SIGUSR1" | "sigusr1" | "USR1" => t.sigusr1 = true,
                "stdin" => t.stdin = true,
                other => {
                    return usage(format!(
                        "--trigger-on: unknown trigger source '{other}' (expected SIGUSR1 or stdin)"
                    ))
                }
            }
        }
        if t.stdin && stdin_records {
            return usage(
                "--trigger-on stdin cannot be used with --stdin: stdin carries the records",
            );
        }
        t.every_ns = self.trigger_every.map(Duration::ns);
        let asked = self.pre.is_some() || self.post.is_some() || self.pre_bytes.is_some();
        if !asked && (t.stdin || t.sigusr1 || t.every_ns.is_some()) {
            return usage("triggers need the flight recorder: give --pre and --post");
        }
        if self.keep_events.is_some() && !asked {
            return usage("--keep-events keeps flight-recorder events: give --pre and --post");
        }
        cfg.retention.keep_events = self.keep_events.unwrap_or(0);
        if asked {
            cfg.flight = Some(FlightConfig {
                pre_ns: self.pre.unwrap_or(DEFAULT_PRE).ns(),
                pre_bytes: self.pre_bytes.map_or(0, Size::bytes), // 0: sized when settled
                post_ns: self.post.unwrap_or(DEFAULT_POST).ns(),
            });
        }
        Ok(t)
    }
}
