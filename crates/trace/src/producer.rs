//! The producer's side, as rtla timerlat's auto-analysis splits a timer
//! latency: every missed period, every late wake-up and every slow
//! stretch of work (`record()`) of the thread that calls `record()`, with
//! the time between the intended wake-up and the return split into timer
//! IRQ latency, runnable but not running (and what ran instead), IRQ and
//! softirq time on its CPU, page faults, blocked time, hypervisor steal and
//! the producer's own time on the CPU.
//!
//! Design choices:
//! - **The periods come from the trace.** The producer sleeps in
//!   `clock_nanosleep(TIMER_ABSTIME)`: `hrtimer_start` (its `expires` is
//!   the intended wake-up, `CLOCK_MONOTONIC` ns, the trace's own clock),
//!   `sys_exit clock_nanosleep` is the return, and the next `sys_enter
//!   clock_nanosleep` ends its work. So a window's ends and everything in
//!   it are on one clock and no recorder timing is matched to the trace.
//!   The work stretch (wake-up to next sleep) holds `record()` and the
//!   loop around it: it bounds `record()` from above.
//! - **A figure without a cause is counted.** Every missed period the
//!   recorder counted and the trace did not see, and every stretch whose
//!   producer state the trace cannot tell, is `unattributed`
//!   ([`ProducerExplanation::reconcile`]).
//! - **Steal** is the guest's per-CPU steal counter (`/proc/stat`, column
//!   8) sampled every [`STEAL_SAMPLE_NS`] on `CLOCK_MONOTONIC` by the
//!   tracer: its resolution is 10 ms (`USER_HZ`), too coarse to measure a
//!   window, so it only *explains* the time the trace leaves otherwise
//!   unexplained (timer IRQ latency with nothing else on the CPU, on-CPU
//!   time) when the producer's CPU's counter advanced in the samples around
//!   the window, up to the advance. The on-CPU time before that credit is
//!   kept (`on_cpu_ns`), so rtrec's own part is never hidden by it.
//! - Mergeable: a long run is attributed chunk by chunk as the trace
//!   streams in ([`ProducerExplanation::merge`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::parse::{irq_edge, Event};

/// How often the tracer samples the steal counter, ns (10 ms).
pub const STEAL_SAMPLE_NS: u64 = 10_000_000;
/// Default lateness threshold: this percentage of the period.
pub const LATE_PERCENT: u64 = 10;
/// Default threshold of a slow `record()` (work stretch), ns: 20 µs, the
/// endurance goal.
pub const RECORD_THRESHOLD_NS: u64 = 20_000;
/// Incidents of each kind kept in full in the JSON.
pub const KEEP_WORST: usize = 10;

/// The margin of a trace timestamp, ns: the text trace prints µs.
pub const TS_RESOLUTION_NS: u64 = 1_000;

/// How steal inside a slow `record()` stretch is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StealMethod {
    /// `sched:sched_stat_runtime`, the runtime the scheduler charges the
    /// producer, which excludes paravirt steal (ns): a lower bound per
    /// stretch ([`runtime_steal`]).
    SchedRuntime,
    /// The guest's steal counter in `/proc/stat` (10 ms steps): it only
    /// explains time nothing else does, and rtrec's own part is then
    /// the on-CPU time with no steal subtracted.
    #[default]
    ProcStat,
}

impl StealMethod {
    /// One line for the table: how steal was measured.
    pub fn describe(self) -> &'static str {
        match self {
            StealMethod::SchedRuntime => {
                "steal in record() stretches: sched_stat_runtime (paravirt steal clock, ns; a lower bound); in wake-ups: /proc/stat (10 ms)"
            }
            StealMethod::ProcStat => {
                "steal: /proc/stat (10 ms steps; no paravirt steal accounting), not subtracted from rtrec's own part"
            }
        }
    }
}

/// The producer to attribute.
#[derive(Clone, Debug, Default)]
pub struct ProducerSpec {
    /// Its thread id (the caller of `record()`).
    pub tid: i32,
    /// Its period, ns; `None`: the median gap between its timer's expiries.
    pub period_ns: Option<u64>,
    /// Lateness above this percentage of the period is explained.
    pub late_percent: u64,
    /// Work stretches (`record()`) above this are explained, ns.
    pub record_threshold_ns: u64,
    /// The CPU it is pinned to, if any (interrupts are traced on it only).
    pub cpu: Option<u32>,
    /// How steal in its `record()` stretches is measured (the session
    /// sets it to what the kernel allows).
    pub steal_method: StealMethod,
}

/// Per-CPU steal counters, sampled on `CLOCK_MONOTONIC`: (time, ns per CPU).
pub type StealSamples = Vec<(u64, Vec<u64>)>;

/// What a part of an incident's time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Share {
    /// From the intended wake-up until the timer interrupt woke the thread.
    TimerIrqLatency,
    /// Woken (or preempted) and not running: another task ran instead.
    Runnable,
    /// A hard IRQ or softirq on the producer's CPU.
    Irq,
    /// On the CPU with user page faults taken.
    PageFault,
    /// Blocked (asleep in its work, not in its periodic sleep).
    Blocked,
    /// Hypervisor steal (the guest's steal counter advanced).
    Steal,
    /// On the CPU: the producer's own work (rtrec's part in `record()`).
    OnCpu,
    /// The trace cannot tell.
    Unattributed,
}

/// One part of an incident.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProducerPart {
    /// What it is.
    pub share: Share,
    /// As printed: `preempted by hog`, `IRQ (virtio0)`, `steal`.
    pub name: String,
    /// Time, ns.
    pub ns: u64,
}

/// What kind of figure an incident is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The wake-up came a period or more late.
    Missed,
    /// The wake-up came late by more than the threshold.
    Late,
    /// The work after a wake-up (`record()`) took longer than its threshold.
    SlowRecord,
}

