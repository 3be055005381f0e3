//! The checks of `rtrec doctor` as one table, as the bench's scenarios
//! are: the groups' rows joined in the report's order (filesystem, device,
//! system, board). Each row ([`Spec`]) names a check (its stable id, a
//! title, its group) and the one small function that reads its fact and
//! judges it; the row sits right above its function in its group's module
//! (`filesystem`, `device`, `system`, `board`), whose `CHECKS` lists them
//! in order. The tests below walk the whole table.
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
//! - A check function returns a [`Finding`]; its row adds the id and
//!   group, so no function can report under another's name.
//! - A row and its function in one place: the row is a private `const`
//!   right above the function, and the group's `CHECKS` at the top of its
//!   module lists the rows, so a row left out of it is a dead-code warning
//!   (an error under clippy's `-D warnings`), not a check that never runs.
//! - Adding a check: in its group's module, the function with its row right
//!   above it and the row's name in that module's `CHECKS` (where the
//!   report should show it); a row in docs/doctor.md's table, in the same
//!   place; and a unit test of the function beside it. The tests below fail
//!   until the table and docs/doctor.md agree.

use super::verdict::{Check, Facts, Spec};
use super::{board, device, filesystem, system};

/// The groups' rows, in the report's order: filesystem, device, system,
/// board.
pub const GROUPS: [&[Spec]; 4] = [
    filesystem::CHECKS,
    device::CHECKS,
    system::CHECKS,
    board::CHECKS,
];

/// Every check, in the report's order.
pub fn all() -> impl Iterator<Item = &'static Spec> {
    GROUPS.into_iter().flatten()
}

/// Runs every check of [`all`] on `facts`, in order.
pub fn run_all(facts: &Facts) -> Vec<Check> {
    all()
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
    use crate::doctor::verdict::Area::{Board, Device, Filesystem, System};
    use crate::doctor::verdict::{Area, Status};
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
        for s in all() {
            assert!(seen.insert(s.id), "{} twice", s.id);
            assert!(!s.title.is_empty(), "{} has no title", s.id);
        }
        let areas: Vec<Area> = all().map(|s| s.area).collect();
        let mut groups = areas.clone();
        groups.dedup();
        assert_eq!(
            groups,
            [Filesystem, Device, System, Board],
            "each group's checks must be together, in this order"
        );
        let ids: Vec<&str> = all().map(|s| s.id).collect();
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
        assert_eq!(checks.len(), all().count());
        for (c, s) in checks.iter().zip(all()) {
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
