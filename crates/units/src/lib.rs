//! rtrec's one grammar for sizes and durations, used by every command and
//! flag, and the one way rtrec prints them.
//!
//! **Must not depend on**: anything — no other crate of the workspace and no
//! external crate, so every crate can use it.
//!
//! # Grammar
//!
//! A value is a decimal number (`16`, `1.5`), optional spaces, and a unit.
//!
//! - **Sizes** ([`parse_size`]): `B`; `KiB`, `MiB`, `GiB`, `TiB` are powers
//!   of 1024; `KB` (or `kB`), `MB`, `GB`, `TB` are powers of 1000. The
//!   result must be a whole number of bytes (`1.5KiB` is 1536, `1.3KiB` is
//!   refused).
//! - **Durations** ([`parse_duration`], in nanoseconds): `ns`, `us` (or
//!   `µs`), `ms`, `s`, `min`, `h`. The result must be a whole number of
//!   nanoseconds.
//!
//! A bare number is an error whose message suggests a unit that fits what
//! the value is for ([`Kind`]: `'300' needs a unit: did you mean 300B or
//! 300KiB?` for a record size, `'10' needs a unit: did you mean 10s?` for how
//! long something runs): a unit is never guessed. So is a bare
//! `K`/`M`/`G`/`T`, which some tools read as powers of 1024 and others as
//! powers of 1000. Zero is a valid value of the grammar, and a bare `0`
//! needs no unit; the flag parsers of [`value`] refuse it where a value must
//! be positive, all with the same sentence ([`Error::Zero`]).
//!
//! # Command-line values
//!
//! [`value`] holds the typed values of every command's flags
//! ([`value::Size`], [`value::Duration`]) and one parser per kind of flag
//! ([`value::record_size`], [`value::size`], [`value::interval`],
//! [`value::span`], …) for clap's `value_parser`. Their
//! `Display` is exact and parses back, so a default taken from a constant
//! shows in `--help` as `[default: 2MiB]`.
//!
//! # Printing
//!
//! [`format_duration`] picks `ns`, `µs`, `ms` or `s`, [`format_size`] picks
//! `B`, `KiB`, `MiB`, `GiB` or `TiB`; both keep three significant digits
//! (whole numbers from 100 up) and drop trailing zeros: `812 ns`,
//! `12.5 ms`, `2.4 s`, `16 KiB`, `1.5 MiB`. Every printed value parses back
//! with the grammar above (exactly, when it is exact). [`format_mb_per_s`]
//! prints a throughput as the published studies do (`21 MB/s`, decimal),
//! [`format_size_per_s`] in rtrec's own units (`4 MiB/s`): the one place
//! every table, log line and page takes a throughput from.
//!
//! [`histogram`] draws latencies as a text histogram on a logarithmic
//! axis, its bin edges printed by [`format_duration`].
//!
//! # Design choices
//!
//! - Hand-written, no dependencies: `parse-size` reads a bare number as
//!   bytes and `K` as 1000, `humantime` takes no decimals (`1.5ms`) and no
//!   `µs`; neither is this grammar, and wrapping them would mean
//!   re-checking what they accept. Parsing is exact integer arithmetic
//!   (no floating point), so `0.1s` is exactly 100,000,000 ns.
//! - Units are spelled exactly (`MiB`, not `mib`); a unit that differs only
//!   in case is answered with the right spelling rather than accepted, since
//!   `mb` could as well be read as millibits.
#![deny(missing_docs)]

pub mod histogram;

use std::fmt;

pub mod value;

/// What a value measures; it decides the units, the words of the error
/// messages and the unit suggested for a bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// A byte count.
    Size,
    /// A span of time, in nanoseconds.
    Duration,
}

