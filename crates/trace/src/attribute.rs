//! From a parsed trace to an [`Explanation`]: finds the timed calls (the
//! syscall enter/exit pairs of the timed threads), picks the slow ones,
//! and splits each one's time into on CPU, runnable (and who ran instead)
//! and blocked, the blocked time by the [`Cause`] its stack names.
//!
//! The marks of rtrec's own threads and the background loads
//! (`trace_marker`, [`crate::parse::Mark`]) name the operations that were
//! in progress during each slow call ([`SlowCall::during`]).
//!
//! Design choice: the slow calls are found in the trace itself, not
//! matched to the recorder's own timings: the trace has both ends of every
//! call on the same clock as everything that happened in between, so no
//! clock has to be aligned and no call can be matched to the wrong one.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::cause::{classify, top_frames, Cause};
use crate::parse::{irq_edge, Event, Mark};

/// Smallest default threshold, ns: 100 µs.
pub const MIN_THRESHOLD_NS: u64 = 100_000;
/// The default threshold is this many times the median.
pub const MEDIAN_FACTOR: u64 = 10;
/// How many of the slowest calls are kept in full.
pub const KEEP_SLOWEST: usize = 5;
/// How many top frames an example stack keeps.
pub const STACK_FRAMES: usize = 8;

/// What to attribute.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The threads whose calls are timed.
    pub timed_tids: Vec<i32>,
    /// The timed system calls as the trace names them (`sys_write`).
    pub calls: Vec<String>,
    /// Calls slower than this are explained; default: 10 × the median and
    /// at least 100 µs.
    pub threshold_ns: Option<u64>,
}

/// Where one slow call's time went, for one cause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// The cause.
    pub cause: Cause,
    /// Time, ns.
    pub ns: u64,
    /// What the trace says about it (the commit phase, who woke the
    /// thread, the task that ran instead, the device time), if anything.
    pub detail: Option<String>,
    /// The blocking stack's top frames, when blocked.
    pub stack: Vec<String>,
}

/// One slow call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowCall {
    /// The call (`sys_write`).
    pub call: String,
    /// Thread id.
    pub tid: i32,
    /// Entry, ns on `CLOCK_MONOTONIC`.
    pub start_ns: u64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// The cause with the most time.
    pub main_cause: Cause,
    /// The split, largest first; the parts add up to `duration_ns`.
    pub parts: Vec<Part>,
    /// The marked operations of other threads (rtrec's writer and flusher,
    /// the background loads) in progress when the call started or begun
    /// while it ran, and the moments marked while it ran, as
    /// `WHAT (COMM-TID)`; also named in the main part's detail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<String>,
}

/// One marked operation: who, what, from when to when (`None`: still
/// running when the trace ended; a moment has `end == Some(start)`).
struct Marked {
    who: String,
    what: String,
    start: u64,
    end: Option<u64>,
}

/// Every marked operation of `events`, in order of their start.
fn marked(events: &[Event]) -> Vec<Marked> {
    let mut out: Vec<Marked> = Vec::new();
    let mut open: HashMap<(i32, String), usize> = HashMap::new();
    for e in events {
        let Some(m) = e.mark() else { continue };
        let who = format!("{}-{}", e.comm, e.tid);
        match m {
            Mark::Begin(w) => {
                open.insert((e.tid, w.to_string()), out.len());
                out.push(Marked {
                    who,
                    what: w.to_string(),
                    start: e.ts_ns,
                    end: None,
                });
            }
            Mark::End(w) => {
                if let Some(i) = open.remove(&(e.tid, w.to_string())) {
                    out[i].end = Some(e.ts_ns);
                }
            }
            Mark::Point(w) => out.push(Marked {
                who,
                what: w.to_string(),
                start: e.ts_ns,
                end: Some(e.ts_ns),
            }),
        }
    }
    out
}

/// The marked operations overlapping `[a, b]`, as `WHAT (COMM-TID)`.
fn during(marks: &[Marked], a: u64, b: u64) -> Vec<String> {
    marks
        .iter()
        .take_while(|m| m.start <= b)
        .filter(|m| m.end.is_none_or(|e| e >= a))
        .map(|m| format!("{} ({})", m.what, m.who))
        .collect()
}

