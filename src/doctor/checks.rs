//! The checks of `rtrec doctor` as one table, as the bench's scenarios
//! are: each row names a check (its stable id, a title, its group) and the
//! one small function that reads its fact and judges it. The table's order
//! is the report's; one test walks the whole table.
//!
//! Design choices:
//! - Every check reads files under `/proc` and `/sys` (and `dumpe2fs` for
//!   the ext4 journal, through `rtrec_host::machine`); none changes
//!   anything and none needs root, so `doctor` can run beside a recording.
//!   A fact that cannot be read is `skip` with the reason, never a guess.
//! - The verdicts are conservative: `fail` only where a recording cannot
//!   meet its promise (a read-only mount, too little free space, too
//!   little memory for the ring); everything that only makes latency worse
//!   or less predictable is `warn`.
//! - A check function returns a [`Finding`]; the table adds its id and
//!   group, so no function can report under another's name.
//! - Adding a check: a function in the module of its group, a row here, a
//!   row in docs/doctor.md (the test below fails until all three exist).

use super::verdict::{Area, Check, Facts, Finding};
use super::{board, device, filesystem, system};

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Stable name (`mount-noatime`), for scripts and the JSON.
    pub id: &'static str,
    /// What it checks, in a few words.
    pub title: &'static str,
    /// The group it is printed under.
    pub area: Area,
    /// Reads the fact and judges it.
    pub run: fn(&Facts) -> Finding,
}

const fn spec(
    id: &'static str,
    title: &'static str,
    area: Area,
    run: fn(&Facts) -> Finding,
) -> Spec {
    Spec {
        id,
        title,
        area,
        run,
    }
}

use Area::{Board, Device, Filesystem, System};

/// Every check, in the report's order: filesystem, device, system, board.
#[rustfmt::skip]
pub const CHECKS: &[Spec] = &[
    //   id                       title                                   group       check
    spec("fs-type",               "filesystem type",                      Filesystem, filesystem::fs_type),
    spec("mount-rw",              "mounted read-write",                   Filesystem, filesystem::read_write),
    spec("mount-noatime",         "no access-time writes",                Filesystem, filesystem::noatime),
    spec("mount-lazytime",        "file times kept in memory",            Filesystem, filesystem::lazytime),
    spec("mount-delalloc",        "delayed allocation (ext4)",            Filesystem, filesystem::delalloc),
    spec("mount-data-mode",       "data=ordered (ext4)",                  Filesystem, filesystem::data_mode),
    spec("mount-barrier",         "flushes reach the device",             Filesystem, filesystem::barrier),
    spec("mount-discard",         "no online discard",                    Filesystem, filesystem::discard),
    spec("journal-size",          "ext4 journal size",                    Filesystem, filesystem::journal_size),
    spec("free-space",            "free space for the planned recording", Filesystem, filesystem::free_space),
    spec("device-kind",           "kind of block device",                 Device,     device::device_kind),
    spec("io-scheduler",          "I/O scheduler",                        Device,     device::io_scheduler),
    spec("io-scheduler-tunables", "write-back throttling",                Device,     device::io_scheduler_tunables),
    spec("bfq-weight",            "BFQ offered for I/O weights",          Device,     device::bfq_weight),
    spec("device-probe",          "measured flush latency (--probe)",     Device,     device::device_probe),
    spec("vm-dirty",              "periodic write-back",                  System,     system::vm_dirty),
    spec("journal-leftovers",     "settings left changed by rtrec",       System,     system::journal_leftovers),
    spec("cpu-governor",          "CPU frequency governor",               System,     system::cpu_governor),
    spec("cpu-idle",              "deepest idle state's exit latency",    System,     system::cpu_idle),
    spec("isolcpus",              "isolated CPUs",                        System,     system::isolcpus),
    spec("nohz_full",             "no tick on isolated CPUs",             System,     system::nohz_full),
    spec("rt-throttling",         "RT throttling",                        System,     system::rt_throttling),
    spec("preempt",               "kernel preemption model",              System,     system::preempt),
    spec("thp",                   "transparent huge pages",               System,     system::thp),
    spec("swap",                  "swap",                                 System,     system::swap),
    spec("memlock",               "RLIMIT_MEMLOCK for record --rt",       System,     system::memlock),
    spec("tracefs",               "tracefs for record --explain",         System,     system::tracefs),
    spec("hypervisor",            "virtual machine",                      System,     system::hypervisor),
    spec("steal-time",            "CPU time stolen by a hypervisor",      System,     system::steal_time),
    spec("user-emulation",        "not under qemu-user",                  Board,      board::user_emulation),
    spec("invariant-tsc",         "a steady clock (invariant TSC)",       Board,      board::invariant_tsc),
    spec("hrtimers",              "high-resolution timers",               Board,      board::hrtimers),
    spec("memory-for-ring",       "available memory for the ring",        Board,      board::memory_for_ring),
];

