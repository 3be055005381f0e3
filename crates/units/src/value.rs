//! The typed values of every command's flags, and one parser per kind of
//! flag, for clap's `value_parser` (plain functions: this crate depends on
//! nothing, clap included).
//!
//! - [`Size`] (bytes) and [`Duration`] (nanoseconds) print exactly and
//!   parse back (`2MiB`, `50ms`, `18800B`), so a command line can take its
//!   defaults from the engine's constants (`default_value_t =
//!   Size::from_bytes(DEFAULT_IO_BLOCK)`) and `--help` still shows
//!   `[default: 1MiB]`.
//! - The parsers differ in two things only: the unit a bare number
//!   suggests ([`Kind`]) and whether zero is allowed. Zero is refused with
//!   one sentence ([`Error::Zero`]) whichever command asks.
//!
//! | parser | for | a bare `N` suggests | zero |
//! |---|---|---|---|
//! | [`record_size`] | one record (`--size`, `--max-line`) | `NB or NKiB` | refused |
//! | [`size`] | files, rings, totals, buffers | `NMiB` (`NB` from 1024) | refused |
//! | [`interval`] | periods, latencies, thresholds | `Nms` | refused |
//! | [`interval_or_zero`] | an interval where 0 means "never" (`--sync-every`) | `Nms` | allowed |
//! | [`span`] | how long something runs (`--duration`, `--post`) | `Ns` | refused |
//! | [`span_or_zero`] | a wait where 0 means "do not wait" (`--lock-timeout`) | `Ns` | allowed |
//! | [`ring`] | `--ring` of `record` and `bench`: `auto` or a [`size`] | `NMiB` | refused |

use std::fmt;
use std::str::FromStr;

use crate::{parse_kind, Error, Kind};

/// A byte count from a command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(u64);

impl Size {
    /// `bytes` bytes.
    pub const fn from_bytes(bytes: u64) -> Size {
        Size(bytes)
    }

    /// The byte count.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

/// The grammar, zero allowed, a bare number answered as a [`Kind::Size`].
impl FromStr for Size {
    type Err = Error;

    fn from_str(s: &str) -> Result<Size, Error> {
        parse_kind(s, Kind::Size).map(Size)
    }
}

/// Exact, in the largest binary unit that divides it (`2MiB`, `1536B`):
/// it parses back to the same value.
///
/// ```
/// use rtrec_units::value::Size;
/// assert_eq!(Size::from_bytes(2 << 20).to_string(), "2MiB");
/// assert_eq!(Size::from_bytes(18_800).to_string(), "18800B");
/// ```
impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        exact(
            f,
            self.0,
            &[
                ("TiB", 1 << 40),
                ("GiB", 1 << 30),
                ("MiB", 1 << 20),
                ("KiB", 1 << 10),
            ],
            "B",
        )
    }
}

/// A span of time from a command line, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Duration {
    /// `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Duration {
        Duration(ns)
    }

    /// The span in nanoseconds.
    pub const fn ns(self) -> u64 {
        self.0
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> std::time::Duration {
        std::time::Duration::from_nanos(d.0)
    }
}

/// The grammar, zero allowed, a bare number answered as a
/// [`Kind::Interval`].
impl FromStr for Duration {
    type Err = Error;

    fn from_str(s: &str) -> Result<Duration, Error> {
        parse_kind(s, Kind::Interval).map(Duration)
    }
}

/// Exact, in the largest unit that divides it (`5ms`, `1s`, `250µs`): it
/// parses back to the same value.
///
/// ```
/// use rtrec_units::value::Duration;
/// assert_eq!(Duration::from_ns(50_000_000).to_string(), "50ms");
/// assert_eq!(Duration::from_ns(1_500_000).to_string(), "1500µs");
/// ```
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        exact(
            f,
            self.0,
            &[("s", 1_000_000_000), ("ms", 1_000_000), ("µs", 1_000)],
            "ns",
        )
    }
}

/// `v` in the first of `units` (largest first) that divides it, else in
/// `base`; zero in `base`.
fn exact(f: &mut fmt::Formatter<'_>, v: u64, units: &[(&str, u64)], base: &str) -> fmt::Result {
    match units.iter().find(|&&(_, d)| v != 0 && v % d == 0) {
        Some(&(name, d)) => write!(f, "{}{name}", v / d),
        None => write!(f, "{v}{base}"),
    }
}

/// `s` as a `kind`, refusing zero with [`Error::Zero`].
fn positive(s: &str, kind: Kind) -> Result<u64, Error> {
    match parse_kind(s, kind)? {
        0 => Err(Error::Zero {
            input: s.to_string(),
            quantity: kind.quantity(),
        }),
        v => Ok(v),
    }
}

/// The size of one record: at least 1 byte; a bare number suggests bytes
/// or KiB.
///
/// ```
/// assert_eq!(rtrec_units::value::record_size("16KiB").unwrap().bytes(), 16_384);
/// assert_eq!(
///     rtrec_units::value::record_size("0B").unwrap_err().to_string(),
///     "'0B' is zero: give a size of at least 1B"
/// );
/// ```
///
/// # Errors
/// [`Error`]: outside the grammar, or zero.
pub fn record_size(s: &str) -> Result<Size, Error> {
    positive(s, Kind::RecordSize).map(Size)
}

