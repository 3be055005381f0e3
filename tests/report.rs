//! `rtrec report` on what `rtrec record --json --timeline` writes: one
//! self-contained page with the latency table, box rows, the timeline and
//! its histogram; bad input is one sentence and exit code 2. (The bench
//! report is drawn in a real browser by crates/bench/tests/html_browser.rs.)

use std::process::{Command, Output};

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

    let o = rtrec(d, &["report", "s.json", "-o", "s.html"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("s.html")).unwrap();
    for part in [
        "class=\"plot boxplot\"",
        "class=\"plot timeline\"",
        "class=\"plot histogram\"",
        "write_ns",
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
}
