//! How big things are: the byte counts several layers share (the ring's
//! entry header, the reserved tail of a framed file) and the rules that
//! size a recording from its workload, so that `rtrec record` and the C API
//! get the same files, ring and pre-trigger window from the same code.
//!
//! A base module: it imports only [`crate::format`]. The rules work on
//! numbers; [`crate::Config::sizes_for`] feeds them from a configuration.
//!
//! # The rules
//!
//! With `entry = max_record + ENTRY_HEADER_LEN` (one record in the ring or
//! the window) and `stored` the bytes one record of `max_record` takes in a
//! file:
//!
//! - **Ring**: `max(16 MiB, 4 × entry)`: at least four records of headroom,
//!   and never less than 16 MiB, which absorbs stalls of a few hundred
//!   milliseconds at the published study's rates.
//! - **File size**, rounded up to a 4 KiB page, header and reserved tail
//!   included:
//!   - flight recorder: one event per file: `(pre + post) / period + 4`
//!     records when the period is known, 1024 records otherwise;
//!   - a known number of fixed-size records: exactly that many, in one file
//!     (as the published study records; the pre-allocation matches what is
//!     written);
//!   - otherwise 64 MiB ([`DEFAULT_FILE_SIZE`]).
//! - **Ring on a known slow device** ([`ring_for_stall`]): when the
//!   storage's worst stall is known (an emulated device's profile, a
//!   probed board), the ring holds `STALL_MARGIN × stall` of data at the
//!   known rate, plus four records: `(margin × stall / period + 4) × entry`.
//!   The margin covers stalls that come back to back (a GC pause right
//!   after a flush tail) and the writer catching up after one (it writes
//!   what piled up while new records keep arriving).
//! - **Pre-trigger window**: what the pre span needs at the known rate,
//!   plus two records (`(pre / period + 2) × entry`); 64 MiB when the rate
//!   is unknown.

use crate::format::{FRAME_HEADER_LEN, HEADER_LEN};

/// Bytes of an entry's header in the ring and in the flight recorder's
/// window (`kind u32 | len u32 | seq u64 | ts_ns u64`).
pub const ENTRY_HEADER_LEN: usize = 24;

/// Bytes kept free at the end of every framed file for the closing frames
/// (a loss frame and the end frame with a reason).
pub const RESERVED_BYTES: u64 = 1024;

/// Bytes of an end frame's payload that fit in the reserved tail after a
/// loss frame (`RESERVED_BYTES` minus two frame headers and a loss payload).
pub(crate) const END_PAYLOAD_MAX: usize =
    RESERVED_BYTES as usize - 2 * FRAME_HEADER_LEN - crate::format::LossPayload::LEN;

/// One mebibyte.
pub const MIB: u64 = 1 << 20;

/// File size when the workload does not decide it.
pub const DEFAULT_FILE_SIZE: u64 = 64 * MIB;

/// The smallest ring the rules give.
pub const MIN_RING_BYTES: usize = 16 * MIB as usize;

/// Pre-trigger window when the record rate is unknown.
pub const DEFAULT_PRE_BYTES: u64 = 64 * MIB;

/// Records per event file when the record rate is unknown.
const EVENT_RECORDS_UNKNOWN_RATE: u64 = 1024;

/// Files are sized in whole pages.
const PAGE: u64 = 4096;

/// What the recording will see, as far as the caller knows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// One record every this many ns, when the rate is known (a periodic
    /// source); `None` or 0: unknown.
    pub period_ns: Option<u64>,
    /// Records in the whole recording, when known.
    pub records: Option<u64>,
    /// Every record is exactly `max_record` bytes (not merely at most).
    pub fixed_size: bool,
}

impl Workload {
    /// Nothing known: the defaults.
    pub const UNKNOWN: Workload = Workload {
        period_ns: None,
        records: None,
        fixed_size: false,
    };

    fn period(&self) -> Option<u64> {
        self.period_ns.filter(|&p| p > 0)
    }
}

/// What the rules give (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes per file.
    pub file_size: u64,
    /// Ring capacity, bytes.
    pub ring_bytes: usize,
    /// Flight recorder's pre-trigger window, bytes.
    pub pre_bytes: u64,
}

/// The flight recorder's spans, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spans {
    /// Kept before a trigger.
    pub pre_ns: u64,
    /// Recorded after a trigger.
    pub post_ns: u64,
}

/// Applies the rules: `max_record` is the largest record, `stored` the
/// bytes it takes in a file, `flight` the spans when the flight recorder is
/// used.
pub fn sizes(w: &Workload, max_record: usize, stored: u64, flight: Option<Spans>) -> Sizes {
    let entry = (max_record as u64).saturating_add(ENTRY_HEADER_LEN as u64);
    let file_of = |records: u64| {
        records
            .saturating_mul(stored)
            .saturating_add(HEADER_LEN as u64 + RESERVED_BYTES)
            .div_ceil(PAGE)
            .saturating_mul(PAGE)
    };
    let file_size = match (flight, w.records) {
        (Some(s), _) => file_of(match w.period() {
            Some(p) => s.pre_ns.saturating_add(s.post_ns) / p + 4,
            None => EVENT_RECORDS_UNKNOWN_RATE,
        }),
        (None, Some(n)) if w.fixed_size => file_of(n),
        _ => DEFAULT_FILE_SIZE,
    };
    let pre_bytes = match (flight, w.period()) {
        (Some(s), Some(p)) => (s.pre_ns / p + 2).saturating_mul(entry),
        _ => DEFAULT_PRE_BYTES,
    };
    Sizes {
        file_size,
        ring_bytes: MIN_RING_BYTES
            .max(usize::try_from(entry.saturating_mul(4)).unwrap_or(usize::MAX)),
        pre_bytes,
    }
}