impl Quantity {
    fn noun(self) -> &'static str {
        match self {
            Quantity::Size => "size",
            Quantity::Duration => "duration",
        }
    }

    fn base(self) -> &'static str {
        match self {
            Quantity::Size => "bytes",
            Quantity::Duration => "nanoseconds",
        }
    }

    fn unit_list(self) -> &'static str {
        match self {
            Quantity::Size => {
                "B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)"
            }
            Quantity::Duration => "ns, us, µs, ms, s, min, h or d",
        }
    }

    /// The units accepted, each with its value in bytes or nanoseconds.
    fn units(self) -> &'static [(&'static str, u128)] {
        match self {
            Quantity::Size => SIZE_UNITS,
            Quantity::Duration => DURATION_UNITS,
        }
    }
}

/// What a value is for: it decides the unit a bare number suggests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One record: bytes or KiB (`300` suggests `300B or 300KiB`).
    RecordSize,
    /// Files, rings, totals, buffers: MiB for a small number, bytes for a
    /// large one (`64` suggests `64MiB`, `16384` suggests `16384B`).
    Size,
    /// A period, a latency, a threshold: milliseconds (`5` suggests `5ms`).
    Interval,
    /// How long something runs or waits: seconds (`10` suggests `10s`).
    Span,
}

impl Kind {
    /// Size or duration.
    pub fn quantity(self) -> Quantity {
        match self {
            Kind::RecordSize | Kind::Size => Quantity::Size,
            Kind::Interval | Kind::Span => Quantity::Duration,
        }
    }

    /// The value with the unit most likely meant, for a bare `number`.
    fn suggest(self, number: &str) -> String {
        let small = decimal(number).is_some_and(|(m, s)| m / s < 1024);
        match self {
            Kind::RecordSize if small => format!("{number}B or {number}KiB"),
            Kind::RecordSize => format!("{number}B"),
            Kind::Size if small => format!("{number}MiB"),
            Kind::Size => format!("{number}B"),
            Kind::Interval => format!("{number}ms"),
            Kind::Span => format!("{number}s"),
        }
    }
}

const SIZE_UNITS: &[(&str, u128)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("KB", 1_000),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
];