/// A file, ring, total or buffer size: at least 1 byte; a bare number
/// suggests MiB (bytes from 1024 up).
///
/// # Errors
/// [`Error`]: outside the grammar, or zero.
pub fn size(s: &str) -> Result<Size, Error> {
    positive(s, Kind::Size).map(Size)
}

/// A period, latency or threshold: at least 1 ns; a bare number suggests
/// milliseconds.
///
/// # Errors
/// [`Error`]: outside the grammar, or zero.
pub fn interval(s: &str) -> Result<Duration, Error> {
    positive(s, Kind::Interval).map(Duration)
}

/// An interval where zero has a meaning of its own (`--sync-every 0`: only
/// when a file is closed); a bare number suggests milliseconds.
///
/// # Errors
/// [`Error`]: outside the grammar.
pub fn interval_or_zero(s: &str) -> Result<Duration, Error> {
    parse_kind(s, Kind::Interval).map(Duration)
}

/// How long something runs: at least 1 ns; a bare number suggests seconds.
///
/// ```
/// assert_eq!(
///     rtrec_units::value::span("10").unwrap_err().to_string(),
///     "'10' needs a unit: did you mean 10s?"
/// );
/// ```
///
/// # Errors
/// [`Error`]: outside the grammar, or zero.
pub fn span(s: &str) -> Result<Duration, Error> {
    positive(s, Kind::Span).map(Duration)
}

/// A wait where zero means "do not wait"; a bare number suggests seconds.
///
/// # Errors
/// [`Error`]: outside the grammar.
pub fn span_or_zero(s: &str) -> Result<Duration, Error> {
    parse_kind(s, Kind::Span).map(Duration)
}

/// `--ring` of `rtrec record` and `rtrec bench`: one type and one parser
/// ([`ring`]) for both, so the two commands cannot read it differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    /// `auto`: sized from the data by the engine's rule
    /// (`rtrec_engine::sizing::auto_ring`).
    Auto,
    /// A size the user chose.
    Fixed(Size),
}

/// `--ring`: `auto`, or a size as [`size`] reads it.
///
/// # Errors
/// [`size`]'s sentence.
pub fn ring(s: &str) -> Result<Ring, Error> {
    match s {
        "auto" => Ok(Ring::Auto),
        _ => size(s).map(Ring::Fixed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_is_auto_or_a_size_and_zero_is_refused() {
        assert_eq!(ring("auto").unwrap(), Ring::Auto);
        assert_eq!(
            ring("4MiB").unwrap(),
            Ring::Fixed(Size::from_bytes(4 << 20))
        );
        assert!(ring("0").is_err());
        assert!(ring("Auto").is_err());
    }

    #[test]
    fn every_value_prints_exactly_and_parses_back() {
        for b in [
            0,
            1,
            512,
            1536,
            18_800,
            16 << 10,
            2 << 20,
            64 << 20,
            3 << 30,
            1 << 40,
        ] {
            let s = Size::from_bytes(b);
            assert_eq!(s.to_string().parse::<Size>(), Ok(s), "{s}");
        }
        for ns in [
            0,
            1,
            999,
            250_000,
            1_500_000,
            5_000_000,
            50_000_000,
            1_000_000_000,
            90_000_000_000,
        ] {
            let d = Duration::from_ns(ns);
            assert_eq!(d.to_string().parse::<Duration>(), Ok(d), "{d}");
        }
        assert_eq!(Size::from_bytes(16 << 10).to_string(), "16KiB");
        assert_eq!(Size::from_bytes(0).to_string(), "0B");
        assert_eq!(Duration::from_ns(5_000_000).to_string(), "5ms");
        assert_eq!(Duration::from_ns(0).to_string(), "0ns");
        assert_eq!(Duration::from_ns(250_000).to_string(), "250µs");
    }

    #[test]
    fn zero_is_refused_with_one_sentence_by_every_positive_parser() {
        assert_eq!(
            size("0MiB").unwrap_err().to_string(),
            "'0MiB' is zero: give a size of at least 1B"
        );
        assert_eq!(
            record_size("0").unwrap_err().to_string(),
            "'0' is zero: give a size of at least 1B"
        );
        assert_eq!(
            interval("0ms").unwrap_err().to_string(),
            "'0ms' is zero: give a duration of at least 1ns"
        );
        assert_eq!(
            span("0s").unwrap_err().to_string(),
            "'0s' is zero: give a duration of at least 1ns"
        );
        assert_eq!(interval_or_zero("0"), Ok(Duration::from_ns(0)));
        assert_eq!(span_or_zero("0s"), Ok(Duration::from_ns(0)));
    }

    #[test]
    fn each_parser_suggests_the_unit_of_its_kind() {
        let err = |r: Result<Size, Error>| r.unwrap_err().to_string();
        assert_eq!(
            err(record_size("300")),
            "'300' needs a unit: did you mean 300B or 300KiB?"
        );
        assert_eq!(err(size("300")), "'300' needs a unit: did you mean 300MiB?");
        assert_eq!(
            interval("5").unwrap_err().to_string(),
            "'5' needs a unit: did you mean 5ms?"
        );
        assert_eq!(
            span("10").unwrap_err().to_string(),
            "'10' needs a unit: did you mean 10s?"
        );
    }
}
