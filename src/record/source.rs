//! `record`'s source flags — what is recorded and how much: the synthetic
//! source's period and record size, stdin and its lines, the stop
//! conditions — and their part of the plan ([`SourceArgs::apply`]): where
//! records come from ([`Source`]), how many, the engine's largest record,
//! and what the sizing rules know about the workload.

use clap::Args;
use rtrec_engine::{Config, Stall, Workload};
use rtrec_units::format_size;
use rtrec_units::value::{Duration, Size};

use crate::error::{usage, Result};

/// `record --period`'s default: the published study's (S1) 5 ms.
pub const DEFAULT_PERIOD: Duration = Duration::from_ns(5_000_000);
/// `record --size`'s default: the published study's (S1) 16 KiB.
pub const DEFAULT_RECORD_SIZE: Size = Size::from_bytes(16 << 10);
/// `record --max-line`'s default.
pub const DEFAULT_MAX_LINE: Size = Size::from_bytes(64 << 10);

/// What is recorded and how much.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// Period of the synthetic source (e.g. 5ms, 250us).
    #[arg(
        long,
        value_parser = rtrec_units::value::interval,
        default_value_t = DEFAULT_PERIOD,
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub period: Duration,

    /// Size of each record (e.g. 16KiB). With --stdin, stdin is cut into records of exactly this
    /// size (unless --lines); a shorter last piece at the end of the stream, or when the recording is
    /// stopped, is stored as a shorter record. Pick a multiple of the stream's own unit so that
    /// records start on its boundaries (MPEG-TS: a multiple of 188, e.g. 18800). [default: 16KiB; with --layout, its size]
    #[arg(
        long,
        value_parser = rtrec_units::value::record_size,
        allow_hyphen_values = true,
        value_name = "SIZE"
    )]
    pub size: Option<Size>,

    /// The records' layout, stored with the recording (e.g. t:u32,x:f32,y:f32, or Python
    /// struct notation <Iff; the grammar of `export --layout`, docs/export.md): `export`,
    /// `info` and the Python package decode the records by it without being told again.
    /// A record of another size is still recorded, and counted (the summary's "layout
    /// misfits").
    #[arg(long, value_name = "SPEC", conflicts_with = "lines")]
    pub layout: Option<String>,

    /// Stop after this many payload bytes (e.g. 100MiB): the whole records that fit, rounded down (a total is never exceeded; at least one record). Without --total, --count or --duration: until Ctrl-C (or the end of stdin).
    #[arg(long, value_parser = rtrec_units::value::size, conflicts_with = "count", value_name = "SIZE")]
    pub total: Option<Size>,

    /// Stop after this many records.
    #[arg(long, value_name = "N", value_parser = count_arg, allow_hyphen_values = true)]
    pub count: Option<u64>,

    /// Stop after this long (e.g. 10s, 5min), as fio's runtime= and cyclictest's -D: the periods that fit in it.
    #[arg(long, value_parser = rtrec_units::value::span, conflicts_with_all = ["total", "count", "stdin"], value_name = "DURATION")]
    pub duration: Option<Duration>,

    /// Record what arrives on standard input instead of a synthetic source.
    #[arg(long)]
    pub stdin: bool,

    /// With --stdin: one record per line, stored without its newline; the recording is marked as
    /// lines, and `export` (raw, its default) puts a newline after each record.
    #[arg(long, requires = "stdin")]
    pub lines: bool,

    /// With --lines: the longest line accepted.
    #[arg(long, value_parser = rtrec_units::value::record_size, default_value_t = DEFAULT_MAX_LINE, value_name = "SIZE")]
    pub max_line: Size,
}

/// Where records come from.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// One record of `--size` bytes every `period_ns`.
    Synthetic {
        /// The period, ns.
        period_ns: u64,
    },
    /// Stdin cut into records of `--size` bytes.
    StdinFixed,
    /// Stdin, one record per line.
    StdinLines,
}

/// The source's part of the plan.
#[derive(Debug)]
pub struct SourcePlan {
    /// Where records come from.
    pub source: Source,
    /// `--size`, bytes.
    pub size: usize,
    /// Records to offer: from `--count`, `--total` or `--duration`; `None`
    /// until stopped.
    pub count: Option<u64>,
    /// `--total` as asked, and the whole records it allows.
    pub total: Option<Total>,
}

/// `--count`: a whole number of at least 1. Hyphens are let through to
/// here (`allow_hyphen_values`) so that `--count -5` is answered about the
/// count, not as an unknown flag `-5`.
fn count_arg(s: &str) -> std::result::Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a count is a whole number of at least 1".into()),
    }
}