/// Runs every check of [`CHECKS`] on `facts`, in order.
pub fn run_all(facts: &Facts) -> Vec<Check> {
    CHECKS
        .iter()
        .map(|s| {
            let f = (s.run)(facts);
            Check {
                id: s.id,
                area: s.area.name(),
                status: f.status,
                found: f.found,
                why: f.why,
                fix: f.fix,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Status;
    use std::collections::HashSet;

    const DOC: &str = include_str!("../../docs/doctor.md");

    /// The check modules' source, whose string literals are every text a
    /// check can print.
    const SOURCES: [(&str, &str); 4] = [
        ("filesystem.rs", include_str!("filesystem.rs")),
        ("device.rs", include_str!("device.rs")),
        ("system.rs", include_str!("system.rs")),
        ("board.rs", include_str!("board.rs")),
    ];

    /// The ids of docs/doctor.md's table (rows that start with an id in
    /// backquotes).
    fn documented_ids() -> Vec<&'static str> {
        DOC.lines()
            .filter_map(|l| l.strip_prefix("| `")?.split_once('`'))
            .map(|(id, _)| id)
            .collect()
    }

    #[test]
    fn the_table_has_unique_ids_in_group_order_each_documented() {
        let mut seen = HashSet::new();
        for s in CHECKS {
            assert!(seen.insert(s.id), "{} twice", s.id);
            assert!(!s.title.is_empty(), "{} has no title", s.id);
        }
        let areas: Vec<Area> = CHECKS.iter().map(|s| s.area).collect();
        let mut groups = areas.clone();
        groups.dedup();
        assert_eq!(
            groups,
            [Filesystem, Device, System, Board],
            "each group's checks must be together, in this order"
        );
        let ids: Vec<&str> = CHECKS.iter().map(|s| s.id).collect();
        assert_eq!(
            documented_ids(),
            ids,
            "docs/doctor.md's table must list exactly these checks, in this order"
        );
    }

    #[test]
    fn every_check_reports_under_its_row_with_a_fix_exactly_when_it_warns_or_fails() {
        let m = rtrec_host::mounts::parse_mounts("/dev/vda / ext4 rw,relatime,discard 0 0\n");
        let facts = Facts::of(&std::env::temp_dir(), m.into_iter().next());
        let checks = run_all(&facts);
        assert_eq!(checks.len(), CHECKS.len());
        for (c, s) in checks.iter().zip(CHECKS) {
            assert_eq!((c.id, c.area), (s.id, s.area.name()));
            assert!(!c.why.is_empty(), "{c:?}");
            assert_eq!(
                c.fix.is_some(),
                matches!(c.status, Status::Warn | Status::Fail),
                "{c:?}"
            );
        }
    }

    /// The string literals of Rust source, comments left out.
    fn literals(source: &str) -> Vec<String> {
        let mut out = Vec::new();
        for line in source.lines() {
            let mut chars = line.chars().peekable();
            let mut current: Option<String> = None;
            while let Some(c) = chars.next() {
                match (&mut current, c) {
                    (None, '/') if chars.peek() == Some(&'/') => break,
                    (None, '\'') => {
                        // A char literal: '"' must not open a string.
                        let lit: String = chars.clone().take(3).collect();
                        if lit.starts_with("\\") || lit.chars().nth(1) == Some('\'') {
                            chars.find(|&c| c == '\'');
                        }
                    }
                    (None, '"') => current = Some(String::new()),
                    (Some(s), '\\') => {
                        s.push('\\');
                        s.extend(chars.next());
                    }
                    (Some(s), '"') => {
                        out.push(std::mem::take(s));
                        current = None;
                    }
                    (Some(s), c) => s.push(c),
                    (None, _) => {}
                }
            }
        }
        out
    }

    /// The long flags of `cmd` and of the commands above it (clap's
    /// global flags are propagated only when built).
    fn long_flags(cmd: &clap::Command) -> HashSet<String> {
        cmd.get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .chain(["--help".to_string()])
            .collect()
    }

    /// Every `--option` in `text`, with the command it is an option of:
    /// the nearest `rtrec COMMAND [SUBCOMMAND]` or bare `record` before it,
    /// else `rtrec doctor` itself.
    fn options_in(text: &str) -> Vec<(Vec<String>, String)> {
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let root = <crate::cli::Cli as clap::CommandFactory>::command();
        let mut path = vec!["doctor".to_string()];
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if w == "rtrec" {
                let mut cmd = &root;
                let mut p = Vec::new();
                while let Some(sub) = words.get(i + 1).and_then(|n| cmd.find_subcommand(n)) {
                    p.push(sub.get_name().to_string());
                    cmd = sub;
                    i += 1;
                }
                if !p.is_empty() {
                    path = p;
                }
            } else if w == "record" {
                path = vec!["record".to_string()];
            } else if w.len() > 2 && w.starts_with("--") {
                // A bare `--` (the end of options) names no option.
                out.push((path.clone(), w.to_string()));
            }
            i += 1;
        }
        out
    }

    #[test]
    fn every_option_a_check_names_is_an_option_of_the_command_it_names() {
        let root = <crate::cli::Cli as clap::CommandFactory>::command();
        let mut named = 0;
        for (file, source) in SOURCES {
            for text in literals(source) {
                for (path, option) in options_in(&text) {
                    let mut cmd = &root;
                    for p in &path {
                        cmd = cmd.find_subcommand(p).unwrap();
                    }
                    assert!(
                        long_flags(cmd).contains(&option),
                        "{file}: \"{text}\" names {option}, which `rtrec {}` does not take",
                        path.join(" ")
                    );
                    named += 1;
                }
            }
        }
        assert!(named > 10, "the scan found only {named} options");
    }

    #[test]
    fn the_option_scan_catches_an_option_of_the_wrong_command() {
        // The fix text this test was written for: `--size` is record's,
        // not doctor's `--planned`.
        let found = options_in("free space in /data or plan less (--size)");
        assert_eq!(found, [(vec!["doctor".to_string()], "--size".to_string())]);
        let root = <crate::cli::Cli as clap::CommandFactory>::command();
        assert!(!long_flags(root.find_subcommand("doctor").unwrap()).contains("--size"));
        assert_eq!(
            options_in("run `rtrec device probe DIR -o x` then rtrec bench --device x")[0],
            (vec!["bench".to_string()], "--device".to_string())
        );
        assert_eq!(
            literals("f(\"a --b\", '\"'); // \"--c\"\n"),
            ["a --b".to_string()]
        );
    }
}
