//! `rtrec record`: resolve the options into a recorder configuration, run a
//! synthetic periodic source (or read records from stdin), show progress on
//! a terminal, and print the summary.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Context;
use rtrec_engine::rt::{self, RtSetup};
use rtrec_engine::{
    Alloc, Config, FlightConfig, Framing, LatencySummary, LiveStats, PeriodicTimer, Recorder,
    Summary, Workload,
};

use crate::cli::RecordArgs;
use crate::{signals, usage};
use rtrec_units::{format_duration, format_size, parse_duration, parse_size};

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
    trigger_stdin: bool,
    trigger_sigusr1: bool,
    trigger_every: Option<u64>,
}

fn size_arg(name: &str, s: &str) -> crate::Result<u64> {
    parse_size(s).or_else(|e| usage(format!("--{name}: {e}")))
}

/// A duration flag: the units grammar, and more than zero (every duration
/// `record` takes is a period or a span).
fn duration_arg(name: &str, s: &str) -> crate::Result<u64> {
    match parse_duration(s) {
        Ok(0) => usage(format!(
            "--{name}: '{s}' is zero; the duration must be positive"
        )),
        Ok(ns) => Ok(ns),
        Err(e) => usage(format!("--{name}: {e}")),
    }
}

fn resolve(a: &RecordArgs) -> crate::Result<Plan> {
    let period_ns = duration_arg("period", &a.period)?;
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
    // Strategies are typed by the command line (raw framing's default
    // allocation is `zero` there: raw files have no header for the pool).
    let mut cfg = Config {
        mode: a.mode,
        alloc: a.alloc,
        flush: a.flush,
        framing: if a.raw {
            Framing::Raw
        } else {
            a.framing.unwrap_or(Framing::Framed)
        },
        ..Config::default()
    };
    cfg.max_latency_ns = duration_arg("max-latency", &a.max_latency)?;
    cfg.flush_every = size_arg("flush-every", &a.flush_every)?;
    cfg.pool.files = a.pool_files;
    cfg.pool.on_empty = a.on_pool_empty;
    cfg.pool.refill_on_finish = !a.no_refill;
    cfg.pool.refill_while_recording = a.refill_while_recording;
    let record_max = if a.lines { max_line } else { size };
    cfg.max_record = usize::try_from(record_max).or_else(|_| usage("--size: too large"))?;
    if !a.raw && a.framing.is_none() {
        // Small records are packed unless the user chose (see --framing).
        cfg.framing = if a.lines {
            Framing::Packed
        } else {
            Framing::auto(cfg.max_record)
        };
    }
    // What the engine's sizing rules need to know about the source.
    let workload = Workload {
        period_ns: match source {
            Source::Synthetic { period_ns } => Some(period_ns),
            _ => None,
        },
        records: count,
        fixed_size: !a.lines,
    };
    let (mut trigger_stdin, mut trigger_sigusr1) = (false, false);
    for t in &a.trigger_on {
        match t.as_str() {
            "SIGUSR1" | "sigusr1" | "USR1" => trigger_sigusr1 = true,
            "stdin" => trigger_stdin = true,
            other => {
                return usage(format!(
                    "--trigger-on: unknown trigger source '{other}' (expected SIGUSR1 or stdin)"
                ))
            }
        }
    }
    if trigger_stdin && a.stdin {
        return usage("--trigger-on stdin cannot be used with --stdin: stdin carries the records");
    }
    let trigger_every = match &a.trigger_every {
        Some(d) => Some(duration_arg("trigger-every", d)?),
        None => None,
    };
    let flight_asked = a.pre.is_some() || a.post.is_some() || a.pre_bytes.is_some();
    if !flight_asked && (trigger_stdin || trigger_sigusr1 || trigger_every.is_some()) {
        return usage("triggers need the flight recorder: give --pre and --post");
    }
    if flight_asked {
        let pre_ns = duration_arg("pre", a.pre.as_deref().unwrap_or("2s"))?;
        let post_ns = duration_arg("post", a.post.as_deref().unwrap_or("5s"))?;
        let pre_bytes = match &a.pre_bytes {
            Some(s) => size_arg("pre-bytes", s)?,
            None => 0, // sized below
        };
        cfg.flight = Some(FlightConfig {
            pre_ns,
            pre_bytes,
            post_ns,
        });
    }
    // The engine sizes what the user did not set, by the same rules as the
    // C API (see `rtrec_engine::sizing`).
    let sizes = cfg.sizes_for(&workload);
    cfg.file_size = match &a.file_size {
        Some(s) => size_arg("file-size", s)?,
        None => sizes.file_size,
    };
    if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
        return usage(format!(
            "a record of {} bytes does not fit in a file of {} bytes; raise --file-size or lower --size",
            cfg.max_record, cfg.file_size
        ));
    }
    cfg.ring_bytes = match &a.ring {
        Some(s) => usize::try_from(size_arg("ring", s)?).or_else(|_| usage("--ring: too large"))?,
        None => sizes.ring_bytes,
    };
    if let Some(f) = cfg.flight.as_mut().filter(|_| a.pre_bytes.is_none()) {
        f.pre_bytes = sizes.pre_bytes;
    }
    cfg.rt.writer_cpu = a.writer_cpu;
    let rt = if a.rt {
        if !(1..=99).contains(&a.priority) {
            return usage(format!(
                "--priority: {} is outside SCHED_FIFO's range 1-99",
                a.priority
            ));
        }
        cfg.rt.writer_priority = Some((a.priority - 1).max(1));
        Some(RtSetup {
            lock_memory: true,
            priority: Some(a.priority),
            cpu: a.cpu,
        })
    } else {
        None
    };
    cfg.validate().or_else(|e| usage(e.to_string()))?;
    let (dir, dir_is_default) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (PathBuf::from("./rtrec-data"), true),
    };
    Ok(Plan {
        dir,
        dir_is_default,
        source,
        size: size as usize,
        count,
        cfg,
        rt,
        trigger_stdin,
        trigger_sigusr1,
        trigger_every,
    })
}