/// One row of the attribution table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseRow {
    /// The cause.
    pub cause: Cause,
    /// Its name as printed.
    pub name: String,
    /// Slow calls whose main cause it is.
    pub calls: u64,
    /// Its share of all slow calls' time, %.
    pub share_pct: f64,
    /// Its time summed over the slow calls, ns.
    pub total_ns: u64,
    /// Its largest time in one call, ns.
    pub worst_ns: u64,
    /// The trace's detail in that worst call.
    pub detail: Option<String>,
    /// An example stack (top frames) from the worst call, if blocked.
    pub stack: Vec<String>,
}

/// The attribution of one traced run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Timed calls found in the trace.
    pub timed_calls: u64,
    /// Their median, ns.
    pub median_ns: u64,
    /// The threshold used, ns.
    pub threshold_ns: u64,
    /// Calls above it.
    pub slow_calls: u64,
    /// Their summed time, ns.
    pub slow_total_ns: u64,
    /// Trace entries the kernel dropped (a full buffer): the attribution
    /// is then incomplete.
    pub lost_events: u64,
    /// Tracepoints the session would use that this kernel lacks
    /// ("syscalls/sys_enter_write"): what they would show goes
    /// unattributed (the table says so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_tracepoints: Vec<String>,
    /// Time the hypervisor stole from all CPUs while tracing, ns
    /// (`/proc/stat`), to read beside the on-CPU share.
    pub steal_ns: u64,
    /// The cause of most slow-call time, if any call was slow.
    pub main_cause: Option<Cause>,
    /// Per cause, largest share first.
    pub causes: Vec<CauseRow>,
    /// The slowest calls, split in full.
    pub slowest: Vec<SlowCall>,
    /// The producer's missed periods, late wake-ups and slow `record()`
    /// calls, explained ([`crate::producer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<crate::producer::ProducerExplanation>,
}

/// Attributes the slow calls of `events` (sorted by time).
pub fn attribute(events: &[Event], opts: &Options) -> Explanation {
    let calls = timed_calls(events, opts);
    let mut durations: Vec<u64> = calls.iter().map(|c| c.2 - c.1).collect();
    durations.sort_unstable();
    let median_ns = durations.get(durations.len() / 2).copied().unwrap_or(0);
    let threshold_ns = opts
        .threshold_ns
        .unwrap_or_else(|| (median_ns * MEDIAN_FACTOR).max(MIN_THRESHOLD_NS));
    let marks = marked(events);
    let mut slow: Vec<SlowCall> = calls
        .iter()
        .filter(|(_, a, b, _)| b - a > threshold_ns)
        .map(|&(tid, a, b, ref name)| {
            let mut c = split(events, tid, a, b, name);
            c.during = during(&marks, a, b);
            if let (Some(p), false) = (c.parts.first_mut(), c.during.is_empty()) {
                let d = format!("during {}", c.during.join(", "));
                p.detail = Some(match p.detail.take() {
                    Some(x) => format!("{x}; {d}"),
                    None => d,
                });
            }
            c
        })
        .collect();
    let slow_total_ns: u64 = slow.iter().map(|c| c.duration_ns).sum();
    let mut rows: BTreeMap<Cause, CauseRow> = BTreeMap::new();
    for c in &slow {
        for p in &c.parts {
            let r = rows.entry(p.cause).or_insert_with(|| CauseRow {
                cause: p.cause,
                name: p.cause.name().to_string(),
                calls: 0,
                share_pct: 0.0,
                total_ns: 0,
                worst_ns: 0,
                detail: None,
                stack: Vec::new(),
            });
            r.total_ns += p.ns;
            if p.ns > r.worst_ns {
                r.worst_ns = p.ns;
                r.detail = p.detail.clone();
                r.stack = p.stack.clone();
            }
        }
        if let Some(r) = rows.get_mut(&c.main_cause) {
            r.calls += 1;
        }
    }
    let mut causes: Vec<CauseRow> = rows
        .into_values()
        .map(|mut r| {
            r.share_pct = if slow_total_ns > 0 {
                r.total_ns as f64 * 100.0 / slow_total_ns as f64
            } else {
                0.0
            };
            r
        })
        .collect();
    causes.sort_by_key(|r| std::cmp::Reverse(r.total_ns));
    slow.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    let slow_calls = slow.len() as u64;
    slow.truncate(KEEP_SLOWEST);
    Explanation {
        timed_calls: calls.len() as u64,
        median_ns,
        threshold_ns,
        slow_calls,
        slow_total_ns,
        lost_events: 0,
        missing_tracepoints: Vec::new(),
        steal_ns: 0,
        main_cause: causes.first().map(|r| r.cause),
        causes,
        slowest: slow,
        producer: None,
    }
}

