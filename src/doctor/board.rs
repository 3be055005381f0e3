//! The board checklist: what the machine an embedded recording runs on must
//! offer beyond its settings — real hardware rather than a user-mode
//! emulator, a clock that ticks steadily, high-resolution timers, and the
//! memory for the ring the planned rate needs; one function each (listed in
//! [`CHECKS`], joined by `super::checks`).

use rtrec_host::machine;
use rtrec_units::{format_duration, format_size};

use super::verdict::{Area, Facts, Finding, Spec};

/// This group's heading.
const GROUP: Area = Area::Board;

/// The board checks in the report's order; each row sits above its function.
pub const CHECKS: &[Spec] = &[USER_EMULATION, INVARIANT_TSC, HRTIMERS, MEMORY_FOR_RING];

/// The coarsest `CLOCK_MONOTONIC` resolution taken for high-resolution
/// timers: above it, sleeps end on scheduler ticks.
pub const HRTIMER_RESOLUTION_NS: u64 = 1_000;

const USER_EMULATION: Spec = Spec::new(
    GROUP,
    "user-emulation",
    "not under qemu-user",
    user_emulation,
);
/// `user-emulation`: not under qemu-user, whose timings say nothing about
/// the board.
fn user_emulation(_: &Facts) -> Finding {
    match machine::user_emulation() {
        Some(evidence) => Finding::warn(
            format!("qemu-user ({evidence})"),
            "every instruction is translated: latencies and rates measured here say nothing about the board, only correctness counts",
            "run rtrec on the board itself for any timing",
        ),
        None => judge_native(std::env::consts::ARCH, machine::virtual_machine().is_some()),
    }
}

/// The judgment of [`user_emulation`] where no qemu-user is found: native
/// on this kernel, and in a virtual machine when there are signs of one
/// (which the `hypervisor` check judges: under qemu-system the program
/// runs natively on the guest's kernel, but every timing is the virtual
/// machine's).
fn judge_native(arch: &str, virtual_machine: bool) -> Finding {
    if virtual_machine {
        Finding::pass(
            format!("native {arch}, in a virtual machine"),
            "no qemu-user: the program runs on this kernel's CPU, but that CPU is virtual (`hypervisor` says whose), so timings are the virtual machine's",
        )
    } else {
        Finding::pass(
            format!("native {arch}"),
            "the program runs on the CPU it was built for",
        )
    }
}

const INVARIANT_TSC: Spec = Spec::new(
    GROUP,
    "invariant-tsc",
    "a steady clock (invariant TSC)",
    invariant_tsc,
);
/// `invariant-tsc`: on x86 the TSC must run at a constant rate through
/// frequency changes and idle (`constant_tsc` and `nonstop_tsc`); ARM's
/// architected timer always does.
fn invariant_tsc(_: &Facts) -> Finding {
    let source = machine::clocksource().unwrap_or_else(|| "?".into());
    match std::env::consts::ARCH {
        "x86" | "x86_64" => judge_tsc(&machine::cpu_flags(), &source),
        "aarch64" | "arm" => Finding::pass(
            format!("architected timer, clocksource {source}"),
            "the ARM generic timer counts at a fixed frequency by design",
        ),
        other => Finding::skip(
            format!("clocksource {source}"),
            format!("no invariant-counter rule for {other}"),
        ),
    }
}

/// The x86 judgment of [`invariant_tsc`] from the CPU flags and the
/// kernel's clock source.
pub fn judge_tsc(flags: &[String], clocksource: &str) -> Finding {
    let has = |f: &str| flags.iter().any(|x| x == f);
    let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| !has(f))
        .collect();
    if missing.is_empty() {
        Finding::pass(
            format!("constant_tsc nonstop_tsc, clocksource {clocksource}"),
            "timestamps tick at one rate through frequency changes and idle",
        )
    } else {
        Finding::warn(
            format!("no {}, clocksource {clocksource}", missing.join(" and no ")),
            "without an invariant TSC the kernel may fall back to a slow clock source (hpet, acpi_pm): every timestamp then costs microseconds",
            "record on a CPU with an invariant TSC (dmesg | grep -i tsc says why the kernel distrusts this one)",
        )
    }
}

const HRTIMERS: Spec = Spec::new(GROUP, "hrtimers", "high-resolution timers", hrtimers);
/// `hrtimers`: a `CLOCK_MONOTONIC` resolution of at most
/// [`HRTIMER_RESOLUTION_NS`].
fn hrtimers(_: &Facts) -> Finding {
    judge_resolution(rtrec_sys::time::monotonic_resolution_ns())
}

