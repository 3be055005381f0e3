//! `rtrec record`: resolve the options into a recorder configuration, run a
//! synthetic periodic source (or read records from stdin), show progress on
//! a terminal, and print the summary.
//!
//! In stages, each a function doing one thing: [`resolve`] (the options
//! checked together into a [`Plan`], no I/O) → [`prepare`] (directory,
//! signals, recorder, watchers) → [`run_source`] (the records) →
//! [`finish`] (the summary and what it gathers) → [`report`] (`--json`,
//! the terminal, the exit code). [`run`] puts `--device`'s emulated device
//! around the last four.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::Context;
use rtrec_engine::result::{RecordResult, ResidentSample};
use rtrec_engine::rt::{self, RtSetup};
use rtrec_engine::{
    Alloc, Config, FlightConfig, Framing, LatencySummary, LiveStats, Mode, OnFull, PeriodicTimer,
    Recorder, RingSizing, Stall, StallSource, Summary, Workload,
};

use crate::cli::{RecordArgs, DEFAULT_POST, DEFAULT_PRE};
use crate::error::usage;
use crate::signals;
use rtrec_units::value::{Ring, Size};
use rtrec_units::{format_duration, format_size};

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
    workload: Workload,
    /// How the ring was sized, for the summary and `--json`.
    ring: RingSizing,
}

/// Stage one: the options, already typed and checked value by value by
/// the command line's parsers, checked together and resolved into a plan
/// (no I/O).
fn resolve(a: &RecordArgs) -> crate::error::Result<Plan> {
    crate::cli::record_features(a)?;
    let period_ns = a.period.ns();
    let size = a.size.bytes();
    let max_line = a.max_line.bytes();
    let count = match (a.total, a.count) {
        // --duration: the periods that fit in it (the synthetic source
        // releases one record per period, so a duration is a count).
        (None, None) if a.duration.is_some() => {
            let d = a.duration.map_or(0, rtrec_units::value::Duration::ns);
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
    cfg.max_latency_ns = a.max_latency.ns();
    cfg.flush_every = a.flush_every.bytes();
    cfg.io = a.io;
    cfg.io_block = a.io_block.bytes();
    cfg.io_depth = a.io_depth;
    // 0 is allowed here: durable points only when a file is closed.
    cfg.sync_every_ns = a.sync_every.ns();
    cfg.pool.files = a.pool_files;
    cfg.pool.on_empty = a.on_pool_empty;
    cfg.pool.refill_on_finish = !a.no_refill;
    cfg.pool.refill_while_recording = a.refill_while_recording;
    cfg.on_full = a.on_full;
    cfg.lines = a.lines;
    // --timeline keeps each write()'s latency, allocated before recording.
    if a.timeline {
        cfg.keep_write_samples = count.map_or(1_000_000, |c| c.min(1_000_000)) as usize;
    }
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
        stall: match (a.stall, &a.device.device) {
            (Some(s), _) => Some(s),
            (None, Some(d)) => Some(Stall {
                ns: d.profile.worst_stall_ns(),
                source: StallSource::Device,
            }),
            (None, None) => None,
        },
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
    let trigger_every = a.trigger_every.map(rtrec_units::value::Duration::ns);
    let flight_asked = a.pre.is_some() || a.post.is_some() || a.pre_bytes.is_some();
    if !flight_asked && (trigger_stdin || trigger_sigusr1 || trigger_every.is_some()) {
        return usage("triggers need the flight recorder: give --pre and --post");
    }
    if flight_asked {
        cfg.flight = Some(FlightConfig {
            pre_ns: a.pre.unwrap_or(DEFAULT_PRE).ns(),
            pre_bytes: a.pre_bytes.map_or(0, Size::bytes), // 0: sized below
            post_ns: a.post.unwrap_or(DEFAULT_POST).ns(),
        });
    }
    // The engine sizes what the user did not set, by the same rules as the
    // C API (see `rtrec_engine::sizing`).
    let sizes = cfg.sizes_for(&workload);
    cfg.file_size = a.file_size.map_or(sizes.file_size, Size::bytes);
    if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
        return usage(format!(
            "a record of {} bytes does not fit in a file of {} bytes; raise --file-size or lower --size",
            cfg.max_record, cfg.file_size
        ));
    }
    let ring = match a.ring {
        None | Some(Ring::Auto) => sizes.ring,
        Some(Ring::Fixed(size)) => {
            let bytes = usize::try_from(size.bytes()).or_else(|_| usage("--ring: too large"))?;
            sizes.ring.fixed(bytes, cfg.max_record, workload.period_ns)
        }
    };
    cfg.ring_bytes = ring.ring_bytes;
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
        workload,
        ring,
    })
}

/// What forbids the ring the data needs, one sentence each: the auto
/// rule's memory cap, and `RLIMIT_MEMLOCK` when `--rt` locks the ring
/// (root is not bound by it).
fn ring_warnings(plan: &Plan) -> Vec<String> {
    let r = &plan.ring;
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
    let locks = plan.rt.as_ref().is_some_and(|s| s.lock_memory);
    if locks && rtrec_sys::effective_uid() != 0 {
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
            format!("a writer stall of up to {s:.2} s")
        })
}

