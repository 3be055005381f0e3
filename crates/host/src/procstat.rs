//! `/proc/stat` and `/proc/<pid>/stat`: the one reader of each, and their
//! fields by name, for `doctor`'s steal check, the tracer's steal samples,
//! the bench's CPU accounting and the journal's owner check.
//!
//! Design choices:
//! - **One reader per file, fields named**: callers ask for `steal` or
//!   `starttime`, never for column 7 or field 22, so the kernel's layout
//!   (proc(5)) is written down once, here.
//! - **Each caller keeps its own strictness**: a `cpu` line's field that
//!   is missing or not a number counts 0 (every caller summed or
//!   subtracted them that way), while a task's fields are `Option`s, so
//!   the journal can refuse a process without a start time and the bench
//!   can count an unreadable one as 0 ticks.
//! - The parsers are pure functions of the text, tested on samples; the
//!   readers answer `None` (or nothing) when the file cannot be read.

use std::fs;

/// The length of one tick of `/proc/stat` and `/proc/<pid>/stat`, ns:
/// they count in `USER_HZ` ticks, 100 a second on Linux whatever the
/// kernel's own `HZ`.
pub const TICK_NS: u64 = 10_000_000;

/// One `cpu` line of `/proc/stat` (the machine's sum, or one CPU's), in
/// `USER_HZ` ticks ([`TICK_NS`]); guest time is inside `user`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time in user mode.
    pub user: u64,
    /// Time in user mode at a low priority (nice).
    pub nice: u64,
    /// Time in kernel mode.
    pub system: u64,
    /// Time idle.
    pub idle: u64,
    /// Time idle waiting for I/O.
    pub iowait: u64,
    /// Time serving interrupts.
    pub irq: u64,
    /// Time serving softirqs.
    pub softirq: u64,
    /// Time a hypervisor ran something else while this guest wanted to
    /// run (10 ms steps).
    pub steal: u64,
}

impl CpuTimes {
    /// The fields of a `cpu` line after its label; one missing or not a
    /// number counts 0.
    fn parse_fields<'a>(mut fields: impl Iterator<Item = &'a str>) -> CpuTimes {
        let mut next = || fields.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        CpuTimes {
            user: next(),
            nice: next(),
            system: next(),
            idle: next(),
            iowait: next(),
            irq: next(),
            softirq: next(),
            steal: next(),
        }
    }

    /// The sum of the eight fields: all the time the line counts.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait + self.steal
    }

    /// The time on the CPU: user, nice, system, irq and softirq.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// What `/proc/stat` says of the CPUs: the machine's `cpu` line and one
/// `cpuN` line per CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// The `cpu` line: every CPU summed.
    pub all: CpuTimes,
    /// The `cpuN` lines, in the file's order (CPU 0 first).
    pub per_cpu: Vec<CpuTimes>,
}

/// `/proc/stat` now; `None` when it cannot be read or has no `cpu` line.
pub fn stat() -> Option<Stat> {
    parse_stat(&fs::read_to_string("/proc/stat").ok()?)
}

/// The CPU lines of a `/proc/stat` text; `None` without a `cpu` line.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let mut all = None;
    let mut per_cpu = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(label) = fields.next() else {
            continue;
        };
        if label == "cpu" {
            all = all.or(Some(CpuTimes::parse_fields(fields)));
        } else if label
            .strip_prefix("cpu")
            .is_some_and(|n| n.bytes().next().is_some_and(|b| b.is_ascii_digit()))
        {
            per_cpu.push(CpuTimes::parse_fields(fields));
        }
    }
    Some(Stat { all: all?, per_cpu })
}

/// Which task's `stat` to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// A process by pid: `/proc/<pid>/stat`.
    Process(u32),
    /// This process: `/proc/self/stat`.
    This,
    /// The calling thread: `/proc/thread-self/stat`.
    ThisThread,
}

/// One task's `/proc/<pid>/stat` line. Its second field is the command in
/// parentheses, which may itself hold spaces and parentheses, so the
/// fields are counted from the last `)`; each is an `Option`, `None` when
/// missing or not a number (proc(5) numbers them from 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStat {
    pid: Option<u32>,
    /// Field 3 (state) onwards.
    rest: Vec<String>,
}

