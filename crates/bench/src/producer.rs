//! The producer's real-time setup: every case's timed loop, and every
//! probe of `--study throughput`, runs on a thread of its own that gets the
//! setup `rtrec record --rt` gives its caller — `mlockall`, SCHED_FIFO at
//! [`DEFAULT_PRIORITY`] (`--priority`), optionally one CPU (`--cpu`) —
//! unless `--no-rt`; and [`RtReport`], what was asked and what the kernel
//! granted, as the report, the JSON and the log state it.
//!
//! Design choices:
//! - **A thread of its own, raised after its untimed setup.** The timed
//!   thread starts at normal priority, creates what its loop needs (the
//!   recorder and its writer and flush threads, a tmpfs, a file), then
//!   calls [`raise`] just before its first period, and ends with the loop.
//!   So nothing it creates inherits its priority: the engine's writer takes
//!   SCHED_FIFO `priority − 1` itself (as under `record --rt`), the flush
//!   thread stays at normal priority with its nice value (the studies'
//!   "lower-priority thread"), and there is nothing to put back.
//! - **`--cpu N` is the timed thread's alone** in a recording case, as
//!   under `record --rt --cpu`: the timed thread drops N from its own CPU
//!   mask before it creates the recorder ([`keep_cpu`]), so the writer and
//!   flush threads inherit a mask without N, and pins itself to N when it
//!   is raised. The background loads and the throughput probes' recorder
//!   (created on the study's thread) keep every CPU.
//! - **The disturbance stays normal.** Background loads are processes
//!   started by the bench's main thread, which never changes its scheduling;
//!   the sampler thread is spawned by it too.
//! - **Refused is not fatal.** Without `CAP_SYS_NICE` (or with
//!   `RLIMIT_RTPRIO` 0) the loop runs at normal priority and every refusal
//!   is one sentence in [`RtReport::failures`].
//! - **The policy is read back** from `/proc/thread-self/stat` (fields 40
//!   and 41, `rt_priority` and `policy`, see proc(5)), so the report says
//!   what the kernel applied, not what was asked.

use rtrec_engine::rt::{self, RtSetup};
use rtrec_host::procstat::{self, Task};
use serde::{Deserialize, Serialize};

/// The SCHED_FIFO priority of the timed thread by default: `rtrec record
/// --rt`'s default `--priority` (the one definition of both,
/// [`rt::DEFAULT_PRIORITY`]); the writer thread gets one below.
pub const DEFAULT_PRIORITY: i32 = rt::DEFAULT_PRIORITY;

/// What a run asks for its timed threads (`--no-rt`, `--priority`, `--cpu`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtRequest {
    /// False with `--no-rt`: normal priority, no memory locking.
    pub enabled: bool,
    /// SCHED_FIFO priority of the timed thread (1-99).
    pub priority: i32,
    /// Pin the timed thread to this CPU.
    pub cpu: Option<usize>,
}

impl Default for RtRequest {
    fn default() -> Self {
        RtRequest {
            enabled: true,
            priority: DEFAULT_PRIORITY,
            cpu: None,
        }
    }
}

impl RtRequest {
    /// What [`rt::apply`] is given; `None` with `--no-rt`.
    pub fn setup(&self) -> Option<RtSetup> {
        self.enabled.then_some(RtSetup {
            lock_memory: true,
            priority: Some(self.priority),
            cpu: self.cpu,
        })
    }

    /// The writer thread's SCHED_FIFO priority: one below the timed
    /// thread's, as `record --rt` sets it; `None` with `--no-rt`.
    pub fn writer_priority(&self) -> Option<i32> {
        self.enabled.then(|| (self.priority - 1).max(1))
    }
}

