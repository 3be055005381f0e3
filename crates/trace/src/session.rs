//! A tracing session in this process's own tracefs instance: which events
//! are enabled, filtered to which threads and which device, the stack
//! triggers, and reading the trace back.
//!
//! Design choices:
//! - Filters keep the overhead small: scheduler, syscall and lock events
//!   only for the watched threads (the timed ones, rtrec's own, the
//!   background loads); filesystem and block events only for the
//!   recording's device. A stack is taken only when a timed thread sleeps
//!   (`sched_switch` with `prev_state & 3`) or contends for a lock.
//! - The clock is `mono`, the recorder's `CLOCK_MONOTONIC`.
//! - The trace stays in the instance's ring buffer while the run goes on
//!   and is read once at the end of it: no reader thread competes with the
//!   timed one. A buffer that overflowed is reported (`lost_events`), never
//!   hidden.
//! - Events this kernel lacks are left out (their names change between
//!   kernels) and named: [`Explanation::missing_tracepoints`] lists them
//!   (found by `rtrec_host::features::missing_tracepoints`, the one
//!   detection the tests use), and the table says what goes unattributed;
//!   the rest still explain what they can.

use std::fs;
use std::path::{Path, PathBuf};

use rtrec_host::tracefs::Instance;
use rtrec_host::Journal;

use std::io::Read as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::attribute::{attribute, Explanation, Options};
use crate::parse::{parse, Event};
use crate::producer::{
    attribute_producer, paravirt_steal_accounting, read_steal, ProducerExplanation, ProducerSpec,
    StealMethod, StealSamples, STEAL_SAMPLE_NS,
};

/// Events read from `trace_pipe` before the producer's part of them is
/// attributed and dropped (a long run stays in bounded memory).
pub const CHUNK_EVENTS: usize = 400_000;

/// Per-CPU ring buffer, KiB.
pub const BUFFER_KIB: u32 = 65_536;

/// The jbd2, ext4 and block events, filtered to the device.
const DEVICE_EVENTS: &[&str] = &[
    "jbd2/jbd2_start_commit",
    "jbd2/jbd2_commit_locking",
    "jbd2/jbd2_commit_flushing",
    "jbd2/jbd2_commit_logging",
    "jbd2/jbd2_end_commit",
    "jbd2/jbd2_handle_start",
    "jbd2/jbd2_handle_stats",
    "jbd2/jbd2_run_stats",
    "ext4/ext4_fallocate_enter",
    "ext4/ext4_fallocate_exit",
    "ext4/ext4_truncate_enter",
    "ext4/ext4_truncate_exit",
    "ext4/ext4_sync_file_enter",
    "ext4/ext4_sync_file_exit",
    "ext4/ext4_da_write_begin",
    "ext4/ext4_da_write_end",
    "ext4/ext4_writepages",
    "block/block_rq_issue",
    "block/block_rq_complete",
];

/// Events of the watched threads.
const THREAD_EVENTS: &[&str] = &[
    "writeback/balance_dirty_pages",
    "lock/contention_begin",
    "lock/contention_end",
];

/// Interrupts, filtered to the timed threads: an interrupt's events carry
/// the task it interrupted.
const IRQ_EVENTS: &[&str] = &[
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
];

/// The producer's own events (beside [`IRQ_EVENTS`]).
const PRODUCER_EVENTS: &[&str] = &[
    "timer/hrtimer_start",
    "syscalls/sys_enter_clock_nanosleep",
    "syscalls/sys_exit_clock_nanosleep",
    "exceptions/page_fault_user",
    "sched/sched_stat_runtime",
];

/// The timed system calls.
const SYSCALLS: &[&str] = &["write", "pwrite64", "writev", "fallocate"];

/// What one traced stretch watches.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    /// The threads whose calls are timed (and explained).
    pub timed_tids: Vec<i32>,
    /// Other threads to follow (rtrec's own, the background loads).
    pub other_tids: Vec<i32>,
    /// The recording's block device (`st_dev`), if any.
    pub device: Option<u64>,
    /// `--explain-threshold`, ns.
    pub threshold_ns: Option<u64>,
    /// The producer (the caller of `record()`), whose wake-ups and work
    /// are explained ([`crate::producer`]).
    pub producer: Option<ProducerSpec>,
}

