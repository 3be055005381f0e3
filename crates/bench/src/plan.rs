//! The plan of a run: which cases run, each with its protocol, whether S3
//! and S4 run and how, and the timed threads' real-time setup; or which
//! study runs alone ([`Alone`]). Built from [`BenchArgs`] without any I/O
//! ([`Plan::from_args`]): every refusal is a typed [`Error`] before
//! anything runs.

use crate::args::BenchArgs;
use crate::crash;
use crate::error::Error;
use crate::producer;
use crate::protocol::{self, Overrides, Protocol};
use crate::s4;
use crate::scenario::{self, Scenario, SCENARIOS};
use crate::study::Study;

/// The resolved plan: which cases, each with its protocol. Built without
/// any I/O.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The cases in run order.
    pub cases: Vec<(&'static Scenario, Protocol)>,
    /// Run S3.
    pub s3: bool,
    /// Run S4.
    pub s4: bool,
    /// S4's schedulers (`--schedulers`, default all of [`s4::SCHEDS`]).
    pub s4_schedulers: Vec<s4::Sched>,
    /// S4 also with fio (`--with-fio`).
    pub s4_with_fio: bool,
    /// The timed threads' real-time setup (`--no-rt`, `--priority`, `--cpu`).
    pub rt: producer::RtRequest,
}

/// The studies that run alone, instead of the cases: `--study NAME` by
/// itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alone {
    /// `--study throughput`.
    Throughput,
    /// `--study crash`.
    Crash,
    /// `--study cost`.
    Cost,
    /// `--study endurance`.
    Endurance,
}

impl Alone {
    /// Each with the name `--study` gives it.
    const ALL: [(Alone, &'static str); 4] = [
        (Alone::Throughput, "throughput"),
        (Alone::Cost, "cost"),
        (Alone::Crash, "crash"),
        (Alone::Endurance, "endurance"),
    ];

    /// The study that runs alone named `name`, in any letter case.
    fn named(name: &str) -> Option<Alone> {
        Self::ALL
            .iter()
            .find(|(_, n)| name.eq_ignore_ascii_case(n))
            .map(|(a, _)| *a)
    }

    /// The study `--study` asked for when it is one that runs alone, given
    /// by itself.
    pub(crate) fn asked(names: &[String]) -> Option<Alone> {
        match names {
            [name] => Self::named(name),
            _ => None,
        }
    }
}

/// The studies `--study` names, checked: (cases' studies, S3, S4).
fn select_studies(names: &[String]) -> Result<(Vec<Study>, bool, bool), Error> {
    if names.is_empty() {
        return Ok((Vec::new(), false, false));
    }
    let (mut studies, mut s3, mut s4) = (Vec::new(), false, false);
    for n in names {
        match n.to_ascii_lowercase().as_str() {
            "s1" => studies.extend([Study::S1Table1, Study::S1Table3]),
            "s2" => studies.push(Study::S2),
            "rtrec" => studies.extend([Study::Rtrec, Study::Platform]),
            // The back-ends beside their references, RTREC under the same loads.
            "backends" => studies.extend([Study::Backends, Study::Rtrec, Study::Platform]),
            "s3" => s3 = true,
            "s4" => s4 = true,
            // Runs alone, instead of the cases (see `Alone`).
            l if Alone::named(l).is_some() && names.len() == 1 => {}
            l if Alone::named(l).is_some() => {
                return Err(Error::UnknownCase {
                    name: n.clone(),
                    hint: format!("the {n} study runs alone: give --study {n} by itself"),
                })
            }
            _ => {
                return Err(Error::UnknownCase {
                    name: n.clone(),
                    hint: "expected one of s1, s2, s3, s4, rtrec, backends, throughput, cost, crash, endurance"
                        .into(),
                })
            }
        }
    }
    Ok((studies, s3, s4))
}

impl Plan {
    /// Validates the arguments: the studies and cases selected, every
    /// value in range, each case's protocol and engine configuration, S4's
    /// options and the real-time setup, in that order (the first refusal is
    /// the one reported).
    ///
    /// # Errors
    /// [`Error`]: one sentence naming the bad value.
    pub fn from_args(a: &BenchArgs) -> Result<Plan, Error> {
        let (studies, s3, s4) = select_studies(&a.study)?;
        let mut selected = select_cases(&a.cases)?;
        if !a.study.is_empty() {
            selected.retain(|s| studies.contains(&s.study));
        } else if a.cases.is_empty() {
            selected.retain(|s| DEFAULT_STUDIES.contains(&s.study));
        }
        let selected = with_same_load_floors(selected);
        check_values(a)?;
        let cases = protocols(selected, &overrides(a))?;
        announce_ring(&cases);
        if a.with_fio && !s4 {
            return Err(Error::Unavailable(
                "--with-fio runs S4's matrix with fio: give it with --study s4".into(),
            ));
        }
        let s4_schedulers = select_schedulers(&a.schedulers)?;
        Ok(Plan {
            cases,
            s3,
            s4,
            s4_schedulers,
            s4_with_fio: a.with_fio,
            rt: rt_request(a)?,
        })
    }

