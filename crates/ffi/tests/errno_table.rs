//! Every errno the C library can return is in the table of
//! `docs/c-api.md`, "Errors": the constants the library's sources name
//! (`libc::EXXX`, `use libc::{...}`, and the `-EXXX` its doc comments
//! promise) and those the engine chooses itself for the errors it hands
//! the library (`Error::Path { errno: libc::EXXX }`: `EPERM` for a pool
//! of another user, `ENOMEM` for a ring, ...). Errnos the engine passes on
//! from a failed system call are the table's "other" row.

use std::collections::BTreeSet;
use std::path::Path;

/// The `E[A-Z0-9]+` word that starts `s`, if any.
fn errno_at(s: &str) -> Option<&str> {
    let len = s
        .bytes()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        .count();
    (len >= 3 && s.starts_with('E')).then(|| &s[..len])
}

/// The errnos `text` names after `prefix` (e.g. `libc::` or `` `-``).
fn after(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .filter_map(|(i, _)| errno_at(&text[i + prefix.len()..]))
        .map(str::to_string)
        .collect()
}

/// The names in `use libc::{...};` lists.
fn imported(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("use libc::{") {
        let list = &text[i + "use libc::{".len()..];
        let list = &list[..list.find('}').unwrap_or(0)];
        out.extend(
            list.split(',')
                .map(str::trim)
                .filter_map(errno_at)
                .map(str::to_string),
        );
    }
    out
}

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    out
}

/// The errnos of the first column of the "## Errors" table.
fn documented(doc: &str) -> BTreeSet<String> {
    let at = doc
        .find("\n## Errors\n")
        .expect("docs/c-api.md has '## Errors'");
    let section = &doc[at + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    section
        .lines()
        .filter(|l| l.starts_with("| `E"))
        .flat_map(|l| after(l.split(" | ").next().unwrap_or(""), "`"))
        .collect()
}

#[test]
fn every_errno_the_library_can_return_is_in_the_errors_table() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut returned = BTreeSet::new();
    for (path, text) in sources(&crate_dir.join("src")) {
        let found: BTreeSet<String> = after(&text, "libc::")
            .into_iter()
            .chain(imported(&text))
            .chain(after(&text, "`-"))
            .collect();
        returned.extend(found.into_iter().map(|e| (e, path.clone())));
    }
    for (path, text) in sources(&crate_dir.join("../engine/src")) {
        // The errnos the engine picks itself: the lines that give an
        // error its errno.
        for line in text.lines().filter(|l| l.contains("errno")) {
            returned.extend(after(line, "libc::").into_iter().map(|e| (e, path.clone())));
        }
    }
    let doc = std::fs::read_to_string(crate_dir.join("../../docs/c-api.md")).unwrap();
    let table = documented(&doc);
    for must in ["EINVAL", "EPERM", "ECHILD", "ENOSPC"] {
        assert!(
            table.contains(must),
            "the table parse lost {must}: {table:?}"
        );
    }
    let missing: Vec<String> = returned
        .iter()
        .filter(|(e, _)| !table.contains(e))
        .map(|(e, path)| format!("{e} (named in {path})"))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/c-api.md's errno table: {missing:?}; table: {table:?}"
    );
}