/// How many times the storage's worst stall the ring holds (see the
/// module docs).
pub const STALL_MARGIN: u64 = 4;

/// The ring that rides out a storage stall of `stall_ns` at the workload's
/// rate: `(STALL_MARGIN × stall / period + 4) × entry` bytes, never less
/// than [`MIN_RING_BYTES`]. With the rate unknown, the 16 MiB default.
pub fn ring_for_stall(w: &Workload, max_record: usize, stall_ns: u64) -> usize {
    let entry = (max_record as u64).saturating_add(ENTRY_HEADER_LEN as u64);
    let Some(p) = w.period() else {
        return MIN_RING_BYTES;
    };
    let records = STALL_MARGIN.saturating_mul(stall_ns) / p + 4;
    usize::try_from(records.saturating_mul(entry))
        .unwrap_or(usize::MAX)
        .max(MIN_RING_BYTES)
}

/// What a ring of `ring_bytes` holds in seconds of data when one record of
/// `max_record` bytes arrives every `period_ns`: the whole entries it
/// takes, one period each. `None` when the rate is unknown (no period, or
/// 0).
pub fn ring_seconds(ring_bytes: u64, max_record: u64, period_ns: Option<u64>) -> Option<f64> {
    let entry = max_record.saturating_add(ENTRY_HEADER_LEN as u64);
    let p = period_ns.filter(|&p| p > 0)?;
    Some((ring_bytes / entry) as f64 * p as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_count_of_fixed_records_fits_one_file_exactly() {
        let w = Workload {
            records: Some(1000),
            fixed_size: true,
            ..Workload::UNKNOWN
        };
        let s = sizes(&w, 100, 132, None);
        assert_eq!(s.file_size % PAGE, 0);
        assert!(s.file_size >= 1000 * 132 + HEADER_LEN as u64 + RESERVED_BYTES);
        assert!(s.file_size < 1000 * 132 + HEADER_LEN as u64 + RESERVED_BYTES + PAGE);
    }

    #[test]
    fn records_of_varying_size_or_an_unknown_count_get_the_default_file() {
        let w = Workload {
            records: Some(10),
            ..Workload::UNKNOWN
        };
        assert_eq!(sizes(&w, 100, 132, None).file_size, DEFAULT_FILE_SIZE);
        assert_eq!(
            sizes(&Workload::UNKNOWN, 100, 132, None).file_size,
            DEFAULT_FILE_SIZE
        );
    }

    #[test]
    fn the_ring_holds_four_records_and_at_least_16_mib() {
        assert_eq!(
            sizes(&Workload::UNKNOWN, 100, 132, None).ring_bytes,
            MIN_RING_BYTES
        );
        let big = 8 << 20;
        assert_eq!(
            sizes(&Workload::UNKNOWN, big, big as u64, None).ring_bytes,
            4 * (big + ENTRY_HEADER_LEN)
        );
    }

    #[test]
    fn the_flight_window_follows_the_rate_and_one_event_fills_one_file() {
        let w = Workload {
            period_ns: Some(1_000_000),
            ..Workload::UNKNOWN
        };
        let spans = Spans {
            pre_ns: 50_000_000,
            post_ns: 20_000_000,
        };
        let s = sizes(&w, 100, 132, Some(spans));
        assert_eq!(s.pre_bytes, 52 * 124);
        assert!(s.file_size >= 74 * 132);
        let unknown = sizes(&Workload::UNKNOWN, 100, 132, Some(spans));
        assert_eq!(unknown.pre_bytes, DEFAULT_PRE_BYTES);
    }

    #[test]
    fn the_stall_ring_holds_the_margin_times_the_stall_at_the_rate() {
        // 1 MiB records every 5 ms, a 250 ms stall: 4 × 50 + 4 records.
        let w = Workload {
            period_ns: Some(5_000_000),
            ..Workload::UNKNOWN
        };
        let mib = MIB as usize;
        assert_eq!(
            ring_for_stall(&w, mib, 250_000_000),
            204 * (mib + ENTRY_HEADER_LEN)
        );
        // Small records or an unknown rate: the 16 MiB floor.
        assert_eq!(ring_for_stall(&w, 100, 250_000_000), MIN_RING_BYTES);
        assert_eq!(
            ring_for_stall(&Workload::UNKNOWN, mib, 250_000_000),
            MIN_RING_BYTES
        );
    }

    #[test]
    fn the_ring_holds_one_period_per_whole_entry_and_nothing_known_without_a_rate() {
        // 16 MiB of 16 KiB records (+ 24 B headers): 1022 entries of 5 ms.
        let held = ring_seconds(16 * MIB, 16 << 10, Some(5_000_000));
        assert_eq!(held, Some(1022.0 * 5e6 / 1e9));
        assert_eq!(ring_seconds(16 * MIB, 16 << 10, None), None);
        assert_eq!(ring_seconds(16 * MIB, 16 << 10, Some(0)), None);
    }

    #[test]
    fn a_zero_period_counts_as_unknown_instead_of_dividing_by_zero() {
        let w = Workload {
            period_ns: Some(0),
            ..Workload::UNKNOWN
        };
        let spans = Spans {
            pre_ns: 1,
            post_ns: 1,
        };
        assert_eq!(sizes(&w, 1, 1, Some(spans)).pre_bytes, DEFAULT_PRE_BYTES);
    }
}