impl TaskStat {
    /// Field `n` (proc(5)'s numbering, 3 or more) as a number.
    fn number<T: std::str::FromStr>(&self, n: usize) -> Option<T> {
        self.rest.get(n.checked_sub(3)?)?.parse().ok()
    }

    /// Field 1: the task's id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Field 3: the state letter (`R`, `S`, `Z`, …).
    pub fn state(&self) -> Option<char> {
        self.rest.first()?.chars().next()
    }

    /// Field 4: the parent's pid.
    pub fn ppid(&self) -> Option<u64> {
        self.number(4)
    }

    /// Field 14: time in user mode, ticks ([`TICK_NS`]).
    pub fn utime(&self) -> Option<u64> {
        self.number(14)
    }

    /// Field 15: time in kernel mode, ticks ([`TICK_NS`]).
    pub fn stime(&self) -> Option<u64> {
        self.number(15)
    }

    /// Field 22: the start time, in clock ticks since boot.
    pub fn starttime(&self) -> Option<u64> {
        self.number(22)
    }

    /// Field 40: the real-time priority (0 for a normal policy).
    pub fn rt_priority(&self) -> Option<u32> {
        self.number(40)
    }

    /// Field 41: the scheduling policy (`SCHED_*`'s number).
    pub fn policy(&self) -> Option<u32> {
        self.number(41)
    }
}

/// `task`'s `stat` now; `None` when there is no such task.
pub fn task_stat(task: Task) -> Option<TaskStat> {
    let path = match task {
        Task::Process(pid) => format!("/proc/{pid}/stat"),
        Task::This => "/proc/self/stat".into(),
        Task::ThisThread => "/proc/thread-self/stat".into(),
    };
    parse_task_stat(&fs::read_to_string(path).ok()?)
}

/// The `stat` of every process now (the numbered entries of `/proc`); a
/// process that ends while they are read is left out.
pub fn every_process_stat() -> Vec<TaskStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|s| parse_task_stat(&s))
        .collect()
}

/// A `stat` line's fields; `None` without the command's closing `)`.
pub fn parse_task_stat(text: &str) -> Option<TaskStat> {
    let (head, rest) = text.rsplit_once(')')?;
    Some(TaskStat {
        pid: head.split_whitespace().next().and_then(|p| p.parse().ok()),
        rest: rest.split_whitespace().map(str::to_string).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_lines_are_read_field_by_field() {
        let stat = "cpu  10 0 20 100 5 1 2 7 0 0\ncpu0 1 2 3 x\ncpu1 0 0 0 0 0 0 0 9\nintr 1\n";
        let s = parse_stat(stat).unwrap();
        let all = CpuTimes {
            user: 10,
            system: 20,
            idle: 100,
            iowait: 5,
            irq: 1,
            softirq: 2,
            steal: 7,
            ..CpuTimes::default()
        };
        assert_eq!(s.all, all);
        assert_eq!((s.all.total(), s.all.busy()), (145, 33));
        // A missing field or one not a number counts 0.
        assert_eq!(
            s.per_cpu[0],
            CpuTimes {
                user: 1,
                nice: 2,
                system: 3,
                ..CpuTimes::default()
            }
        );
        assert_eq!(s.per_cpu[1].steal, 9);
        assert_eq!(parse_stat("intr 1\n"), None);
    }

    #[test]
    fn a_task_line_is_counted_from_the_last_parenthesis() {
        // The command `a) b (c` holds spaces and parentheses.
        let mut line = "42 (a) b (c) S 2".to_string();
        for n in 5..=41 {
            line.push_str(&format!(" {n}"));
        }
        let t = parse_task_stat(&line).unwrap();
        assert_eq!(t.pid(), Some(42));
        assert_eq!(t.state(), Some('S'));
        assert_eq!(t.ppid(), Some(2));
        assert_eq!((t.utime(), t.stime()), (Some(14), Some(15)));
        assert_eq!(t.starttime(), Some(22));
        assert_eq!((t.rt_priority(), t.policy()), (Some(40), Some(41)));
        assert_eq!(parse_task_stat("42 no parenthesis"), None);
        let short = parse_task_stat("1 (init) S 0 1").unwrap();
        assert_eq!(short.starttime(), None);
    }
}
