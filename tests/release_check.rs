//! `scripts/release-check.sh` (issue 42, Deliver 5: the long soak as a
//! release check) is held to what it runs: every environment variable it
//! sets is one a test reads, every `--test` target and test filter exists,
//! and every `rtrec` flag it passes is one `rtrec` accepts. Without this a
//! renamed variable would make the release check run CI's short count
//! without a word, which is the one way a release check can pass wrongly.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The checks the script lists: (name, command).
fn checks() -> Vec<(String, String)> {
    let o = Command::new("bash")
        .arg(root().join("scripts/release-check.sh"))
        .arg("--list")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, c)| (n.to_string(), c.trim().to_string()))
        .collect()
}

/// Every test source of the workspace (`tests/` of the root and of each
/// crate), with its target name.
fn test_sources() -> Vec<(String, String)> {
    let mut dirs = vec![root().join("tests")];
    for c in std::fs::read_dir(root().join("crates")).unwrap() {
        dirs.push(c.unwrap().path().join("tests"));
    }
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                let name = p.file_stem().unwrap().to_str().unwrap().to_string();
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn the_release_check_sets_only_what_the_tests_read_and_runs_only_what_exists() {
    let checks = checks();
    let names: Vec<&str> = checks.iter().map(|(n, _)| n.as_str()).collect();
    for want in ["field-soak", "soak", "crash-cycles", "ship-power"] {
        assert!(names.contains(&want), "no {want} check in {names:?}");
    }
    let sources = test_sources();
    let bench_help = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let bench_help = String::from_utf8_lossy(&bench_help.stdout).into_owned();
    for (name, cmd) in &checks {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        // VAR=N before a command: a test reads VAR.
        for w in &words {
            if let Some((var, n)) = w.split_once('=') {
                if var.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    assert!(n.parse::<u64>().is_ok(), "{name}: {w} is not a count");
                    let read = format!("std::env::var(\"{var}\")");
                    assert!(
                        sources.iter().any(|(_, s)| s.contains(&read)),
                        "{name}: no test reads {var}"
                    );
                }
            }
        }
        // --test T [filter]: T exists, and the filter names a test in it.
        let targets: Vec<&str> = words
            .windows(2)
            .filter(|w| w[0] == "--test")
            .map(|w| w[1])
            .collect();
        for t in &targets {
            assert!(
                sources.iter().any(|(n, _)| n == t),
                "{name}: no test target {t}"
            );
        }
        if let [t] = targets[..] {
            let after = words.iter().position(|w| *w == t).unwrap() + 1;
            if let Some(filter) = words.get(after).filter(|w| !w.starts_with('-')) {
                let src = &sources.iter().find(|(n, _)| n == t).unwrap().1;
                assert!(
                    src.contains(&format!("fn {filter}")),
                    "{name}: no test in {t} starts with {filter}"
                );
            }
        }
        // rtrec's own flags: the bench accepts each.
        if words.first() == Some(&"./target/release/rtrec") {
            for f in words.iter().filter(|w| w.starts_with("--")) {
                assert!(
                    bench_help.contains(f),
                    "{name}: rtrec bench does not know {f}"
                );
            }
        }
    }
    // The docs that quote the release check's counts name the script.
    for doc in ["docs/unattended.md", "docs/durability.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        assert!(
            text.contains("scripts/release-check.sh"),
            "{doc} does not name scripts/release-check.sh"
        );
    }
}
