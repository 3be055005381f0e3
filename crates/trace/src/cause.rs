//! The named causes a slow call's time is split into, and the one place a
//! blocking kernel stack is classified.
//!
//! Design choice: classification reads function names only, innermost
//! first, and the first rule that matches wins; a stack no rule names is
//! [`Cause::Unclassified`] and keeps its frames, so a cause is never
//! guessed. The rules are one ordered table of data (`RULES`), from the
//! specific to the generic: a jbd2 handle wait also sleeps in
//! `schedule()`, and an `i_data_sem` wait also goes through
//! `rwsem_down_*`.

use serde::{Deserialize, Serialize};

/// Where a slow call's time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Blocked on the jbd2 journal: starting a handle while the running
    /// transaction is locked for commit (`wait_transaction_locked`,
    /// `start_this_handle`), or getting write access to a metadata buffer
    /// the commit is writing (`do_get_write_access`).
    JbdHandle,
    /// Blocked waiting for a page under writeback (`folio_wait_writeback`,
    /// stable pages).
    PageWriteback,
    /// Blocked on the inode's `i_rwsem` (`inode_lock` in the write path).
    InodeRwsem,
    /// Blocked on ext4's `i_data_sem` (block mapping).
    DataSem,
    /// Blocked on a file lock (`flock`, POSIX lock).
    FileLock,
    /// Blocked on another kernel lock (mutex, rwsem, …).
    OtherLock,
    /// Throttled by `balance_dirty_pages` (too many dirty pages).
    DirtyThrottle,
    /// Direct memory reclaim or compaction.
    Reclaim,
    /// Handling a page fault.
    PageFault,
    /// Waiting for a block device request.
    DeviceIo,
    /// Blocked on something no rule names (the stack is kept).
    Unclassified,
    /// Platform: runnable but not running (preempted, or woken and not yet
    /// scheduled): another task ran instead.
    Preempted,
    /// Platform: interrupts (hard IRQ handlers, softirqs, the local timer)
    /// that ran on the thread's CPU while it was in the call.
    Interrupt,
    /// Platform or kernel work: on the CPU (the kernel's own work, or time
    /// stolen by the hypervisor; traced interrupts are [`Cause::Interrupt`]).
    OnCpu,
}

impl Cause {
    /// Every cause, in table order.
    pub const ALL: [Cause; 14] = [
        Cause::JbdHandle,
        Cause::PageWriteback,
        Cause::InodeRwsem,
        Cause::DataSem,
        Cause::FileLock,
        Cause::OtherLock,
        Cause::DirtyThrottle,
        Cause::Reclaim,
        Cause::PageFault,
        Cause::DeviceIo,
        Cause::Unclassified,
        Cause::Preempted,
        Cause::Interrupt,
        Cause::OnCpu,
    ];

    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Cause::JbdHandle => "jbd2 journal wait",
            Cause::PageWriteback => "page writeback wait",
            Cause::InodeRwsem => "i_rwsem",
            Cause::DataSem => "i_data_sem",
            Cause::FileLock => "file lock",
            Cause::OtherLock => "other lock",
            Cause::DirtyThrottle => "dirty throttling",
            Cause::Reclaim => "reclaim/compaction",
            Cause::PageFault => "page fault",
            Cause::DeviceIo => "device I/O",
            Cause::Unclassified => "unclassified",
            Cause::Preempted => "platform: preempted",
            Cause::Interrupt => "platform: interrupts",
            Cause::OnCpu => "on CPU (kernel, steal)",
        }
    }

    /// True for the platform causes (the thread was not blocked on I/O).
    pub fn is_platform(self) -> bool {
        matches!(self, Cause::Preempted | Cause::Interrupt | Cause::OnCpu)
    }
}

/// Frames that say nothing about the cause (the scheduler itself).
pub fn is_scheduler_frame(f: &str) -> bool {
    f.starts_with("__schedule")
        || f == "schedule"
        || f.starts_with("schedule_")
        || f.starts_with("__traceiter_")
        || f.starts_with("trace_event_")
        || f.starts_with("event_triggers_")
        || f.starts_with("ftrace_")
        || f.starts_with("stack_trace_")
        || f.starts_with("__ftrace_trace_stack")
        || f.starts_with("__trace_stack")
        || f == "stacktrace_trigger"
        || f.starts_with("io_schedule")
        || f.starts_with("preempt_schedule")
}

/// Frames of a kernel lock's slow path (mutex, rwsem, …): a lock rule
/// ([`Rule::in_lock`]) needs one of them in the stack.
const LOCK_FRAMES: &[&str] = &[
    "rwsem_down_",
    "down_read",
    "down_write",
    "__mutex_lock",
    "mutex_lock",
    "rt_mutex",
    "percpu_down",
];

/// One classification rule: a stack with a frame starting with one of
/// `frames` (and, for a lock rule, a lock frame too) is `cause`.
struct Rule {
    /// The cause it names.
    cause: Cause,
    /// Whether the stack must also sleep in a lock ([`LOCK_FRAMES`]): the
    /// same write path names `i_data_sem` or `i_rwsem` only when a lock
    /// is what it waits on.
    in_lock: bool,
    /// Frame name prefixes, any one of which names the cause.
    frames: &'static [&'static str],
}

