//! `rtrec record`: resolve the options into a recorder configuration, run a
//! synthetic periodic source (or read records from stdin), show progress on
//! a terminal, and print the summary.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rtrec_engine::format::HEADER_LEN;
use rtrec_engine::rt::{self, RtSetup};
use rtrec_engine::writer::RESERVED_BYTES;
use rtrec_engine::{Alloc, Config, Flush, Framing, LatencySummary, LiveStats, Mode, PeriodicTimer, Recorder, Summary, MIB};

use crate::cli::RecordArgs;
use crate::units::{fmt_mib, fmt_ns, parse_duration_ns, parse_size};
use crate::{signals, usage};

/// Where records come from.
enum Source {
    Synthetic { period_ns: u64 },
    StdinFixed,
    StdinLines,
}

/// The options after validation (stage one: no I/O).
struct Plan {
    dir: PathBuf,
    dir_is_default: bool,
    source: Source,
    size: usize,
    count: Option<u64>,
    cfg: Config,
    rt: Option<RtSetup>,
}

fn size_arg(name: &str, s: &str) -> anyhow::Result<u64> {
    parse_size(s).or_else(|e| usage(format!("--{name}: {e}")))
}

fn resolve(a: &RecordArgs) -> anyhow::Result<Plan> {
    let period_ns = parse_duration_ns(&a.period).or_else(|e| usage(format!("--period: {e}")))?;
    let size = size_arg("size", &a.size)?;
    if size == 0 {
        return usage("--size: the record size must be more than 0 bytes");
    }
    let max_line = size_arg("max-line", &a.max_line)?;
    let count = match (&a.total, a.count) {
        (Some(t), _) => {
            let total = size_arg("total", t)?;
            if total == 0 {
                return usage("--total: the total must be more than 0 bytes");
            }
            Some(total.div_ceil(size))
        }
        (None, Some(0)) => return usage("--count: the count must be at least 1"),
        (None, c) => c,
    };
    let source = match (a.stdin, a.lines) {
        (false, _) => Source::Synthetic { period_ns },
        (true, false) => Source::StdinFixed,
        (true, true) => Source::StdinLines,
    };
    let mut cfg = Config::default();
    cfg.mode = a.mode.parse::<Mode>().or_else(|e| usage(e))?;
    if let Some(s) = &a.alloc {
        cfg.alloc = s.parse::<Alloc>().or_else(|e| usage(e))?;
    }
    if let Some(s) = &a.flush {
        cfg.flush = s.parse::<Flush>().or_else(|e| usage(e))?;
    }
    cfg.flush_every = size_arg("flush-every", &a.flush_every)?;
    cfg.framing = if a.raw { Framing::Raw } else { Framing::Framed };
    let record_max = if a.lines { max_line } else { size };
    cfg.max_record = usize::try_from(record_max).or_else(|_| usage("--size: too large"))?;
    cfg.file_size = match (&a.file_size, count) {
        (Some(s), _) => size_arg("file-size", s)?,
        // One file for the whole recording, as S1 records (sized exactly, so
        // the pre-allocation matches what is written).
        (None, Some(n)) if !a.lines => {
            let bytes = n.saturating_mul(cfg.stored_len(cfg.max_record)) + HEADER_LEN as u64 + RESERVED_BYTES;
            bytes.div_ceil(4096) * 4096
        }
        _ => 64 * MIB,
    };
    if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
        return usage(format!(
            "a record of {} bytes does not fit in a file of {} bytes; raise --file-size or lower --size",
            cfg.max_record, cfg.file_size
        ));
    }
    cfg.ring_bytes = match &a.ring {
        Some(s) => usize::try_from(size_arg("ring", s)?).or_else(|_| usage("--ring: too large"))?,
        None => (16 * MIB as usize).max(4 * (cfg.max_record + rtrec_engine::ring::ENTRY_HEADER_LEN)),
    };
    cfg.rt.writer_cpu = a.writer_cpu;
    let rt = if a.rt {
        if !(1..=99).contains(&a.priority) {
            return usage(format!("--priority: {} is outside SCHED_FIFO's range 1-99", a.priority));
        }
        cfg.rt.writer_priority = Some((a.priority - 1).max(1));
        Some(RtSetup { lock_memory: true, priority: Some(a.priority), cpu: a.cpu })
    } else {
        None
    };
    cfg.validate().or_else(|e| usage(e.0))?;
    let (dir, dir_is_default) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (PathBuf::from("./rtrec-data"), true),
    };
    Ok(Plan { dir, dir_is_default, source, size: size as usize, count, cfg, rt })
}