const DURATION_UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000), // Greek mu, as some keyboards type it
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Why a value was refused. Its `Display` is one sentence that quotes the
/// value and says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Nothing was given.
    Empty(Quantity),
    /// A number without a unit.
    NeedsUnit {
        /// The value as given.
        input: String,
        /// The value with the unit most likely meant.
        suggestion: String,
        /// Size or duration.
        quantity: Quantity,
    },
    /// `K`, `M`, `G` or `T` alone: powers of 1024 or of 1000?
    AmbiguousUnit {
        /// The value as given.
        input: String,
        /// The number part.
        number: String,
        /// The prefix letter.
        prefix: char,
    },
    /// A unit outside the grammar.
    UnknownUnit {
        /// The value as given.
        input: String,
        /// The unit part.
        unit: String,
        /// The accepted unit with the same letters in another case, if any.
        did_you_mean: Option<&'static str>,
        /// Size or duration.
        quantity: Quantity,
    },
    /// The number part is not a decimal number.
    NotANumber {
        /// The value as given.
        input: String,
        /// Size or duration.
        quantity: Quantity,
    },
    /// A minus sign.
    Negative {
        /// The value as given.
        input: String,
    },
    /// A fraction of a byte or of a nanosecond.
    NotWhole {
        /// The value as given.
        input: String,
        /// Size or duration.
        quantity: Quantity,
    },
    /// More than `u64::MAX` bytes or nanoseconds.
    TooLarge {
        /// The value as given.
        input: String,
    },
    /// Zero, where the value must be positive (the flag parsers of
    /// [`value`]).
    Zero {
        /// The value as given.
        input: String,
        /// Size or duration.
        quantity: Quantity,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty(q) => write!(f, "an empty value is not a {}", q.noun()),
            Error::NeedsUnit {
                input, suggestion, ..
            } => write!(f, "'{input}' needs a unit: did you mean {suggestion}?"),
            Error::AmbiguousUnit {
                input,
                number,
                prefix,
            } => write!(
                f,
                "'{input}' is ambiguous: write {number}{prefix}iB (powers of 1024) or {number}{prefix}B (powers of 1000)"
            ),
            Error::UnknownUnit {
                input,
                unit,
                did_you_mean: Some(right),
                ..
            } => write!(f, "'{input}' has an unknown unit '{unit}': did you mean {right}?"),
            Error::UnknownUnit {
                input,
                unit,
                did_you_mean: None,
                quantity,
            } => write!(
                f,
                "'{input}' has an unknown unit '{unit}' (a {} takes {})",
                quantity.noun(),
                quantity.unit_list()
            ),
            Error::NotANumber { input, quantity } => write!(
                f,
                "'{input}' is not a {}: expected a number and a unit, like {}",
                quantity.noun(),
                match quantity {
                    Quantity::Size => "16KiB",
                    Quantity::Duration => "5ms",
                }
            ),
            Error::Negative { input } => write!(f, "'{input}' is negative"),
            Error::NotWhole { input, quantity } => {
                write!(f, "'{input}' is not a whole number of {}", quantity.base())
            }
            Error::TooLarge { input } => write!(f, "'{input}' is too large"),
            Error::Zero { input, quantity } => write!(
                f,
                "'{input}' is zero: give a {} of at least {}",
                quantity.noun(),
                match quantity {
                    Quantity::Size => "1B",
                    Quantity::Duration => "1ns",
                }
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Parses a size into bytes.
///
/// ```
/// assert_eq!(rtrec_units::parse_size("16KiB"), Ok(16_384));
/// assert_eq!(rtrec_units::parse_size("2MB"), Ok(2_000_000));
/// assert_eq!(
///     rtrec_units::parse_size("5").unwrap_err().to_string(),
///     "'5' needs a unit: did you mean 5MiB?"
/// );
/// ```
///
/// # Errors
/// [`Error`]: a bare number, an unknown or ambiguous unit, a fraction of a
/// byte, more than `u64::MAX` bytes.
pub fn parse_size(s: &str) -> Result<u64, Error> {
    parse(s, Quantity::Size)
}

/// Parses a duration into nanoseconds.
///
/// ```
/// assert_eq!(rtrec_units::parse_duration("1.5ms"), Ok(1_500_000));
/// assert_eq!(rtrec_units::parse_duration("250 µs"), Ok(250_000));
/// assert_eq!(
///     rtrec_units::parse_duration("5").unwrap_err().to_string(),
///     "'5' needs a unit: did you mean 5ms?"
/// );
/// ```
///
/// # Errors
/// [`Error`]: a bare number, an unknown unit, a fraction of a nanosecond,
/// more than `u64::MAX` nanoseconds (584 years).
pub fn parse_duration(s: &str) -> Result<u64, Error> {
    parse(s, Quantity::Duration)
}

/// Parses `s` as a `quantity` into bytes or nanoseconds.
///
/// # Errors
/// As [`parse_size`] and [`parse_duration`].
pub fn parse(s: &str, quantity: Quantity) -> Result<u64, Error> {
    parse_kind(
        s,
        match quantity {
            Quantity::Size => Kind::Size,
            Quantity::Duration => Kind::Interval,
        },
    )
}

/// Parses `s` as a value of `kind` into bytes or nanoseconds; a bare number
/// is answered with the unit that fits `kind`.
///
/// ```
/// use rtrec_units::{parse_kind, Kind};
/// assert_eq!(
///     parse_kind("300", Kind::RecordSize).unwrap_err().to_string(),
///     "'300' needs a unit: did you mean 300B or 300KiB?"
/// );
/// assert_eq!(
///     parse_kind("10", Kind::Span).unwrap_err().to_string(),
///     "'10' needs a unit: did you mean 10s?"
/// );
/// ```
///
/// # Errors
/// As [`parse_size`] and [`parse_duration`].
pub fn parse_kind(s: &str, kind: Kind) -> Result<u64, Error> {
    let quantity = kind.quantity();
    let input = s.to_string();
    let t = s.trim();
    if t.is_empty() {
        return Err(Error::Empty(quantity));
    }
    if t.starts_with('-') {
        return Err(Error::Negative { input });
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..split], t[split..].trim_start());
    let Some((mantissa, scale)) = decimal(number) else {
        return Err(Error::NotANumber { input, quantity });
    };
    if unit.is_empty() && mantissa == 0 {
        return Ok(0); // zero is zero in every unit
    }
    let Some(&(_, per_unit)) = quantity.units().iter().find(|(u, _)| *u == unit) else {
        return Err(unit_error(input, number, unit, kind));
    };
    let whole = mantissa
        .checked_mul(per_unit)
        .ok_or_else(|| Error::TooLarge {
            input: input.clone(),
        })?;
    if whole % scale != 0 {
        return Err(Error::NotWhole { input, quantity });
    }
    u64::try_from(whole / scale).map_err(|_| Error::TooLarge { input })
}

/// A decimal number as (digits without the point, 10^digits after it);
/// `None` unless it is digits with at most one point and at least one digit.
fn decimal(number: &str) -> Option<(u128, u128)> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = int.len() + frac.len();
    // 30 digits and a unit of at most 2^42 stay below u128::MAX (3.4e38).
    if digits == 0 || digits > 30 || frac.contains('.') {
        return None;
    }
    let mantissa = format!("{int}{frac}").parse::<u128>().ok()?;
    Some((mantissa, 10u128.pow(frac.len() as u32)))
}