/// (tid, enter, exit, call) of every timed call.
fn timed_calls(events: &[Event], opts: &Options) -> Vec<(i32, u64, u64, String)> {
    let mut open: HashMap<i32, (u64, &str)> = HashMap::new();
    let mut out = Vec::new();
    for e in events {
        if !opts.timed_tids.contains(&e.tid) || !opts.calls.contains(&e.name) {
            continue;
        }
        if e.body.starts_with("->") {
            if let Some((t0, name)) = open.remove(&e.tid) {
                if name == e.name {
                    out.push((e.tid, t0, e.ts_ns, e.name.clone()));
                }
            }
        } else {
            open.insert(e.tid, (e.ts_ns, &e.name));
        }
    }
    out
}

/// Splits the call of `tid` from `a` to `b`: walks its events through
/// [`CallSplit`]'s transitions.
fn split(events: &[Event], tid: i32, a: u64, b: u64, call: &str) -> SlowCall {
    let from = events.partition_point(|e| e.ts_ns < a);
    let mut s = CallSplit {
        events,
        tid,
        state: State::Running,
        last: a,
        irq_depth: 0,
        irq_name: String::new(),
        parts: Vec::new(),
    };
    for e in events[from..].iter().take_while(|e| e.ts_ns <= b) {
        s.step(e);
    }
    let mut parts = s.finish(b);
    parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
    SlowCall {
        call: call.to_string(),
        tid,
        start_ns: a,
        duration_ns: b - a,
        main_cause: parts.first().map(|p| p.cause).unwrap_or(Cause::OnCpu),
        parts,
        during: Vec::new(),
    }
}

/// The timed thread's state during a call: each names the cause its time
/// is charged to.
enum State {
    /// On the CPU ([`Cause::OnCpu`]).
    Running,
    /// Switched out runnable, or woken and not yet running
    /// ([`Cause::Preempted`]), with the task that ran instead when known.
    Runnable(Option<String>),
    /// Asleep, for the cause the switch-out's stack names.
    Blocked {
        /// The cause its stack names.
        cause: Cause,
        /// The stack's top frames.
        stack: Vec<String>,
    },
}

/// One slow call being split, as a state machine over its events: the
/// thread's [`State`], the interrupts open on it and the parts charged so
/// far. A state's interval runs from `last` to the event that ends it (a
/// transition, one method each), when it is charged to the state's cause.
struct CallSplit<'a> {
    /// The whole trace, sorted by time.
    events: &'a [Event],
    /// The timed thread.
    tid: i32,
    /// The thread's state.
    state: State,
    /// Where the interval being walked started, ns.
    last: u64,
    /// Nesting depth of interrupts on the thread (a softirq runs at the
    /// end of a hard IRQ).
    irq_depth: u32,
    /// The outermost open interrupt's name.
    irq_name: String,
    /// The parts so far, one per cause.
    parts: Vec<Part>,
}

