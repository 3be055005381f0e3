//! Stage two of a recording: everything it needs before its first record,
//! each step a function — the directory, signal handlers, trigger
//! sources, `--recover-first`, a crashed recording moved back, the cgroup and the recorder
//! itself, tracing, the threads that watch it, and last the real-time
//! settings of the calling thread.

use std::sync::atomic::Ordering;

use rtrec_engine::{rt, Alloc, Mode, Recorder};

use super::plan::{Plan, RecordArgs};
use super::ring::ring_warnings;
use super::storage::switch_warning;
use super::watch::Watchers;
use crate::error::{usage, Context, Error, Result};
use crate::signals;

/// Stage two's result: a recorder ready to take records, and what stays
/// beside it until the end.
pub struct Prepared {
    /// The recorder.
    pub rec: Recorder,
    /// A pooled recording's shared lock: it is writing in the directory.
    pub writing: Option<rtrec_engine::pool::WritersLock>,
    /// Ctrl-C and SIGTERM end the recording; put back when dropped.
    pub stop_signals: rtrec_host::signals::StopSignals,
    /// `--io-class` / `--io-weight`: the recording's cgroup, removed when
    /// dropped.
    pub isolation: Option<crate::isolation::Isolation>,
    /// `--explain`.
    pub tracing: Option<crate::explain::Tracing>,
    /// The progress bar, the status file, the memory samples.
    pub watchers: Watchers,
    /// The write counters before the recorder was created.
    pub writes: crate::disk::Writes,
    /// What of the producer's `--rt` setup could not be applied.
    pub rt_failures: Vec<String>,
}

/// Stage two (see the module docs). Nothing has been recorded if it
/// fails.
///
/// # Errors
/// The directory cannot be created, a signal handler installed, a crashed
/// recording moved back, or the recorder created.
pub fn prepare(a: &RecordArgs, plan: &Plan) -> Result<Prepared> {
    if plan.dir_is_default && !plan.dir.exists() {
        std::fs::create_dir_all(&plan.dir).context(format!("creating '{}'", plan.dir.display()))?;
    }
    if let Some(setup) = plan.rt.as_ref().filter(|_| plan.require_rt) {
        let failures = rt::probe(setup);
        if !failures.is_empty() {
            return usage(format!(
                "--require-rt: {}; nothing was recorded (run as root, or with CAP_SYS_NICE and CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK; without --require-rt the recording runs without them)",
                failures.join("; ")
            ));
        }
    }
    let stop_signals = signals::install()?;
    keep_cpu_for_producer(plan);
    let locks_memory = plan.rt.as_ref().is_some_and(|s| s.lock_memory);
    for w in ring_warnings(&plan.ring, locks_memory) {
        eprintln!("rtrec: warning: {w}");
    }
    listen_for_triggers(plan)?;
    if a.recover_first {
        recover_first(plan)?;
    }
    recover_crashed(plan)?;
    // Before the recorder: its first file and the pool's work count.
    let writes = crate::disk::Writes::start(&plan.dir);
    let (rec, isolation) = create(a, plan)?;
    for w in rec.start_notes() {
        eprintln!("rtrec: warning: {w}");
    }
    if let Some(w) = switch_warning(rec.config(), plan.source.period_ns(), plan.source.count) {
        eprintln!("rtrec: warning: {w}");
    }
    // A pooled recording says it is writing here (see crate::disk).
    let writing = (plan.cfg.alloc == Alloc::Pool)
        .then(|| rtrec_engine::pool::WritersLock::take(&plan.dir))
        .flatten();
    let cpu = plan.rt.as_ref().and_then(|r| r.cpu);
    let tracing = crate::explain::start(&a.explain, &plan.dir, plan.source.period_ns(), cpu);
    let watchers = Watchers::start(&a.output, plan, rec.live());
    // The producer's real-time setup last: every thread above (the
    // engine's writer and flusher, the tracer's reader, the watchers, the
    // stdin trigger) was spawned before it and inherits neither the
    // SCHED_FIFO priority nor the CPU pin; the ring is already faulted in,
    // and mlockall locks it with the rest.
    let rt_failures = plan.rt.as_ref().map(rt::apply).unwrap_or_default();
    if !rt_failures.is_empty() {
        eprintln!(
            "rtrec: warning: the real-time setup is incomplete: {}; recording without it (--require-rt refuses instead)",
            rt_failures.join("; ")
        );
    }
    Ok(Prepared {
        rec,
        writing,
        stop_signals,
        isolation,
        tracing,
        watchers,
        writes,
        rt_failures,
    })
}