fn unit_error(input: String, number: &str, unit: &str, kind: Kind) -> Error {
    let quantity = kind.quantity();
    if unit.is_empty() {
        return Error::NeedsUnit {
            suggestion: kind.suggest(number),
            input,
            quantity,
        };
    }
    if quantity == Quantity::Size {
        if let [p @ ('K' | 'k' | 'M' | 'G' | 'T')] = unit.chars().collect::<Vec<_>>()[..] {
            return Error::AmbiguousUnit {
                input,
                number: number.to_string(),
                prefix: p.to_ascii_uppercase(),
            };
        }
    }
    let did_you_mean = quantity
        .units()
        .iter()
        .find(|(u, _)| u.eq_ignore_ascii_case(unit))
        .map(|(u, _)| *u);
    Error::UnknownUnit {
        input,
        unit: unit.to_string(),
        did_you_mean,
        quantity,
    }
}

/// A duration in nanoseconds for people: `ns`, `µs`, `ms` or `s` with three
/// significant digits (whole numbers from 100 up), trailing zeros dropped.
///
/// ```
/// use rtrec_units::format_duration;
/// assert_eq!(format_duration(812), "812 ns");
/// assert_eq!(format_duration(12_482_000), "12.5 ms");
/// assert_eq!(format_duration(2_400_000_000), "2.4 s");
/// ```
pub fn format_duration(ns: u64) -> String {
    scaled(
        ns,
        &[
            ("ns", 1),
            ("µs", 1_000),
            ("ms", 1_000_000),
            ("s", 1_000_000_000),
        ],
    )
}

/// A byte count for people: `B`, `KiB`, `MiB`, `GiB` or `TiB` with three
/// significant digits (whole numbers from 100 up), trailing zeros dropped.
///
/// ```
/// use rtrec_units::format_size;
/// assert_eq!(format_size(16_384), "16 KiB");
/// assert_eq!(format_size(1_572_864), "1.5 MiB");
/// assert_eq!(format_size(100 << 20), "100 MiB");
/// ```
pub fn format_size(bytes: u64) -> String {
    scaled(
        bytes,
        &[
            ("B", 1),
            ("KiB", 1 << 10),
            ("MiB", 1 << 20),
            ("GiB", 1 << 30),
            ("TiB", 1 << 40),
        ],
    )
}