impl CallSplit<'_> {
    /// Adds `ns` to `cause`'s part (a new part the first time; none for
    /// no time); a detail or stack given replaces the part's.
    fn add(&mut self, cause: Cause, ns: u64, detail: Option<String>, stack: Vec<String>) {
        if ns == 0 {
            return;
        }
        match self.parts.iter_mut().find(|p| p.cause == cause) {
            Some(p) => {
                p.ns += ns;
                if detail.is_some() {
                    p.detail = detail;
                }
                if !stack.is_empty() {
                    p.stack = stack;
                }
            }
            None => self.parts.push(Part {
                cause,
                ns,
                detail,
                stack,
            }),
        }
    }

    /// One event of the call: the transition it makes, if any.
    fn step(&mut self, e: &Event) {
        let t = self.tid as i64;
        let own = e.tid == self.tid;
        match e.name.as_str() {
            _ if irq_edge(&e.name) == Some(true) && own && matches!(self.state, State::Running) => {
                self.irq_entry(e)
            }
            _ if irq_edge(&e.name) == Some(false) && own && self.irq_depth > 0 => {
                self.irq_exit(e.ts_ns)
            }
            "sched_switch" if e.num("prev_pid") == Some(t) => self.switched_out(e),
            "sched_waking" | "sched_wakeup" if e.num("pid") == Some(t) => self.woken(e),
            "sched_switch" if e.num("next_pid") == Some(t) => self.switched_in(e.ts_ns),
            _ => {}
        }
    }

    /// An interrupt enters on the running thread: its time on the CPU ends
    /// there (at the outermost one).
    fn irq_entry(&mut self, e: &Event) {
        if self.irq_depth == 0 {
            self.add(Cause::OnCpu, e.ts_ns - self.last, None, Vec::new());
            self.last = e.ts_ns;
            self.irq_name = irq_label(e);
        }
        self.irq_depth += 1;
    }

    /// An interrupt exits: the outermost one's time is
    /// [`Cause::Interrupt`], named.
    fn irq_exit(&mut self, ts: u64) {
        self.irq_depth -= 1;
        if self.irq_depth == 0 {
            let name = Some(self.irq_name.clone());
            self.add(Cause::Interrupt, ts - self.last, name, Vec::new());
            self.last = ts;
        }
    }

    /// The thread is switched out: preempted (runnable, by the next task)
    /// or blocked for the cause its stack names.
    fn switched_out(&mut self, e: &Event) {
        if matches!(self.state, State::Running) {
            self.add(Cause::OnCpu, e.ts_ns - self.last, None, Vec::new());
            self.last = e.ts_ns;
        }
        let next = e.field("next_comm").unwrap_or("?").to_string();
        self.state = if e.field("prev_state").is_some_and(|s| s.starts_with('R')) {
            State::Runnable(Some(format!("preempted by {next}")))
        } else {
            State::Blocked {
                cause: classify(&e.stack),
                stack: top_frames(&e.stack, STACK_FRAMES),
            }
        };
    }

    /// The thread is woken: a blocked stretch ends, with what the trace
    /// says about it; it waits runnable for its CPU.
    fn woken(&mut self, e: &Event) {
        if let State::Blocked { cause, stack } = &self.state {
            let (cause, stack) = (*cause, stack.clone());
            let detail = blocked_detail(self.events, cause, self.last, e.ts_ns, e);
            self.add(cause, e.ts_ns - self.last, Some(detail), stack);
            self.last = e.ts_ns;
            self.state = State::Runnable(None);
        }
    }

    /// The thread is switched in: the wait (or a sleep whose wake-up the
    /// trace missed) ends; it runs. A switch-in while it already runs
    /// charges nothing: the trace missed its switch-out.
    fn switched_in(&mut self, ts: u64) {
        if !matches!(self.state, State::Running) {
            self.close(ts);
        }
        self.last = ts;
        self.state = State::Running;
    }

    /// Charges the interval from `last` to `ts` to the state's cause, and
    /// leaves the state `Running` (the caller sets the next one).
    fn close(&mut self, ts: u64) {
        let ns = ts - self.last;
        match std::mem::replace(&mut self.state, State::Running) {
            State::Running => self.add(Cause::OnCpu, ns, None, Vec::new()),
            State::Runnable(d) => self.add(Cause::Preempted, ns, d, Vec::new()),
            State::Blocked { cause, stack } => self.add(cause, ns, None, stack),
        }
    }

    /// Ends the walk at the call's return `b`: the parts.
    fn finish(mut self, b: u64) -> Vec<Part> {
        self.close(b);
        self.parts
    }
}

/// `irq 11 virtio0`, `softirq BLOCK`, `local timer`, `IPI call function`.
fn irq_label(e: &Event) -> String {
    match e.name.as_str() {
        "irq_handler_entry" => format!(
            "irq {} {}",
            e.field("irq").unwrap_or("?"),
            e.field("name").unwrap_or("")
        ),
        "softirq_entry" => format!(
            "softirq {}",
            e.body
                .split("action=")
                .nth(1)
                .map(|s| s.trim_end_matches(']'))
                .unwrap_or("?")
        ),
        n => crate::parse::vector_name(n).to_string(),
    }
}