/// Runs `rtrec record`.
pub fn run(a: &RecordArgs) -> crate::Result<i32> {
    let plan = resolve(a)?;
    if plan.dir_is_default && !plan.dir.exists() {
        std::fs::create_dir_all(&plan.dir).context(format!("creating '{}'", plan.dir.display()))?;
    }
    let _stop_signals = signals::install()?;
    if let Some(setup) = &plan.rt {
        for w in rt::apply(setup) {
            eprintln!("rtrec: warning: {w} (recording without it)");
        }
    }
    if plan.trigger_sigusr1 {
        signals::install_trigger_on_sigusr1()?;
    }
    if plan.trigger_stdin {
        std::thread::spawn(|| {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines() {
                if line.is_err() {
                    break;
                }
                signals::TRIGGERS.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // Nothing has been recorded if this fails: exit 2, as for bad input.
    let mut rec = Recorder::create(&plan.dir, plan.cfg.clone())
        .map_err(|e| crate::Error::Usage(e.to_string()))?;
    let tracing = crate::explain::start(&a.explain, &plan.dir);
    let live = rec.live();
    let rss = plan
        .cfg
        .flight
        .is_some()
        .then(|| spawn_rss_monitor(live.clone()));
    let show = !a.quiet && std::io::stderr().is_terminal();
    let done = Arc::new(AtomicBool::new(false));
    let progress = show.then(|| spawn_progress(live.clone(), plan.count, done.clone()));

    let mut timer = None;
    let outcome = match plan.source {
        Source::Synthetic { period_ns } => {
            let mut t = PeriodicTimer::new(period_ns);
            let every = plan.trigger_every.map(|e| (e / period_ns).max(1));
            let r = synthetic(
                &mut rec,
                &mut t,
                plan.size,
                plan.count,
                every,
                a.trace_written,
            );
            timer = Some(t);
            r
        }
        Source::StdinFixed => stdin_fixed(&mut rec, plan.size, plan.count, a.trace_written),
        Source::StdinLines => stdin_lines(&mut rec, plan.count, a.trace_written),
    };
    // Sample memory before finish() frees the ring: the figure is the
    // recording's, not the clean-up's.
    let rss = rss.map(|(stop, h)| {
        stop.store(true, Ordering::Release);
        h.join().unwrap_or_default()
    });
    let mut summary = match &outcome {
        Outcome::Done => rec.finish()?,
        Outcome::Aborted(reason) | Outcome::Interrupted(reason) => rec.abort(reason)?,
    };
    if let Some(t) = &timer {
        summary.attach_schedule(t);
    }
    let explained = tracing.and_then(crate::explain::Tracing::finish);
    done.store(true, Ordering::Release);
    if let Some(p) = progress {
        let _ = p.join();
    }
    if let Some(path) = &a.json {
        write_json(path, &summary, rss.as_deref(), explained.as_ref())?;
    }
    if let (Some(samples), false) = (&rss, a.quiet) {
        for (events, bytes) in samples {
            eprintln!(
                "resident memory after {events} events: {}",
                format_size(*bytes)
            );
        }
    }
    if !a.quiet {
        print_summary(&summary, a.json.as_deref() == Some(Path::new("-")));
        if let Some(x) = &explained {
            crate::explain::print(x, a.json.as_deref() == Some(Path::new("-")));
        }
    }
    for w in &summary.warnings {
        eprintln!("rtrec: warning: {w}");
    }
    Ok(match outcome {
        Outcome::Done if summary.error.is_none() => 0,
        Outcome::Done => {
            eprintln!(
                "rtrec: the recording failed: {}",
                summary
                    .error
                    .as_ref()
                    .map_or("unknown error", |f| f.message.as_str())
            );
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
    let name = rtrec_host::signals::name(sig);
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

/// Turns the trigger requests that arrived since the last call into
/// `trigger()` calls (real-time safe).
fn take_triggers(rec: &mut Recorder, taken: &mut u64) {
    let asked = signals::TRIGGERS.load(Ordering::Relaxed);
    while *taken < asked {
        let _ = rec.trigger();
        *taken += 1;
    }
}

fn synthetic(
    rec: &mut Recorder,
    timer: &mut PeriodicTimer,
    size: usize,
    count: Option<u64>,
    trigger_every: Option<u64>,
    tr: bool,
) -> Outcome {
    let mut taken = 0u64;
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
        if trigger_every.is_some_and(|k| n % k == 0) {
            signals::TRIGGERS.fetch_add(1, Ordering::Relaxed);
        }
        take_triggers(rec, &mut taken);
    }
    Outcome::Done
}

/// Samples the resident memory after the 10th event and at the end, so a
/// flight-recorder run shows that memory does not grow with events.
fn spawn_rss_monitor(
    live: Arc<LiveStats>,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<(u64, u64)>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let h = std::thread::spawn(move || {
        let mut samples = Vec::new();
        let mut took_10 = false;
        while !s.load(Ordering::Acquire) {
            let ev = live.events.load(Ordering::Relaxed);
            if !took_10 && ev >= 10 {
                samples.push((ev, rtrec_sys::resident_bytes().unwrap_or(0)));
                took_10 = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        samples.push((
            live.events.load(Ordering::Relaxed),
            rtrec_sys::resident_bytes().unwrap_or(0),
        ));
        samples
    });
    (stop, h)
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
            Err(e) => {
                return Outcome::Aborted(format!("reading stdin failed after {n} records: {e}"))
            }
        };
        if let Some(sig) = signals::caught() {
            return interrupted(sig, n, count);
        }
        if got == 0 {
            return match count {
                Some(c) => {
                    Outcome::Aborted(format!("stdin closed early: {n} of {c} records received"))
                }
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
                    Some(c) => {
                        Outcome::Aborted(format!("stdin closed early: {n} of {c} lines received"))
                    }
                    None => Outcome::Done,
                };
            }
            Ok(_) => {}
            Err(e) => {
                return Outcome::Aborted(format!("reading stdin failed after {n} records: {e}"))
            }
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

fn spawn_progress(
    live: Arc<LiveStats>,
    total: Option<u64>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let bar = match total {
            Some(t) => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} records {msg}")
                    .expect("valid template"),
            ),
            None => indicatif::ProgressBar::new_spinner().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {pos} records {msg}")
                    .expect("valid template"),
            ),
        };
        while !done.load(Ordering::Acquire) {
            let w = live.records_written.load(Ordering::Relaxed);
            bar.set_position(w);
            let events = live.events.load(Ordering::Relaxed);
            bar.set_message(format!(
                "| {} | max write {} | {} dropped{}",
                format_size(live.bytes_written.load(Ordering::Relaxed)),
                format_duration(live.max_write_ns.load(Ordering::Relaxed)),
                live.records_dropped.load(Ordering::Relaxed),
                if events > 0 {
                    format!(" | {events} events")
                } else {
                    String::new()
                }
            ));
            std::thread::sleep(Duration::from_millis(200));
        }
        bar.finish_and_clear();
    })
}

fn write_json(
    path: &Path,
    s: &Summary,
    rss: Option<&[(u64, u64)]>,
    explained: Option<&rtrec_trace::Explanation>,
) -> crate::Result<()> {
    let mut v = serde_json::to_value(s)?;
    if let (Some(x), Some(obj)) = (explained, v.as_object_mut()) {
        obj.insert("explain".into(), serde_json::to_value(x)?);
    }
    if let (Some(samples), Some(obj)) = (rss, v.as_object_mut()) {
        let list: Vec<_> = samples
            .iter()
            .map(|(e, b)| serde_json::json!({"events": e, "resident_bytes": b}))
            .collect();
        obj.insert("resident_after_events".into(), list.into());
    }
    let text = serde_json::to_string_pretty(&v)? + "\n";
    if path == Path::new("-") {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        // Replaced atomically relative to its directory: a symlink planted
        // at the name is replaced, never written through.
        rtrec_sys::write_atomic(path, text.as_bytes(), 0o644)
            .context(format!("writing '{}'", path.display()))?;
    }
    Ok(())
}

fn row(name: &str, l: &Option<LatencySummary>) -> String {
    match l {
        None => format!("{name:<10} {:>9}", "-"),
        Some(l) => format!(
            "{name:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            format_duration(l.min),
            format_duration(l.mean),
            format_duration(l.p50),
            format_duration(l.p99),
            format_duration(l.p999),
            format_duration(l.max)
        ),
    }
}

fn print_summary(s: &Summary, to_stderr: bool) {
    let c = &s.config;
    let mut out = String::new();
    let files = match s.files.as_slice() {
        [one] => one.display().to_string(),
        many => format!(
            "{} files in {}",
            many.len(),
            many.first()
                .and_then(|f| f.parent())
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    };
    out += &format!(
        "recorded {} records ({}) to {}\n",
        s.records_written,
        format_size(s.bytes_written),
        files
    );
    out += &format!(
        "mode {}, alloc {}, flush {} every {}, {}{}\n",
        c.mode,
        c.alloc,
        c.flush,
        format_size(c.flush_every),
        c.framing,
        if s.complete {
            String::new()
        } else {
            format!(", INCOMPLETE ({})", s.abort_reason.as_deref().unwrap_or(""))
        }
    );
    out += &format!(
        "dropped {} (ring full {}, too large {}, writer failed {}; {} stored as loss frames), missed periods {}\n",
        s.records_dropped, s.drops.ring_full, s.drops.too_large, s.drops.writer_failed, s.losses_stored, s.missed_periods
    );
    out += &format!(
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "", "min", "mean", "p50", "p99", "p99.9", "max"
    );
    out += &(row("write()", &s.write_ns) + "\n");
    out += &(row("record()", &s.record_ns) + "\n");
    out += &(row("lateness", &s.lateness_ns) + "\n");
    if c.alloc == Alloc::Pool {
        let p = &s.pool;
        out += &format!(
            "pool: {} taken, {} fallbacks to fallocate, {} waits ({}), {} prepared at start, {} refilled after\n",
            p.taken,
            p.fallbacks,
            p.waits,
            format_duration(p.wait_ns),
            p.prepared_at_start,
            p.refilled_on_finish + p.refilled_while_recording
        );
    }
    if let Some(f) = &s.flight {
        out += &format!(
            "flight recorder: {} events ({} cut short by the next trigger), {} pre- and {} post-trigger records saved, {} overwritten unsaved\n",
            f.events, f.events_cut_short, f.pre_records_saved, f.post_records_saved, f.overwritten_records
        );
    }
    out += &format!(
        "flush thread: {} flushes, {} CPU{}\n",
        s.flush.flushes,
        format_duration(s.flush.cpu_ns),
        s.flush
            .error
            .as_ref()
            .map(|e| format!(", first error: {e}"))
            .unwrap_or_default()
    );
    if to_stderr {
        eprint!("{out}");
    } else {
        print!("{out}");
    }
}