/// The scheduling a timed thread ran with (`rt` in the JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtReport {
    /// The real-time setup was asked for (false with `--no-rt`).
    pub requested: bool,
    /// Every part asked for was applied.
    pub granted: bool,
    /// The timed thread's policy as the kernel reports it after the setup
    /// (`SCHED_FIFO`, `SCHED_OTHER`, …; `?` when it could not be read).
    pub policy: String,
    /// Its real-time priority as the kernel reports it (null at a
    /// non-real-time policy).
    pub priority: Option<i32>,
    /// The writer thread's SCHED_FIFO priority asked of the engine (ring
    /// mode; null with `--no-rt`).
    pub writer_priority: Option<i32>,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE)` succeeded.
    pub mlock: bool,
    /// The CPU the timed thread was pinned to (null: any).
    pub cpu: Option<usize>,
    /// What could not be applied, one sentence each.
    pub failures: Vec<String>,
}

impl RtReport {
    /// The report of `req` given the failures of [`rt::apply`] and the
    /// policy read back (`(policy, rt_priority)` as proc(5) numbers).
    pub fn from_outcome(
        req: &RtRequest,
        failures: Vec<String>,
        readback: Option<(u32, u32)>,
    ) -> RtReport {
        let failed = |what: &str| failures.iter().any(|f| f.contains(what));
        let (policy, priority) = match readback {
            Some((p, prio)) => (
                policy_name(p).to_string(),
                matches!(p, 1 | 2).then_some(prio as i32),
            ),
            None => ("?".to_string(), None),
        };
        RtReport {
            requested: req.enabled,
            granted: req.enabled && failures.is_empty(),
            policy,
            priority,
            writer_priority: req.writer_priority(),
            mlock: req.enabled && !failed("mlockall"),
            cpu: req.cpu.filter(|_| req.enabled && !failed("pin to CPU")),
            failures,
        }
    }

    /// One sentence: `SCHED_FIFO 80 (writer 79), mlockall, any CPU:
    /// granted`, `normal priority (--no-rt)`, or what was refused; a
    /// report without the field says it was not recorded.
    pub fn line(&self) -> String {
        if !self.requested && self.policy.is_empty() {
            return "not recorded (a report from before the setup was)".into();
        }
        if !self.requested {
            return "normal priority (--no-rt)".into();
        }
        let asked = format!(
            "SCHED_FIFO {} (writer {}), mlockall, {}",
            self.writer_priority.map_or(0, |w| w + 1),
            self.writer_priority.unwrap_or(0),
            self.cpu.map_or("any CPU".into(), |c| format!("CPU {c}"))
        );
        if self.granted {
            format!("{asked}: granted")
        } else {
            format!(
                "{asked}: NOT granted, ran at {} ({})",
                self.policy,
                self.failures.join("; ")
            )
        }
    }
}

/// The name of a proc(5) `policy` number.
fn policy_name(p: u32) -> &'static str {
    match p {
        0 => "SCHED_OTHER",
        1 => "SCHED_FIFO",
        2 => "SCHED_RR",
        3 => "SCHED_BATCH",
        5 => "SCHED_IDLE",
        6 => "SCHED_DEADLINE",
        _ => "?",
    }
}

/// The calling thread's `(policy, rt_priority)` from
/// `/proc/thread-self/stat`.
pub fn read_policy() -> Option<(u32, u32)> {
    let stat = procstat::task_stat(Task::ThisThread)?;
    Some((stat.policy()?, stat.rt_priority()?))
}

/// Applies `req` to the calling thread (nothing with `--no-rt`) and says
/// what was granted. Call it on the timed thread, after its untimed setup.
pub fn raise(req: &RtRequest) -> RtReport {
    raise_kept(req, None)
}

/// Keeps `req`'s CPU (`--cpu N`) for the timed thread alone, as `record
/// --rt --cpu` does: called on the timed thread before it creates what its
/// loop needs, so that the engine's writer and flush threads spawned from
/// it inherit a CPU mask without N (unless N is the only CPU), and
/// [`raise`] then pins the thread itself to N. A writer or flusher in a
/// system call on the producer's CPU would otherwise hold it past its
/// wake-up on a kernel without full preemption. `None` when nothing is
/// asked or it was done; else the refusal, one sentence.
pub fn keep_cpu(req: &RtRequest) -> Option<String> {
    let cpu = req.cpu.filter(|_| req.enabled)?;
    rtrec_sys::avoid_cpu(cpu)
        .err()
        .map(|e| format!("could not keep CPU {cpu} for the timed thread alone: {e}"))
}

/// [`raise`], with the refusal of an earlier [`keep_cpu`] (if any) among
/// the failures.
pub fn raise_kept(req: &RtRequest, kept: Option<String>) -> RtReport {
    let mut failures = req.setup().map(|s| rt::apply(&s)).unwrap_or_default();
    failures.extend(kept);
    RtReport::from_outcome(req, failures, read_policy())
}

