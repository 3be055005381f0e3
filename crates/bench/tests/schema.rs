//! The `--json` result matches `docs/bench-schema.md` field by field, and
//! reads back; checked on a report built without running anything (the
//! privileged smoke test checks a real one).

mod common;

use rtrec_bench::benchmark::histogram_base64;
use rtrec_bench::export::{Exporter, JsonExporter, SvgExporter};
use rtrec_bench::output::table;
use rtrec_bench::protocol::{Overrides, Protocol};
use rtrec_bench::report::{
    BenchReport, CaseResult, Environment, ReaderResult, SetResult, SCHEMA_VERSION,
};
use rtrec_bench::scenario::{self, Flusher};
use rtrec_engine::Latency;

fn fake_case(name: &str, scale: u64) -> CaseResult {
    let s = scenario::find(name).unwrap();
    let p = Protocol::for_study(
        s.study,
        &Overrides {
            writes: Some(5),
            sets: Some(2),
            ..Overrides::default()
        },
    );
    let mut c = CaseResult::new(s, &p, s.flusher);
    let mut lat = Latency::new();
    let samples: Vec<u64> = (1..=5).map(|i| i * scale).collect();
    samples.iter().for_each(|&v| lat.record(v));
    for index in 0..2 {
        c.sets.push(SetResult {
            index,
            write_ns: lat.summary(),
            record_ns: name.starts_with("RTREC").then(|| lat.summary()).flatten(),
            lateness_ns: lat.summary(),
            missed_periods: 0,
            flush_cpu_s: s.config(&p).map(|_| 0.25),
            writer_cpu_s: s.config(&p).map(|_| 0.5),
            dirty_peak_bytes: 3 << 20,
            records_dropped: 0,
            reader_bytes_per_s: s.loads.contains(&scenario::Load::Read).then_some(1e8),
            duration_s: 0.025,
            error: None,
        });
    }
    c.reported_set = Some(1);
    c.write_ns = lat.summary();
    c.record_ns = c.sets[1].record_ns;
    c.lateness_ns = lat.summary();
    c.flush_cpu_s = c.sets[1].flush_cpu_s;
    c.writer_cpu_s = c.sets[1].writer_cpu_s;
    c.dirty_peak_bytes = 3 << 20;
    if c.sets[1].reader_bytes_per_s.is_some() {
        c.reader = Some(ReaderResult {
            alone_bytes_per_s: 1.25e8,
            during_bytes_per_s: Some(1e8),
            during_pct: Some(80.0),
        });
    }
    c.write_samples_ns = samples;
    c.write_histogram_v2_base64 = histogram_base64(&lat);
    c.rt = Some(rtrec_bench::producer::RtReport::from_outcome(
        &rtrec_bench::producer::RtRequest::default(),
        Vec::new(),
        Some((1, 80)),
    ));
    c
}

fn fake_report() -> BenchReport {
    let mut r = BenchReport {
        schema_version: SCHEMA_VERSION,
        environment: Environment {
            command_line: vec!["rtrec".into(), "bench".into()],
            device_profile: "emmc".into(),
            emulator: Some(rtrec_emu::EmulatorStats {
                profile: "emmc".into(),
                ..Default::default()
            }),
            ..Environment::default()
        },
        warnings: vec!["a warning".into()],
        complete: true,
        interrupted: false,
        cases: vec![
            fake_case("NOISE-FLOOR", 1_000),
            fake_case("NONE", 100_000),
            fake_case("ALL", 50_000),
            fake_case("NONE-BGREAD", 200_000),
            fake_case("FALLOCATE", 70_000),
            fake_case("RTREC", 20_000),
            fake_case("NOISE-FLOOR-BGALL", 4_000),
            fake_case("RTREC-BGALL", 40_000),
        ],
        s3: None,
        s4: None,
    };
    r.fill_floor_ratios();
    r
}

#[test]
fn a_report_matches_the_documented_schema_and_reads_back() {
    let r = fake_report();
    let bytes = JsonExporter.serialize(&r).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    common::check(&v);
    let back: BenchReport = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back.cases.len(), r.cases.len());
    assert_eq!(back.cases[1].write_ns, r.cases[1].write_ns);
}

#[test]
fn the_histogram_export_is_lossless_hdr_v2() {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    let c = fake_case("NONE", 100_000);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(c.write_histogram_v2_base64.unwrap())
        .unwrap();
    let h: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
    assert_eq!(h.len(), 5);
    assert!(h.equivalent(h.max(), 500_000));
}