    /// Expected time of the timed loops, ns.
    pub fn loop_ns(&self) -> u64 {
        self.cases.iter().map(|(_, p)| p.loop_ns()).sum()
    }
}

/// The values no parser can check alone: counts of at least 1, the crash
/// study's torn-write unit and cells, `--size` against the file size.
fn check_values(a: &BenchArgs) -> Result<(), Error> {
    let at_least_1 = |flag| Error::OutOfRange {
        flag,
        requirement: "at least 1".into(),
    };
    let counts = [
        ("--sets", a.sets.map(u64::from)),
        ("--writes", a.writes),
        ("--confirmations", a.confirmations.map(u64::from)),
        ("--crash-states", a.crash_states),
        ("--crash-count", a.crash_count),
    ];
    if let Some(&(flag, _)) = counts.iter().find(|(_, n)| *n == Some(0)) {
        return Err(at_least_1(flag));
    }
    if a.crash_atomic.is_some_and(|u| u != 512 && u != 4096) {
        return Err(Error::OutOfRange {
            flag: "--crash-atomic",
            requirement: "512B or 4KiB".into(),
        });
    }
    if let Some(v) = a
        .crash_cells
        .iter()
        .find(|v| v.as_str() != "all" && !crash::CELLS.iter().any(|x| x.name == v.as_str()))
    {
        return Err(Error::UnknownCase {
            name: v.clone(),
            hint: format!(
                "expected all or some of {}",
                crash::CELLS.map(|x| x.name).join(", ")
            ),
        });
    }
    if a.size.is_some_and(|s| s > protocol::FILE_BYTES / 2) {
        return Err(Error::OutOfRange {
            flag: "--size",
            requirement: format!(
                "at most {} (half a file)",
                rtrec_units::format_size(protocol::FILE_BYTES / 2)
            ),
        });
    }
    Ok(())
}

/// What the command line changes of the studies' protocols; with
/// `--device`, the ring absorbs its profile's worst stall.
fn overrides(a: &BenchArgs) -> Overrides {
    Overrides {
        paper: a.paper,
        sets: a.sets,
        writes: a.writes,
        period_ns: a.period.map(|d| d.as_nanos() as u64),
        record_bytes: a.size,
        ring: a.ring,
        stall: a.device.as_ref().map(|d| rtrec_engine::Stall {
            ns: d.profile.worst_stall_ns(),
            source: rtrec_engine::StallSource::Device,
        }),
    }
}

/// Each selected case with its study's protocol under `o`; a recording
/// case whose engine configuration the engine refuses is refused here.
fn protocols(
    selected: Vec<&'static Scenario>,
    o: &Overrides,
) -> Result<Vec<(&'static Scenario, Protocol)>, Error> {
    let cases = selected
        .into_iter()
        .map(|s| (s, Protocol::for_study(s.study, o)))
        .collect::<Vec<_>>();
    for (s, p) in &cases {
        if let Some(cfg) = s.config(p) {
            cfg.validate().map_err(|e| Error::InvalidCase {
                case: s.name,
                reason: e.to_string(),
            })?;
        }
    }
    Ok(cases)
}

/// With `--ring`: one line saying how long the recording cases' ring holds.
fn announce_ring(cases: &[(&'static Scenario, Protocol)]) {
    if let Some(p) = cases
        .iter()
        .find_map(|(_, p)| p.ring_bytes.is_some().then_some(p))
    {
        let ring = p.ring_bytes.unwrap_or_default();
        let secs = rtrec_engine::sizing::ring_seconds(ring, p.record_bytes, Some(p.period_ns));
        eprintln!(
            "rtrec bench: --ring {}: the recording cases' ring holds {:.2} s of {} every {} ms",
            rtrec_units::format_size(ring),
            secs.unwrap_or(0.0),
            rtrec_units::format_size(p.record_bytes),
            p.period_ns as f64 / 1e6
        );
    }
}

/// The timed threads' real-time setup (`--no-rt`, `--priority`, `--cpu`);
/// a priority outside SCHED_FIFO's ([`rtrec_engine::rt::PRIORITIES`]) is
/// refused.
fn rt_request(a: &BenchArgs) -> Result<producer::RtRequest, Error> {
    let priority = a.priority.unwrap_or(producer::DEFAULT_PRIORITY);
    if !rtrec_engine::rt::PRIORITIES.contains(&priority) {
        return Err(Error::OutOfRange {
            flag: "--priority",
            requirement: "within SCHED_FIFO's range 1-99".into(),
        });
    }
    Ok(producer::RtRequest {
        enabled: !a.no_rt,
        priority,
        cpu: a.cpu,
    })
}

/// `--schedulers`: S4's schedulers by label, in [`s4::SCHEDS`]'s order
/// (every one when none is given).
fn select_schedulers(names: &[String]) -> Result<Vec<s4::Sched>, Error> {
    for n in names {
        if !s4::SCHEDS.iter().any(|s| s.label.eq_ignore_ascii_case(n)) {
            return Err(Error::Unavailable(format!(
                "unknown scheduler '{n}': --schedulers takes none, mq-deadline, bfq, bfq-strict"
            )));
        }
    }
    Ok(s4::SCHEDS
        .into_iter()
        .filter(|s| names.is_empty() || names.iter().any(|n| s.label.eq_ignore_ascii_case(n)))
        .collect())
}

/// The studies of a run without `--study` or `--cases`: s1, s2 and rtrec.
///
/// Design choice: the back-end cases (RTREC-DIRECT*, RTREC-URING*) are
/// their own study, `--study backends`, so that the default run, with a
/// floor under each load of rtrec's cases, stays under 10 minutes
/// (docs/bench.md, "Protocol").
pub const DEFAULT_STUDIES: [Study; 5] = [
    Study::S1Table1,
    Study::S1Table3,
    Study::S2,
    Study::Rtrec,
    Study::Platform,
];

/// `selected` with the noise floor under each load of a case that needs
/// one ([`Scenario::needs_same_load_floor`]) added just before the first
/// such case, unless selected already; a floor under a load no selected
/// case needs is left out unless `--cases` names it.
///
/// Design choice: the floor runs next to its case, not with NOISE-FLOOR at
/// the start, so that whatever else loads the machine during the run
/// (other builds on a shared VM) is as alike as it can be for the two.
fn with_same_load_floors(selected: Vec<&'static Scenario>) -> Vec<&'static Scenario> {
    let mut out: Vec<&'static Scenario> = Vec::with_capacity(selected.len() + 3);
    for s in selected {
        let floor = scenario::same_load_floor(s.loads).filter(|_| s.needs_same_load_floor());
        if let Some(f) = floor.filter(|f| !out.iter().any(|o| o.name == f.name)) {
            out.push(f);
        }
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    }
    out
}

/// The cases of `--cases` in the order given, each name matched whatever
/// its letter case; every case in table order when none is given, less the
/// floors under a load (added where a case needs them,
/// [`with_same_load_floors`]).
///
/// Design choice: a name given twice is refused rather than run twice, since
/// a second run of the same case on a warmer cache is not what anybody
/// means; an unknown name gets the closest name (Jaro-Winkler, as clap
/// suggests flags) or, when none is close, the list.
fn select_cases(names: &[String]) -> Result<Vec<&'static Scenario>, Error> {
    if names.is_empty() {
        return Ok(SCENARIOS.iter().filter(|s| !s.is_loaded_floor()).collect());
    }
    let mut out: Vec<&'static Scenario> = Vec::with_capacity(names.len());
    for name in names {
        let Some(s) = SCENARIOS.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
            return Err(unknown_case(name));
        };
        if out.iter().any(|o| o.name == s.name) {
            return Err(Error::DuplicateCase(s.name.to_string()));
        }
        out.push(s);
    }
    Ok(out)
}

fn unknown_case(name: &str) -> Error {
    let upper = name.to_ascii_uppercase();
    let closest = SCENARIOS
        .iter()
        .map(|s| (strsim::jaro_winkler(&upper, s.name), s.name))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|(score, _)| *score > 0.8);
    let hint = match closest {
        Some((_, n)) => format!("did you mean {n}? (rtrec bench --list shows every case)"),
        None => {
            let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
            format!("expected one of {}", names.join(", "))
        }
    };
    Error::UnknownCase {
        name: name.to_string(),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_command_line_parses_cases_durations_sizes_and_compare() {
        let a = BenchArgs::try_from_words([
            "--cases", "NONE,ALL", "--period", "2ms", "--size", "4KiB", "--writes", "10",
        ])
        .unwrap();
        assert_eq!(a.cases, ["NONE", "ALL"]);
        assert_eq!(a.period, Some(Duration::from_millis(2)));
        assert_eq!(a.size, Some(4096));
        let plan = Plan::from_args(&a).unwrap();
        assert_eq!(plan.cases.len(), 2);
        assert_eq!(plan.cases[0].1.period_ns, 2_000_000);
        assert_eq!(plan.loop_ns(), 2 * 2 * 10 * 2_000_000);
        let c = BenchArgs::try_from_words(["--compare", "a.json", "b.json"]).unwrap();
        assert_eq!(c.compare.unwrap().len(), 2);
        assert!(BenchArgs::try_from_words(["--compare", "a.json"]).is_err());
        assert!(BenchArgs::try_from_words(["--dir", "/x", "--image-dir", "/y"]).is_err());
    }

    fn plan(words: &[&str]) -> Result<Plan, Error> {
        Plan::from_args(&BenchArgs::try_from_words(words).unwrap())
    }

    #[test]
    fn studies_select_cases_and_the_s3_s4_runs() {
        let p = plan(&["--study", "s2,S4"]).unwrap();
        assert!(p.cases.iter().all(|(s, _)| s.study == Study::S2));
        assert!(!p.cases.is_empty());
        assert!(p.s4 && !p.s3);
        let p = plan(&["--study", "s3"]).unwrap();
        assert!(p.cases.is_empty() && p.s3);
        let d = plan(&[]).unwrap();
        let default = SCENARIOS
            .iter()
            .filter(|s| s.study != Study::Backends)
            .count();
        assert!(!d.s3 && !d.s4 && d.cases.len() == default);
        let e = plan(&["--study", "s5"]).unwrap_err().to_string();
        assert!(e.contains("expected one of s1, s2, s3, s4, rtrec"), "{e}");
    }

    #[test]
    fn with_fio_needs_s4_and_schedulers_keep_the_tables_order() {
        let e = plan(&["--with-fio"]).unwrap_err().to_string();
        assert!(e.contains("give it with --study s4"), "{e}");
        let p = plan(&["--study", "s4", "--with-fio"]).unwrap();
        assert!(p.s4_with_fio && p.s4_schedulers == s4::SCHEDS);
        let p = plan(&["--study", "s4", "--schedulers", "BFQ-strict,none"]).unwrap();
        assert_eq!(p.s4_schedulers, [s4::SCHEDS[0], s4::SCHEDS[3]]);
        let e = plan(&["--study", "s4", "--schedulers", "cfq"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown scheduler 'cfq'"), "{e}");
    }

    #[test]
    fn cases_run_in_the_order_given_whatever_their_letter_case() {
        let p = plan(&["--cases", "all,Noise-Floor,NONE"]).unwrap();
        let names: Vec<&str> = p.cases.iter().map(|(s, _)| s.name).collect();
        assert_eq!(names, ["ALL", "NOISE-FLOOR", "NONE"]);
    }

    #[test]
    fn bad_values_are_refused_before_anything_runs() {
        let e = plan(&["--cases", "NONE,BOGUS"]).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "unknown case 'BOGUS': expected one of NOISE-FLOOR, PAGECACHE-FLOOR, NONE,"
            ),
            "{e}"
        );
        let e = plan(&["--cases", "NONE,WPRE-SDATA-FON-BGAL"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown case 'WPRE-SDATA-FON-BGAL': did you mean WPRE-SDATA-FON-BGALL? (rtrec bench --list shows every case)"
        );
        let e = plan(&["--cases", "NONE,none"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "case 'NONE' is given twice in --cases; give each case once"
        );
        let e = plan(&["--sets", "0"]).unwrap_err();
        assert_eq!(e.to_string(), "--sets must be at least 1");
        let e = plan(&["--size", "1GiB"]).unwrap_err();
        assert_eq!(e.to_string(), "--size must be at most 50 MiB (half a file)");
        let all = Plan::from_args(&BenchArgs::default()).unwrap();
        assert!(all.cases.iter().all(|(s, _)| s.study != Study::Backends));
    }

    fn names(p: &Plan) -> Vec<&'static str> {
        p.cases.iter().map(|(s, _)| s.name).collect()
    }

    #[test]
    fn a_loaded_rtrec_case_brings_its_same_load_floor_just_before_it() {
        let p = plan(&["--cases", "RTREC-BGALL"]).unwrap();
        assert_eq!(names(&p), ["NOISE-FLOOR-BGALL", "RTREC-BGALL"]);
        let (floor, case) = (p.cases[0].0, p.cases[1].0);
        assert_eq!(
            floor.loads, case.loads,
            "the floor runs under the same loads"
        );
        assert_eq!(floor.timed, crate::scenario::Timed::Memcpy);
        assert_eq!(p.cases[0].1, p.cases[1].1, "and with the same protocol");
        // Once per run, however many cases need it; given, it stays where it is.
        let p = plan(&["--cases", "RTREC-DIRECT-BGTRUNC,RTREC-BGTRUNC"]).unwrap();
        assert_eq!(
            names(&p),
            [
                "NOISE-FLOOR-BGTRUNC",
                "RTREC-DIRECT-BGTRUNC",
                "RTREC-BGTRUNC"
            ]
        );
        let p = plan(&["--cases", "NOISE-FLOOR-BGREAD,NONE,RTREC-BGREAD"]).unwrap();
        assert_eq!(names(&p), ["NOISE-FLOOR-BGREAD", "NONE", "RTREC-BGREAD"]);
        // The studies' cases and unloaded ones bring none.
        let p = plan(&["--cases", "ALL-BGALL,RTREC,FALLOCATE-BGTRUNCSYNC"]).unwrap();
        assert_eq!(names(&p), ["ALL-BGALL", "RTREC", "FALLOCATE-BGTRUNCSYNC"]);
    }

    #[test]
    fn every_floor_of_a_run_serves_a_case_of_that_run_under_its_loads() {
        for words in [&[][..], &["--study", "rtrec"], &["--study", "backends"]] {
            let p = plan(words).unwrap();
            for (f, _) in p.cases.iter().filter(|(s, _)| s.is_loaded_floor()) {
                let served = p
                    .cases
                    .iter()
                    .any(|(s, _)| s.needs_same_load_floor() && s.loads == f.loads);
                assert!(served, "{words:?}: {} serves no case", f.name);
            }
            for (s, _) in p.cases.iter().filter(|(s, _)| s.needs_same_load_floor()) {
                let at = |n: &str| p.cases.iter().position(|(c, _)| c.name == n);
                let floor = crate::scenario::same_load_floor(s.loads).unwrap();
                assert!(at(floor.name) < at(s.name), "{words:?}: {}", s.name);
            }
        }
        let names = names(&plan(&["--study", "backends"]).unwrap());
        assert!(names.contains(&"RTREC-URING-BGALL") && names.contains(&"RTREC-BGALL"));
        assert!(!names.contains(&"ALL"));
    }
}