/// What a thread would be granted, tried on a short-lived thread (the
/// environment's `rt`, before any case runs).
pub fn probe(req: &RtRequest) -> RtReport {
    let r = req.clone();
    std::thread::spawn(move || raise(&r))
        .join()
        .unwrap_or_else(|_| RtReport::from_outcome(req, vec!["the probe panicked".into()], None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's CPUs (`Cpus_allowed_list`: `0-3,5`).
    fn allowed() -> std::collections::BTreeSet<usize> {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        let mut set = std::collections::BTreeSet::new();
        for part in list.trim().split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            set.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
        }
        set
    }

    #[test]
    fn a_kept_cpu_is_left_out_of_the_threads_the_timed_thread_creates() {
        let before = allowed();
        let last = *before.iter().next_back().unwrap();
        let req = req_with(Some(last));
        let (mine, childs) = std::thread::spawn(move || {
            assert_eq!(keep_cpu(&req), None);
            (allowed(), std::thread::spawn(allowed).join().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(mine, childs, "the mask is inherited");
        let mut expected = before.clone();
        if expected.len() > 1 {
            expected.remove(&last);
        }
        assert_eq!(mine, expected, "CPU {last} is kept for the timed thread");
        assert_eq!(allowed(), before, "only the timed thread's mask changed");
        let off = RtRequest {
            enabled: false,
            ..req_with(Some(last))
        };
        assert_eq!(keep_cpu(&off), None, "--no-rt keeps nothing");
    }

    fn req_with(cpu: Option<usize>) -> RtRequest {
        RtRequest {
            cpu,
            ..RtRequest::default()
        }
    }

    #[test]
    fn a_granted_setup_reads_as_granted_with_the_writer_one_below() {
        let req = RtRequest {
            cpu: Some(1),
            ..RtRequest::default()
        };
        let r = RtReport::from_outcome(&req, Vec::new(), Some((1, 80)));
        assert!(r.requested && r.granted && r.mlock);
        assert_eq!(
            (r.policy.as_str(), r.priority, r.writer_priority, r.cpu),
            ("SCHED_FIFO", Some(80), Some(79), Some(1))
        );
        assert_eq!(
            r.line(),
            "SCHED_FIFO 80 (writer 79), mlockall, CPU 1: granted"
        );
    }

    #[test]
    fn a_refusal_is_named_and_the_rest_still_counts() {
        let req = RtRequest::default();
        let refused = vec![
            "could not set SCHED_FIFO priority 80: Operation not permitted (os error 1)"
                .to_string(),
        ];
        let r = RtReport::from_outcome(&req, refused, Some((0, 0)));
        assert!(r.requested && !r.granted && r.mlock);
        assert_eq!((r.policy.as_str(), r.priority), ("SCHED_OTHER", None));
        assert_eq!(
            r.line(),
            "SCHED_FIFO 80 (writer 79), mlockall, any CPU: NOT granted, ran at SCHED_OTHER \
             (could not set SCHED_FIFO priority 80: Operation not permitted (os error 1))"
        );
        let r = RtReport::from_outcome(
            &req,
            vec!["could not lock memory (mlockall): Cannot allocate memory".into()],
            Some((1, 80)),
        );
        assert!(!r.granted && !r.mlock && r.priority == Some(80));
    }

    #[test]
    fn no_rt_asks_for_nothing() {
        let req = RtRequest {
            enabled: false,
            ..RtRequest::default()
        };
        assert_eq!(req.setup(), None);
        let r = RtReport::from_outcome(&req, Vec::new(), Some((0, 0)));
        assert!(!r.requested && !r.granted && !r.mlock);
        assert_eq!(r.writer_priority, None);
        assert_eq!(r.line(), "normal priority (--no-rt)");
        assert!(RtReport::default().line().starts_with("not recorded"));
    }

    #[test]
    fn the_policy_is_read_after_the_last_parenthesis() {
        // A command name with a space and a parenthesis; policy 1, rt_priority 80.
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[40 - 3] = "80".into();
        fields[41 - 3] = "1".into();
        let line = format!("1234 (a b) c) {}", fields.join(" "));
        let stat = procstat::parse_task_stat(&line).unwrap();
        assert_eq!((stat.policy(), stat.rt_priority()), (Some(1), Some(80)));
        assert_eq!(procstat::parse_task_stat("1234 (x"), None);
        let (policy, _) = read_policy().expect("this thread's stat");
        assert_eq!(policy_name(policy), "SCHED_OTHER");
    }
}