/// The rules of [`classify`], from the specific to the generic: the first
/// that matches wins (a jbd2 handle wait also sleeps in `schedule()`, an
/// `i_data_sem` wait also goes through `rwsem_down_*`).
const RULES: &[Rule] = &[
    Rule {
        cause: Cause::JbdHandle,
        in_lock: false,
        frames: &[
            "wait_transaction_locked",
            "wait_transaction_switching",
            "start_this_handle",
            "jbd2_log_wait_commit",
            "jbd2_journal_lock_updates",
            "do_get_write_access",
        ],
    },
    Rule {
        cause: Cause::DirtyThrottle,
        in_lock: false,
        frames: &["balance_dirty_pages"],
    },
    Rule {
        cause: Cause::FileLock,
        in_lock: false,
        frames: &[
            "locks_lock_inode_wait",
            "flock_lock_inode",
            "posix_lock_inode",
            "locks_lock_file_wait",
            "fcntl_setlk",
            "__do_sys_flock",
        ],
    },
    Rule {
        cause: Cause::DataSem,
        in_lock: true,
        frames: &[
            "ext4_map_blocks",
            "ext4_da_map_blocks",
            "ext4_da_get_block_prep",
            "ext4_ext_",
            "ext4_ind_map_blocks",
            "ext4_truncate",
            "ext4_fallocate",
            "ext4_alloc_file_blocks",
        ],
    },
    Rule {
        cause: Cause::InodeRwsem,
        in_lock: true,
        frames: &[
            "ext4_buffered_write_iter",
            "ext4_file_write_iter",
            "ext4_dio_write_iter",
            "generic_file_write_iter",
            "shmem_file_write_iter",
            "inode_lock",
            "do_truncate",
            "ext4_sync_file",
            "vfs_fallocate",
        ],
    },
    Rule {
        cause: Cause::OtherLock,
        in_lock: false,
        frames: LOCK_FRAMES,
    },
    Rule {
        cause: Cause::PageWriteback,
        in_lock: false,
        frames: &[
            "folio_wait_writeback",
            "folio_wait_stable",
            "wait_on_page_writeback",
            "__filemap_fdatawait",
            "filemap_fdatawait",
        ],
    },
    Rule {
        cause: Cause::Reclaim,
        in_lock: false,
        frames: &[
            "try_to_free_pages",
            "__alloc_pages_slowpath",
            "shrink_",
            "compact_zone",
            "try_to_compact_pages",
            "__alloc_pages_direct",
        ],
    },
    Rule {
        cause: Cause::DeviceIo,
        in_lock: false,
        frames: &[
            "blk_mq_get_tag",
            "submit_bio_wait",
            "bit_wait_io",
            "__wait_on_buffer",
            "folio_wait_bit",
            "wait_on_buffer",
            "blk_execute_rq",
            "__bio_wait",
        ],
    },
    Rule {
        cause: Cause::PageFault,
        in_lock: false,
        frames: &["handle_mm_fault", "exc_page_fault", "do_user_addr_fault"],
    },
];

/// Classifies a blocking stack (innermost first) by the first of `RULES`
/// it matches; [`Cause::Unclassified`] when none does.
pub fn classify(stack: &[String]) -> Cause {
    let has = |names: &[&str]| stack.iter().any(|f| names.iter().any(|n| f.starts_with(n)));
    let lock = has(LOCK_FRAMES);
    RULES
        .iter()
        .find(|r| (lock || !r.in_lock) && has(r.frames))
        .map_or(Cause::Unclassified, |r| r.cause)
}

/// The top frames of `stack` that name the cause: the scheduler's own
/// frames and the syscall entry are left out, at most `n`.
pub fn top_frames(stack: &[String], n: usize) -> Vec<String> {
    stack
        .iter()
        .filter(|f| !is_scheduler_frame(f))
        .take(n)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(frames: &[&str]) -> Vec<String> {
        frames.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn the_studies_causes_are_named_from_their_stacks() {
        let jbd = st(&[
            "__schedule",
            "schedule",
            "wait_transaction_locked",
            "add_transaction_credits",
            "start_this_handle",
            "jbd2__journal_start",
            "__ext4_journal_start_sb",
            "ext4_dirty_inode",
        ]);
        assert_eq!(classify(&jbd), Cause::JbdHandle);
        let shadow = st(&[
            "__schedule",
            "io_schedule",
            "bit_wait_io",
            "__wait_on_bit",
            "out_of_line_wait_on_bit",
            "do_get_write_access",
            "jbd2_journal_get_write_access",
        ]);
        assert_eq!(classify(&shadow), Cause::JbdHandle);
        let data_sem = st(&[
            "__schedule",
            "schedule",
            "rwsem_down_read_slowpath",
            "down_read",
            "ext4_da_map_blocks",
            "ext4_da_get_block_prep",
        ]);
        assert_eq!(classify(&data_sem), Cause::DataSem);
        let rwsem = st(&[
            "__schedule",
            "schedule",
            "rwsem_down_write_slowpath",
            "down_write",
            "ext4_buffered_write_iter",
            "vfs_write",
        ]);
        assert_eq!(classify(&rwsem), Cause::InodeRwsem);
        let wb = st(&[
            "__schedule",
            "io_schedule",
            "folio_wait_bit_common",
            "folio_wait_writeback",
            "ext4_da_write_begin",
        ]);
        assert_eq!(classify(&wb), Cause::PageWriteback);
        let bdp = st(&[
            "__schedule",
            "schedule_timeout",
            "balance_dirty_pages",
            "balance_dirty_pages_ratelimited_flags",
        ]);
        assert_eq!(classify(&bdp), Cause::DirtyThrottle);
        let unknown = st(&["__schedule", "schedule", "something_new"]);
        assert_eq!(classify(&unknown), Cause::Unclassified);
        assert_eq!(top_frames(&unknown, 3), ["something_new"]);
    }
}