/// One explained figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    /// Which figure.
    pub kind: Kind,
    /// Start of the window: the intended wake-up (missed, late) or the
    /// return from the sleep (slow record), `CLOCK_MONOTONIC` ns.
    pub start_ns: u64,
    /// The window, ns.
    pub duration_ns: u64,
    /// Periods missed in it.
    pub missed: u64,
    /// The producer's CPU.
    pub cpu: u32,
    /// The main part's name (the cause it is counted under).
    pub cause: String,
    /// The producer on the CPU, before any steal is credited, ns.
    pub on_cpu_ns: u64,
    /// Steal credited in it, ns.
    #[serde(default)]
    pub steal_ns: u64,
    /// The producer's own part: on the CPU (page-fault stretches included:
    /// a fault's own length is not traced) less IRQ, softirq and the steal
    /// measured in it ([`StealMethod::SchedRuntime`]; with
    /// [`StealMethod::ProcStat`] no steal is subtracted), ns. In a slow
    /// `record()` stretch this is rtrec's own part.
    #[serde(default)]
    pub own_ns: u64,
    /// The split, largest first; adds up to `duration_ns`.
    pub parts: Vec<ProducerPart>,
}

/// The count of one kind of figure by cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// How many in all (missed: periods, others: wake-ups or calls).
    pub total: u64,
    /// By main cause, the same unit.
    pub causes: BTreeMap<String, u64>,
    /// The longest window, ns.
    pub worst_ns: u64,
    /// The longest time on the CPU of the producer in one window, before
    /// steal is credited, ns.
    pub worst_on_cpu_ns: u64,
    /// Steal credited in all these windows, ns.
    #[serde(default)]
    pub steal_ns: u64,
    /// The largest own part of the producer in one window
    /// ([`Incident::own_ns`]; in slow `record()` stretches: rtrec's own), ns.
    #[serde(default)]
    pub worst_own_ns: u64,
    /// Windows whose own part is above the `record()` threshold (slow
    /// `record()` stretches only; 0 for the others).
    #[serde(default)]
    pub own_over_threshold: u64,
}

impl Tally {
    /// Counts `i` as `n` figures; its own part counts against `own_limit`.
    fn add(&mut self, i: &Incident, n: u64, own_limit: u64) {
        self.total += n;
        *self.causes.entry(i.cause.clone()).or_default() += n;
        self.worst_ns = self.worst_ns.max(i.duration_ns);
        self.worst_on_cpu_ns = self.worst_on_cpu_ns.max(i.on_cpu_ns);
        self.steal_ns += i.steal_ns;
        self.worst_own_ns = self.worst_own_ns.max(i.own_ns);
        self.own_over_threshold += u64::from(i.own_ns > own_limit);
    }

    fn merge(&mut self, o: &Tally) {
        self.total += o.total;
        for (k, v) in &o.causes {
            *self.causes.entry(k.clone()).or_default() += v;
        }
        self.worst_ns = self.worst_ns.max(o.worst_ns);
        self.worst_on_cpu_ns = self.worst_on_cpu_ns.max(o.worst_on_cpu_ns);
        self.steal_ns += o.steal_ns;
        self.worst_own_ns = self.worst_own_ns.max(o.worst_own_ns);
        self.own_over_threshold += o.own_over_threshold;
    }

    /// `43 missed periods: 39 steal, 3 IRQ (virtio0), 1 preempted by kworker/0:1`.
    pub fn line(&self, what: &str) -> String {
        let mut c: Vec<(&String, &u64)> = self.causes.iter().collect();
        c.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = c.iter().map(|(k, v)| format!("{v} {k}")).collect();
        if list.is_empty() {
            format!("{} {what}", self.total)
        } else {
            format!("{} {what}: {}", self.total, list.join(", "))
        }
    }
}

/// The producer's figures, explained.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProducerExplanation {
    /// The producer's thread id.
    pub tid: i32,
    /// The period, ns (given, or the median gap of the timer's expiries).
    pub period_ns: u64,
    /// Lateness above this is explained, ns.
    pub late_threshold_ns: u64,
    /// Work stretches above this are explained, ns.
    pub record_threshold_ns: u64,
    /// How steal in the `record()` stretches was measured.
    #[serde(default)]
    pub steal_method: StealMethod,
    /// Wake-ups seen in the trace.
    pub wakeups: u64,
    /// Missed periods, by cause.
    pub missed_periods: Tally,
    /// Late wake-ups (above the threshold, under a period), by cause.
    pub late_wakeups: Tally,
    /// Slow work stretches (`record()` and its loop), by cause.
    pub slow_records: Tally,
    /// The worst incidents of each kind, in full.
    pub worst: Vec<Incident>,
}

impl ProducerExplanation {
    /// Adds a chunk's attribution.
    pub fn merge(&mut self, o: ProducerExplanation) {
        self.wakeups += o.wakeups;
        self.missed_periods.merge(&o.missed_periods);
        self.late_wakeups.merge(&o.late_wakeups);
        self.slow_records.merge(&o.slow_records);
        if self.period_ns == 0 {
            self.period_ns = o.period_ns;
            self.late_threshold_ns = o.late_threshold_ns;
        }
        self.steal_method = o.steal_method;
        self.worst.extend(o.worst);
        keep_worst(&mut self.worst);
    }

    /// Counts the missed periods the recorder saw and the trace did not as
    /// `unattributed` (the total is then the recorder's).
    pub fn reconcile(&mut self, recorder_missed: u64) {
        let t = &mut self.missed_periods;
        if recorder_missed > t.total {
            *t.causes.entry(UNATTRIBUTED.to_string()).or_default() += recorder_missed - t.total;
            t.total = recorder_missed;
        }
    }
}

/// The name of a figure the trace cannot explain.
pub const UNATTRIBUTED: &str = "unattributed";

fn keep_worst(v: &mut Vec<Incident>) {
    v.sort_by_key(|i| std::cmp::Reverse(i.duration_ns));
    let mut n: HashMap<&'static str, usize> = HashMap::new();
    v.retain(|i| {
        let k = match i.kind {
            Kind::Missed => "m",
            Kind::Late => "l",
            Kind::SlowRecord => "s",
        };
        let c = n.entry(k).or_default();
        *c += 1;
        *c <= KEEP_WORST
    });
}

/// One window to split.
struct Window {
    kind: Kind,
    a: u64,
    b: u64,
    missed: u64,
}

fn is_producer_sleep(e: &Event, tid: i32) -> bool {
    e.tid == tid && e.name == "sys_clock_nanosleep"
}

/// The period: the median gap between the producer's timer expiries.
fn infer_period(events: &[Event], tid: i32) -> u64 {
    let exp: Vec<u64> = events
        .iter()
        .filter(|e| e.tid == tid && e.name == "hrtimer_start")
        .filter_map(|e| e.field("expires")?.parse().ok())
        .collect();
    let mut gaps: Vec<u64> = exp
        .windows(2)
        .filter_map(|w| w[1].checked_sub(w[0]))
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(0)
}

