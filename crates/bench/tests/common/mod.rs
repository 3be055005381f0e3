//! Checks a `--json` result against its schema page (`docs/bench-schema.md`,
//! and `docs/record-schema.md` from the root crate's `tests/report.rs`),
//! both ways: every field in the JSON is documented with a matching type,
//! and every documented field is in the JSON (unless an ancestor is null,
//! an array is empty, or it or an ancestor "or absent" is left out).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

/// Documented fields of `docs/bench-schema.md`: path → type.
pub fn documented() -> BTreeMap<String, String> {
    documented_in("bench-schema.md")
}

/// Documented fields of `docs/PAGE`: path → type.
pub fn documented_in(page: &str) -> BTreeMap<String, String> {
    let out = documented_under(page, None);
    assert!(out.len() > 50, "too few fields parsed from docs/{page}");
    out
}

/// Documented fields of `docs/PAGE`, of the whole page or (`section`) of
/// the tables under the heading `section` only (up to the next `## `):
/// path → type.
pub fn documented_under(page: &str, section: Option<&str>) -> BTreeMap<String, String> {
    // The workspace's docs/, from the bench crate or from the root crate.
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("docs").join(page))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("docs/{page} not found"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let text = match section {
        None => text,
        Some(h) => {
            let start = text
                .find(&format!("\n{h}\n"))
                .unwrap_or_else(|| panic!("docs/{page} has no heading {h}"));
            let rest = &text[start + h.len() + 2..];
            rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
        }
    };
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let path = cells[1].trim_matches('`').to_string();
        assert!(
            out.insert(path.clone(), cells[2].to_string()).is_none(),
            "{path} documented twice"
        );
    }
    assert!(out.len() > 3, "too few fields parsed from {}", p.display());
    out
}

const LATENCY_KEYS: [&str; 7] = ["count", "min", "mean", "p50", "p99", "p999", "max"];

fn type_ok(ty: &str, v: &Value) -> bool {
    let ty = ty.trim_end_matches(" or absent");
    let (base, nullable) = match ty.strip_suffix(" or null") {
        Some(b) => (b, true),
        None => (ty, false),
    };
    match v {
        Value::Null => nullable,
        Value::Bool(_) => base == "boolean",
        Value::Number(n) => base == "number" || (base == "integer" && n.is_u64()),
        Value::String(_) => base == "string",
        Value::Array(a) => match base {
            "array of strings" => a.iter().all(Value::is_string),
            "array of integers" => a.iter().all(Value::is_u64),
            "array of objects" => a.iter().all(Value::is_object),
            _ => false,
        },
        Value::Object(o) => match base {
            "object" | "config" | "section" => true,
            "latency" => {
                o.len() == LATENCY_KEYS.len()
                    && LATENCY_KEYS
                        .iter()
                        .all(|k| o.get(*k).is_some_and(Value::is_u64))
            }
            _ => false,
        },
    }
}

struct Walk<'a> {
    doc: &'a BTreeMap<String, String>,
    seen: BTreeSet<String>,
    /// Paths whose value was null or an empty array: their descendants
    /// need not appear.
    cut: BTreeSet<String>,
    errors: Vec<String>,
}

impl Walk<'_> {
    fn visit(&mut self, path: &str, v: &Value) {
        let Some(ty) = self.doc.get(path) else {
            self.errors
                .push(format!("{path} is in the JSON but not documented"));
            return;
        };
        self.seen.insert(path.to_string());
        if !type_ok(ty, v) {
            self.errors
                .push(format!("{path}: documented as {ty}, found {v}"));
            return;
        }
        let base = ty
            .trim_end_matches(" or absent")
            .trim_end_matches(" or null");
        match v {
            Value::Null => {
                self.cut.insert(path.to_string());
            }
            Value::Object(o) if base == "object" => {
                for (k, child) in o {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    self.visit(&p, child);
                }
            }
            Value::Array(a) if base == "array of objects" => {
                if a.is_empty() {
                    self.cut.insert(format!("{path}[]"));
                }
                for child in a {
                    for (k, c) in child.as_object().unwrap() {
                        self.visit(&format!("{path}[].{k}"), c);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Panics with every mismatch between `json` and `docs/bench-schema.md`.
pub fn check(json: &Value) {
    check_against(json, "bench-schema.md");
}

/// Panics with every mismatch between `json` and `docs/PAGE`.
pub fn check_against(json: &Value, page: &str) {
    check_doc(json, &documented_in(page), page);
}

/// Panics with every mismatch between `json` and the tables under the
/// heading `section` of `docs/PAGE`.
pub fn check_section(json: &Value, page: &str, section: &str) {
    check_doc(json, &documented_under(page, Some(section)), page);
}

/// Panics with every mismatch between `json` and `doc` (from `docs/PAGE`).
fn check_doc(json: &Value, doc: &BTreeMap<String, String>, page: &str) {
    let doc = doc.clone();
    let mut w = Walk {
        doc: &doc,
        seen: BTreeSet::new(),
        cut: BTreeSet::new(),
        errors: Vec::new(),
    };
    for (k, v) in json.as_object().expect("an object") {
        w.visit(k, v);
    }
    for path in doc.keys() {
        let under_cut = w
            .cut
            .iter()
            .any(|c| path.starts_with(&format!("{c}.")) || path.starts_with(&format!("{c}[]")));
        // Left out: a field "or absent", or one under such a field.
        let absent = doc.iter().any(|(p, ty)| {
            ty.ends_with(" or absent")
                && !w.seen.contains(p)
                && (p == path
                    || path.starts_with(&format!("{p}."))
                    || path.starts_with(&format!("{p}[]")))
        });
        if !w.seen.contains(path) && !under_cut && !absent {
            w.errors
                .push(format!("{path} is documented but not in the JSON"));
        }
    }
    assert!(
        w.errors.is_empty(),
        "the JSON does not match docs/{page}:\n{}",
        w.errors.join("\n")
    );
}
