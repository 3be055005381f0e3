//! `record`'s write-path flags — who calls `write()` (`--mode`), the ring
//! between the producer and the writer (`--ring`, the `--stall` it is
//! sized for, `--on-full`) — their part of the engine's configuration
//! ([`RingArgs::apply`]), and how the ring's sizing is told: the warnings
//! before a recording ([`ring_warnings`]) and the summary's line
//! ([`ring_line`]).
//!
//! Design choice: these flags are a group of their own, neither the
//! source's nor the storage's, because the ring is where the two meet: it
//! is sized from the source's rate and the storage's worst stall, so the
//! plan settles it after both.

use clap::Args;
use rtrec_engine::{Config, Mode, OnFull, RingSizing, Stall, StallSource};
use rtrec_units::value::Ring;
use rtrec_units::{format_duration, format_size};

use crate::device::RecordDeviceArgs;
use crate::error::{usage, Result};

/// The write path: who calls `write()`, and the ring in front of it.
#[derive(Debug, Args)]
pub struct RingArgs {
    /// Write path: who calls write(): the writer thread behind a ring, or the caller inline (`direct` is the former name of inline and still accepted).
    #[arg(long, value_enum, default_value_t = Config::default().mode, value_name = "MODE")]
    pub mode: Mode,

    /// Capacity of the ring between producer and writer: `auto` (the default) sizes it from the
    /// data: rate × the writer stall to absorb (--stall, --device's profile, else 500 ms) × 4, at
    /// most 1/8 of memory (256 MiB); 16 MiB when the rate is unknown (--stdin). Or a size (e.g.
    /// 4MiB, at least one record). See docs/embedded.md
    #[arg(long, value_parser = rtrec_units::value::ring, value_name = "auto|SIZE")]
    pub ring: Option<Ring>,

    /// The longest writer stall the auto ring absorbs: a duration (e.g. 300ms) or a device profile
    /// from `rtrec device probe` (its worst stall) [default: --device's profile, else 500ms]
    #[arg(long, value_parser = stall_value, value_name = "DURATION|PROFILE")]
    pub stall: Option<Stall>,

    /// When the ring is full: drop (count and store the loss; the producer never waits) or block
    /// (wait for room). [default: block with --stdin (a pipe can wait), drop for the synthetic
    /// real-time source]
    #[arg(
        long,
        value_enum,
        default_value_t = OnFull::Drop,
        default_value_if("stdin", "true", "block"),
        // Told in words above: clap would show `[default: drop]` alone.
        hide_default_value = true,
        value_name = "POLICY"
    )]
    pub on_full: OnFull,
}

impl RingArgs {
    /// Its part of the engine's configuration (`mode`, `on_full`), and the
    /// ring `--ring` fixes (`None`: the auto rule's, sized when the plan
    /// is settled).
    ///
    /// # Errors
    /// A ring larger than this machine's address space.
    pub fn apply(&self, cfg: &mut Config) -> Result<Option<usize>> {
        cfg.mode = self.mode;
        cfg.on_full = self.on_full;
        match self.ring {
            None | Some(Ring::Auto) => Ok(None),
            Some(Ring::Fixed(size)) => usize::try_from(size.bytes())
                .map(Some)
                .or_else(|_| usage("--ring: too large")),
        }
    }

    /// The writer stall the auto ring absorbs: `--stall`, else the worst
    /// stall of `--device`'s profile, else the engine's default (`None`).
    pub fn stall(&self, device: &RecordDeviceArgs) -> Option<Stall> {
        match (self.stall, &device.device) {
            (Some(s), _) => Some(s),
            (None, Some(d)) => Some(Stall {
                ns: d.profile.worst_stall_ns(),
                source: StallSource::Device,
            }),
            (None, None) => None,
        }
    }
}