/// Runs `rtrec record`.
pub fn run(a: &RecordArgs) -> anyhow::Result<i32> {
    let plan = resolve(a)?;
    if plan.dir_is_default && !plan.dir.exists() {
        std::fs::create_dir_all(&plan.dir).with_context(|| format!("creating '{}'", plan.dir.display()))?;
    }
    signals::install();
    if let Some(setup) = &plan.rt {
        for w in rt::apply(setup) {
            eprintln!("rtrec: warning: {w} (recording without it)");
        }
    }
    let mut rec = Recorder::create(&plan.dir, plan.cfg.clone())?;
    let live = rec.live();
    let show = !a.quiet && std::io::stderr().is_terminal();
    let done = Arc::new(AtomicBool::new(false));
    let progress = show.then(|| spawn_progress(live.clone(), plan.count, done.clone()));

    let mut timer = None;
    let outcome = match plan.source {
        Source::Synthetic { period_ns } => {
            let mut t = PeriodicTimer::new(period_ns);
            let r = synthetic(&mut rec, &mut t, plan.size, plan.count, a.trace_written);
            timer = Some(t);
            r
        }
        Source::StdinFixed => stdin_fixed(&mut rec, plan.size, plan.count, a.trace_written),
        Source::StdinLines => stdin_lines(&mut rec, plan.count, a.trace_written),
    };
    let mut summary = match &outcome {
        Outcome::Done => rec.finish()?,
        Outcome::Aborted(reason) | Outcome::Interrupted(reason) => rec.abort(reason)?,
    };
    if let Some(t) = &timer {
        summary.attach_schedule(t);
    }
    done.store(true, Ordering::Release);
    if let Some(p) = progress {
        let _ = p.join();
    }
    if let Some(path) = &a.json {
        write_json(path, &summary)?;
    }
    if !a.quiet {
        print_summary(&summary, a.json.as_deref() == Some(Path::new("-")));
    }
    Ok(match outcome {
        Outcome::Done if summary.error.is_none() => 0,
        Outcome::Done => {
            eprintln!("rtrec: the recording failed: {}", summary.error.as_deref().unwrap_or("unknown error"));
            1
        }
        Outcome::Aborted(reason) => {
            eprintln!("rtrec: {reason}; the recording is marked incomplete");
            1
        }
        Outcome::Interrupted(reason) => {
            eprintln!("rtrec: {reason}; the recording is marked incomplete");
            130
        }
    })
}

enum Outcome {
    Done,
    Aborted(String),
    Interrupted(String),
}

fn interrupted(sig: i32, n: u64, count: Option<u64>) -> Outcome {
    let name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
    match count {
        Some(c) => Outcome::Interrupted(format!("interrupted by {name} after {n} of {c} records")),
        // An open-ended recording ends normally on Ctrl-C: that is how it is stopped.
        None => Outcome::Done,
    }
}

fn trace(seq: u64, on: bool) {
    if on {
        println!("written {seq}");
    }
}

fn synthetic(rec: &mut Recorder, timer: &mut PeriodicTimer, size: usize, count: Option<u64>, tr: bool) -> Outcome {
    let mut buf = vec![0u8; size];
    // A recognisable pattern after the sequence number.
    for (i, b) in buf.iter_mut().enumerate().skip(8) {
        *b = (i % 251) as u8;
    }
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        if let Some(sig) = signals::caught() {
            return interrupted(sig, n, count);
        }
        timer.wait();
        let seq = rec.next_seq();
        let k = 8.min(size);
        buf[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
        if rec.record(&buf).is_ok() {
            trace(seq, tr);
        }
        n += 1;
    }
    Outcome::Done
}

/// Reads until `buf` is full or EOF; returns bytes read. Stops on a signal.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                if signals::caught().is_some() {
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn stdin_fixed(rec: &mut Recorder, size: usize, count: Option<u64>, tr: bool) -> Outcome {
    let mut input = std::io::stdin().lock();
    let mut buf = vec![0u8; size];
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        let got = match read_full(&mut input, &mut buf) {
            Ok(g) => g,
            Err(e) => return Outcome::Aborted(format!("reading stdin failed after {n} records: {e}")),
        };
        if let Some(sig) = signals::caught() {
            return interrupted(sig, n, count);
        }
        if got == 0 {
            return match count {
                Some(c) => Outcome::Aborted(format!("stdin closed early: {n} of {c} records received")),
                None => Outcome::Done,
            };
        }
        if got < size {
            return Outcome::Aborted(format!(
                "stdin closed in the middle of record {n}: {got} of {size} bytes received (that partial record was not stored)"
            ));
        }
        let seq = rec.next_seq();
        if rec.record(&buf).is_ok() {
            trace(seq, tr);
        }
        n += 1;
    }
    Outcome::Done
}