/// A session: this process's tracefs instance.
pub struct Session {
    inst: Instance,
    stamp: u64,
    steal0: u64,
    watch: Watch,
    reader: Option<Reader>,
    /// The events this session uses that the kernel lacks.
    missing: Vec<String>,
}

/// The thread that drains `trace_pipe` while the run goes on, and the
/// one that samples the steal counters.
struct Reader {
    stop: Arc<AtomicBool>,
    pipe: JoinHandle<std::io::Result<Drained>>,
    steal: JoinHandle<StealSamples>,
}

/// What the reader kept: the events the slow-call attribution needs, and
/// the producer's attribution of the chunks already read.
#[derive(Default)]
struct Drained {
    events: Vec<Event>,
    producer: Option<ProducerExplanation>,
}

/// A filter that keeps the events whose `field` is one of `tids`
/// (`pid == 1 || pid == 2`).
fn pid_filter(field: &str, tids: &[i32]) -> String {
    tids.iter()
        .map(|t| format!("{field} == {t}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

/// Why a session could not start, as one sentence.
pub fn unavailable_reason(e: &rtrec_host::Error) -> String {
    format!("--explain needs root and tracefs ({e}); running without attribution")
}

impl Session {
    /// Creates the instance (mounting tracefs if needed, journaled).
    ///
    /// # Errors
    /// One sentence: not root, no tracefs, journal not writable.
    pub fn create() -> Result<Session, String> {
        if rtrec_sys::effective_uid() != 0 {
            return Err("--explain needs root (tracefs); running without attribution".into());
        }
        if let Err(m) = rtrec_host::features::detect(rtrec_host::features::Feature::Tracefs) {
            return Err(format!(
                "{}; running without attribution",
                m.sentence("--explain needs it")
            ));
        }
        let inst = Journal::open()
            .and_then(|j| Instance::create(j, ""))
            .map_err(|e| unavailable_reason(&e))?;
        let s = Session {
            inst,
            stamp: 0,
            steal0: 0,
            watch: Watch::default(),
            reader: None,
            missing: Vec::new(),
        };
        s.inst
            .write("trace_clock", "mono")
            .and_then(|()| s.inst.write("buffer_size_kb", &BUFFER_KIB.to_string()))
            .and_then(|()| s.inst.write("tracing_on", "0"))
            .map_err(|e| format!("--explain: setting up the tracefs instance failed ({e}); running without attribution"))?;
        Ok(s)
    }

    /// The instance directory (its `trace_marker` takes marks).
    pub fn path(&self) -> &Path {
        self.inst.path()
    }

    /// Starts tracing `watch`'s threads.
    ///
    /// # Errors
    /// The kernel refused the core events (`sched_switch`, the syscalls).
    pub fn start(&mut self, watch: Watch) -> std::io::Result<()> {
        self.start_raw(watch, None)
    }

    /// [`Session::start`], the raw trace text also written to `raw` as it
    /// is read.
    ///
    /// # Errors
    /// As [`Session::start`], or the reader thread could not start.
    pub fn start_raw(
        &mut self,
        mut watch: Watch,
        raw_file: Option<fs::File>,
    ) -> std::io::Result<()> {
        let all: Vec<i32> = watch
            .timed_tids
            .iter()
            .chain(&watch.other_tids)
            .chain(watch.producer.as_ref().map(|p| &p.tid))
            .copied()
            .collect();
        let timed = &watch.timed_tids;
        self.missing = self.missing_events(watch.producer.is_some());
        let _ = self.inst.write("trace", "");
        if let Some(p) = watch.producer.as_mut() {
            p.steal_method = self.watch_runtime(p.tid);
        }
        let (reader, reader_tid) = self.spawn_reader(&watch, raw_file)?;
        self.reader = Some(reader);
        self.watch_scheduler(&all, timed)?;
        self.watch_syscalls(timed)?;
        // The reader's own writes (the raw trace) are not the recording's.
        let dev_filter = watch.device.map(|d| {
            let (ma, mi) = rtrec_sys::major_minor(d);
            format!(
                "dev == {} && common_pid != {reader_tid}",
                ((ma as u64) << 20) | mi as u64
            )
        });
        self.enable_present(DEVICE_EVENTS, dev_filter.as_deref());
        self.enable_present(THREAD_EVENTS, Some(&pid_filter("common_pid", &all)));
        self.enable_present(IRQ_EVENTS, Some(&pid_filter("common_pid", timed)));
        let cb = "events/lock/contention_begin/trigger";
        if self.inst.path().join(cb).exists() {
            let _ = self.inst.write(cb, "!stacktrace");
            let _ = self.inst.write(
                cb,
                &format!("stacktrace if {}", pid_filter("common_pid", timed)),
            );
        }
        if let Some(p) = &watch.producer {
            self.watch_producer(p, timed)?;
        }
        let _ = self.inst.write("events/ftrace/print/enable", "1");
        self.steal0 = steal_ns();
        self.stamp = rtrec_sys::monotonic_ns();
        self.watch = watch;
        self.inst.write("tracing_on", "1")
    }

    /// The scheduler's events of the watched threads `all`: switches (with
    /// a stack when a `timed` thread sleeps) and wake-ups (and jbd2's,
    /// which name who started a commit).
    fn watch_scheduler(&self, all: &[i32], timed: &[i32]) -> std::io::Result<()> {
        let w = |rel: &str, v: &str| self.inst.write(rel, v);
        let sw = "events/sched/sched_switch";
        w(
            &format!("{sw}/filter"),
            &format!(
                "{} || {}",
                pid_filter("prev_pid", all),
                pid_filter("next_pid", all)
            ),
        )?;
        let _ = w(&format!("{sw}/trigger"), "!stacktrace");
        w(
            &format!("{sw}/trigger"),
            &format!(
                "stacktrace if ({}) && prev_state & 3",
                pid_filter("prev_pid", timed)
            ),
        )?;
        w(&format!("{sw}/enable"), "1")?;
        for ev in ["sched_waking", "sched_wakeup"] {
            let p = format!("events/sched/{ev}");
            w(
                &format!("{p}/filter"),
                &format!("{} || comm ~ \"jbd2/*\"", pid_filter("pid", all)),
            )?;
            w(&format!("{p}/enable"), "1")?;
        }
        Ok(())
    }

    /// The timed system calls ([`SYSCALLS`]) of the `timed` threads, those
    /// this kernel has.
    fn watch_syscalls(&self, timed: &[i32]) -> std::io::Result<()> {
        for call in SYSCALLS {
            for dir in ["enter", "exit"] {
                let p = format!("events/syscalls/sys_{dir}_{call}");
                let missing = self.missing.iter().any(|m| p.ends_with(m.as_str()));
                if !missing && self.inst.path().join(&p).is_dir() {
                    self.inst
                        .write(&format!("{p}/filter"), &pid_filter("common_pid", timed))?;
                    self.inst.write(&format!("{p}/enable"), "1")?;
                }
            }
        }
        Ok(())
    }

    /// The events ("group/name") this session would enable that the
    /// kernel lacks; the producer's own when `producer`.
    fn missing_events(&self, producer: bool) -> Vec<String> {
        let syscalls: Vec<String> = SYSCALLS
            .iter()
            .flat_map(|c| ["enter", "exit"].map(|d| format!("syscalls/sys_{d}_{c}")))
            .collect();
        let mut wanted: Vec<&str> = [
            "sched/sched_switch",
            "sched/sched_waking",
            "sched/sched_wakeup",
        ]
        .into_iter()
        .chain(DEVICE_EVENTS.iter().copied())
        .chain(THREAD_EVENTS.iter().copied())
        .chain(IRQ_EVENTS.iter().copied())
        .chain(syscalls.iter().map(String::as_str))
        .collect();
        if producer {
            wanted.extend(PRODUCER_EVENTS);
        }
        rtrec_host::features::missing_tracepoints(self.inst.path(), &wanted)
    }

    /// Enables those of `events` this kernel has, each with `filter` if
    /// given; one the kernel refuses is left out (the rest still explain
    /// what they can).
    fn enable_present(&self, events: &[&str], filter: Option<&str>) {
        for ev in events {
            let p = format!("events/{ev}");
            if self.missing.iter().any(|m| m == ev) || !self.inst.path().join(&p).is_dir() {
                continue;
            }
            if let Some(f) = filter {
                let _ = self.inst.write(&format!("{p}/filter"), f);
            }
            let _ = self.inst.write(&format!("{p}/enable"), "1");
        }
    }

    /// Enables `sched:sched_stat_runtime` for the producer `tid` only (one
    /// event per switch-out and tick: a 1M-period run stays bounded) when
    /// the kernel leaves steal out of it; returns how steal in its
    /// `record()` stretches will be measured ([`crate::producer`]).
    fn watch_runtime(&self, tid: i32) -> StealMethod {
        let e = "events/sched/sched_stat_runtime";
        if !paravirt_steal_accounting() || !self.inst.path().join(e).is_dir() {
            let _ = self.inst.write(&format!("{e}/enable"), "0");
            return StealMethod::ProcStat;
        }
        let on = self
            .inst
            .write(&format!("{e}/filter"), &format!("pid == {tid}"))
            .and_then(|()| self.inst.write(&format!("{e}/enable"), "1"));
        match on {
            Ok(()) => StealMethod::SchedRuntime,
            Err(_) => StealMethod::ProcStat,
        }
    }

    /// The producer's events: its timer, its periodic sleep, its page
    /// faults; interrupts on its CPU (every CPU when it is not pinned).
    fn watch_producer(&self, p: &ProducerSpec, timed: &[i32]) -> std::io::Result<()> {
        let w = |rel: &str, v: &str| self.inst.write(rel, v);
        let me = format!("common_pid == {}", p.tid);
        w("events/timer/hrtimer_start/filter", &me)?;
        w("events/timer/hrtimer_start/enable", "1")?;
        for dir in ["enter", "exit"] {
            let e = format!("events/syscalls/sys_{dir}_clock_nanosleep");
            w(&format!("{e}/filter"), &me)?;
            w(&format!("{e}/enable"), "1")?;
        }
        let pf = "events/exceptions/page_fault_user";
        if self.inst.path().join(pf).is_dir() {
            let _ = w(&format!("{pf}/filter"), &me);
            let _ = w(&format!("{pf}/enable"), "1");
        }
        let mut mine: Vec<String> = timed.iter().map(|t| format!("common_pid == {t}")).collect();
        for ev in IRQ_EVENTS {
            let e = format!("events/{ev}");
            if !self.inst.path().join(&e).is_dir() {
                continue;
            }
            match p.cpu {
                Some(c) => {
                    mine.push(format!("CPU == {c}"));
                    let _ = w(&format!("{e}/filter"), &mine.join(" || "));
                    mine.pop();
                }
                None => {
                    let _ = w(&format!("{e}/filter"), "0");
                }
            }
            let _ = w(&format!("{e}/enable"), "1");
        }
        Ok(())
    }

    /// Starts draining `trace_pipe` (and sampling the steal counters).
    /// Returns the reader and its thread id.
    fn spawn_reader(&self, watch: &Watch, raw: Option<fs::File>) -> std::io::Result<(Reader, i32)> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.inst.path().join("trace_pipe"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let avoid = watch.producer.as_ref().and_then(|p| p.cpu);
        let samples = Arc::new(Mutex::new(StealSamples::new()));
        let steal = {
            let (stop, samples) = (stop.clone(), samples.clone());
            std::thread::Builder::new()
                .name("rtrec-steal".into())
                .spawn(move || {
                    background(avoid);
                    while !stop.load(Ordering::Acquire) {
                        let v = (rtrec_sys::monotonic_ns(), read_steal());
                        samples.lock().unwrap_or_else(|e| e.into_inner()).push(v);
                        std::thread::sleep(std::time::Duration::from_nanos(STEAL_SAMPLE_NS));
                    }
                    let v = (rtrec_sys::monotonic_ns(), read_steal());
                    let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
                    s.push(v);
                    std::mem::take(&mut *s)
                })?
        };
        let watch = watch.clone();
        let stop2 = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = std::thread::Builder::new()
            .name("rtrec-trace".into())
            .spawn(move || {
                background(avoid);
                let _ = tx.send(rtrec_sys::gettid());
                drain(pipe, raw, &watch, &stop2, &samples)
            })?;
        let tid = rx.recv().unwrap_or(0);
        Ok((Reader { stop, pipe, steal }, tid))
    }

    /// Stops tracing, reads the trace, keeps it in `raw` (a directory) if
    /// given, and attributes it.
    ///
    /// # Errors
    /// The trace could not be read or `raw` not written.
    pub fn stop(&mut self) -> std::io::Result<Explanation> {
        self.inst.write("tracing_on", "0")?;
        let steal = steal_ns().saturating_sub(self.steal0);
        let lost = lost_events(self.inst.path());
        let drained = match self.reader.take() {
            Some(r) => {
                r.stop.store(true, Ordering::Release);
                let d = r.pipe.join().unwrap_or_else(|_| Ok(Drained::default()));
                let _ = r.steal.join();
                d
            }
            None => Ok(Drained::default()),
        };
        let _ = self.inst.write("events/enable", "0");
        let _ = self.inst.write("trace", "");
        let Drained { events, producer } = drained?;
        let mut x = attribute(
            &events,
            &Options {
                timed_tids: self.watch.timed_tids.clone(),
                calls: SYSCALLS.iter().map(|c| format!("sys_{c}")).collect(),
                threshold_ns: self.watch.threshold_ns,
            },
        );
        x.lost_events = lost;
        x.missing_tracepoints = self.missing.clone();
        x.steal_ns = steal;
        x.producer = producer;
        Ok(x)
    }

    /// Removes the instance (also done on drop).
    ///
    /// # Errors
    /// The kernel refused to remove it.
    pub fn remove(self) -> rtrec_host::Result<()> {
        self.inst.remove()
    }
}

/// Where [`Session::stop`] keeps the raw trace named `name`.
pub fn raw_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.trace.txt"))
}

/// Entries the kernel overwrote or dropped, over all CPUs.
fn lost_events(inst: &Path) -> u64 {
    let Ok(cpus) = fs::read_dir(inst.join("per_cpu")) else {
        return 0;
    };
    cpus.filter_map(Result::ok)
        .filter_map(|d| fs::read_to_string(d.path().join("stats")).ok())
        .flat_map(|s| {
            s.lines()
                .filter(|l| l.starts_with("overrun:") || l.starts_with("dropped events:"))
                .filter_map(|l| l.rsplit(' ').next()?.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

/// Hypervisor steal time of all CPUs so far, ns (`/proc/stat`, in
/// `USER_HZ` = 100 ticks per second).
fn steal_ns() -> u64 {
    rtrec_host::procstat::stat().map_or(0, |s| s.all.steal * rtrec_host::procstat::TICK_NS)
}

/// Reads `trace_pipe` until told to stop and it is empty: writes the text
/// to `raw`, parses it, attributes the producer's part chunk by chunk and
/// keeps the events the slow-call attribution needs.
fn drain(
    mut pipe: fs::File,
    mut raw: Option<fs::File>,
    watch: &Watch,
    stop: &AtomicBool,
    steal: &Mutex<StealSamples>,
) -> std::io::Result<Drained> {
    use std::io::Write as _;
    let mut out = Drained::default();
    let mut pending: Vec<Event> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut partial: Vec<u8> = Vec::new();
    let mut next_chunk = CHUNK_EVENTS;
    loop {
        match pipe.read(&mut buf) {
            Ok(n) if n > 0 => {
                if let Some(f) = raw.as_mut() {
                    f.write_all(&buf[..n])?;
                }
                partial.extend_from_slice(&buf[..n]);
                if let Some(end) = partial.iter().rposition(|&b| b == b'\n') {
                    let text = String::from_utf8_lossy(&partial[..=end]).into_owned();
                    partial.drain(..=end);
                    pending.extend(parse(&text));
                }
                if pending.len() > next_chunk {
                    chunk(&mut out, &mut pending, watch, steal, false);
                    next_chunk = pending.len() + CHUNK_EVENTS;
                }
            }
            Ok(_) | Err(_) if stop.load(Ordering::Acquire) => break,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
    if !partial.is_empty() {
        pending.extend(parse(&String::from_utf8_lossy(&partial)));
    }
    chunk(&mut out, &mut pending, watch, steal, true);
    Ok(out)
}

/// Attributes the producer's periods in `pending` up to a period boundary
/// a second before its last event (all of it when `last`), and moves the
/// events the slow-call attribution needs to `out`.
fn chunk(
    out: &mut Drained,
    pending: &mut Vec<Event>,
    watch: &Watch,
    steal: &Mutex<StealSamples>,
    last: bool,
) {
    let cut = match (&watch.producer, last) {
        (_, true) | (None, _) => pending.len(),
        (Some(p), false) => {
            let end = pending
                .last()
                .map_or(0, |e| e.ts_ns)
                .saturating_sub(1_000_000_000);
            pending
                .iter()
                .rposition(|e| e.tid == p.tid && e.name == "hrtimer_start" && e.ts_ns < end)
                .unwrap_or(0)
        }
    };
    if cut == 0 {
        return;
    }
    if let Some(p) = &watch.producer {
        let s = steal.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let x = attribute_producer(&pending[..cut], p, &s);
        match out.producer.as_mut() {
            Some(o) => o.merge(x),
            None => out.producer = Some(x),
        }
    }
    let keep: Vec<i32> = watch
        .timed_tids
        .iter()
        .chain(&watch.other_tids)
        .copied()
        .collect();
    let producer = watch.producer.as_ref().map(|p| p.tid);
    out.events.extend(
        pending
            .drain(..cut)
            .filter(|e| for_slow_calls(e, &keep, producer)),
    );
}

/// Whether the slow-call attribution needs `e`: the producer's own timer,
/// sleep and faults, interrupts on other threads and the ext4 events, it
/// does not.
fn for_slow_calls(e: &Event, keep: &[i32], producer: Option<i32>) -> bool {
    let watched = |v: Option<i64>| v.is_some_and(|t| keep.contains(&(t as i32)));
    match e.name.as_str() {
        "hrtimer_start" | "sys_clock_nanosleep" | "page_fault_user" | "sched_stat_runtime" => false,
        // The device's ext4 events are kept for the raw trace only: on a
        // shared root file system they are every process's writes.
        n if n.starts_with("ext4_") => false,
        n if crate::parse::irq_edge(n).is_some() => keep.contains(&e.tid),
        "sched_switch" if producer.is_some() => {
            watched(e.num("prev_pid")) || watched(e.num("next_pid"))
        }
        "sched_waking" | "sched_wakeup" if producer.is_some() => {
            watched(e.num("pid")) || e.field("comm").is_some_and(|c| c.starts_with("jbd2/"))
        }
        _ => true,
    }
}

/// Makes the calling thread (the tracer's reader or sampler, started from
/// the producer) a normal one: `SCHED_OTHER`, on every CPU but the
/// producer's `avoid` when there is another, so that it never competes
/// with the thread it watches. Best effort.
fn background(avoid: Option<u32>) {
    let _ = rtrec_sys::set_normal_policy();
    let _ = rtrec_sys::run_anywhere_but(avoid);
}
