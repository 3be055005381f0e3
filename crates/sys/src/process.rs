//! Processes: signals to a child (`kill`), dying with the parent
//! (`prctl(PR_SET_PDEATHSIG)`), process ids, and memory figures of this
//! process and of the machine.

use std::io;

use rustix::process::{Pid, Signal};

/// `kill(pid, SIGTERM)`: ask process `pid` to end. See kill(2).
///
/// Only for a child not yet reaped, whose pid cannot have been reused.
///
/// # Errors
/// `InvalidInput` for pid 0 (which would signal our own process group); the
/// errno of `kill` (`ESRCH` when it is gone).
pub fn terminate(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or(io::ErrorKind::InvalidInput)?;
    rustix::process::kill_process(pid, Signal::TERM)?;
    Ok(())
}

/// `prctl(PR_SET_PDEATHSIG, SIGKILL)`: the kernel kills the calling process
/// when the thread that forked it ends. Check [`parent_pid`] afterwards: a
/// parent that died before this call is not covered. See prctl(2).
///
/// # Errors
/// The errno of `prctl`.
pub fn die_with_parent() -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    Ok(())
}

/// `getppid()`: the parent's pid (0 when the parent is outside our pid
/// namespace). See getppid(2).
pub fn parent_pid() -> u32 {
    rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32)
}

/// `geteuid()`: the effective user id. See geteuid(2).
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Resident set size of this process in bytes, from `/proc/self/statm`.
///
/// # Errors
/// The file cannot be read or has no second field.
pub fn resident_bytes() -> io::Result<u64> {
    let s = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or(io::ErrorKind::InvalidData)?;
    Ok(pages * rustix::param::page_size() as u64)
}

/// Dirty + Writeback memory of the machine in bytes, from `/proc/meminfo`.
///
/// # Errors
/// The file cannot be read.
pub fn dirty_writeback_bytes() -> io::Result<u64> {
    let s = std::fs::read_to_string("/proc/meminfo")?;
    let mut total = 0;
    for line in s.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            if k == "Dirty:" || k == "Writeback:" {
                total += v.parse::<u64>().unwrap_or(0) * 1024;
            }
        }
    }
    Ok(total)
}

/// `signal(SIGPIPE, SIG_DFL)`: writing to a pipe whose reader has gone
/// ends the process quietly (as `cat` or `grep` do) instead of failing the
/// write with `EPIPE`, which Rust's `println!` turns into a panic. For
/// commands that only report (`rtrec verify … | head`); never for a
/// recording, which must end with its end frame. See signal(7).
///
/// # Errors
/// The kernel refused (not expected for SIGPIPE).
pub fn default_sigpipe() -> io::Result<()> {
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE; no handler runs.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    if old == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getrlimit(RLIMIT_MEMLOCK, …)`: the soft limit on locked memory, bytes,
/// what `mlockall` may lock without privilege (`CAP_IPC_LOCK`); `None`
/// when unlimited. The one reading of it: the engine's real-time setup,
/// the ring check of `rtrec_engine::settle` and `rtrec doctor` all ask here. See
/// getrlimit(2).
pub fn memlock_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Memlock).current
}

/// `sysconf(_SC_PHYS_PAGES) × sysconf(_SC_PAGESIZE)`: the machine's
/// memory, bytes; 0 when unknown. See sysconf(3).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(page.max(0) as u64)
}

/// Memory this process has locked (`VmLck` of `/proc/self/status`),
/// bytes; 0 when unknown. Not 0 once the process called `mlockall()`:
/// every later allocation is locked too and counts against
/// [`memlock_limit`]. See proc(5).
pub fn locked_memory() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmLck:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminate_refuses_pid_zero() {
        assert_eq!(
            terminate(0).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn terminate_ends_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        terminate(child.id()).unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn memlock_limit_is_the_soft_limit_proc_self_limits_shows() {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max locked memory"))
            .unwrap();
        let soft = line["Max locked memory".len()..]
            .split_whitespace()
            .next()
            .unwrap();
        let want = (soft != "unlimited").then(|| soft.parse::<u64>().unwrap());
        assert_eq!(memlock_limit(), want);
    }
}