/// The summary's ring line: its size, how it was sized, and the longest
/// writer stall it absorbs at this rate.
fn ring_line(r: &RingSizing) -> String {
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

/// Runs `rtrec record`; with `--device`, in the recording directory of an
/// emulated device's trial (see [`crate::device::Trial`]).
pub fn run(a: &RecordArgs) -> crate::error::Result<i32> {
    let mut plan = resolve(a)?;
    let Some(trial) = crate::device::Trial::start(&a.device, &plan.dir, a.quiet)? else {
        return record(a, plan, None);
    };
    plan.dir = trial.dir().to_path_buf();
    plan.dir_is_default = false;
    let result = record(a, plan, Some(&trial));
    trial.finish(result)
}

/// One recording, in stages: [`prepare`] (the directory, signals, the
/// recorder and what watches it), [`run_source`] (the records),
/// [`finish`] (the summary and what it gathers), [`report`] (what the user
/// sees, and the exit code).
fn record(
    a: &RecordArgs,
    plan: Plan,
    trial: Option<&crate::device::Trial>,
) -> crate::error::Result<i32> {
    let mut prepared = prepare(a, &plan)?;
    let ran = run_source(a, &plan, &mut prepared);
    let finished = finish(prepared, ran, &plan, trial)?;
    report(a, &finished)
}

/// Stage two's result: a recorder ready to take records, and what stays
/// beside it until the end.
struct Prepared {
    rec: Recorder,
    /// A pooled recording's shared lock: it is writing in the directory.
    writing: Option<rtrec_engine::pool::WritersLock>,
    /// Ctrl-C and SIGTERM end the recording; put back when dropped.
    stop_signals: rtrec_host::signals::StopSignals,
    /// `--io-class` / `--io-weight`: the recording's cgroup, removed when
    /// dropped.
    isolation: Option<crate::isolation::Isolation>,
    /// `--explain`.
    tracing: Option<crate::explain::Tracing>,
    watchers: Watchers,
}

/// Stage two: everything a recording needs before its first record —
/// the directory, signal handlers, trigger sources, a crashed recording
/// moved back, the cgroup, the recorder itself, tracing, the threads that
/// watch it, and last the real-time settings of the calling thread. Nothing has been recorded if it fails.
fn prepare(a: &RecordArgs, plan: &Plan) -> crate::error::Result<Prepared> {
    if plan.dir_is_default && !plan.dir.exists() {
        std::fs::create_dir_all(&plan.dir).context(format!("creating '{}'", plan.dir.display()))?;
    }
    let stop_signals = signals::install()?;
    // `--rt --cpu N` keeps N for the producer: every thread spawned from
    // here on (the engine's writer and flusher, the tracer's reader, the
    // watchers) inherits a mask without N, unless it is the only CPU; the
    // producer is pinned to N last. A writer or flusher in a system call on
    // the producer's CPU would otherwise hold it past its wake-up (a
    // kernel without full preemption does not take the CPU back there).
    if let Some(cpu) = plan.rt.as_ref().and_then(|r| r.cpu) {
        if let Err(e) = rtrec_sys::avoid_cpu(cpu) {
            eprintln!("rtrec: warning: could not keep CPU {cpu} for the producer alone: {e}");
        }
    }
    for w in ring_warnings(plan) {
        eprintln!("rtrec: warning: {w}");
    }
    // A flight recorder always takes SIGUSR1 as a trigger (its default
    // action would kill the recorder and lose the window).
    if plan.trigger_sigusr1 || plan.cfg.flight.is_some() {
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
    // A recording a crash left in the pool goes back first, and is named.
    if plan.cfg.alloc == Alloc::Pool {
        if let Ok(Some(pool)) = rtrec_engine::pool::Pool::open(&plan.dir) {
            for (from, to) in pool
                .recover()
                .map_err(|e| crate::error::Error::Usage(e.to_string()))?
            {
                eprintln!(
                    "rtrec: recovered an unfinished recording: '{}' moved back as '{}'",
                    from.display(),
                    to.display()
                );
            }
        }
    }
    // Its own cgroup (removed when `isolation` drops) and the I/O class the
    // engine's threads inherit.
    let mut isolation = crate::isolation::Isolation::start(&a.isolation, &plan.dir);
    if let Some(i) = isolation.as_mut() {
        i.before_create();
    }
    let cfg = pool_sized(a, plan)?;
    // Nothing has been recorded if this fails: exit 2, as for bad input.
    let created = Recorder::create(&plan.dir, cfg);
    if let Some(i) = &isolation {
        i.after_create(plan.cfg.mode == rtrec_engine::Mode::Inline);
    }
    let rec = created.map_err(|e| crate::error::Error::Usage(e.to_string()))?;
    // A pooled recording says it is writing here (see crate::disk).
    let writing = (plan.cfg.alloc == Alloc::Pool)
        .then(|| rtrec_engine::pool::WritersLock::take(&plan.dir))
        .flatten();
    let period_ns = match plan.source {
        Source::Synthetic { period_ns } => Some(period_ns),
        _ => None,
    };
    let cpu = plan.rt.as_ref().and_then(|r| r.cpu);
    let tracing = crate::explain::start(&a.explain, &plan.dir, period_ns, cpu);
    let watchers = Watchers::start(a, plan, rec.live());
    // The producer's real-time setup last: every thread above (the
    // engine's writer and flusher, the tracer's reader, the watchers, the
    // stdin trigger) was spawned before it and inherits neither the
    // SCHED_FIFO priority nor the CPU pin; the ring is already faulted in,
    // and mlockall locks it with the rest.
    if let Some(setup) = &plan.rt {
        for w in rt::apply(setup) {
            eprintln!("rtrec: warning: {w} (recording without it)");
        }
    }
    Ok(Prepared {
        rec,
        writing,
        stop_signals,
        isolation,
        tracing,
        watchers,
    })
}

/// The one file-size rule of a pooled recording: without `--file-size`, a
/// recording in a directory that has a pool takes the pool's file size and
/// rotates through its files as it needs more, so a prepared pool is never
/// thrown away by a default (the workload's size would differ from the
/// pool's, and the pool would be resized: its prepared files deleted and a
/// new one allocated on the recording's first file). `--file-size` still
/// resizes the pool, and says so.
///
/// # Errors
/// The pool's files cannot hold one record: one sentence naming both fixes.
fn pool_sized(a: &RecordArgs, plan: &Plan) -> crate::error::Result<Config> {
    let mut cfg = plan.cfg.clone();
    if a.file_size.is_some() || cfg.alloc != Alloc::Pool {
        return Ok(cfg);
    }
    if let Ok(Some(pool)) = rtrec_engine::pool::Pool::open(&plan.dir) {
        cfg.file_size = pool.file_size();
        if cfg.stored_len(cfg.max_record) > cfg.usable_file_bytes() {
            return usage(format!(
                "the pool's files ({}) cannot hold a record of {}; give --file-size (the pool is resized) or prepare the pool with larger files",
                format_size(cfg.file_size),
                format_size(cfg.max_record as u64)
            ));
        }
    }
    Ok(cfg)
}

/// The threads that watch a recording from beside it, each reading the
/// live counters: the progress bar, `--status FILE`, and the flight
/// recorder's resident-memory samples.
struct Watchers {
    /// Set when the recording has ended: progress and status stop.
    done: Arc<AtomicBool>,
    progress: Option<std::thread::JoinHandle<()>>,
    status: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    rss: Option<RssMonitor>,
}

/// The resident-memory sampler: its stop flag, and the thread that returns
/// the samples (events, bytes).
type RssMonitor = (Arc<AtomicBool>, std::thread::JoinHandle<Vec<(u64, u64)>>);

impl Watchers {
    fn start(a: &RecordArgs, plan: &Plan, live: Arc<LiveStats>) -> Watchers {
        let done = Arc::new(AtomicBool::new(false));
        let show = !a.quiet && std::io::stderr().is_terminal();
        let progress = show.then(|| spawn_progress(live.clone(), plan.count, done.clone()));
        let status = a.status.clone().map(|path| {
            let labels = crate::status::Labels {
                // Absolute, so every board's series name the place alike.
                dir: std::fs::canonicalize(&plan.dir)
                    .unwrap_or_else(|_| plan.dir.clone())
                    .display()
                    .to_string(),
                prefix: plan.cfg.prefix.clone(),
            };
            crate::status::spawn(path, labels, live.clone(), done.clone())
        });
        let rss = plan.cfg.flight.is_some().then(|| spawn_rss_monitor(live));
        Watchers {
            done,
            progress,
            status,
            rss,
        }
    }

    /// Takes the last memory sample: before `finish()` frees the ring, so
    /// that the figure is the recording's, not the clean-up's.
    fn stop_rss(&mut self) -> Option<Vec<(u64, u64)>> {
        self.rss.take().map(|(stop, h)| {
            stop.store(true, Ordering::Release);
            h.join().unwrap_or_default()
        })
    }

    /// Stops the progress bar, and the status after its last line (done:
    /// true, what the summary says).
    fn stop(self) {
        self.done.store(true, Ordering::Release);
        if let Some(p) = self.progress {
            let _ = p.join();
        }
        if let Some(h) = self.status {
            if let Err(e) = h.join().unwrap_or(Ok(())) {
                eprintln!("rtrec: warning: the status file could not be written: {e}");
            }
        }
    }
}

/// Stage three's result: how the source ended, and its schedule.
struct Ran {
    outcome: Outcome,
    /// The synthetic source's timer (lateness, missed periods).
    timer: Option<PeriodicTimer>,
    /// `--timeline`'s producer-side samples.
    timeline: Timeline,
}

/// Stage three: the source hands records to the recorder until it ends,
/// the count is reached, or a signal stops it; triggers from outside reach
/// a flight recorder meanwhile.
fn run_source(a: &RecordArgs, plan: &Plan, p: &mut Prepared) -> Ran {
    let live = p.rec.live();
    // Triggers from outside the process reach a flight recorder through
    // its socket in the directory (`rtrec trigger DIR`).
    let _listener = match plan.cfg.flight {
        Some(_) => match crate::trigger::Listener::bind(&plan.dir, &signals::TRIGGERS) {
            Ok(l) => Some(l),
            Err(why) => {
                eprintln!("rtrec: warning: {why}; `rtrec trigger` will not reach this recorder");
                None
            }
        },
        None => None,
    };
    let ring = plan.cfg.mode == rtrec_engine::Mode::Ring;
    let mut session = Session {
        baseline: a
            .explain_baseline
            .then(|| Baseline::new(plan.cfg.ring_bytes)),
        rec: &mut p.rec,
        triggers: Triggers::new(plan.trigger_every),
        offered: 0,
        trace: Trace::new(a.trace_written, ring),
        writer_failed: false,
        timeline: match plan.cfg.keep_write_samples {
            0 => Timeline::default(),
            n => Timeline::with_capacity(n),
        },
    };
    let (outcome, timer) = match plan.source {
        Source::Synthetic { period_ns } => {
            let mut t = PeriodicTimer::new(period_ns);
            t.publish_to(live);
            let outcome = synthetic(&mut session, &mut t, plan.size, plan.count);
            (outcome, Some(t))
        }
        Source::StdinFixed => (
            stdin_source(&mut session, Cut::Fixed { size: plan.size }, plan.count),
            None,
        ),
        Source::StdinLines => (
            stdin_source(
                &mut session,
                Cut::Lines {
                    max: plan.cfg.max_record,
                },
                plan.count,
            ),
            None,
        ),
    };
    if session.baseline.is_some() && !a.quiet {
        eprintln!(
            "rtrec: --explain-baseline: {} records copied by the producer's loop without record(); nothing was recorded",
            session.offered
        );
    }
    Ran {
        outcome,
        timer,
        timeline: session.timeline,
    }
}

/// Stage four's input: the recording has ended; everything the report
/// shows.
struct Finished {
    summary: Summary,
    /// What the recording and the pool hold on disk, its tail given back.
    disk: crate::disk::DiskUse,
    outcome: Outcome,
    rss: Option<Vec<(u64, u64)>>,
    explained: Option<crate::explain::Explanation>,
    device: Option<crate::device::DeviceReport>,
    /// `--timeline`'s producer-side samples.
    timeline: Timeline,
    /// Kept to the end: the report shows what it applied, and dropping it
    /// removes the cgroup.
    isolation: Option<crate::isolation::Isolation>,
    /// How the ring was sized.
    ring: RingSizing,
    _stop_signals: rtrec_host::signals::StopSignals,
}

/// Ends the recording (`finish()`, or `abort()` with the reason) and
/// gathers what the report shows: the schedule, the attribution, the
/// emulated device's report; then stops the watchers.
fn finish(
    mut p: Prepared,
    ran: Ran,
    plan: &Plan,
    trial: Option<&crate::device::Trial>,
) -> crate::error::Result<Finished> {
    let rss = p.watchers.stop_rss();
    let mut summary = match &ran.outcome {
        Outcome::Done => p.rec.finish()?,
        Outcome::Aborted(reason) | Outcome::Interrupted(reason) => p.rec.abort(reason)?,
    };
    if let Some(t) = &ran.timer {
        summary.attach_schedule(t);
    }
    let missed = summary.missed_periods;
    let explained = p.tracing.and_then(|t| t.finish(missed));
    let device = match trial {
        Some(t) => Some(t.keep(&mut summary, plan.workload.period_ns)?),
        None => None,
    };
    p.watchers.stop();
    let disk = crate::disk::finish(&plan.dir, &summary.files, p.writing);
    Ok(Finished {
        disk,
        summary,
        outcome: ran.outcome,
        rss,
        explained,
        device,
        timeline: ran.timeline,
        isolation: p.isolation,
        ring: plan.ring,
        _stop_signals: p.stop_signals,
    })
}

/// Stage four: `--json`, the summary on the terminal (on stderr when the
/// JSON goes to stdout), `--histogram`, the warnings, and the exit code.
fn report(a: &RecordArgs, f: &Finished) -> crate::error::Result<i32> {
    let summary = &f.summary;
    if let Some(path) = &a.json {
        let extra = Extra {
            rss: f.rss.as_deref(),
            explained: f.explained.as_ref(),
            isolation: f.isolation.as_ref().map(|i| i.applied()),
            device: f.device.as_ref(),
            timeline: &f.timeline,
            total: Total::of(a),
            ring: (summary.config.mode == Mode::Ring).then_some(&f.ring),
            disk: &f.disk,
            baseline: a.explain_baseline,
        };
        write_json(path, summary, &extra)?;
    }
    if let (Some(samples), false) = (&f.rss, a.quiet) {
        for (events, bytes) in samples {
            eprintln!(
                "resident memory after {events} events: {}",
                format_size(*bytes)
            );
        }
    }
    if !a.quiet {
        let json_on_stdout = a.json.as_deref() == Some(Path::new("-"));
        let say = |text: &str| {
            if json_on_stdout {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
        };
        print_summary(summary, json_on_stdout);
        if summary.config.mode == Mode::Ring {
            say(&ring_line(&f.ring));
        }
        if let Some(line) = Total::of(a).and_then(|t| t.line()) {
            say(&line);
        }
        say(&f.disk.lines());
        if let Some(d) = &f.device {
            say(&d.line());
        }
        if let Some(x) = &f.explained {
            crate::explain::print(x, json_on_stdout);
        }
        if let Some(i) = &f.isolation {
            say(&format!("{}\n", i.line()));
        }
    }
    if a.histogram {
        let h = summary.write_latency.histogram();
        let text = rtrec_units::histogram::render(
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value())),
        );
        eprint!("write() latency:\n{text}");
    }
    for w in &summary.warnings {
        eprintln!("rtrec: warning: {w}");
    }
    Ok(exit_code(&f.outcome, summary))
}

/// The exit code of a recording, with the sentence that explains a
/// failure: 0 done, 1 failed or incomplete, 130 interrupted.
fn exit_code(outcome: &Outcome, summary: &Summary) -> i32 {
    match outcome {
        Outcome::Done if summary.error.is_none() => 0,
        Outcome::Done => {
            eprintln!(
                "rtrec: the recording failed: {}; {} of {} records were written, {} dropped (stored as a loss); the recording is marked aborted",
                summary
                    .error
                    .as_ref()
                    .map_or("unknown error", |f| f.message.as_str()),
                summary.records_written,
                summary.records_offered,
                summary.records_dropped
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
    }
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

/// Trigger intake, one per recording. Every request — SIGUSR1, a line on
/// stdin (`--trigger-on stdin`), a datagram from `rtrec trigger DIR` (each
/// counted into [`signals::TRIGGERS`] by its handler or thread) and the
/// `--trigger-every` schedule — becomes one `trigger()` call here.
///
/// Design choice: sources never hold the recorder; they hand records to a
/// [`Session`], which takes the requests before every record and while the
/// source waits for input. No source can skip triggers again.
struct Triggers {
    taken: u64,
    every_ns: Option<u64>,
    next_ns: u64,
}

impl Triggers {
    fn new(every_ns: Option<u64>) -> Triggers {
        Triggers {
            taken: 0,
            every_ns,
            next_ns: rtrec_sys::monotonic_ns().saturating_add(every_ns.unwrap_or(0)),
        }
    }

    /// Turns the requests that arrived since the last call into
    /// `trigger()` calls. Real-time safe: atomics and the vDSO clock.
    fn take(&mut self, rec: &mut Recorder) {
        if let Some(every) = self.every_ns {
            let now = rtrec_sys::monotonic_ns();
            if now >= self.next_ns {
                signals::TRIGGERS.fetch_add(1, Ordering::Relaxed);
                // A stalled source gets one trigger, not a burst.
                self.next_ns = (self.next_ns + every).max(now + 1);
            }
        }
        let asked = signals::TRIGGERS.load(Ordering::Relaxed);
        while self.taken < asked {
            let _ = rec.trigger();
            self.taken += 1;
        }
    }
}

/// `--trace-written`: one line per record `record()` accepted. In direct
/// mode that record was written; in ring mode only queued (the writer
/// writes it later), so the line says `queued` — the written count of ring
/// mode is in `--status`.
#[derive(Clone, Copy)]
struct Trace {
    word: Option<&'static str>,
}

impl Trace {
    fn new(on: bool, ring: bool) -> Trace {
        Trace {
            word: on.then_some(if ring { "queued" } else { "written" }),
        }
    }
}

fn trace(seq: u64, t: Trace) {
    if let Some(w) = t.word {
        // Not println!: a reader that went away must not panic a recording.
        let _ = writeln!(std::io::stdout(), "{w} {seq}");
    }
}

/// The one way a source reaches the recorder: records go in through
/// [`Session::record`], waits for input through [`Session::idle`]; both take
/// the trigger requests first.
struct Session<'a> {
    rec: &'a mut Recorder,
    triggers: Triggers,
    /// Records handed to the recorder (stored or dropped and counted).
    offered: u64,
    /// `--explain-baseline`: records go here instead of `record()`.
    baseline: Option<Baseline>,
    trace: Trace,
    /// A `write()` failed: the recording ends (the summary says why).
    writer_failed: bool,
    /// `--timeline`: each period's lateness, allocated before the
    /// recording (never grown on the hot path).
    timeline: Timeline,
}

/// `--timeline`'s lateness samples, in period order; a full vector takes
/// no more (the capacity is the limit). The `record()` samples are the
/// engine's (`Summary::record_samples`), from the clock reads that time
/// `record()` anyway.
#[derive(Default)]
struct Timeline {
    lateness_ns: Vec<u64>,
}

impl Timeline {
    fn with_capacity(n: usize) -> Timeline {
        Timeline {
            lateness_ns: Vec::with_capacity(n),
        }
    }

    fn on(&self) -> bool {
        self.lateness_ns.capacity() > 0
    }

    fn push(v: &mut Vec<u64>, ns: u64) {
        if v.len() < v.capacity() {
            v.push(ns);
        }
    }
}

/// `--explain-baseline`: the producer's loop without rtrec's code. Each
/// record is copied into the next slot of a buffer of the ring's size, as
/// `record()` copies it into the ring, so the loop touches as much memory
/// in the same order; no atomics, no framing, no writer to wake.
///
/// Design choice: the baseline is the same command and the same loop, not
/// a second program, so that everything but `record()` — the timer, the
/// real-time setup, the CPU pin, the tracer, the writer and flush threads
/// idling beside it — is what a real run has. What its trace counts as
/// the producer's own time above the threshold is then the platform's
/// (the hypervisor's exits, which the guest sees as neither steal nor an
/// interrupt), and a real run's excess over it is rtrec's.
struct Baseline {
    sink: Vec<u8>,
    at: usize,
}

impl Baseline {
    fn new(bytes: usize) -> Baseline {
        // Written once now, so that no page is first touched in the loop.
        Baseline {
            sink: vec![1u8; bytes.max(1)],
            at: 0,
        }
    }

    fn copy(&mut self, data: &[u8]) {
        let n = data.len().min(self.sink.len());
        if self.at + n > self.sink.len() {
            self.at = 0;
        }
        self.sink[self.at..self.at + n].copy_from_slice(&data[..n]);
        std::hint::black_box(&self.sink[self.at..self.at + n]);
        self.at += n;
    }
}

impl Session<'_> {
    fn record(&mut self, data: &[u8]) {
        if let Some(b) = &mut self.baseline {
            b.copy(data);
            self.offered += 1;
            return;
        }
        self.triggers.take(self.rec);
        let seq = self.rec.next_seq();
        let r = self.rec.record(data);
        match r {
            Ok(()) => trace(seq, self.trace),
            Err(rtrec_engine::RecordError::WriterFailed) => self.writer_failed = true,
            Err(_) => {}
        }
        self.offered += 1;
    }

    /// Between records: takes trigger requests; the stop signal caught, if
    /// any.
    fn idle(&mut self) -> Option<i32> {
        self.triggers.take(self.rec);
        signals::caught()
    }

    fn reached(&self, count: Option<u64>) -> bool {
        count.is_some_and(|c| self.offered >= c)
    }
}

fn synthetic(
    s: &mut Session,
    timer: &mut PeriodicTimer,
    size: usize,
    count: Option<u64>,
) -> Outcome {
    let mut buf = vec![0u8; size];
    // A recognisable pattern after the sequence number.
    for (i, b) in buf.iter_mut().enumerate().skip(8) {
        *b = (i % 251) as u8;
    }
    while !s.reached(count) {
        if let Some(sig) = s.idle() {
            return interrupted(sig, s.offered, count);
        }
        let tick = timer.wait();
        if s.timeline.on() {
            Timeline::push(&mut s.timeline.lateness_ns, tick.lateness_ns);
        }
        let seq = s.rec.next_seq();
        let k = 8.min(size);
        buf[..k].copy_from_slice(&seq.to_le_bytes()[..k]);
        s.record(&buf);
        if s.writer_failed {
            // A write error ends the recording (the summary says why).
            return Outcome::Done;
        }
    }
    Outcome::Done
}

/// Samples the resident memory after the 10th event and at the end, so a
/// flight-recorder run shows that memory does not grow with events.
fn spawn_rss_monitor(live: Arc<LiveStats>) -> RssMonitor {
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

/// How stdin is cut into records.
enum Cut {
    /// Records of exactly `size` bytes; a shorter last piece is stored as a
    /// shorter record.
    Fixed { size: usize },
    /// One record per line without its newline; a line longer than `max` is
    /// dropped, counted and stored as a loss.
    Lines { max: usize },
}

/// Cuts a byte stream into records as it arrives; holds the piece of the
/// next record read so far, so that nothing read is ever lost: at the end
/// of the stream, and when the recording is stopped, that piece is stored
/// as a (shorter) record.
struct Assembler {
    cut: Cut,
    buf: Vec<u8>,
    /// A line went past `max`: the rest of it is not kept, and the record
    /// offered for it is one byte over the limit, so the recorder drops and
    /// counts it as too large.
    overlong: bool,
}

impl Assembler {
    fn new(cut: Cut) -> Assembler {
        let cap = match cut {
            Cut::Fixed { size } => size,
            Cut::Lines { max } => max + 1,
        };
        Assembler {
            cut,
            buf: Vec::with_capacity(cap),
            overlong: false,
        }
    }

    fn unit(&self) -> &'static str {
        match self.cut {
            Cut::Fixed { .. } => "records",
            Cut::Lines { .. } => "lines",
        }
    }

    /// Feeds bytes; true once `count` records have been offered (the rest
    /// of `data` is not wanted).
    fn feed(&mut self, mut data: &[u8], s: &mut Session, count: Option<u64>) -> bool {
        while !data.is_empty() {
            if s.reached(count) {
                return true;
            }
            match self.cut {
                Cut::Fixed { size } => {
                    if self.buf.is_empty() && data.len() >= size {
                        s.record(&data[..size]);
                        data = &data[size..];
                        continue;
                    }
                    let take = (size - self.buf.len()).min(data.len());
                    self.buf.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if self.buf.len() == size {
                        s.record(&self.buf);
                        self.buf.clear();
                    }
                }
                Cut::Lines { max } => {
                    let end = data.iter().position(|&b| b == b'\n');
                    let part = &data[..end.unwrap_or(data.len())];
                    if !self.overlong {
                        let room = max + 1 - self.buf.len();
                        self.buf.extend_from_slice(&part[..part.len().min(room)]);
                        self.overlong = self.buf.len() > max;
                    }
                    match end {
                        Some(i) => {
                            s.record(&self.buf);
                            self.buf.clear();
                            self.overlong = false;
                            data = &data[i + 1..];
                        }
                        None => data = &[],
                    }
                }
            }
        }
        s.reached(count)
    }

    /// Stores the piece read so far, if any, as a last (shorter) record.
    fn finish(&mut self, s: &mut Session, count: Option<u64>) {
        if (!self.buf.is_empty() || self.overlong) && !s.reached(count) {
            s.record(&self.buf);
            self.buf.clear();
            self.overlong = false;
        }
    }
}

/// What the reader thread hands over: bytes as `read()` returned them.
type Piece = std::io::Result<Vec<u8>>;

/// Reads stdin on its own thread and hands over each piece as read, so
/// that the recording loop can take triggers and notice a stop signal while
/// no input arrives (the stop handlers use `SA_RESTART`: a blocking read is
/// not cut short). The channel is bounded: when the recorder waits for room
/// in the ring, this thread waits on the channel and the pipe fills, so the
/// writer at the other end of the pipe waits too (back-pressure).
fn spawn_stdin_reader() -> std::sync::mpsc::Receiver<Piece> {
    const PIECE: usize = 64 * 1024;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(8);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        loop {
            let mut buf = vec![0u8; PIECE];
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    rx
}

/// Records stdin, cut by `cut`, until the end of the stream, `count`
/// records, or a stop signal. Every byte read is stored: the last piece
/// becomes a shorter record (see [`Assembler`]).
fn stdin_source(s: &mut Session, cut: Cut, count: Option<u64>) -> Outcome {
    use std::sync::mpsc::RecvTimeoutError;
    let mut asm = Assembler::new(cut);
    let unit = asm.unit();
    let pieces = spawn_stdin_reader();
    loop {
        if let Some(sig) = s.idle() {
            // What the reader thread has already read is stored too.
            while let Ok(Ok(piece)) = pieces.try_recv() {
                if asm.feed(&piece, s, count) {
                    break;
                }
            }
            asm.finish(s, count);
            return interrupted(sig, s.offered, count);
        }
        match pieces.recv_timeout(Duration::from_millis(20)) {
            Ok(Ok(piece)) => {
                if asm.feed(&piece, s, count) {
                    return Outcome::Done;
                }
            }
            Ok(Err(e)) => {
                asm.finish(s, count);
                return Outcome::Aborted(format!(
                    "reading stdin failed after {} {unit}: {e} (what was read is stored)",
                    s.offered
                ));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                asm.finish(s, count);
                return match count {
                    Some(c) if s.offered < c => Outcome::Aborted(format!(
                        "stdin closed early: {} of {c} {unit} received",
                        s.offered
                    )),
                    _ => Outcome::Done,
                };
            }
        }
    }
}

fn spawn_progress(
    live: Arc<LiveStats>,
    total: Option<u64>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let bar = match total {
            Some(t) => indicatif::ProgressBar::new(t).with_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} records {msg} (eta {eta})",
                )
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
                "written | {} queued, durable to {} | {} | max write {} | {} dropped{}",
                live.records_queued.load(Ordering::Relaxed),
                live.durable_seq.load(Ordering::Relaxed),
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

#[derive(Clone, Copy)]
/// What `record --json` adds to the engine's summary (each section left
/// out when absent; docs/record-schema.md).
struct Extra<'a> {
    /// `--rss`: resident memory after so many events.
    rss: Option<&'a [(u64, u64)]>,
    /// `--explain`: the slow calls' attribution.
    explained: Option<&'a crate::explain::Explanation>,
    /// `--io-class` / `--io-weight`: what was applied.
    isolation: Option<&'a crate::isolation::Applied>,
    /// `--device`: the emulated device.
    device: Option<&'a crate::device::DeviceReport>,
    /// `--timeline`: `record()` and lateness in order.
    timeline: &'a Timeline,
    /// `--total`: as asked, and the whole records it allowed.
    total: Option<Total>,
    /// Ring mode: how the ring was sized.
    ring: Option<&'a RingSizing>,
    /// What the recording and the pool hold on disk.
    disk: &'a crate::disk::DiskUse,
    /// `--explain-baseline`: nothing was recorded.
    baseline: bool,
}

/// `--total` as asked and the whole records it allows: rounded down, so
/// that a total is never exceeded.
#[derive(Clone, Copy)]
struct Total {
    asked_bytes: u64,
    records: u64,
    record_bytes: u64,
}

impl Total {
    fn of(a: &RecordArgs) -> Option<Total> {
        let record_bytes = a.size.bytes().max(1);
        a.total.map(|t| Total {
            asked_bytes: t.bytes(),
            records: t.bytes() / record_bytes,
            record_bytes,
        })
    }

    /// The summary's line when the total is not a whole number of records.
    fn line(&self) -> Option<String> {
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

/// `--json`: the summary and the sections `extra` holds, as the one typed
/// document of `rtrec_engine::result` (docs/record-schema.md).
fn write_json(path: &Path, s: &Summary, extra: &Extra<'_>) -> crate::error::Result<()> {
    let Extra {
        rss,
        explained,
        isolation,
        device,
        timeline,
        total,
        ring,
        disk,
        baseline,
    } = *extra;
    let mut r = RecordResult::new(s.clone());
    r.resident_after_events = rss
        .unwrap_or_default()
        .iter()
        .map(|&(events, resident_bytes)| ResidentSample {
            events,
            resident_bytes,
        })
        .collect();
    r.isolation = isolation.map(serde_json::to_value).transpose()?;
    r.explain = explained.map(serde_json::to_value).transpose()?;
    r.explain_baseline = baseline;
    r.device = device.map(serde_json::to_value).transpose()?;
    r.timeline_lateness_ns = timeline.lateness_ns.clone();
    r.total_bytes = total.map(|t| t.asked_bytes);
    r.total_records = total.map(|t| t.records);
    r.ring = ring.map(serde_json::to_value).transpose()?;
    r.disk = Some(disk.json());
    let v = r;
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

/// Which ring-full policy was in force, and what it cost.
fn on_full_line(s: &Summary) -> String {
    match s.config.on_full {
        OnFull::Drop => "ring full: drop (the producer never waits)\n".into(),
        OnFull::Block => format!(
            "ring full: block ({} waits, {} in all, longest {})\n",
            s.ring_waits,
            format_duration(s.ring_wait_ns),
            format_duration(s.ring_wait_max_ns)
        ),
    }
}

/// The counts, in the words of docs/summary.md: offered = written +
/// dropped; queued (accepted by `record()`) and what became of it; how far
/// storage holds the recording (each record as data or as its stored
/// loss). One sentence per relation, so that no two lines can seem to
/// disagree.
fn counts_lines(s: &Summary) -> String {
    let c = &s.config;
    let mut out = if s.flight.is_some() {
        // Only what a trigger saved is written; the rest was held in memory.
        format!(
            "records: {} offered, {} written (saved around triggers), {} dropped",
            s.records_offered, s.records_written, s.records_dropped
        )
    } else {
        format!(
            "records: {} offered = {} written + {} dropped",
            s.records_offered, s.records_written, s.records_dropped
        )
    };
    // Accepted by record() but never written: dropped after queueing
    // (a write error), so counted among the dropped.
    let lost_queued = s.records_queued.saturating_sub(s.records_written);
    if lost_queued > 0 {
        out += &format!(
            "; {} queued, {lost_queued} of them dropped by the writer",
            s.records_queued
        );
    } else {
        out += &format!("; {} queued", s.records_queued);
    }
    out += "\n";
    let sync = if c.sync_every_ns == 0 {
        "at file close".to_string()
    } else {
        format!("every {}", format_duration(c.sync_every_ns))
    };
    out += &if s.durable_seq >= s.records_offered {
        format!(
            "durable: all {} offered records (as data or as a stored loss), synced {sync}\n",
            s.records_offered
        )
    } else {
        format!(
            "durable: the first {} of {} offered records (as data or as a stored loss), synced {sync}\n",
            s.durable_seq, s.records_offered
        )
    };
    out
}

fn print_summary(s: &Summary, to_stderr: bool) {
    let c = &s.config;
    let mut out = String::new();
    let files = match s.files.as_slice() {
        [] => "no file".to_string(),
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
            match &s.abort_reason {
                Some(r) => format!(", INCOMPLETE ({r})"),
                None => format!(", INCOMPLETE ({} records dropped)", s.records_dropped),
            }
        }
    );
    out += &counts_lines(s);
    out += &format!(
        "dropped {} (ring full {}, too large {}, writer failed {}; {} stored as loss frames), missed periods {}\n",
        s.records_dropped, s.drops.ring_full, s.drops.too_large, s.drops.writer_failed, s.losses_stored, s.missed_periods
    );
    if c.mode == Mode::Ring {
        out += &on_full_line(s);
    }
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
            "pool: {} taken, {} fallbacks to fallocate, {} waits ({}), {} prepared at start, {} refilled after, holding {} (`rtrec pool trim` or `rtrec pool remove` gives it back)\n",
            p.taken,
            p.fallbacks,
            p.waits,
            format_duration(p.wait_ns),
            p.prepared_at_start,
            p.refilled_on_finish + p.refilled_while_recording,
            format_size((p.refilled_on_finish + p.refilled_while_recording) * c.file_size)
        );
    }
    if let Some(f) = &s.flight {
        out += &format!(
            "flight recorder: {} events ({} cut short by the next trigger), {} pre- and {} post-trigger records saved, {} overwritten unsaved\n",
            f.events, f.events_cut_short, f.pre_records_saved, f.post_records_saved, f.overwritten_records
        );
        if f.events == 0 {
            // Honest about what an untriggered flight recorder did.
            out += &format!(
                "no trigger arrived: the {} records offered were held in memory only and nothing was saved (trigger with --trigger-on SIGUSR1 or stdin, --trigger-every, or `rtrec trigger DIR`)\n",
                s.records_offered
            );
        }
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