/// What the trace says about a blocked stretch from `t0` to `t1`, ended by
/// the wakeup `wake`.
fn blocked_detail(events: &[Event], cause: Cause, t0: u64, t1: u64, wake: &Event) -> String {
    let waker = format!("woken by {}-{}", wake.comm, wake.tid);
    let upto = events.partition_point(|e| e.ts_ns <= t1);
    match cause {
        Cause::JbdHandle => {
            let phase = events[..upto].iter().rev().find(|e| {
                e.name.starts_with("jbd2_start_commit")
                    || e.name.starts_with("jbd2_commit_")
                    || e.name == "jbd2_end_commit"
            });
            let Some(p) = phase else {
                return format!("journal busy with a commit; {waker}");
            };
            let i = events[..upto]
                .iter()
                .rposition(|e| e.name == "jbd2_start_commit")
                .unwrap_or(0);
            let starter = events[..i]
                .iter()
                .rev()
                .find(|e| {
                    e.name == "sched_waking"
                        && e.field("comm").is_some_and(|c| c.starts_with("jbd2/"))
                })
                .map(|e| format!("{}-{}", e.comm, e.tid))
                .unwrap_or_else(|| "the jbd2 thread (timer)".to_string());
            format!(
                "journal commit in phase {}, started by {starter}; {waker}",
                p.name.trim_start_matches("jbd2_")
            )
        }
        Cause::DeviceIo => {
            let from = events.partition_point(|e| e.ts_ns < t0);
            let done = events[from..upto]
                .iter()
                .rev()
                .find(|e| e.name == "block_rq_complete");
            match done.and_then(|d| device_ns(&events[..from], d)) {
                Some(ns) => format!(
                    "request took {} on the device; {waker}",
                    rtrec_units::format_duration(ns)
                ),
                None => waker,
            }
        }
        _ => waker,
    }
}

/// The device time of the request `done` completes: from its issue with
/// the same sector.
fn device_ns(before: &[Event], done: &Event) -> Option<u64> {
    let sector = sector(&done.body)?;
    before
        .iter()
        .rev()
        .find(|e| e.name == "block_rq_issue" && sector_of(e) == Some(sector))
        .map(|i| done.ts_ns - i.ts_ns)
}

fn sector_of(e: &Event) -> Option<u64> {
    sector(&e.body)
}