/// The judgment of [`hrtimers`] from `clock_getres(CLOCK_MONOTONIC)`.
pub fn judge_resolution(resolution_ns: Option<u64>) -> Finding {
    match resolution_ns {
        None => Finding::skip("?", "clock_getres(CLOCK_MONOTONIC) failed"),
        Some(r) if r <= HRTIMER_RESOLUTION_NS => Finding::pass(
            format!("resolution {}", format_duration(r)),
            "high-resolution timers: a period's sleep ends on time",
        ),
        Some(r) => Finding::warn(
            format!("resolution {}", format_duration(r)),
            "no high-resolution timers: every sleep ends on a scheduler tick, so periods are late by up to a tick",
            "boot a kernel with CONFIG_HIGH_RES_TIMERS=y (and without highres=off)",
        ),
    }
}

const MEMORY_FOR_RING: Spec = Spec::new(
    GROUP,
    "memory-for-ring",
    "available memory for the ring",
    memory_for_ring,
);
/// `memory-for-ring`: MemAvailable holds the ring the recording needs,
/// twice over (the page cache of written data needs room beside it).
fn memory_for_ring(f: &Facts) -> Finding {
    judge_memory(machine::meminfo_bytes("MemAvailable"), f)
}

/// The judgment of [`memory_for_ring`] from MemAvailable.
pub fn judge_memory(available: Option<u64>, f: &Facts) -> Finding {
    let Some(a) = available else {
        return Finding::skip("?", "MemAvailable cannot be read from /proc/meminfo");
    };
    let ring = format!("{} ring ({})", format_size(f.ring_bytes), f.ring_basis);
    let fix = "free memory, or record with a smaller ring (rtrec record --ring SIZE) that rides out shorter stalls";
    let found = format!("{} available", format_size(a));
    if a < f.ring_bytes {
        Finding::fail(
            found,
            format!("less than the {ring}: allocating it would swap or wake the OOM killer"),
            fix,
        )
    } else if a < f.ring_bytes.saturating_mul(2) {
        Finding::warn(
            found,
            format!("the {ring} leaves little for the page cache that holds written data until it is flushed"),
            fix,
        )
    } else {
        Finding::pass(found, format!("room for the {ring} twice over"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Status;

    fn flags(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn an_x86_tsc_is_invariant_only_with_both_flags() {
        let both = judge_tsc(&flags("fpu tsc constant_tsc nonstop_tsc"), "tsc");
        assert_eq!(both.status, Status::Pass);
        let one = judge_tsc(&flags("fpu tsc constant_tsc"), "hpet");
        assert_eq!(one.status, Status::Warn);
        assert_eq!(one.found, "no nonstop_tsc, clocksource hpet");
        let none = judge_tsc(&[], "acpi_pm");
        assert_eq!(
            none.found,
            "no constant_tsc and no nonstop_tsc, clocksource acpi_pm"
        );
    }

    #[test]
    fn a_tick_resolution_means_no_high_resolution_timers() {
        assert_eq!(judge_resolution(Some(1)).status, Status::Pass);
        assert_eq!(judge_resolution(Some(1_000)).status, Status::Pass);
        let tick = judge_resolution(Some(4_000_000));
        assert_eq!(
            (tick.status, tick.found.as_str()),
            (Status::Warn, "resolution 4 ms")
        );
        assert_eq!(judge_resolution(None).status, Status::Skip);
    }

    #[test]
    fn memory_below_the_ring_fails_and_below_twice_warns() {
        let f = Facts::of(&std::env::temp_dir(), None); // a 16 MiB ring
        assert_eq!(judge_memory(Some(8 << 20), &f).status, Status::Fail);
        assert_eq!(judge_memory(Some(24 << 20), &f).status, Status::Warn);
        assert_eq!(judge_memory(Some(32 << 20), &f).status, Status::Pass);
        assert_eq!(judge_memory(None, &f).status, Status::Skip);
    }

    #[test]
    fn native_under_a_virtual_machine_says_so() {
        assert_eq!(judge_native("aarch64", false).found, "native aarch64");
        let vm = judge_native("aarch64", true);
        assert_eq!(
            (vm.status, vm.found.as_str()),
            (Status::Pass, "native aarch64, in a virtual machine")
        );
    }
}
