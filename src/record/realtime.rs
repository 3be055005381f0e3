//! `record`'s real-time flags — `--rt` (memory locked, SCHED_FIFO for the
//! caller and the writer), its priority and CPU, the writer's CPU — and
//! their part of the plan ([`RtArgs::apply`]): the engine's writer
//! settings, and the caller's setup applied last by the recording.

use clap::Args;
use rtrec_engine::rt::RtSetup;
use rtrec_engine::Config;

use crate::error::{usage, Result};

/// Real-time settings of the caller and the writer.
#[derive(Debug, Args)]
pub struct RtArgs {
    /// Real-time helpers: mlockall, SCHED_FIFO for the caller (--priority) and the writer (one below).
    #[arg(long)]
    pub rt: bool,

    /// SCHED_FIFO priority of the caller with --rt.
    #[arg(long, default_value_t = rtrec_engine::rt::DEFAULT_PRIORITY, value_name = "1-99")]
    pub priority: i32,

    /// Pin the caller to this CPU (with --rt).
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Refuse to record (exit 2, nothing recorded) when any part of --rt cannot be applied (memory lock, SCHED_FIFO priority, CPU), instead of recording without it.
    #[arg(long, requires = "rt")]
    pub require_rt: bool,

    /// Pin the writer thread to this CPU.
    #[arg(long, value_name = "CPU")]
    pub writer_cpu: Option<usize>,
}

impl RtArgs {
    /// Its part of the engine's configuration (the writer's CPU, and with
    /// `--rt` its priority, one below the caller's), and the caller's
    /// setup with `--rt`.
    ///
    /// # Errors
    /// `--priority` outside SCHED_FIFO's 1-99 with `--rt`; a `--cpu` or
    /// `--writer-cpu` this process may not run on.
    pub fn apply(&self, cfg: &mut Config) -> Result<Option<RtSetup>> {
        check_cpu("--writer-cpu", self.writer_cpu)?;
        check_cpu("--cpu", self.cpu)?;
        cfg.rt.writer_cpu = self.writer_cpu;
        if !self.rt {
            return Ok(None);
        }
        if !rtrec_engine::rt::PRIORITIES.contains(&self.priority) {
            return usage(format!(
                "--priority: {} is outside SCHED_FIFO's range 1-99",
                self.priority
            ));
        }
        cfg.rt.writer_priority = Some((self.priority - 1).max(1));
        Ok(Some(RtSetup {
            lock_memory: true,
            priority: Some(self.priority),
            cpu: self.cpu,
        }))
    }
}

/// Refuses a CPU outside this process's affinity mask before anything is
/// recorded. Design choice: an error, not the warning a denied SCHED_FIFO
/// gets — a missing right depends on the account, but a CPU number that
/// does not exist here (`--cpu 99` on a two-core board) is a typo in the
/// command, and recording unpinned would hide it.
fn check_cpu(flag: &str, cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let Ok(allowed) = rtrec_sys::sched::allowed_cpus() else {
        // No mask to check against: the pinning itself reports it.
        return Ok(());
    };
    if allowed.contains(&cpu) {
        return Ok(());
    }
    usage(format!(
        "{flag} {cpu}: this process may run only on CPUs {allowed:?} (its affinity mask)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_outside_the_mask_is_refused_by_name() {
        let e = check_cpu("--cpu", Some(libc_setsize()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "--cpu {}: this process may run only on CPUs [",
                libc_setsize()
            )),
            "{e}"
        );
        check_cpu("--cpu", Some(rtrec_sys::sched::allowed_cpus().unwrap()[0])).unwrap();
        check_cpu("--cpu", None).unwrap();
    }

    /// A CPU number no mask holds.
    fn libc_setsize() -> usize {
        4096
    }
}