/// `… () SECTOR + N …`: the sector after the command field.
fn sector(body: &str) -> Option<u64> {
    let i = body.find(") ")?;
    body[i + 2..].split(' ').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    /// Attributes every `write()` of thread 10 in `trace` (threshold 1 ns:
    /// each call is slow).
    fn every_write_of_tid_10(trace: &str) -> Explanation {
        attribute(
            &parse(trace),
            &Options {
                timed_tids: vec![10],
                calls: vec!["sys_write".into()],
                threshold_ns: Some(1),
            },
        )
    }

    const TRACE: &str = "\
 rtrec-10 [000] ..... 100.000000: sys_write(fd: 3, buf: 0x1, count: 0x4000)
 rtrec-10 [000] ..... 100.000010: sys_write -> 0x4000
 rtrec-10 [000] ..... 100.001000: sys_write(fd: 3, buf: 0x1, count: 0x4000)
 rtrec-10 [000] ..... 100.001010: sys_write -> 0x4000
 rtrec-10 [000] ..... 100.002000: sys_write(fd: 3, buf: 0x1, count: 0x4000)
 rtrec-10 [000] d..2. 100.002100: sched_switch: prev_comm=rtrec prev_pid=10 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
 rtrec-10 [000] d..2. 100.002100: <stack trace>
 => __schedule+0x1/0x2
 => schedule+0x1/0x2
 => wait_transaction_locked+0x1/0x2
 => start_this_handle+0x1/0x2
 jbd2/loop0-8-50 [001] ..... 100.002200: jbd2_commit_flushing: dev 7,0 transaction 5 sync 0
 jbd2/loop0-8-50 [001] d..2. 100.003000: sched_waking: comm=rtrec pid=10 prio=120 target_cpu=000
 hog-11 [000] d..2. 100.003000: sched_switch: prev_comm=hog prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=rtrec next_pid=10 next_prio=120
 rtrec-10 [000] ..... 100.003100: sys_write -> 0x4000
";

    #[test]
    fn a_slow_write_is_split_into_on_cpu_blocked_and_runnable() {
        let ev = parse(TRACE);
        let x = attribute(
            &ev,
            &Options {
                timed_tids: vec![10],
                calls: vec!["sys_write".into()],
                threshold_ns: None,
            },
        );
        assert_eq!(x.timed_calls, 3);
        assert_eq!(x.median_ns, 10_000);
        assert_eq!(x.threshold_ns, 100_000);
        assert_eq!(x.slow_calls, 1);
        assert_eq!(x.main_cause, Some(Cause::JbdHandle));
        let c = &x.slowest[0];
        assert_eq!(c.duration_ns, 1_100_000);
        let ns = |cause| c.parts.iter().find(|p| p.cause == cause).map(|p| p.ns);
        assert_eq!(ns(Cause::JbdHandle), Some(900_000));
        assert_eq!(ns(Cause::OnCpu), Some(200_000));
        let d = c.parts[0].detail.as_deref().unwrap();
        assert!(d.contains("in phase commit_flushing"), "{d}");
        assert!(d.contains("woken by jbd2/loop0-8-50"), "{d}");
        assert_eq!(
            c.parts[0].stack,
            ["wait_transaction_locked", "start_this_handle"]
        );
        assert_eq!(x.causes[0].calls, 1);
    }

    #[test]
    fn interrupts_on_the_thread_are_platform_time_of_their_own() {
        let trace = "\
 rtrec-10 [000] ..... 200.000000: sys_write(fd: 3, buf: 0x1, count: 0x4000)
 rtrec-10 [000] d.h1. 200.000100: irq_handler_entry: irq=11 name=virtio0
 rtrec-10 [000] d.h1. 200.000300: irq_handler_exit: irq=11 ret=handled
 rtrec-10 [000] ..s1. 200.000300: softirq_entry: vec=4 [action=BLOCK]
 rtrec-10 [000] ..s1. 200.000400: softirq_exit: vec=4 [action=BLOCK]
 rtrec-10 [000] ..... 200.000500: sys_write -> 0x4000
";
        let x = every_write_of_tid_10(trace);
        let c = &x.slowest[0];
        let part = |cause| c.parts.iter().find(|p| p.cause == cause).unwrap();
        assert_eq!(part(Cause::Interrupt).ns, 300_000);
        // The hard IRQ and the softirq after it add up; the last names it.
        assert_eq!(
            part(Cause::Interrupt).detail.as_deref(),
            Some("softirq BLOCK")
        );
        assert_eq!(part(Cause::OnCpu).ns, 200_000);
        assert!(Cause::Interrupt.is_platform());
    }

    #[test]
    fn marks_name_the_operations_in_progress_during_a_slow_call() {
        // Captured shape: a load's truncate+fsync began before the call
        // and ended inside it; a flush step ran wholly before it (not
        // named); one began inside it and never ended in the trace.
        let trace = "\
 rtrec-bgload-20 [001] ..... 300.000000: tracing_mark_write: begin bgload trunc ftruncate+fsync to 1048576
 rtrec-flush-12 [001] ..... 300.000010: tracing_mark_write: begin flush window 2097152@0
 rtrec-flush-12 [001] ..... 300.000020: tracing_mark_write: end flush window 2097152@0
 rtrec-10 [000] ..... 300.000100: sys_write(fd: 3, buf: 0x1, count: 0x4000)
 rtrec-10 [000] d..2. 300.000200: sched_switch: prev_comm=rtrec prev_pid=10 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
 rtrec-flush-12 [001] ..... 300.000300: tracing_mark_write: begin flush window 2097152@2097152
 rtrec-bgload-20 [001] ..... 300.000400: tracing_mark_write: end bgload trunc ftruncate+fsync to 1048576
 jbd2/loop0-8-50 [001] d..2. 300.000900: sched_waking: comm=rtrec pid=10 prio=120 target_cpu=000
 swapper/0-0 [000] d..2. 300.000900: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rtrec next_pid=10 next_prio=120
 rtrec-10 [000] ..... 300.001000: sys_write -> 0x4000
 rtrec-bgload-20 [001] ..... 300.002000: tracing_mark_write: begin bgload trunc ftruncate+fsync to 786432
";
        let x = every_write_of_tid_10(trace);
        let c = &x.slowest[0];
        assert_eq!(
            c.during,
            [
                "bgload trunc ftruncate+fsync to 1048576 (rtrec-bgload-20)",
                "flush window 2097152@2097152 (rtrec-flush-12)",
            ]
        );
        let d = c.parts[0].detail.as_deref().unwrap();
        assert!(
            d.ends_with("; during bgload trunc ftruncate+fsync to 1048576 (rtrec-bgload-20), flush window 2097152@2097152 (rtrec-flush-12)"),
            "{d}"
        );
        assert!(d.starts_with("woken by jbd2/loop0-8-50"), "{d}");
        // The table's row carries the worst part's detail, marks included.
        assert!(x.causes[0]
            .detail
            .as_deref()
            .unwrap()
            .contains("during bgload"));
    }
}