#[test]
fn the_results_table_puts_published_beside_measured_with_ratios() {
    let t = table::render_results(&fake_report());
    let none = t.lines().find(|l| l.starts_with("NONE ")).unwrap();
    // Published 141 / 259 / 4,454 µs (4.45 ms); measured max 500 µs; ALL's
    // max 250 µs (×2.0 here, ×14 published); NOISE-FLOOR's max 5 µs (×100).
    for cell in [
        "141", "259", "4.45", "ms", "500", "µs", "ALL", "14", "2.0", "100",
    ] {
        assert!(
            none.split_whitespace().any(|w| w == cell),
            "'{cell}' missing from: {none}"
        );
    }
    assert!(t.contains("PUBLISHED"));
    assert!(
        t.contains("NONE-BGREAD: the reader ran at 80 % of its throughput alone (published 79 %)"),
        "{t}"
    );
    assert!(t.contains("RTREC: record() on the producer"), "{t}");
    // RTREC-BGALL's record() (max 200 µs, p99 200 µs) against memcpy under
    // BGALL in the same report (max 20 µs) and the quiet floor (5 µs).
    assert!(
        t.contains("RTREC-BGALL: record() max 200 µs (p99 200 µs) against memcpy in this run: max 10× / p99 10× its same-load floor NOISE-FLOOR-BGALL's; 40× / p99 40× the quiet NOISE-FLOOR's"),
        "{t}"
    );
    let row = t.lines().find(|l| l.starts_with("RTREC-BGALL ")).unwrap();
    assert!(row.trim_end().ends_with(" 10"), "same-load column: {row}");
    assert!(
        t.contains("Every case's timed thread (S1's and S2's too): SCHED_FIFO 80 (writer 79), mlockall, any CPU: granted (S1 does not state"),
        "{t}"
    );
}

#[test]
fn compare_prints_new_over_old_per_case() {
    let old = fake_report();
    let mut new = fake_report();
    new.cases[1].write_ns.as_mut().unwrap().max *= 3;
    let t = table::render_compare(&old, &new);
    let none = t.lines().find(|l| l.starts_with("NONE ")).unwrap();
    assert!(none.contains("3.0"), "{none}");
    assert!(none.contains("1.5 ms"), "{none}");
}

#[test]
fn the_list_names_every_case_with_its_published_figure() {
    let t = table::render_list();
    for s in scenario::SCENARIOS {
        assert!(
            t.lines().any(|l| l.starts_with(&format!("{} ", s.name))),
            "{} missing",
            s.name
        );
    }
    assert!(t
        .lines()
        .any(|l| l.starts_with("WPRE-SDATA-FON-BGALL") && l.contains("122 ms")));
    assert!(t
        .lines()
        .any(|l| l.starts_with("ALL ") && l.contains(" off ")));
    assert_eq!(scenario::find("NONE").unwrap().flusher, Flusher::On);
}

#[test]
fn the_list_groups_cases_by_study_and_names_s3_and_s4() {
    let t = table::render_list();
    let heads: Vec<usize> = ["s1", "s2", "rtrec", "s3", "s4"]
        .iter()
        .map(|s| {
            t.find(&format!("--study {s}:"))
                .unwrap_or_else(|| panic!("no group for {s}"))
        })
        .collect();
    assert!(heads.windows(2).all(|w| w[0] < w[1]), "in --study order");
    // Each case sits under its own study's heading.
    let at = |name: &str| t.find(&format!("\n{name} ")).unwrap();
    assert!(at("FALLOCATE") > heads[1] && at("FALLOCATE") < heads[2]);
    assert!(at("NOISE-FLOOR") > heads[2] && at("NOISE-FLOOR") < heads[3]);
    assert!(at("S3-FSYNC-JOURNAL") > heads[3] && at("S3-FSYNC-JOURNAL") < heads[4]);
    assert!(at("RTREC-ISOLATED-BFQ-BOTH") > heads[4]);
    assert!(t.contains("2.4–6.3 s unpatched"), "S3's published figures");
}

#[test]
fn the_plot_is_an_svg_naming_every_case() {
    let svg = String::from_utf8(SvgExporter.serialize(&fake_report()).unwrap()).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    for name in ["NOISE-FLOOR", "NONE-BGREAD", "FALLOCATE", "RTREC"] {
        assert!(svg.contains(name), "{name} missing from the plot");
    }
}
