//! The scenario table as a whole: names, published figures (checked against
//! `docs/studies.md` and, for what it leaves out, the S1 seed), and every case's
//! strategies valid for the engine under both protocols.

use std::collections::HashSet;
use std::path::PathBuf;

use rtrec_bench::output::numbers::thousands;
use rtrec_bench::protocol::{Overrides, Protocol};
use rtrec_bench::scenario::{self, Load, Study, Timed, S1_TABLE1_NAMES, SCENARIOS};

fn shared_file(rel: &str) -> Option<String> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared")
        .join(rel);
    match std::fs::read_to_string(&p) {
        Ok(s) => Some(s.split_whitespace().collect::<Vec<_>>().join(" ")),
        Err(e) => {
            eprintln!("skipped the check against {}: {e}", p.display());
            None
        }
    }
}

/// The repository's own copy of the studies' protocol and published
/// figures, present in every clone.
fn studies_md() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/studies.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn num(cell: &str) -> u64 {
    cell.trim()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

#[test]
fn names_are_unique_and_s1_table1_is_exactly_the_twelve_published_names() {
    let mut seen = HashSet::new();
    for s in SCENARIOS {
        assert!(seen.insert(s.name), "duplicate case {}", s.name);
        assert!(!s.description.is_empty(), "{} has no description", s.name);
    }
    let t1: Vec<&str> = SCENARIOS
        .iter()
        .filter(|s| s.study == Study::S1Table1)
        .map(|s| s.name)
        .collect();
    assert_eq!(t1, S1_TABLE1_NAMES.to_vec());
    for name in [
        "NONE-BGREAD",
        "ALL-BGREAD",
        "FALLOCATE",
        "FALLOCATE-BGTRUNCSYNC",
        "ALL-BGTRUNCSYNC",
        "RTREC",
        "RTREC-BGTRUNC",
        "RTREC-BGALL",
        "NOISE-FLOOR",
    ] {
        assert!(scenario::find(name).is_some(), "{name} missing");
    }
}

#[test]
fn every_case_name_says_what_it_runs() {
    for s in SCENARIOS {
        let n = s.name;
        let has = |l: Load| s.loads.contains(&l);
        assert_eq!(n.ends_with("-BGTRUNC"), s.loads == [Load::Trunc], "{n}");
        assert_eq!(
            n.ends_with("-BGALL"),
            s.loads == [Load::Trunc, Load::Falloc],
            "{n}"
        );
        assert_eq!(n.ends_with("-BGREAD"), has(Load::Read), "{n}");
        assert_eq!(n.ends_with("-BGTRUNCSYNC"), has(Load::TruncSync), "{n}");
        if let Timed::Write(scenario::Strategies::Paper { alloc, flush }) = s.timed {
            let base = n.split("-BG").next().unwrap();
            let (a, f, fl) = match base {
                "NONE" => ("WAPPEND", "SALL", "FON"),
                "ALL" => ("WPRE", "SDATA", "FOFF"),
                other => {
                    let p: Vec<&str> = other.split('-').collect();
                    (p[0], p[1], p[2])
                }
            };
            assert_eq!(a == "WPRE", alloc == rtrec_engine::Alloc::Fallocate, "{n}");
            assert_eq!(a == "WAPPEND", alloc == rtrec_engine::Alloc::Append, "{n}");
            assert_eq!(f == "SDATA", flush == rtrec_engine::Flush::Sfr, "{n}");
            assert_eq!(f == "SALL", flush == rtrec_engine::Flush::Fdatasync, "{n}");
            assert_eq!(fl == "FOFF", s.flusher == scenario::Flusher::Off, "{n}");
        }
        if let Some(r) = s.reference {
            assert!(scenario::find(r).is_some(), "{n} refers to unknown {r}");
        }
    }
}

#[test]
fn every_recording_case_is_a_valid_engine_configuration_in_both_protocols() {
    for paper in [false, true] {
        let o = Overrides {
            paper,
            ..Overrides::default()
        };
        for s in SCENARIOS {
            let p = Protocol::for_study(s.study, &o);
            match s.timed {
                Timed::Write(_) => {
                    let cfg = s.config(&p).unwrap();
                    cfg.validate().unwrap_or_else(|e| panic!("{}: {e}", s.name));
                    assert_eq!(cfg.flush_every, 2 << 20);
                    assert_eq!(
                        cfg.keep_write_samples as u64, p.writes,
                        "{}: every write() is kept",
                        s.name
                    );
                }
                _ => assert!(s.config(&p).is_none()),
            }
        }
    }
}

#[test]
fn rtrec_cases_use_the_engine_default_strategies() {
    let d = rtrec_engine::Config::default();
    for name in ["RTREC", "RTREC-BGTRUNC", "RTREC-BGALL"] {
        let s = scenario::find(name).unwrap();
        let c = s
            .config(&Protocol::for_study(s.study, &Overrides::default()))
            .unwrap();
        assert_eq!(
            (c.mode, c.alloc, c.flush, c.framing),
            (d.mode, d.alloc, d.flush, d.framing),
            "{name}"
        );
    }
}

#[test]
fn published_figures_match_studies_md() {
    let studies = studies_md();
    // S1 Table 1: | case | min | max | avg |
    let t1 = studies
        .split("Table 1, `write()` latency")
        .nth(1)
        .expect("S1 Table 1 in docs/studies.md");
    let mut rows = 0;
    for line in t1.lines().skip_while(|l| !l.starts_with("| case")).skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].split_whitespace().next().unwrap();
        let p = scenario::find(name)
            .and_then(|s| s.published)
            .unwrap_or_else(|| panic!("{name} has no published figure"));
        assert_eq!(p.source, "S1 Table 1", "{name}");
        assert_eq!(
            (p.min_us, p.max_us, p.avg_us),
            (
                Some(num(cells[2])),
                Some(num(cells[3])),
                Some(num(cells[4]))
            ),
            "{name}"
        );
        rows += 1;
    }
    assert_eq!(rows, 12);

    // S2 Table: | call | background | avg | max |
    let s2 = studies
        .split("## S2.")
        .nth(1)
        .expect("S2 in docs/studies.md");
    let mut s2_rows = 0;
    for line in s2
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| call"))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let loaded = cells[2].starts_with("ftruncate + fsync");
        let name = match (
            cells[1].starts_with("`fallocate()`"),
            cells[1] == "same",
            loaded,
        ) {
            (true, _, false) => "FALLOCATE",
            (true, _, true) => "FALLOCATE-BGTRUNCSYNC",
            (_, true, true) => "ALL-BGTRUNCSYNC",
            _ => continue,
        };
        let p = scenario::find(name).unwrap().published.unwrap();
        assert_eq!(
            (p.min_us, p.avg_us, p.max_us),
            (None, Some(num(cells[3])), Some(num(cells[4]))),
            "{name}"
        );
        s2_rows += 1;
    }
    assert_eq!(s2_rows, 3);

    // S1 Table 3 and Fig. 5, in prose.
    let flat = studies.split_whitespace().collect::<Vec<_>>().join(" ");
    let max = |n: &str| {
        scenario::find(n)
            .unwrap()
            .published
            .unwrap()
            .max_us
            .unwrap()
    };
    let pct = |n: &str| {
        scenario::find(n)
            .unwrap()
            .published
            .unwrap()
            .reader_throughput_pct
            .unwrap()
    };
    for (base, read) in [("NONE", "NONE-BGREAD"), ("ALL", "ALL-BGREAD")] {
        let text = format!(
            "{base} max {} → {} µs",
            thousands(max(base)),
            thousands(max(read))
        );
        assert!(
            flat.contains(&text),
            "docs/studies.md does not say '{text}'"
        );
    }
    let text = format!(
        "{} % (NONE) and {} % (ALL)",
        pct("NONE-BGREAD"),
        pct("ALL-BGREAD")
    );
    assert!(
        flat.contains(&text),
        "docs/studies.md does not say '{text}'"
    );
}

#[test]
fn table3_min_and_avg_match_the_s1_seed() {
    // docs/studies.md gives Table 3's maxima only; the minima and averages are
    // from the paper's Table 3 (columns: NONE, ALL alone; NONE, ALL with
    // the reader).
    let Some(seed) = shared_file("seeds/realtime-recording-ipsj2020-ja.txt") else {
        eprintln!("skipped table3_min_and_avg_match_the_s1_seed: the S1 seed was not found");
        return;
    };
    let p = |n: &str| scenario::find(n).unwrap().published.unwrap();
    let f = |v: Option<u64>| thousands(v.unwrap());
    let names = ["NONE", "ALL", "NONE-BGREAD", "ALL-BGREAD"];
    for (label, get) in [
        (
            "Min",
            (|x| x.min_us) as fn(scenario::Published) -> Option<u64>,
        ),
        ("Max", |x| x.max_us),
        ("Ave", |x| x.avg_us),
    ] {
        let row = format!("{label} {}", names.map(|n| f(get(p(n)))).join(" "));
        assert!(seed.contains(&row), "the seed's Table 3 has no row '{row}'");
    }
}