impl SourceArgs {
    /// The stop conditions checked against the record size and period,
    /// [`Source`], and the source's part of the engine's configuration:
    /// `lines` and the largest record (`--max-line` with `--lines`, else
    /// `--size`).
    ///
    /// # Errors
    /// A stop condition that allows no record, or a record too large for
    /// this machine's address space: one sentence naming the flag.
    pub fn apply(&self, cfg: &mut Config) -> Result<SourcePlan> {
        cfg.layout = self.checked_layout()?;
        let size = self.record_size().bytes();
        let source = match (self.stdin, self.lines) {
            (false, _) => Source::Synthetic {
                period_ns: self.period.ns(),
            },
            (true, false) => Source::StdinFixed,
            (true, true) => Source::StdinLines,
        };
        let count = self.count()?;
        cfg.lines = self.lines;
        let record_max = if self.lines {
            self.max_line.bytes()
        } else {
            size
        };
        let max = u64::from(rtrec_engine::format::MAX_PAYLOAD);
        if record_max > max {
            let (flag, value) = if self.lines {
                ("--max-line", self.max_line)
            } else {
                ("--size", self.record_size())
            };
            return usage(format!(
                "{flag} {value}: a record is at most {} (what one frame's length field carries)",
                rtrec_units::value::Size::from_bytes(max)
            ));
        }
        cfg.max_record = usize::try_from(record_max).or_else(|_| usage("--size: too large"))?;
        Ok(SourcePlan {
            source,
            size: size as usize,
            count,
            total: Total::of(self),
        })
    }

    /// `--layout` parsed, as the canonical text the files store, checked
    /// against `--size` when both are given.
    ///
    /// # Errors
    /// A layout that does not parse, or a `--size` that is not its size:
    /// one sentence.
    fn checked_layout(&self) -> Result<Option<String>> {
        let Some(spec) = &self.layout else {
            return Ok(None);
        };
        let l = parse_layout(spec).or_else(|why| usage(format!("--layout: {why}")))?;
        match self.size {
            Some(s) if s.bytes() != l.size() as u64 => usage(format!(
                "--size {s} is not the size of the layout '{spec}' ({} bytes): leave --size out",
                l.size()
            )),
            _ => Ok(Some(l.canonical())),
        }
    }

    /// `--size`, else the layout's size (`--layout`), else
    /// [`DEFAULT_RECORD_SIZE`].
    pub fn record_size(&self) -> Size {
        let of_layout = || {
            let l = parse_layout(self.layout.as_deref()?).ok()?;
            Some(Size::from_bytes(l.size() as u64))
        };
        self.size.or_else(of_layout).unwrap_or(DEFAULT_RECORD_SIZE)
    }

    /// Records to offer, from `--duration`, `--total` or `--count`.
    fn count(&self) -> Result<Option<u64>> {
        let (period_ns, size) = (self.period.ns(), self.record_size().bytes());
        Ok(match (self.total, self.count) {
            // --duration: the periods that fit in it (the synthetic source
            // releases one record per period, so a duration is a count).
            (None, None) if self.duration.is_some() => {
                let d = self.duration.map_or(0, Duration::ns);
                if d < period_ns {
                    return usage("--duration: the duration must be at least one --period");
                }
                Some(d / period_ns)
            }
            // A total is a limit: whole records, rounded down, never more
            // than asked (the summary and --json say what it allowed).
            (Some(total), _) => {
                let t = total.bytes();
                if t < size {
                    return usage(format!(
                        "--total: {} is less than one record of {} (--size); give at least {}",
                        format_size(t),
                        format_size(size),
                        format_size(size)
                    ));
                }
                Some(t / size)
            }
            (None, c) => c,
        })
    }
}

impl SourcePlan {
    /// The synthetic source's period, ns; `None` for stdin (the rate is
    /// unknown).
    pub fn period_ns(&self) -> Option<u64> {
        match self.source {
            Source::Synthetic { period_ns } => Some(period_ns),
            _ => None,
        }
    }

    /// What the engine's sizing rules need to know about the source; the
    /// writer stall to absorb is the ring group's.
    pub fn workload(&self, stall: Option<Stall>) -> Workload {
        Workload {
            period_ns: self.period_ns(),
            records: self.count,
            fixed_size: !matches!(self.source, Source::StdinLines),
            stall,
        }
    }
}

/// `--total` as asked and the whole records it allows: rounded down, so
/// that a total is never exceeded.
#[derive(Clone, Copy, Debug)]
pub struct Total {
    /// `--total`, bytes.
    pub asked_bytes: u64,
    /// The whole records it allows.
    pub records: u64,
    /// `--size`, bytes.
    pub record_bytes: u64,
}

impl Total {
    fn of(a: &SourceArgs) -> Option<Total> {
        let record_bytes = a.record_size().bytes().max(1);
        a.total.map(|t| Total {
            asked_bytes: t.bytes(),
            records: t.bytes() / record_bytes,
            record_bytes,
        })
    }

    /// The summary's line when the total is not a whole number of records.
    pub fn line(&self) -> Option<String> {
        let allowed = self.records * self.record_bytes;
        (allowed != self.asked_bytes).then(|| {
            format!(
                "--total {} allows {} whole record{} of {} ({}): rounded down, a total is never exceeded\n",
                format_size(self.asked_bytes),
                self.records,
                if self.records == 1 { "" } else { "s" },
                format_size(self.record_bytes),
                format_size(allowed)
            )
        })
    }
}

/// `--layout`'s spec, parsed (either spelling) and checked as a recording
/// stores it (its canonical text within the layout frame's bound).
fn parse_layout(spec: &str) -> std::result::Result<rtrec_engine::layout::Layout, String> {
    use rtrec_engine::layout::Layout;
    let l = Layout::parse(spec)?;
    Layout::parse_stored(&l.canonical())?;
    Ok(l)
}