/// `--stall`'s parser: a duration, or a device profile (a shipped name or
/// a file from `rtrec device probe`) whose worst stall is taken.
///
/// # Errors
/// One sentence: neither a duration nor a loadable profile.
pub fn stall_value(s: &str) -> std::result::Result<Stall, String> {
    match rtrec_units::value::interval(s) {
        Ok(d) => {
            return Ok(Stall {
                ns: d.ns(),
                source: StallSource::Given,
            })
        }
        // A bare number is a duration without its unit (the units' own
        // sentence suggests one), never a profile's name.
        Err(e) if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') => return Err(e.to_string()),
        Err(_) => {}
    }
    match rtrec_emu::Profile::load(s) {
        Ok(p) => Ok(Stall {
            ns: p.worst_stall_ns(),
            source: if std::path::Path::new(s).exists() {
                StallSource::Probe
            } else {
                StallSource::Device
            },
        }),
        Err(e) => Err(format!(
            "'{s}' is neither a duration (e.g. 300ms) nor a device profile ({e})"
        )),
    }
}

/// What forbids the ring the data needs, one sentence each: the auto
/// rule's memory cap, and `RLIMIT_MEMLOCK` when `--rt` locks the ring
/// (`locks_memory`; root is not bound by it).
pub fn ring_warnings(r: &RingSizing, locks_memory: bool) -> Vec<String> {
    let mut out = Vec::new();
    if r.auto && r.capped() {
        out.push(format!(
            "the ring needs {} to absorb a {} writer stall ({}) {} times at this rate, but the memory cap is {} (1/8 of memory, at most 256 MiB), so it absorbs {}; give --ring SIZE to override",
            format_size(r.needed_bytes),
            format_duration(r.stall_ns),
            stall_from(r.stall_source),
            r.margin,
            format_size(r.cap_bytes),
            covers(r),
        ));
    }
    if locks_memory && rtrec_sys::effective_uid() != 0 {
        if let Some(limit) = rtrec_sys::memlock_limit() {
            if limit < r.ring_bytes as u64 {
                out.push(format!(
                    "RLIMIT_MEMLOCK ({}) is below the {} ring that --rt locks: raise it (ulimit -l) or give a smaller --ring",
                    format_size(limit),
                    format_size(r.ring_bytes as u64)
                ));
            }
        }
    }
    out
}

fn stall_from(s: StallSource) -> &'static str {
    match s {
        StallSource::Default => "the default, no device known",
        StallSource::Device => "the device profile's worst",
        StallSource::Probe => "the probed device's worst",
        StallSource::Given => "--stall",
    }
}

fn covers(r: &RingSizing) -> String {
    r.covers_stall_s
        .map_or("an unknown time at an unknown rate".into(), |s| {
            let ns = (s * 1e9) as u64;
            format!(
                "a writer stall of up to {}",
                rtrec_units::format_duration(ns)
            )
        })
}

/// The summary's ring line: its size, how it was sized, and the longest
/// writer stall it absorbs at this rate.
pub fn ring_line(r: &RingSizing) -> String {
    let how = match (r.auto, r.rate_bytes_per_s) {
        (false, _) => "--ring".to_string(),
        (true, None) => "auto: the rate is unknown, the default".to_string(),
        (true, Some(rate)) => format!(
            "auto: {}/s × {} stall ({}) × {}{}",
            format_size(rate),
            format_duration(r.stall_ns),
            stall_from(r.stall_source),
            r.margin,
            if r.capped() {
                format!(", capped at {}", format_size(r.cap_bytes))
            } else {
                String::new()
            }
        ),
    };
    format!(
        "ring {} ({how}): absorbs {}\n",
        format_size(r.ring_bytes as u64),
        covers(r)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_stall_gets_the_unit_suggestion_and_a_duration_or_profile_is_taken() {
        assert_eq!(
            stall_value("300").unwrap_err(),
            "'300' needs a unit: did you mean 300ms?"
        );
        assert_eq!(stall_value("300ms").unwrap().ns, 300_000_000);
        assert_eq!(stall_value("sd").unwrap().source, StallSource::Device);
        assert!(stall_value("no-such-profile")
            .unwrap_err()
            .starts_with("'no-such-profile' is neither a duration"));
    }
}