/// Attributes the producer's figures in `events` (sorted by time), with
/// the steal counter's `steal` samples.
pub fn attribute_producer(
    events: &[Event],
    spec: &ProducerSpec,
    steal: &[(u64, Vec<u64>)],
) -> ProducerExplanation {
    let tid = spec.tid;
    let period = spec
        .period_ns
        .filter(|&p| p > 0)
        .unwrap_or_else(|| infer_period(events, tid));
    let late_ns = period * spec.late_percent / 100;
    let mut x = ProducerExplanation {
        tid,
        period_ns: period,
        late_threshold_ns: late_ns,
        record_threshold_ns: spec.record_threshold_ns,
        steal_method: spec.steal_method,
        ..Default::default()
    };
    let mut windows = Vec::new();
    let mut expires: Option<u64> = None;
    let mut woke: Option<u64> = None;
    for e in events.iter().filter(|e| e.tid == tid) {
        if e.name == "hrtimer_start" && e.body.contains("hrtimer_wakeup") {
            expires = e.field("expires").and_then(|v| v.parse().ok());
        } else if is_producer_sleep(e, tid) && e.body.starts_with("->") {
            x.wakeups += 1;
            woke = Some(e.ts_ns);
            if let Some(planned) = expires.take() {
                let late = e.ts_ns.saturating_sub(planned);
                let missed = late.checked_div(period).unwrap_or(0);
                if missed > 0 || (period > 0 && late > late_ns) {
                    windows.push(Window {
                        kind: if missed > 0 { Kind::Missed } else { Kind::Late },
                        a: planned,
                        b: e.ts_ns,
                        missed,
                    });
                }
            }
        } else if is_producer_sleep(e, tid) {
            if let Some(w) = woke.take() {
                if e.ts_ns - w > spec.record_threshold_ns {
                    windows.push(Window {
                        kind: Kind::SlowRecord,
                        a: w,
                        b: e.ts_ns,
                        missed: 0,
                    });
                }
            }
        }
    }
    for w in windows {
        let i = split(events, tid, &w, steal, spec.steal_method);
        match i.kind {
            Kind::Missed => x.missed_periods.add(&i, i.missed, u64::MAX),
            Kind::Late => x.late_wakeups.add(&i, 1, u64::MAX),
            Kind::SlowRecord => x.slow_records.add(&i, 1, spec.record_threshold_ns),
        }
        x.worst.push(i);
    }
    keep_worst(&mut x.worst);
    x
}

/// The producer's state during a window: each names the share its time
/// is charged to ([`Split::close`]).
#[derive(Clone, Debug, PartialEq)]
enum State {
    /// On the CPU: its own time, or page faults when it took any.
    Running,
    /// Woken (or preempted) and not running: another task runs instead.
    Runnable,
    /// In its periodic sleep: waiting for the timer.
    Sleeping,
    /// Asleep in its work.
    Blocked,
    /// The trace does not say.
    Unknown,
}

/// The producer's state and CPU just before index `i`, read backwards.
fn state_before(events: &[Event], tid: i32, i: usize) -> (State, Option<u32>) {
    let t = tid as i64;
    let mut in_sleep: Option<bool> = None;
    for e in events[..i].iter().rev().take(200_000) {
        if is_producer_sleep(e, tid) && in_sleep.is_none() {
            in_sleep = Some(!e.body.starts_with("->"));
        }
        match e.name.as_str() {
            "sched_switch" if e.num("prev_pid") == Some(t) => {
                let st = if e.field("prev_state").is_some_and(|s| s.starts_with('R')) {
                    State::Runnable
                } else if in_sleep.unwrap_or(true) {
                    State::Sleeping
                } else {
                    State::Blocked
                };
                return (st, Some(e.cpu));
            }
            "sched_switch" if e.num("next_pid") == Some(t) => return (State::Running, Some(e.cpu)),
            "sched_waking" | "sched_wakeup" if e.num("pid") == Some(t) => {
                return (State::Runnable, e.num("target_cpu").map(|c| c as u32));
            }
            _ if e.tid == tid => return (State::Running, Some(e.cpu)),
            _ => {}
        }
    }
    (State::Unknown, None)
}

/// Splits one window into its parts: walks its events through [`Split`]'s
/// transitions, then credits steal.
fn split(
    events: &[Event],
    tid: i32,
    w: &Window,
    steal: &[(u64, Vec<u64>)],
    method: StealMethod,
) -> Incident {
    let mut s = Split::new(events, tid, w);
    for e in events[s.from..].iter().take_while(|e| e.ts_ns <= w.b) {
        s.step(e);
    }
    s.finish(w, steal, method)
}

/// One window being split, as a state machine over its events: the
/// producer's [`State`] and CPU, what runs on that CPU, the interrupts
/// open on it, and the parts charged so far. A state's interval runs from
/// `last` to the event that ends it (a transition, one method each), when
/// it is charged to the state's share.
///
/// Design choice: an interrupt's time is the interrupt's, whatever state it
/// interrupts: while one is open a transition moves the state but charges
/// nothing, and the interrupt's exit charges its whole stretch.
struct Split<'a> {
    /// The whole trace, sorted by time.
    events: &'a [Event],
    /// The producer's thread id.
    tid: i32,
    /// The window's kind: in a slow `record()` the on-CPU time is rtrec's
    /// own, and a switch-out blocks rather than sleeps.
    kind: Kind,
    /// The index of the window's first event.
    from: usize,
    /// The producer's state.
    state: State,
    /// The producer's CPU, when known.
    cpu: Option<u32>,
    /// Where the interval being walked started, ns.
    last: u64,
    /// Interrupts open on the producer's CPU (they nest).
    irq_depth: u32,
    /// The outermost open interrupt's name.
    irq_name: String,
    /// User page faults since the producer last left the CPU.
    faults: u64,
    /// The task on the producer's CPU (an interrupt's events carry the
    /// task it interrupted): who ran instead while it was runnable.
    cur: String,
    /// The task that last woke the producer.
    waker: String,
    /// The parts so far, one per name.
    parts: Vec<ProducerPart>,
}

