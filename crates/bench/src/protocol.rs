//! The measurement protocol: how many sets of how many periodic calls,
//! the period, the record size, the flush interval and the file size. The
//! study's full protocol (`--paper`) and the quick default are both here,
//! with the overrides of `--sets`, `--writes`, `--period`, `--size` and
//! `--ring`.

use serde::{Deserialize, Serialize};

use crate::study::Study;
use rtrec_units::value::Ring;

/// S1's workload: 16 KB every 5 ms, flush every 2 MB, files of 100 MB
/// (binary units: the paper's sizes are powers of two).
pub const RECORD_BYTES: u64 = 16 << 10;
/// 5 ms.
pub const PERIOD_NS: u64 = 5_000_000;
/// 2 MiB.
pub const FLUSH_EVERY_BYTES: u64 = 2 << 20;
/// 100 MiB.
pub const FILE_BYTES: u64 = 100 << 20;

/// Default number of sets per case (quick run).
pub const DEFAULT_SETS: u32 = 2;
/// Default number of calls per set (quick run).
pub const DEFAULT_WRITES: u64 = 2_000;

/// What one case measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    /// Sets per case; the set with the largest maximum is reported.
    pub sets: u32,
    /// Timed calls per set.
    pub writes: u64,
    /// Period of the absolute-deadline timer, ns.
    pub period_ns: u64,
    /// Bytes per record (per `write()`, per memcpy).
    pub record_bytes: u64,
    /// Flush interval of the recording cases, bytes.
    pub flush_every_bytes: u64,
    /// File size: pre-allocation, and the size of each `fallocate()` of
    /// the fallocate cases, bytes.
    pub file_bytes: u64,
    /// True when this is the study's own protocol (`--paper`).
    pub paper: bool,
    /// `--ring`: the ring of the recording cases in ring mode, bytes;
    /// absent: the engine's default (16 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_bytes: Option<u64>,
}

/// The user's overrides, already validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--paper`.
    pub paper: bool,
    /// `--sets`.
    pub sets: Option<u32>,
    /// `--writes`.
    pub writes: Option<u64>,
    /// `--period`, ns.
    pub period_ns: Option<u64>,
    /// `--size`, bytes.
    pub record_bytes: Option<u64>,
    /// `--ring`.
    pub ring: Option<Ring>,
    /// The worst stall of `--device`'s profile, for `--ring auto`.
    pub stall: Option<rtrec_engine::Stall>,
}

impl Protocol {
    /// The protocol of a case of `study` with these overrides.
    pub fn for_study(study: Study, o: &Overrides) -> Protocol {
        let (sets, writes) = if o.paper {
            study.paper_protocol()
        } else {
            (DEFAULT_SETS, DEFAULT_WRITES)
        };
        let paper = o.paper
            && o.sets.is_none()
            && o.writes.is_none()
            && o.period_ns.is_none()
            && o.record_bytes.is_none();
        let period_ns = o.period_ns.unwrap_or(PERIOD_NS);
        let record_bytes = o.record_bytes.unwrap_or(RECORD_BYTES);
        let ring_bytes = o.ring.map(|r| match r {
            Ring::Fixed(b) => b.bytes(),
            // As `rtrec record --size SIZE --period PERIOD` sizes it: fixed-size
            // records of the protocol's size (not the engine's 1 MiB maximum).
            Ring::Auto => {
                let w = rtrec_engine::Workload {
                    period_ns: Some(period_ns),
                    records: None,
                    fixed_size: true,
                    stall: o.stall,
                };
                let cap =
                    rtrec_engine::sizing::ring_cap(rtrec_host::machine::meminfo_bytes("MemTotal"));
                rtrec_engine::sizing::auto_ring(&w, record_bytes as usize, cap).ring_bytes as u64
            }
        });
        Protocol {
            sets: o.sets.unwrap_or(sets),
            writes: o.writes.unwrap_or(writes),
            period_ns,
            record_bytes,
            flush_every_bytes: FLUSH_EVERY_BYTES,
            file_bytes: FILE_BYTES,
            paper,
            ring_bytes,
        }
    }

    /// Expected time of the timed loops of one case, ns (setup excluded).
    pub fn loop_ns(&self) -> u64 {
        self.sets as u64 * self.writes * self.period_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_uses_each_studys_own_protocol_and_overrides_win() {
        let paper = Overrides {
            paper: true,
            ..Overrides::default()
        };
        let p = Protocol::for_study(Study::S1Table1, &paper);
        assert_eq!((p.sets, p.writes, p.paper), (5, 10_000, true));
        let p = Protocol::for_study(Study::S2, &paper);
        assert_eq!((p.sets, p.writes), (1, 8_000));
        let o = Overrides {
            paper: true,
            writes: Some(10),
            ..Overrides::default()
        };
        let p = Protocol::for_study(Study::S1Table1, &o);
        assert_eq!((p.sets, p.writes, p.paper), (5, 10, false));
        let p = Protocol::for_study(Study::S1Table1, &Overrides::default());
        assert_eq!(
            (p.sets, p.writes, p.period_ns, p.record_bytes),
            (2, 2_000, 5_000_000, 16_384)
        );
    }
}