/// `--rt --cpu N` keeps N for the producer: every thread spawned from
/// here on (the engine's writer and flusher, the tracer's reader, the
/// watchers) inherits a mask without N, unless it is the only CPU; the
/// producer is pinned to N last. A writer or flusher in a system call on
/// the producer's CPU would otherwise hold it past its wake-up (a kernel
/// without full preemption does not take the CPU back there).
fn keep_cpu_for_producer(plan: &Plan) {
    if let Some(cpu) = plan.rt.as_ref().and_then(|r| r.cpu) {
        if let Err(e) = rtrec_sys::avoid_cpu(cpu) {
            eprintln!("rtrec: warning: could not keep CPU {cpu} for the producer alone: {e}");
        }
    }
}

/// The trigger sources that need setting up before the recording: a
/// flight recorder always takes SIGUSR1 (its default action would kill the
/// recorder and lose the window), and every recording counts a SIGUSR1
/// it has no use for, and SIGUSR2, instead of dying of them;
/// `--trigger-on stdin` reads lines on a thread of its own.
fn listen_for_triggers(plan: &Plan) -> Result<()> {
    let usr1_triggers = plan.triggers.sigusr1 || plan.cfg.flight.is_some();
    if usr1_triggers {
        signals::install_trigger_on_sigusr1()?;
    }
    signals::count_stray_user_signals(usr1_triggers)?;
    if plan.triggers.stdin {
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
    Ok(())
}

/// A recording a crash left in the pool goes back first, and is named.
/// `--recover-first`: `rtrec recover` on the directory, its lines on
/// stderr (nothing when there was nothing to recover).
fn recover_first(plan: &Plan) -> Result<()> {
    let rec = crate::recover::recover(&plan.dir)?;
    if !rec.nothing_done() || !rec.left_alone.is_empty() {
        for line in crate::recover::lines(&plan.dir, &rec) {
            eprintln!("rtrec: recover: {line}");
        }
    }
    Ok(())
}

fn recover_crashed(plan: &Plan) -> Result<()> {
    if plan.cfg.alloc != Alloc::Pool {
        return Ok(());
    }
    if let Ok(Some(pool)) = rtrec_engine::pool::Pool::open(&plan.dir) {
        for (from, to) in pool.recover().map_err(|e| Error::Usage(e.to_string()))? {
            eprintln!(
                "rtrec: recovered an unfinished recording: '{}' moved back as '{}'",
                from.display(),
                to.display()
            );
        }
    }
    Ok(())
}

/// The recorder, created in its own cgroup (removed when the isolation
/// drops) with the I/O class the engine's threads inherit.
fn create(a: &RecordArgs, plan: &Plan) -> Result<(Recorder, Option<crate::isolation::Isolation>)> {
    let mut isolation = crate::isolation::Isolation::start(&a.isolation, &plan.dir);
    if let Some(i) = isolation.as_mut() {
        i.before_create();
    }
    // Nothing has been recorded if this fails: exit 2, as for bad input.
    let created = Recorder::create(&plan.dir, plan.cfg.clone());
    if let Some(i) = &isolation {
        i.after_create(plan.cfg.mode == Mode::Inline);
    }
    let rec = created.map_err(|e| Error::Usage(e.to_string()))?;
    Ok((rec, isolation))
}