impl<'a> Split<'a> {
    /// The walk of `w`, starting in the state the producer was in before it.
    fn new(events: &'a [Event], tid: i32, w: &Window) -> Split<'a> {
        let from = events.partition_point(|e| e.ts_ns < w.a);
        let (state, cpu) = state_before(events, tid, from);
        let mut s = Split {
            events,
            tid,
            kind: w.kind,
            from,
            state,
            cpu,
            last: w.a,
            irq_depth: 0,
            irq_name: String::new(),
            faults: 0,
            cur: String::new(),
            waker: String::new(),
            parts: Vec::new(),
        };
        s.cur = s.task_on_cpu();
        s
    }

    /// The producer's thread id as the events' numeric fields hold it.
    fn t(&self) -> i64 {
        self.tid as i64
    }

    /// The task last seen on the producer's CPU before the window.
    fn task_on_cpu(&self) -> String {
        self.cpu.map_or_else(
            || "?".to_string(),
            |c| task_on(&self.events[..self.from], c, self.tid),
        )
    }

    /// Charges the interval from `last` to `ts` to the part `name` (a new
    /// part the first time; none for an empty interval), and starts the
    /// next interval at `ts`.
    fn charge(&mut self, share: Share, name: String, ts: u64) {
        let ns = ts - self.last;
        self.last = ts;
        if ns == 0 {
            return;
        }
        match self.parts.iter_mut().find(|p| p.name == name) {
            Some(p) => p.ns += ns,
            None => self.parts.push(ProducerPart { share, name, ns }),
        }
    }

    /// Ends the current state's interval at `ts`: charged to the share
    /// the state names.
    fn close(&mut self, ts: u64) {
        let (share, name) = match self.state {
            State::Running if self.faults > 0 => (Share::PageFault, "page faults".into()),
            State::Running if self.kind == Kind::SlowRecord => {
                (Share::OnCpu, "rtrec's own (on CPU)".into())
            }
            State::Running => (Share::OnCpu, "on CPU".into()),
            State::Runnable => (Share::Runnable, format!("preempted by {}", self.cur)),
            State::Sleeping => (Share::TimerIrqLatency, "timer IRQ latency".into()),
            State::Blocked => (Share::Blocked, format!("blocked (woken by {})", self.waker)),
            State::Unknown => (Share::Unattributed, UNATTRIBUTED.into()),
        };
        self.charge(share, name, ts);
    }

    /// [`close`](Self::close), unless an interrupt is open (its exit
    /// charges the time).
    fn close_outside_irq(&mut self, ts: u64) {
        if self.irq_depth == 0 {
            self.close(ts);
        }
    }

    /// One event of the window: the transition it makes, if any.
    fn step(&mut self, e: &Event) {
        let t = self.t();
        let on_cpu = self.cpu == Some(e.cpu);
        // The event at `ts` ran on the task that held the CPU until then.
        if on_cpu && e.tid != self.tid {
            self.cur.clone_from(&e.comm);
        }
        // An event in the producer's own context says it runs: the switch
        // in from the idle task is not always in the trace (on this VM's
        // CPU 1 never), and without this the stretch it then runs would
        // read as "preempted by <idle>".
        if e.tid == self.tid && self.state == State::Runnable && !is_wakeup_of(e, t) {
            self.runs(e);
        }
        match e.name.as_str() {
            _ if on_cpu && irq_edge(&e.name) == Some(true) => self.irq_entry(e),
            _ if on_cpu && self.irq_depth > 0 && irq_edge(&e.name) == Some(false) => {
                self.irq_exit(e.ts_ns)
            }
            "page_fault_user" if e.tid == self.tid => self.faults += 1,
            "sched_switch" if e.num("prev_pid") == Some(t) => self.switched_out(e),
            "sched_switch" if e.num("next_pid") == Some(t) => self.runs(e),
            "sched_switch" if on_cpu && self.state == State::Runnable => self.other_runs(e),
            "sched_waking" | "sched_wakeup"
                if e.num("pid") == Some(t)
                    && matches!(self.state, State::Sleeping | State::Blocked) =>
            {
                self.woken(e)
            }
            _ => {}
        }
    }

    /// An interrupt enters on the producer's CPU: the state's interval
    /// ends there (at the outermost one).
    fn irq_entry(&mut self, e: &Event) {
        if self.irq_depth == 0 {
            self.close(e.ts_ns);
            self.irq_name = irq_label(e);
        }
        self.irq_depth += 1;
    }

    /// An interrupt exits: the outermost one's time is IRQ time, or timer
    /// IRQ latency while the producer still sleeps (the timer's own).
    fn irq_exit(&mut self, ts: u64) {
        self.irq_depth -= 1;
        if self.irq_depth == 0 {
            if self.state == State::Sleeping {
                self.charge(Share::TimerIrqLatency, "timer IRQ latency".into(), ts);
            } else {
                self.charge(Share::Irq, self.irq_name.clone(), ts);
            }
        }
    }

    /// The producer runs (switched in, or seen in its own context) on
    /// `e`'s CPU.
    fn runs(&mut self, e: &Event) {
        self.close_outside_irq(e.ts_ns);
        self.cpu = Some(e.cpu);
        self.state = State::Running;
    }

    /// The producer is switched out: preempted (runnable, and the next task
    /// is who runs instead), or asleep: blocked in a slow `record()`, else
    /// in its periodic sleep.
    fn switched_out(&mut self, e: &Event) {
        self.close_outside_irq(e.ts_ns);
        self.faults = 0;
        self.cpu = Some(e.cpu);
        self.state = if e.field("prev_state").is_some_and(|s| s.starts_with('R')) {
            self.cur = task(e.field("next_comm"));
            State::Runnable
        } else if self.kind == Kind::SlowRecord {
            State::Blocked
        } else {
            State::Sleeping
        };
    }

    /// While the producer waits for its CPU, another task is switched in
    /// there: the wait goes on, preempted by the next one.
    fn other_runs(&mut self, e: &Event) {
        self.close(e.ts_ns);
        self.cur = task(e.field("next_comm"));
    }

    /// The sleeping or blocked producer is woken, maybe onto another CPU.
    fn woken(&mut self, e: &Event) {
        // The timer's own interrupt is still timer IRQ latency.
        if self.irq_depth > 0 && self.state == State::Sleeping {
            self.charge(Share::TimerIrqLatency, "timer IRQ latency".into(), e.ts_ns);
        } else {
            self.close(e.ts_ns);
        }
        self.waker = e.comm.clone();
        let target = e.num("target_cpu").map(|c| c as u32).or(self.cpu);
        if target != self.cpu {
            // An interrupt open on another CPU does not hold this one.
            self.irq_depth = 0;
            self.cpu = target;
            self.cur = self.task_on_cpu();
        }
        self.state = State::Runnable;
    }

    /// Ends the walk at the window's end and credits steal (measured by
    /// `method` in a slow `record()`, else explained by the `steal`
    /// counter's samples): the incident.
    fn finish(mut self, w: &Window, steal: &[(u64, Vec<u64>)], method: StealMethod) -> Incident {
        if self.irq_depth > 0 {
            self.charge(Share::Irq, self.irq_name.clone(), w.b);
        } else {
            self.close(w.b);
        }
        let mut parts = self.parts;
        let on_cpu_ns: u64 = parts
            .iter()
            .filter(|p| p.share == Share::OnCpu)
            .map(|p| p.ns)
            .sum();
        let own_before = own_after(&parts);
        let cpu = self.cpu.unwrap_or(0);
        let (steal_ns, own_ns) =
            if w.kind == Kind::SlowRecord && method == StealMethod::SchedRuntime {
                // Measured: taken from what is not rtrec's first.
                let s = runtime_steal(self.events, self.tid, w.a, w.b).unwrap_or(0);
                let moved = credit_steal(&mut parts, s, &MEASURED_STEAL_ORDER);
                (moved, own_after(&parts))
            } else {
                // Explained only: rtrec's own part keeps the on-CPU time.
                let moved = credit_steal(
                    &mut parts,
                    steal_in(steal, cpu as usize, w.a, w.b),
                    &COARSE_STEAL_ORDER,
                );
                (moved, own_before)
            };
        parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
        Incident {
            kind: w.kind,
            start_ns: w.a,
            duration_ns: w.b - w.a,
            missed: w.missed,
            cpu,
            cause: parts
                .first()
                .map(|p| p.name.clone())
                .unwrap_or_else(|| UNATTRIBUTED.into()),
            on_cpu_ns,
            steal_ns,
            own_ns,
            parts,
        }
    }
}

/// The producer's own part left in `parts`: on the CPU and page faults.
fn own_after(parts: &[ProducerPart]) -> u64 {
    parts
        .iter()
        .filter(|p| matches!(p.share, Share::OnCpu | Share::PageFault))
        .map(|p| p.ns)
        .sum()
}

/// A lower bound of the steal in the producer's stretch `[a, b]` (`b`: its
/// `sys_enter clock_nanosleep`), from the runtime the scheduler charged it
/// over the on-CPU interval that holds `b` (`sched_stat_runtime` between
/// its `sched_switch` in and out). `None` when the trace does not hold
/// the whole interval or it ends in a preemption (then the kernel may
/// have read its clock before `b`, and the bound does not hold).
///
/// With paravirt steal accounting the interval's accounting window `W`
/// is `R + steal`, and `[a, b]` lies inside it; the steal outside the
/// stretch is at most `W − (b − a)`, so the steal inside it is at least
/// `(b − a) − R`, less [`TS_RESOLUTION_NS`] for the printed timestamps.
/// The window starts at the kernel's last clock update before the
/// switch-in, which a preempting wake-up makes the wake-up itself (the
/// kernel charges the woken task its wait for the CPU), so `R` can hold
/// time before the switch; a tick inside the stretch (its own runtime
/// event, after the kernel read its clock) starts a fresh window:
/// `(b − tick) − R_after_tick` bounds the steal after it. The bound is the
/// largest of these.
pub fn runtime_steal(events: &[Event], tid: i32, a: u64, b: u64) -> Option<u64> {
    let t = tid as i64;
    let is_switch = |e: &Event, key: &str| e.name == "sched_switch" && e.num(key) == Some(t);
    let from = events.partition_point(|e| e.ts_ns < b);
    let out = from
        + events[from..]
            .iter()
            .take(SEARCH_EVENTS)
            .position(|e| is_switch(e, "prev_pid"))?;
    if events[out]
        .field("prev_state")
        .is_none_or(|s| s.starts_with('R'))
    {
        return None;
    }
    // The interval starts at its switch-in, or after the producer's last
    // switch-out when the switch-in is not in the trace (from the idle
    // task, see `split`): the runtime events after it are this interval's.
    let back = events[..out]
        .iter()
        .rev()
        .take(SEARCH_EVENTS)
        .position(|e| is_switch(e, "next_pid") || is_switch(e, "prev_pid"))?;
    let inn = out - 1 - back;
    // (time, runtime charged after it): the switch-in, then every
    // runtime event (a tick) inside the stretch restarts the account.
    let charged: Vec<(u64, u64)> = events[inn + 1..out]
        .iter()
        .filter(|e| e.name == "sched_stat_runtime" && e.num("pid") == Some(t))
        .filter_map(|e| Some((e.ts_ns, e.field("runtime")?.parse::<u64>().ok()?)))
        .collect();
    let total: u64 = charged.iter().map(|c| c.1).sum();
    let mut after = total;
    let mut bound = 0u64;
    let mut consider = |from: u64, runtime_after: u64| {
        // The printed time may be up to a tick before the true one.
        let start = a.max(from) + TS_RESOLUTION_NS;
        bound = bound.max(b.saturating_sub(start).saturating_sub(runtime_after));
    };
    consider(events[inn].ts_ns, total);
    for &(ts, r) in &charged {
        after -= r;
        if ts >= b {
            break;
        }
        consider(ts, after);
    }
    Some(bound)
}

/// How far [`runtime_steal`] looks for the interval's ends, in events.
const SEARCH_EVENTS: usize = 200_000;

/// Measured steal ([`StealMethod::SchedRuntime`]) is taken from the parts
/// that are not rtrec's first, so rtrec's own part is never understated.
const MEASURED_STEAL_ORDER: [Share; 4] = [
    Share::Irq,
    Share::Unattributed,
    Share::PageFault,
    Share::OnCpu,
];

/// The coarse counter ([`StealMethod::ProcStat`]) only explains what
/// nothing else does.
const COARSE_STEAL_ORDER: [Share; 3] = [Share::TimerIrqLatency, Share::Unattributed, Share::OnCpu];

/// Whether `e` is a wake-up of the task `t` (it can carry `t`'s own
/// context when it wakes itself from its timer's interrupt).
fn is_wakeup_of(e: &Event, t: i64) -> bool {
    matches!(e.name.as_str(), "sched_waking" | "sched_wakeup") && e.num("pid") == Some(t)
}

/// The task last seen on `cpu` in `before` (other than `tid`).
fn task_on(before: &[Event], cpu: u32, tid: i32) -> String {
    before
        .iter()
        .rev()
        .take(100_000)
        .find(|e| e.cpu == cpu && e.tid != tid)
        .map_or_else(|| "?".to_string(), |e| e.comm.clone())
}

/// A task's name for the table: its comm.
fn task(comm: Option<&str>) -> String {
    comm.unwrap_or("?").to_string()
}

/// The advance of `cpu`'s steal counter between the last sample at or
/// before `a` and the first at or after `b`, ns.
pub fn steal_in(samples: &[(u64, Vec<u64>)], cpu: usize, a: u64, b: u64) -> u64 {
    let i = samples.partition_point(|s| s.0 <= a);
    let j = samples.partition_point(|s| s.0 < b);
    let (Some(s0), Some(s1)) = (
        i.checked_sub(1).and_then(|i| samples.get(i)),
        samples.get(j),
    ) else {
        return 0;
    };
    match (s0.1.get(cpu), s1.1.get(cpu)) {
        (Some(x), Some(y)) => y.saturating_sub(*x),
        _ => 0,
    }
}

/// Moves up to `steal` ns from the parts of the shares in `order`, in that
/// order, into `steal`; returns how much moved.
fn credit_steal(parts: &mut Vec<ProducerPart>, mut steal: u64, order: &[Share]) -> u64 {
    let mut moved = 0;
    for &share in order {
        for p in parts.iter_mut().filter(|p| p.share == share) {
            let m = p.ns.min(steal);
            p.ns -= m;
            steal -= m;
            moved += m;
        }
    }
    parts.retain(|p| p.ns > 0);
    if moved > 0 {
        parts.push(ProducerPart {
            share: Share::Steal,
            name: "steal".into(),
            ns: moved,
        });
    }
    moved
}

/// `IRQ (virtio0)`, `softirq (TIMER)`, `IRQ (local timer)`.
fn irq_label(e: &Event) -> String {
    match e.name.as_str() {
        "irq_handler_entry" => format!("IRQ ({})", e.field("name").unwrap_or("?")),
        "softirq_entry" => format!(
            "softirq ({})",
            e.body
                .split("action=")
                .nth(1)
                .map(|s| s.trim_end_matches(']'))
                .unwrap_or("?")
        ),
        n => format!("IRQ ({})", crate::parse::vector_name(n)),
    }
}

/// Whether this kernel leaves paravirt steal out of the runtime it charges
/// a task, so that [`StealMethod::SchedRuntime`] measures steal: built with
/// `CONFIG_PARAVIRT_TIME_ACCOUNTING=y` (read from `/boot/config-RELEASE`,
/// else `/proc/config.gz` through `gzip -dc`) and not booted with
/// `no-steal-acc`. `false` when the configuration cannot be read.
pub fn paravirt_steal_accounting() -> bool {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if cmdline.split_whitespace().any(|w| w == "no-steal-acc") {
        return false;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = std::fs::read_to_string(format!("/boot/config-{}", release.trim()))
        .ok()
        .or_else(|| {
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .unwrap_or_default();
    config_has(&config, "CONFIG_PARAVIRT_TIME_ACCOUNTING")
}

/// Whether a kernel configuration's text sets `key=y`.
fn config_has(config: &str, key: &str) -> bool {
    config
        .lines()
        .any(|l| l.strip_prefix(key).is_some_and(|v| v == "=y"))
}

/// Steal counters of every CPU now, ns (`/proc/stat`'s `cpuN` lines,
/// column 8, in `USER_HZ` = 100 ticks per second).
pub fn read_steal() -> Vec<u64> {
    use rtrec_host::procstat::{stat, TICK_NS};
    stat().map_or_else(Vec::new, |s| {
        s.per_cpu.iter().map(|cpu| cpu.steal * TICK_NS).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    /// Producer 10 on CPU 0, period 1 ms: one on-time period, one woken
    /// 2.5 ms late because `hog` (higher priority) held the CPU after the
    /// timer fired, then a 50 µs `record()` with a virtio interrupt in it.
    const TRACE: &str = "\
 prod-10 [000] ..... 100.000000: hrtimer_start: hrtimer=0x1 function=hrtimer_wakeup expires=100001000000 softexpires=100001000000 mode=ABS
 prod-10 [000] d..2. 100.000001: sched_switch: prev_comm=prod prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 <idle>-0 [000] d.h1. 100.001000: sched_waking: comm=prod pid=10 prio=19 target_cpu=000
 <idle>-0 [000] d..2. 100.001002: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=prod next_pid=10 next_prio=19
 prod-10 [000] ..... 100.001003: sys_clock_nanosleep -> 0x0
 prod-10 [000] ..... 100.001008: sys_clock_nanosleep(which_clock: 1, flags: 1, rqtp: 0x1, rmtp: 0x0)
 prod-10 [000] ..... 100.001009: hrtimer_start: hrtimer=0x1 function=hrtimer_wakeup expires=100002000000 softexpires=100002000000 mode=ABS
 prod-10 [000] d..2. 100.001010: sched_switch: prev_comm=prod prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=hog next_pid=11 next_prio=9
 hog-11 [000] d.h1. 100.002000: sched_waking: comm=prod pid=10 prio=19 target_cpu=000
 hog-11 [000] d..2. 100.004500: sched_switch: prev_comm=hog prev_pid=11 prev_prio=9 prev_state=S ==> next_comm=prod next_pid=10 next_prio=19
 prod-10 [000] ..... 100.004500: sys_clock_nanosleep -> 0x0
 prod-10 [000] d.h1. 100.004510: irq_handler_entry: irq=11 name=virtio0
 prod-10 [000] d.h1. 100.004540: irq_handler_exit: irq=11 ret=handled
 prod-10 [000] ..... 100.004550: sys_clock_nanosleep(which_clock: 1, flags: 1, rqtp: 0x1, rmtp: 0x0)
";

    #[test]
    fn the_kernel_configuration_is_read_for_the_exact_option() {
        let c = "# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\n";
        assert!(config_has(c, "CONFIG_PARAVIRT_TIME_ACCOUNTING"));
        assert!(!config_has(c, "CONFIG_IRQ_TIME_ACCOUNTING"));
        assert!(!config_has(
            "CONFIG_PARAVIRT_TIME_ACCOUNTING_X=y",
            "CONFIG_PARAVIRT_TIME_ACCOUNTING"
        ));
    }

    fn spec() -> ProducerSpec {
        ProducerSpec {
            tid: 10,
            period_ns: Some(1_000_000),
            late_percent: LATE_PERCENT,
            record_threshold_ns: RECORD_THRESHOLD_NS,
            cpu: None,
            steal_method: StealMethod::ProcStat,
        }
    }

    /// Producer 10 on CPU 0 switched in at 200 s, a `record()` stretch of
    /// `stretch_us` (with an interrupt of `irq_us` in it, if any), then its
    /// sleep; the scheduler charged it `runtime_ns` over the interval, which
    /// ends with `end_state` (`S`: its sleep; `R`: preempted).
    fn stretch(stretch_us: u64, irq_us: u64, runtime_ns: u64, end_state: &str) -> String {
        let at = |us: u64| format!("200.{us:06}");
        let mut t = format!(
            " <idle>-0 [000] d..2. {}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=prod next_pid=10 next_prio=19\n",
            at(0)
        );
        t += &format!(
            " prod-10 [000] ..... {}: sys_clock_nanosleep -> 0x0\n",
            at(2)
        );
        if irq_us > 0 {
            t += &format!(
                " prod-10 [000] d.h1. {}: irq_handler_entry: irq=11 name=virtio0\n",
                at(10)
            );
            t += &format!(
                " prod-10 [000] d.h1. {}: irq_handler_exit: irq=11 ret=handled\n",
                at(10 + irq_us)
            );
        }
        let b = 2 + stretch_us;
        t += &format!(
            " prod-10 [000] ..... {}: sys_clock_nanosleep(which_clock: 1, flags: 1, rqtp: 0x1, rmtp: 0x0)\n",
            at(b)
        );
        t += &format!(" prod-10 [000] d..2. {}: sched_stat_runtime: comm=prod pid=10 runtime={runtime_ns} [ns]\n", at(b + 2));
        t += &format!(
            " prod-10 [000] d..2. {}: sched_switch: prev_comm=prod prev_pid=10 prev_prio=19 prev_state={end_state} ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
            at(b + 2)
        );
        t
    }

    fn measured() -> ProducerSpec {
        ProducerSpec {
            steal_method: StealMethod::SchedRuntime,
            ..spec()
        }
    }

    fn slow(x: &ProducerExplanation) -> &Incident {
        x.worst.iter().find(|i| i.kind == Kind::SlowRecord).unwrap()
    }

    #[test]
    fn a_stretch_charged_less_runtime_than_its_length_gets_exactly_the_lower_bound_as_steal() {
        let x = attribute_producer(&parse(&stretch(100, 0, 40_000, "S")), &measured(), &[]);
        assert_eq!(x.steal_method, StealMethod::SchedRuntime);
        let s = slow(&x);
        // 100 µs − 40 µs charged − 1 µs for the printed timestamps.
        assert_eq!(s.steal_ns, 59_000);
        assert_eq!(s.own_ns, 41_000);
        assert_eq!(s.on_cpu_ns, 100_000);
        assert_eq!(s.cause, "steal");
        assert_eq!(s.parts.iter().map(|p| p.ns).sum::<u64>(), s.duration_ns);
        assert_eq!(x.slow_records.steal_ns, 59_000);
        assert_eq!(x.slow_records.worst_own_ns, 41_000);
        assert_eq!(x.slow_records.own_over_threshold, 1);
    }

    #[test]
    fn an_interrupt_in_a_stretch_is_irq_and_no_steal_when_the_runtime_covers_it() {
        let x = attribute_producer(&parse(&stretch(100, 30, 104_000, "S")), &measured(), &[]);
        let s = slow(&x);
        assert_eq!(s.steal_ns, 0);
        let irq = s.parts.iter().find(|p| p.share == Share::Irq).unwrap();
        assert_eq!((irq.name.as_str(), irq.ns), ("IRQ (virtio0)", 30_000));
        assert_eq!(s.own_ns, 70_000);
    }

    #[test]
    fn measured_steal_is_taken_from_the_interrupt_before_rtrecs_own_time() {
        // 100 µs, 10 µs of it an interrupt, 50 µs charged: steal ≥ 49 µs,
        // of which at most 10 µs can have hidden in the interrupt.
        let x = attribute_producer(&parse(&stretch(100, 10, 50_000, "S")), &measured(), &[]);
        let s = slow(&x);
        assert_eq!(s.steal_ns, 49_000);
        assert!(s.parts.iter().all(|p| p.share != Share::Irq));
        assert_eq!(s.own_ns, 100_000 - 49_000);
    }

    #[test]
    fn a_tick_in_the_stretch_bounds_the_steal_after_it_without_the_wake_up_latency() {
        // The kernel charged 300 µs up to a tick at 200.000050 (the
        // wake-up's latency before the switch included), then 20 µs to the
        // sleep at 200.000502: at least 502 − 51 − 20 = 431 µs were stolen.
        let mut text = stretch(500, 0, 20_000, "S");
        let tick = " prod-10 [000] d.h1. 200.000050: sched_stat_runtime: comm=prod pid=10 runtime=300000 [ns]\n";
        let at = text.find(" prod-10 [000] ..... 200.000502").unwrap();
        text.insert_str(at, tick);
        let x = attribute_producer(&parse(&text), &measured(), &[]);
        let s = slow(&x);
        assert_eq!(s.steal_ns, 431_000);
        // Without the tick the whole account, 320 µs, would leave 179 µs.
        assert_eq!(s.own_ns, 500_000 - 431_000);
    }

    #[test]
    fn a_switch_in_from_idle_missing_from_the_trace_still_reads_as_running() {
        // As this VM traces CPU 1: the producer's previous sleep, its
        // timer's wake-up in the idle task, then its own events with no
        // sched_switch in between.
        let text = "\
 prod-10 [000] d..2. 199.999000: sched_stat_runtime: comm=prod pid=10 runtime=5000 [ns]
 prod-10 [000] d..2. 199.999000: sched_switch: prev_comm=prod prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 <idle>-0 [000] d.h1. 200.000000: local_timer_entry: vector=236
 <idle>-0 [000] d.h3. 200.000001: sched_waking: comm=prod pid=10 prio=19 target_cpu=000
 <idle>-0 [000] dNh1. 200.000002: local_timer_exit: vector=236
 prod-10 [000] ..... 200.000004: sys_clock_nanosleep -> 0x0
 prod-10 [000] ..... 200.000104: sys_clock_nanosleep(which_clock: 1, flags: 1, rqtp: 0x1, rmtp: 0x0)
 prod-10 [000] d..2. 200.000106: sched_stat_runtime: comm=prod pid=10 runtime=40000 [ns]
 prod-10 [000] d..2. 200.000106: sched_switch: prev_comm=prod prev_pid=10 prev_prio=19 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let x = attribute_producer(&parse(text), &measured(), &[]);
        let s = slow(&x);
        assert!(s.parts.iter().all(|p| p.share != Share::Runnable), "{s:?}");
        // 100 µs − 40 µs charged after the last switch-out − 1 µs.
        assert_eq!((s.steal_ns, s.own_ns), (59_000, 41_000));
    }

    #[test]
    fn an_interval_that_ends_in_a_preemption_gets_no_steal() {
        let x = attribute_producer(&parse(&stretch(100, 0, 40_000, "R+")), &measured(), &[]);
        let s = slow(&x);
        assert_eq!(s.steal_ns, 0);
        assert_eq!(s.own_ns, 100_000);
    }

    #[test]
    fn without_paravirt_accounting_rtrecs_own_part_keeps_the_on_cpu_time() {
        let x = attribute_producer(&parse(&stretch(100, 0, 40_000, "S")), &spec(), &[]);
        assert_eq!(x.steal_method, StealMethod::ProcStat);
        let s = slow(&x);
        assert_eq!((s.steal_ns, s.own_ns), (0, 100_000));
    }

    #[test]
    fn the_measured_split_always_adds_up_and_never_understates_rtrecs_own_part() {
        for stretch_us in [21, 50, 400, 2_900] {
            for irq_us in [0, 5, 19] {
                if 10 + irq_us >= 2 + stretch_us {
                    continue; // the interrupt would outlast the stretch
                }
                for runtime_us in [0, 10, 20, 60, 399, 3_000] {
                    let text = stretch(stretch_us, irq_us, runtime_us * 1000, "S");
                    let x = attribute_producer(&parse(&text), &measured(), &[]);
                    let s = slow(&x);
                    let len = stretch_us * 1000;
                    let bound = len.saturating_sub(runtime_us * 1000 + TS_RESOLUTION_NS);
                    assert_eq!(s.steal_ns, bound, "{stretch_us} {irq_us} {runtime_us}");
                    assert_eq!(s.parts.iter().map(|p| p.ns).sum::<u64>(), s.duration_ns);
                    // Own ≥ the stretch less its IRQ less all the steal.
                    let irq = irq_us * 1000;
                    assert!(s.own_ns + irq + s.steal_ns >= len, "{s:?}");
                    assert!(s.own_ns <= len - irq.min(len));
                }
            }
        }
    }

    #[test]
    fn a_missed_period_is_split_into_timer_latency_and_the_task_that_ran_instead() {
        let x = attribute_producer(&parse(TRACE), &spec(), &[]);
        assert_eq!(x.wakeups, 2);
        assert_eq!(x.missed_periods.total, 2);
        assert_eq!(x.missed_periods.causes["preempted by hog"], 2);
        let m = x.worst.iter().find(|i| i.kind == Kind::Missed).unwrap();
        assert_eq!(m.duration_ns, 2_500_000);
        let ns = |n: &str| m.parts.iter().find(|p| p.name == n).map(|p| p.ns);
        assert_eq!(ns("preempted by hog"), Some(2_500_000));
        assert_eq!(m.parts.iter().map(|p| p.ns).sum::<u64>(), m.duration_ns);
    }

    #[test]
    fn a_slow_record_names_the_interrupt_and_rtrecs_own_time() {
        let x = attribute_producer(&parse(TRACE), &spec(), &[]);
        assert_eq!(x.slow_records.total, 1);
        let s = x.worst.iter().find(|i| i.kind == Kind::SlowRecord).unwrap();
        assert_eq!(s.duration_ns, 50_000);
        assert_eq!(s.cause, "IRQ (virtio0)");
        assert_eq!(s.on_cpu_ns, 20_000);
        assert_eq!(
            x.slow_records.line("slow record() calls"),
            "1 slow record() calls: 1 IRQ (virtio0)"
        );
    }

    #[test]
    fn steal_explains_only_what_nothing_else_does_and_the_on_cpu_time_is_kept() {
        // The steal counter of CPU 0 advanced by 10 ms around the record().
        let steal = vec![
            (100_004_000_000, vec![0]),
            (100_010_000_000, vec![10_000_000]),
        ];
        let x = attribute_producer(&parse(TRACE), &spec(), &steal);
        let s = x.worst.iter().find(|i| i.kind == Kind::SlowRecord).unwrap();
        assert_eq!(s.cause, "IRQ (virtio0)");
        let steal_part = s.parts.iter().find(|p| p.share == Share::Steal).unwrap();
        assert_eq!(steal_part.ns, 20_000);
        assert_eq!(s.on_cpu_ns, 20_000);
        assert_eq!(s.parts.iter().map(|p| p.ns).sum::<u64>(), s.duration_ns);
    }

    #[test]
    fn missed_periods_the_trace_did_not_see_are_unattributed_and_counted() {
        let mut x = attribute_producer(&parse(TRACE), &spec(), &[]);
        x.reconcile(5);
        assert_eq!(x.missed_periods.total, 5);
        assert_eq!(x.missed_periods.causes[UNATTRIBUTED], 3);
        let sum: u64 = x.missed_periods.causes.values().sum();
        assert_eq!(sum, 5);
    }

    #[test]
    fn the_period_is_inferred_from_the_timer_when_not_given() {
        let mut s = spec();
        s.period_ns = None;
        let x = attribute_producer(&parse(TRACE), &s, &[]);
        assert_eq!(x.period_ns, 1_000_000);
    }
}
