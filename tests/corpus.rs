//! Every reader of recordings agrees on a corpus of damaged directories
//! (`tests/common/corpus.rs`): `rtrec ls`, `verify`, `events`, `export` in
//! every format and the Python package give each recording the same
//! state, the same record and loss counts and the same gaps, and `export`
//! and Python never return fewer rows than records + lost (docs/
//! recordings.md, "No absence without a gap"). The `--json` documents are
//! held to docs/recordings-schema.md on every entry.
// `ls`, `export` and the MCAP reader are the `tables` feature's: the
// record-only build (docs/embedded.md) has none of them.
#![cfg(feature = "tables")]

use std::path::Path;
use std::process::Command;

use rtrec_host::tools;
use serde_json::{json, Value};

mod common;
use common::corpus::{self, Entry};
use common::{rtrec, show};

// The bench's schema walker, pointed at docs/recordings-schema.md.
#[path = "../crates/bench/tests/common/mod.rs"]
mod schema;

/// A recording as `ls --json` lists it: what every other reader must say.
#[derive(Clone, Debug, PartialEq)]
struct Said {
    state: String,
    records: u64,
    lost: u64,
    lost_after: Option<u64>,
}

/// Runs `rtrec ARGS` and parses its JSON stdout (exit 0 or 1).
fn json_of(args: &[&str]) -> Value {
    let o = rtrec(args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        show(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", show(&o)))
}

fn said(r: &Value) -> Said {
    Said {
        state: r["state"].as_str().unwrap().to_string(),
        records: r["records"].as_u64().unwrap(),
        lost: r["lost"].as_u64().unwrap(),
        lost_after: r["lost_after"].as_u64(),
    }
}

/// What an export in a table format (or MCAP) held: records, the records
/// in its loss gaps (not `retired`/`not_saved`), and the sequence number
/// of a gap of unknown count.
#[derive(Debug, Default, PartialEq)]
struct Exported {
    records: u64,
    lost: u64,
    unknown_after: Option<u64>,
}

impl Exported {
    fn gap(&mut self, first_seq: u64, count: Option<u64>, reason: &str) {
        match (count, reason) {
            (_, "retired" | "not_saved") => {}
            (Some(n), _) => self.lost += n,
            (None, _) => self.unknown_after = Some(first_seq),
        }
    }
}

/// Reads an export of `format` back.
fn read_export(format: &str, bytes: &[u8]) -> Exported {
    let mut e = Exported::default();
    match format {
        "csv" => {
            for line in String::from_utf8_lossy(bytes).lines().skip(1) {
                let cells: Vec<&str> = line.split(',').collect();
                match cells[0] {
                    "record" => e.records += 1,
                    _ => {
                        let n = cells.len();
                        e.gap(
                            cells[1].parse().unwrap(),
                            cells[n - 2].parse().ok(),
                            cells[n - 1],
                        )
                    }
                }
            }
        }
        "jsonl" => {
            for line in String::from_utf8_lossy(bytes).lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                match v["kind"].as_str() {
                    Some("record") => e.records += 1,
                    _ => e.gap(
                        v["seq"].as_u64().unwrap(),
                        v["count"].as_u64(),
                        v["reason"].as_str().unwrap(),
                    ),
                }
            }
        }
        "mcap" => {
            for m in mcap::MessageStream::new(bytes).unwrap() {
                let m = m.unwrap();
                if m.channel.topic.ends_with("/gaps") {
                    let v: Value = serde_json::from_slice(&m.data).unwrap();
                    e.gap(
                        v["first_seq"].as_u64().unwrap(),
                        v["count"].as_u64(),
                        v["reason"].as_str().unwrap(),
                    );
                } else {
                    e.records += 1;
                }
            }
        }
        _ => unreachable!("{format}"),
    }
    e
}

/// Exports recording `pick` of `dir` in `format` to `out`: (exit code,
/// the records the summary says, stderr).
fn export(
    dir: &Path,
    pick: &str,
    format: &str,
    flags: &[&str],
    out: &Path,
) -> (i32, Option<u64>, String) {
    let _ = std::fs::remove_file(out);
    let mut args = vec!["export", dir.to_str().unwrap(), "--recording", pick];
    args.extend(["--format", format, "-o", out.to_str().unwrap()]);
    args.extend(flags);
    let o = rtrec(&args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let n = err
        .split("exported ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok());
    (o.status.code().unwrap(), n, err)
}

/// Checks every export format of one recording against what `ls` said.
fn check_exports(e: &Entry, pick: &str, s: &Said, tmp: &Path) {
    let at = |f: &str| format!("{}: {pick} --format {f}", e.name);
    let corrupt = s.state == "corrupt";
    let gaps = s.lost > 0 || s.lost_after.is_some();
    for format in ["raw", "csv", "jsonl", "mcap"] {
        let out = tmp.join(format!("{}-{pick}.{format}", e.name));
        // Without leave: refused exactly when it is corrupt or has gaps.
        let (code, _, err) = export(&e.dir, pick, format, &[], &out);
        let refused = corrupt || gaps;
        assert_eq!(code, if refused { 1 } else { 0 }, "{}: {err}", at(format));
        if refused {
            assert!(
                !out.exists(),
                "{}: refused, yet wrote {}",
                at(format),
                out.display()
            );
        }
        let leave: &[&str] = if corrupt {
            &["--salvage"]
        } else {
            &["--allow-gaps"]
        };
        let (code, n, err) = export(&e.dir, pick, format, leave, &out);
        assert_eq!(code, if corrupt { 1 } else { 0 }, "{}: {err}", at(format));
        if corrupt {
            continue;
        }
        assert_eq!(n, Some(s.records), "{}: {err}", at(format));
        if format == "raw" {
            continue;
        }
        let got = read_export(format, &std::fs::read(&out).unwrap());
        let want = Exported {
            records: s.records,
            lost: s.lost,
            unknown_after: s.lost_after,
        };
        assert_eq!(got, want, "{}: {err}", at(format));
    }
}

/// Python's view of each recording `picks` names in `dir`: state, rows,
/// lost rows, loss gaps, the unknown gap, and whether `on_gap="raise"`
/// raised. `None` without python3 and numpy.
fn python(dir: &Path, picks: &[String]) -> Option<Value> {
    let script = r#"
import json, sys
import rtrec
out = {}
for pick in sys.argv[2:]:
    r = rtrec.open(sys.argv[1], recording=pick)
    try:
        a = r.to_numpy()
    except rtrec.RtrecError as e:
        out[pick] = {"state": r.info["state"], "refused": str(e)}
        continue
    loss = [g for g in a.gaps if g.lost]
    try:
        r.to_numpy(on_gap="raise")
        raised = False
    except rtrec.GapError:
        raised = True
    out[pick] = {
        "state": r.info["state"], "rows": len(a), "lost_rows": int(a["lost"].sum()),
        "lost": sum(g.count for g in loss if g.count is not None),
        "unknown_after": next((g.first_seq for g in loss if g.count is None), None),
        "raised": raised,
    }
print(json.dumps(out))
"#;
    let have = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        tools::skip(
            "every_reader_agrees_on_every_entry_of_the_corpus (Python)",
            "needs python3 with numpy (python3 -m pip install numpy)",
        );
        return None;
    }
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir)
        .args(picks)
        .env(
            "PYTHONPATH",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("python"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RTREC", env!("CARGO_BIN_EXE_rtrec"))
        .output()
        .unwrap();
    assert!(o.status.success(), "python: {}", show(&o));
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

/// The states each entry's recordings must have, oldest first (the
/// verdicts of docs/recordings.md, pinned).
fn expected_states(name: &str) -> &'static [&'static str] {
    match name {
        "complete" | "stored-loss" | "retired" => &["complete"],
        "missing-first" | "missing-middle" => &["incomplete"],
        "missing-last" | "interrupted" | "torn-tail" => &["unfinished"],
        "foreign-file" => &["not a recording", "incomplete"],
        "duplicate-file" => &["corrupt"],
        "framed-copy" | "two-recordings" => &["complete", "complete"],
        "aborted" => &["aborted"],
        "recovered" => &["recovered"],
        "live" => &["in progress"],
        other => panic!("no expected states for {other}"),
    }
}

#[test]
fn every_reader_agrees_on_every_entry_of_the_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("corpus");
    std::fs::create_dir(&root).unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut entries = corpus::build(&root);
    let mut table = Vec::new();
    for e in &mut entries {
        let d = e.dir.to_str().unwrap();
        let ls = json_of(&["ls", "--json", d]);
        schema::check_section(&ls, "recordings-schema.md", "## `rtrec ls --json`");
        let listed = ls["recordings"].as_array().unwrap().clone();
        let states: Vec<&str> = listed
            .iter()
            .map(|r| r["state"].as_str().unwrap())
            .collect();
        assert_eq!(states, expected_states(e.name), "{}: {ls:#}", e.name);

        let verify = json_of(&["verify", "--json", d]);
        schema::check_section(&verify, "recordings-schema.md", "## `rtrec verify --json`");
        let events = json_of(&["events", "--json", d]);
        schema::check_section(&events, "recordings-schema.md", "## `rtrec events --json`");
        assert!(
            events["events"].as_array().unwrap().is_empty(),
            "{}: {events:#}",
            e.name
        );
        let clean = listed
            .iter()
            .all(|r| matches!(r["state"].as_str(), Some("complete" | "recovered" | "raw")));
        assert_eq!(verify["clean"], clean, "{}: {verify:#}", e.name);

        let mut picks = Vec::new();
        for r in listed.iter().filter(|r| r["id"] != "-") {
            let s = said(r);
            // verify's recording is ls's.
            let v = verify["recordings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["first_file"] == r["first_file"])
                .unwrap_or_else(|| panic!("{}: verify misses {r}", e.name));
            assert_eq!(said(v), s, "{}", e.name);
            // info's recording is ls's too (picked by its first file).
            let first = Path::new(r["first_file"].as_str().unwrap());
            let name = first.file_name().unwrap().to_str().unwrap();
            let info = json_of(&["info", "--json", d, "--recording", name]);
            schema::check_section(&info, "recordings-schema.md", "## `rtrec info --json`");
            assert_eq!(said(&info), s, "{}: info {info:#}", e.name);
            // Its files' records and untraced losses, as verify reports them.
            let copy = r["copy"].as_bool().unwrap_or(false);
            let id = u64::from_str_radix(r["id"].as_str().unwrap(), 16).unwrap();
            let files: Vec<&Value> = verify["files"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| {
                    f["recording_id"] == json!(id) && f["copy"].as_bool().unwrap_or(false) == copy
                })
                .collect();
            let sum = |k: &str| files.iter().map(|f| f[k].as_u64().unwrap()).sum::<u64>();
            assert_eq!(sum("records"), s.records, "{}", e.name);
            assert!(sum("missing_records") <= s.lost, "{}", e.name);
            // Never fewer than what was offered: every record is in the
            // recording or counted lost (a last file's loss is of unknown
            // size), where one recording was made.
            let sources = listed
                .iter()
                .filter(|r| r["id"] != "-" && r["copy"] != true)
                .count();
            if let (Some(n), 1, false, None) = (
                e.offered,
                sources,
                copy || s.state == "corrupt",
                s.lost_after,
            ) {
                assert_eq!(s.records + s.lost, n, "{}: {r}", e.name);
            }
            // A copy is picked by its file name, a source by its id.
            let pick = if copy {
                Path::new(r["first_file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            } else {
                r["id"].as_str().unwrap().to_string()
            };
            check_exports(e, &pick, &s, &out);
            table.push(format!(
                "{:<15} {:<17} {:>8} {:>7} {:>14}",
                e.name,
                format!("{}{}", s.state, if copy { " (copy)" } else { "" }),
                s.records,
                s.lost,
                s.lost_after.map_or("-".into(), |a| format!("unknown@{a}"))
            ));
            picks.push((pick, s));
        }
        let names: Vec<String> = picks.iter().map(|(p, _)| p.clone()).collect();
        if let Some(py) = python(&e.dir, &names) {
            for (pick, s) in &picks {
                let p = &py[pick];
                let at = format!("{}: Python {pick}: {p}", e.name);
                assert_eq!(p["state"], s.state.as_str(), "{at}");
                if s.state == "corrupt" {
                    // Refused in rtrec's sentence, as export refuses it.
                    assert!(
                        p["refused"]
                            .as_str()
                            .is_some_and(|w| w.contains("--salvage")),
                        "{at}"
                    );
                    continue;
                }
                assert_eq!(p["rows"], s.records + s.lost, "{at}");
                assert_eq!(p["lost_rows"], s.lost, "{at}");
                assert_eq!(p["lost"], s.lost, "{at}");
                assert_eq!(p["unknown_after"].as_u64(), s.lost_after, "{at}");
                assert_eq!(p["raised"], s.lost > 0 || s.lost_after.is_some(), "{at}");
            }
        }
        e.stop();
    }
    eprintln!(
        "corpus: {} entries; state, records, lost, unknown loss (every reader agreed):\n{}",
        entries.len(),
        table.join("\n")
    );
}
