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
//! - Events this kernel lacks are left out silently (their names change
//!   between kernels); the rest still explain what they can.

use std::fs;
use std::path::{Path, PathBuf};

use rtrec_host::tracefs::Instance;
use rtrec_host::Journal;

use crate::attribute::{attribute, Explanation, Options};
use crate::parse::parse;

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
}

/// A session: this process's tracefs instance.
pub struct Session {
    inst: Instance,
    stamp: u64,
    steal0: u64,
    watch: Watch,
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
        let inst = Journal::open()
            .and_then(|j| Instance::create(j, ""))
            .map_err(|e| unavailable_reason(&e))?;
        let s = Session {
            inst,
            stamp: 0,
            steal0: 0,
            watch: Watch::default(),
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
        let eq = |field: &str, tids: &[i32]| {
            tids.iter()
                .map(|t| format!("{field} == {t}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let all: Vec<i32> = watch
            .timed_tids
            .iter()
            .chain(&watch.other_tids)
            .copied()
            .collect();
        let w = |rel: &str, v: &str| self.inst.write(rel, v);
        let _ = w("trace", "");
        let sw = "events/sched/sched_switch";
        w(
            &format!("{sw}/filter"),
            &format!("{} || {}", eq("prev_pid", &all), eq("next_pid", &all)),
        )?;
        let _ = w(&format!("{sw}/trigger"), "!stacktrace");
        w(
            &format!("{sw}/trigger"),
            &format!(
                "stacktrace if ({}) && prev_state & 3",
                eq("prev_pid", &watch.timed_tids)
            ),
        )?;
        w(&format!("{sw}/enable"), "1")?;
        for ev in ["sched_waking", "sched_wakeup"] {
            let p = format!("events/sched/{ev}");
            w(
                &format!("{p}/filter"),
                &format!("{} || comm ~ \"jbd2/*\"", eq("pid", &all)),
            )?;
            w(&format!("{p}/enable"), "1")?;
        }
        for call in SYSCALLS {
            for dir in ["enter", "exit"] {
                let p = format!("events/syscalls/sys_{dir}_{call}");
                if self.inst.path().join(&p).is_dir() {
                    w(&format!("{p}/filter"), &eq("common_pid", &watch.timed_tids))?;
                    w(&format!("{p}/enable"), "1")?;
                }
            }
        }
        let dev_filter = watch.device.map(|d| {
            let (ma, mi) = rtrec_sys::major_minor(d);
            format!("dev == {}", ((ma as u64) << 20) | mi as u64)
        });
        for ev in DEVICE_EVENTS {
            let p = format!("events/{ev}");
            if !self.inst.path().join(&p).is_dir() {
                continue;
            }
            if let Some(f) = &dev_filter {
                let _ = w(&format!("{p}/filter"), f);
            }
            let _ = w(&format!("{p}/enable"), "1");
        }
        for ev in THREAD_EVENTS {
            let p = format!("events/{ev}");
            if !self.inst.path().join(&p).is_dir() {
                continue;
            }
            let _ = w(&format!("{p}/filter"), &eq("common_pid", &all));
            let _ = w(&format!("{p}/enable"), "1");
        }
        for ev in IRQ_EVENTS {
            let p = format!("events/{ev}");
            if !self.inst.path().join(&p).is_dir() {
                continue;
            }
            let _ = w(&format!("{p}/filter"), &eq("common_pid", &watch.timed_tids));
            let _ = w(&format!("{p}/enable"), "1");
        }
        let cb = "events/lock/contention_begin/trigger";
        if self.inst.path().join(cb).exists() {
            let _ = w(cb, "!stacktrace");
            let _ = w(
                cb,
                &format!("stacktrace if {}", eq("common_pid", &watch.timed_tids)),
            );
        }
        let _ = w("events/ftrace/print/enable", "1");
        self.steal0 = steal_ns();
        self.stamp = rtrec_sys::monotonic_ns();
        self.watch = watch;
        w("tracing_on", "1")
    }

    /// Stops tracing, reads the trace, keeps it in `raw` (a directory) if
    /// given, and attributes it.
    ///
    /// # Errors
    /// The trace could not be read or `raw` not written.
    pub fn stop(&mut self, raw: Option<(&Path, &str)>) -> std::io::Result<Explanation> {
        self.inst.write("tracing_on", "0")?;
        let steal = steal_ns().saturating_sub(self.steal0);
        let text = fs::read_to_string(self.inst.path().join("trace"))?;
        let lost = lost_events(self.inst.path());
        let _ = self.inst.write("events/enable", "0");
        let _ = self.inst.write("trace", "");
        if let Some((dir, name)) = raw {
            fs::create_dir_all(dir)?;
            fs::write(raw_path(dir, name), &text)?;
        }
        let events = parse(&text);
        let mut x = attribute(
            &events,
            &Options {
                timed_tids: self.watch.timed_tids.clone(),
                calls: SYSCALLS.iter().map(|c| format!("sys_{c}")).collect(),
                threshold_ns: self.watch.threshold_ns,
            },
        );
        x.lost_events = lost;
        x.steal_ns = steal;
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
    fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let line = s.lines().next()?.to_string();
            line.split_whitespace().nth(8)?.parse::<u64>().ok()
        })
        .map(|ticks| ticks * 10_000_000)
        .unwrap_or(0)
}