/// A throughput in rtrec's own units: [`format_size`] per second
/// (`4 MiB/s`), which `SIZE/PERIOD` rate arguments read back. The bench's
/// comparisons with published figures use [`format_mb_per_s`] instead.
///
/// ```
/// use rtrec_units::format_size_per_s;
/// assert_eq!(format_size_per_s(4 << 20), "4 MiB/s");
/// assert_eq!(format_size_per_s(1_572_864), "1.5 MiB/s");
/// ```
pub fn format_size_per_s(bytes_per_s: u64) -> String {
    format!("{}/s", format_size(bytes_per_s))
}

/// A throughput as the published studies print it: decimal megabytes per
/// second (10⁶ bytes, not MiB), whole from 10 MB/s up, one decimal below
/// (a trailing `.0` dropped), so a slow SD card does not read `0 MB/s`.
/// A negative or non-finite rate (no measurement) prints as `? MB/s`.
///
/// ```
/// use rtrec_units::format_mb_per_s;
/// assert_eq!(format_mb_per_s(21e6), "21 MB/s");
/// assert_eq!(format_mb_per_s(2.46e6), "2.5 MB/s");
/// assert_eq!(format_mb_per_s(0.0), "0 MB/s");
/// ```
pub fn format_mb_per_s(bytes_per_s: f64) -> String {
    if !bytes_per_s.is_finite() || bytes_per_s < 0.0 {
        return "? MB/s".to_string();
    }
    let mb = bytes_per_s / 1e6;
    if (mb * 10.0).round() >= 100.0 {
        format!("{mb:.0} MB/s")
    } else {
        let tenth = format!("{mb:.1}");
        format!("{} MB/s", tenth.strip_suffix(".0").unwrap_or(&tenth))
    }
}

/// `v` in the largest of `units` (ascending) it reaches, rounded to three
/// significant digits in exact integer arithmetic; a value that rounds up
/// to the next unit is printed in it (`999,999 ns` is `1 ms`).
fn scaled(v: u64, units: &[(&str, u64)]) -> String {
    let v = v as u128;
    let mut i = units
        .iter()
        .rposition(|&(_, d)| v >= d as u128)
        .unwrap_or(0);
    loop {
        let (name, d) = (units[i].0, units[i].1 as u128);
        if d == 1 {
            return format!("{v} {name}");
        }
        let decimals: u32 = match v / d {
            0..=9 => 2,
            10..=99 => 1,
            _ => 0,
        };
        let p = 10u128.pow(decimals);
        let r = (v * p + d / 2) / d; // round half up
        if let Some(&(_, next)) = units.get(i + 1) {
            if r >= (next as u128 / d) * p {
                i += 1;
                continue;
            }
        }
        let (int, frac) = (r / p, r % p);
        if frac == 0 {
            return format!("{int} {name}");
        }
        let frac = format!("{frac:0w$}", w = decimals as usize);
        return format!("{int}.{} {name}", frac.trim_end_matches('0'));
    }
}

