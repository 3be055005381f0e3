//! `rtrec report` on what `rtrec record --json --timeline` writes: one
//! self-contained page with the latency table, box rows, the timeline and
//! its histogram; bad input is one sentence and exit code 2. (The bench
//! report is drawn in a real browser by crates/bench/tests/html_browser.rs.)

use std::process::{Command, Output};

use rtrec_engine::result::{RecordResult, RECORD_SCHEMA_VERSION};

// The bench's schema walker, pointed at docs/record-schema.md.
#[path = "../crates/bench/tests/common/mod.rs"]
mod schema;

fn rtrec(cwd: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("the rtrec binary runs")
}

#[test]
fn a_recording_summary_with_its_timeline_becomes_one_self_contained_page() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir(d.join("rec")).unwrap();
    let o = rtrec(
        d,
        &[
            "record",
            "--dir",
            "rec",
            "--period",
            "1ms",
            "--size",
            "4KiB",
            "--count",
            "300",
            "--quiet",
            "--timeline",
            "--json",
            "s.json",
            "--histogram",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // --histogram: one line per bin, the counts add up to the write() calls.
    let err = String::from_utf8_lossy(&o.stderr);
    let counted: u64 = err
        .lines()
        .filter(|l| l.contains(" |"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("s.json")).unwrap()).unwrap();
    let timeline = v["timeline_write_ns"].as_array().unwrap();
    assert_eq!(timeline.len() as u64, counted, "{err}");
    assert!(!timeline.is_empty());
    // The document is the typed result, every field as documented.
    schema::check_against(&v, "record-schema.md");
    let typed = RecordResult::from_json(&std::fs::read(d.join("s.json")).unwrap()).unwrap();
    assert_eq!(v["kind"], "record");
    assert_eq!(typed.schema_version, RECORD_SCHEMA_VERSION);
    assert_eq!(typed.timeline_write_ns.len(), timeline.len());
    assert_eq!(typed.summary.records_written, 300);
    // One sample per record() call, from the clock reads that made the
    // summary's record() figures: the timeline's max is their max.
    assert_eq!(
        typed.timeline_record_ns.len() as u64,
        typed.summary.records_offered
    );
    assert_eq!(
        typed.timeline_record_ns.iter().max().copied(),
        typed.summary.record_ns.map(|l| l.max)
    );

    let o = rtrec(d, &["report", "s.json", "-o", "s.html"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("s.html")).unwrap();
    for part in [
        "class=\"plot boxplot\"",
        "class=\"plot timeline\"",
        "class=\"plot histogram\"",
        "records written</th><td class=\"l\">300</td>",
        // Under which settings and where: record --json's context.
        "<h2>Context</h2>",
        "rtrec_version</th>",
        "host.kernel</th>",
        "target.filesystem</th>",
        "realtime.granted</th>",
        ">write()</td>",
    ] {
        assert!(html.contains(part), "{part} missing");
    }
    assert!(!html.contains("<script"), "no script in the page");
}

#[test]
fn report_refuses_what_it_cannot_draw_in_one_sentence() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.json"), "not json").unwrap();
    let o = rtrec(d, &["report", "x.json", "-o", "x.html"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("is not the JSON of"), "{err}");
    assert!(!d.join("x.html").exists());
    std::fs::write(d.join("s.json"), "{\"records_written\": 1}").unwrap();
    let o = rtrec(d, &["report", "s.json", "--box-plot", "-o", "b.svg"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.join("b.svg").exists());
    // A recording's result that lacks fields, or comes from a newer rtrec.
    let o = rtrec(d, &["report", "s.json", "-o", "s.html"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is not the result of `rtrec record --json`"),
        "{err}"
    );
    std::fs::write(
        d.join("n.json"),
        format!(
            "{{\"kind\": \"record\", \"schema_version\": {}}}",
            RECORD_SCHEMA_VERSION + 1
        ),
    )
    .unwrap();
    let o = rtrec(d, &["report", "n.json", "-o", "n.html"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is written by a newer rtrec"), "{err}");
    assert!(!d.join("s.html").exists() && !d.join("n.html").exists());
}