fn stdin_lines(rec: &mut Recorder, count: Option<u64>, tr: bool) -> Outcome {
    use std::io::BufRead;
    let mut input = std::io::stdin().lock();
    let mut line = Vec::with_capacity(rec.config().max_record + 1);
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => {
                return match count {
                    Some(c) => Outcome::Aborted(format!("stdin closed early: {n} of {c} lines received")),
                    None => Outcome::Done,
                };
            }
            Ok(_) => {}
            Err(e) => return Outcome::Aborted(format!("reading stdin failed after {n} records: {e}")),
        }
        if let Some(sig) = signals::caught() {
            return interrupted(sig, n, count);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let seq = rec.next_seq();
        // A line over --max-line is dropped, counted and stored as a loss.
        if rec.record(&line).is_ok() {
            trace(seq, tr);
        }
        n += 1;
    }
    Outcome::Done
}

fn spawn_progress(live: Arc<LiveStats>, total: Option<u64>, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let bar = match total {
            Some(t) => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} records {msg}").expect("valid template"),
            ),
            None => indicatif::ProgressBar::new_spinner()
                .with_style(indicatif::ProgressStyle::with_template("{spinner} {pos} records {msg}").expect("valid template")),
        };
        while !done.load(Ordering::Acquire) {
            let w = live.records_written.load(Ordering::Relaxed);
            bar.set_position(w);
            bar.set_message(format!(
                "| {} | max write {} | {} dropped",
                fmt_mib(live.bytes_written.load(Ordering::Relaxed)),
                fmt_ns(live.max_write_ns.load(Ordering::Relaxed)),
                live.records_dropped.load(Ordering::Relaxed)
            ));
            std::thread::sleep(Duration::from_millis(200));
        }
        bar.finish_and_clear();
    })
}

fn write_json(path: &Path, s: &Summary) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(s)? + "\n";
    if path == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        std::fs::write(path, text).with_context(|| format!("writing '{}'", path.display()))?;
    }
    Ok(())
}

fn row(name: &str, l: &Option<LatencySummary>) -> String {
    match l {
        None => format!("{name:<10} {:>9}", "-"),
        Some(l) => format!(
            "{name:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            fmt_ns(l.min),
            fmt_ns(l.mean),
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.p999),
            fmt_ns(l.max)
        ),
    }
}

fn print_summary(s: &Summary, to_stderr: bool) {
    let c = &s.config;
    let mut out = String::new();
    let files = match s.files.as_slice() {
        [one] => one.display().to_string(),
        many => format!("{} files in {}", many.len(), many.first().and_then(|f| f.parent()).map(|p| p.display().to_string()).unwrap_or_default()),
    };
    out += &format!("recorded {} records ({}) to {}\n", s.records_written, fmt_mib(s.bytes_written), files);
    out += &format!(
        "mode {}, alloc {}, flush {} every {}, {}{}\n",
        c.mode,
        c.alloc,
        c.flush,
        fmt_mib(c.flush_every),
        c.framing,
        if s.complete { String::new() } else { format!(", INCOMPLETE ({})", s.abort_reason.as_deref().unwrap_or("")) }
    );
    out += &format!(
        "dropped {} (ring full {}, too large {}, writer failed {}; {} stored as loss frames), missed periods {}\n",
        s.records_dropped, s.drops.ring_full, s.drops.too_large, s.drops.writer_failed, s.losses_stored, s.missed_periods
    );
    out += &format!("{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "", "min", "mean", "p50", "p99", "p99.9", "max");
    out += &(row("write()", &s.write_ns) + "\n");
    out += &(row("record()", &s.record_ns) + "\n");
    out += &(row("lateness", &s.lateness_ns) + "\n");
    out += &format!(
        "flush thread: {} flushes, {} CPU{}\n",
        s.flush.flushes,
        fmt_ns(s.flush.cpu_ns),
        s.flush.error.as_ref().map(|e| format!(", first error: {e}")).unwrap_or_default()
    );
    if to_stderr {
        eprint!("{out}");
    } else {
        print!("{out}");
    }
}