/// `s` as one shell word, for a command a message suggests to copy: as it
/// is when it holds nothing a shell would split or expand, else in single
/// quotes (`'/data/run 1'`, `'it'\''s'`).
///
/// ```
/// assert_eq!(rtrec_units::shell_word("./rtrec-data"), "./rtrec-data");
/// assert_eq!(rtrec_units::shell_word("/data/run 1"), "'/data/run 1'");
/// assert_eq!(rtrec_units::shell_word("it's"), r"'it'\''s'");
/// ```
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_size_per_s_is_a_size_per_second() {
        assert_eq!(format_size_per_s(0), "0 B/s");
        assert_eq!(format_size_per_s(512), "512 B/s");
        assert_eq!(format_size_per_s(40 << 20), "40 MiB/s");
        assert_eq!(format_size_per_s(123_456_789), "118 MiB/s");
    }

    #[test]
    fn format_mb_per_s_prints_whole_decimal_megabytes_and_a_tenth_below_ten() {
        let cases = [
            (0.0, "0 MB/s"),
            (40_000.0, "0 MB/s"),
            (60_000.0, "0.1 MB/s"),
            (450_000.0, "0.5 MB/s"),
            (2e6, "2 MB/s"),
            (2.46e6, "2.5 MB/s"),
            (9.94e6, "9.9 MB/s"),
            (9.96e6, "10 MB/s"),
            (21e6, "21 MB/s"),
            (24.5e6, "24 MB/s"),
            (1_048_576.0 * 100.0, "105 MB/s"),
            (1.5e9, "1500 MB/s"),
            (-1.0, "? MB/s"),
            (f64::NAN, "? MB/s"),
            (f64::INFINITY, "? MB/s"),
        ];
        for (rate, text) in cases {
            assert_eq!(format_mb_per_s(rate), text, "{rate} B/s");
        }
    }

    fn size_err(s: &str) -> String {
        parse_size(s).unwrap_err().to_string()
    }

    fn duration_err(s: &str) -> String {
        parse_duration(s).unwrap_err().to_string()
    }

    #[test]
    fn binary_units_are_powers_of_1024_and_si_units_powers_of_1000() {
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("16KiB"), Ok(16 << 10));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("3GiB"), Ok(3 << 30));
        assert_eq!(parse_size("1TiB"), Ok(1 << 40));
        assert_eq!(parse_size("16KB"), Ok(16_000));
        assert_eq!(parse_size("16kB"), Ok(16_000));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("3GB"), Ok(3_000_000_000));
        assert_eq!(parse_size("1TB"), Ok(1_000_000_000_000));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size(" 100 MiB "), Ok(100 << 20));
        assert_eq!(parse_size("0B"), Ok(0));
    }

    #[test]
    fn durations_take_every_unit_and_exact_decimals() {
        assert_eq!(parse_duration("250ns"), Ok(250));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("250µs"), Ok(250_000));
        assert_eq!(parse_duration("250μs"), Ok(250_000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("0.1s"), Ok(100_000_000));
        assert_eq!(parse_duration("2min"), Ok(120_000_000_000));
        assert_eq!(parse_duration("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration("2.5 s"), Ok(2_500_000_000));
        assert_eq!(parse_duration("0ms"), Ok(0));
    }

    #[test]
    fn a_bare_number_is_refused_with_the_likely_unit() {
        assert_eq!(duration_err("5"), "'5' needs a unit: did you mean 5ms?");
        assert_eq!(size_err("5"), "'5' needs a unit: did you mean 5MiB?");
        assert_eq!(
            size_err("16384"),
            "'16384' needs a unit: did you mean 16384B?"
        );
    }

    #[test]
    fn a_bare_number_suggests_the_unit_that_fits_the_flag() {
        let err = |s, k| parse_kind(s, k).unwrap_err().to_string();
        assert_eq!(
            err("300", Kind::RecordSize),
            "'300' needs a unit: did you mean 300B or 300KiB?"
        );
        assert_eq!(
            err("18800", Kind::RecordSize),
            "'18800' needs a unit: did you mean 18800B?"
        );
        assert_eq!(
            err("64", Kind::Size),
            "'64' needs a unit: did you mean 64MiB?"
        );
        assert_eq!(
            err("5", Kind::Interval),
            "'5' needs a unit: did you mean 5ms?"
        );
        assert_eq!(
            err("10", Kind::Span),
            "'10' needs a unit: did you mean 10s?"
        );
    }

    #[test]
    fn a_bare_zero_needs_no_unit() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("0.0"), Ok(0));
    }

    #[test]
    fn bad_values_are_one_sentence_each() {
        assert_eq!(
            size_err("16K"),
            "'16K' is ambiguous: write 16KiB (powers of 1024) or 16KB (powers of 1000)"
        );
        assert_eq!(
            size_err("2mib"),
            "'2mib' has an unknown unit 'mib': did you mean MiB?"
        );
        assert_eq!(
            size_err("16XB"),
            "'16XB' has an unknown unit 'XB' (a size takes B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000))"
        );
        assert_eq!(
            duration_err("5 parsecs"),
            "'5 parsecs' has an unknown unit 'parsecs' (a duration takes ns, us, µs, ms, s, min, h or d)"
        );
        assert_eq!(
            duration_err("5MS"),
            "'5MS' has an unknown unit 'MS': did you mean ms?"
        );
        assert_eq!(
            duration_err("abc"),
            "'abc' is not a duration: expected a number and a unit, like 5ms"
        );
        assert_eq!(
            size_err("1.2.3KiB"),
            "'1.2.3KiB' is not a size: expected a number and a unit, like 16KiB"
        );
        assert_eq!(size_err(""), "an empty value is not a size");
        assert_eq!(duration_err("-5ms"), "'-5ms' is negative");
        assert_eq!(
            size_err("1.3KiB"),
            "'1.3KiB' is not a whole number of bytes"
        );
        assert_eq!(
            duration_err("1.5ns"),
            "'1.5ns' is not a whole number of nanoseconds"
        );
        assert_eq!(size_err("16777216TiB"), "'16777216TiB' is too large");
        assert_eq!(
            size_err("9999999999999999999999999999999B"),
            "'9999999999999999999999999999999B' is not a size: expected a number and a unit, like 16KiB"
        );
    }

    #[test]
    fn durations_print_with_three_significant_digits() {
        assert_eq!(format_duration(0), "0 ns");
        assert_eq!(format_duration(812), "812 ns");
        assert_eq!(format_duration(1_000), "1 µs");
        assert_eq!(format_duration(1_234), "1.23 µs");
        assert_eq!(format_duration(99_949), "99.9 µs");
        assert_eq!(format_duration(176_400), "176 µs");
        assert_eq!(format_duration(999_999), "1 ms");
        assert_eq!(format_duration(5_000_000), "5 ms");
        assert_eq!(format_duration(12_482_000), "12.5 ms");
        assert_eq!(format_duration(208_440_000), "208 ms");
        assert_eq!(format_duration(2_400_000_000), "2.4 s");
        assert_eq!(format_duration(3_600_000_000_000), "3600 s");
        assert_eq!(format_duration(u64::MAX), "18446744074 s");
    }

    #[test]
    fn sizes_print_in_binary_units_with_three_significant_digits() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1000), "1000 B");
        assert_eq!(format_size(1024), "1 KiB");
        assert_eq!(format_size(40 << 10), "40 KiB");
        assert_eq!(format_size(1_572_864), "1.5 MiB");
        assert_eq!(format_size(3_145_728), "3 MiB");
        assert_eq!(format_size(13_107_200), "12.5 MiB");
        assert_eq!(format_size(100 << 20), "100 MiB");
        assert_eq!(format_size((1 << 20) - 1), "1 MiB");
        assert_eq!(format_size(2 << 30), "2 GiB");
        assert_eq!(format_size(2048 << 30), "2 TiB");
        assert_eq!(format_size(100_000_000), "95.4 MiB");
    }

    #[test]
    fn every_printed_value_parses_back() {
        for v in [
            0,
            812,
            1_000,
            1_500,
            250_000,
            5_000_000,
            12_500_000,
            2_400_000_000,
        ] {
            assert_eq!(parse_duration(&format_duration(v)), Ok(v), "{v}");
        }
        for v in [
            0,
            512,
            16 << 10,
            1_572_864,
            2 << 20,
            100 << 20,
            2 << 30,
            1 << 40,
        ] {
            assert_eq!(parse_size(&format_size(v)), Ok(v), "{v}");
        }
    }
}
