//! `record --status FILE.prom` as a fleet's monitoring reads it: the file is
//! parsed by the Prometheus project's own Python client
//! (`prometheus_client.parser`), not by a regex of ours, and its final
//! counts agree with the recording's `--json` summary.

mod common;

use std::path::Path;
use std::process::Command;

use common::{rtrec, show};
use rtrec_host::tools;
use serde_json::Value;

/// What the official parser makes of `path`: every family's type, and
/// every sample as `[name, labels, value]`.
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = list(text_string_to_metric_families(open(sys.argv[1]).read()))
print(json.dumps({
    "types": {f.name: f.type for f in families},
    "samples": [[s.name, s.labels, s.value] for f in families for s in f.samples],
}))
"#;

fn have_parser() -> bool {
    Command::new("python3")
        .args(["-c", "import prometheus_client.parser"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn parse(path: &Path) -> Value {
    let o = Command::new("python3")
        .args(["-c", PARSE])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "the parser refused the file: {}",
        show(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The value of the one sample named `name` whose labels include `extra`.
fn sample(v: &Value, name: &str, extra: Option<(&str, &str)>) -> f64 {
    let found: Vec<f64> = v["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == name)
        .filter(|s| extra.is_none_or(|(k, val)| s[1][k] == val))
        .map(|s| s[2].as_f64().unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{name} {extra:?}: {found:?} in {v}");
    found[0]
}

#[test]
fn a_prom_status_file_parses_with_prometheus_client_and_agrees_with_the_summary() {
    let name = "a_prom_status_file_parses_with_prometheus_client_and_agrees_with_the_summary";
    if !have_parser()
        && !tools::skip(
            name,
            "needs Python's prometheus_client (pip install prometheus_client)",
        )
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let prom = out.path().join("rtrec.prom");
    let json = out.path().join("summary.json");
    let o = rtrec(&[
        "record",
        "--dir",
        dir.path().to_str().unwrap(),
        "--period",
        "1ms",
        "--size",
        "1KiB",
        "--count",
        "300",
        "--file-size",
        "1MiB",
        "--no-refill",
        "--quiet",
        "--status",
        prom.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let v = parse(&prom);
    let summary: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();

    // Types as declared, names as Prometheus's conventions ask.
    for counter in [
        "rtrec_records_queued",
        "rtrec_records_written",
        "rtrec_records_durable",
        "rtrec_records_dropped",
        "rtrec_missed_periods",
    ] {
        assert_eq!(v["types"][counter], "counter", "{counter} in {v}");
    }
    for gauge in [
        "rtrec_ring_high_water_bytes",
        "rtrec_write_max_seconds",
        "rtrec_lateness_max_seconds",
        "rtrec_retired_unclaimed_files",
    ] {
        assert_eq!(v["types"][gauge], "gauge", "{gauge} in {v}");
    }

    // The final file holds the final counts, as the summary does.
    assert_eq!(sample(&v, "rtrec_recording_done", None), 1.0);
    let u = |k: &str| summary[k].as_u64().unwrap() as f64;
    assert_eq!(
        sample(&v, "rtrec_retired_unclaimed_files", None),
        u("retired_unclaimed")
    );
    assert_eq!(
        sample(&v, "rtrec_records_queued_total", None),
        u("records_queued")
    );
    assert_eq!(
        sample(&v, "rtrec_records_written_total", None),
        u("records_written")
    );
    assert_eq!(
        sample(&v, "rtrec_records_durable_total", None),
        u("durable_seq")
    );
    assert_eq!(u("records_written"), 300.0);
    let mut dropped = 0.0;
    for cause in ["ring_full", "too_large", "writer_failed"] {
        dropped += sample(&v, "rtrec_records_dropped_total", Some(("cause", cause)));
    }
    assert_eq!(dropped, u("records_dropped"));
    assert_eq!(
        sample(&v, "rtrec_missed_periods_total", None),
        u("missed_periods")
    );
    // Seconds, not ns: the longest write() is the summary's max / 1e9.
    let max_write = summary["write_ns"]["max"].as_f64().unwrap() / 1e9;
    let reported = sample(&v, "rtrec_write_max_seconds", None);
    assert!(
        (reported - max_write).abs() < 1e-9,
        "{reported} vs {max_write}"
    );
    let lateness = summary["lateness_ns"]["max"].as_f64().unwrap() / 1e9;
    let reported = sample(&v, "rtrec_lateness_max_seconds", None);
    assert!(
        (reported - lateness).abs() < 1e-9,
        "{reported} vs {lateness}"
    );
    // The ring was there and held data at some point.
    assert!(sample(&v, "rtrec_ring_capacity_bytes", None) > 0.0);
    assert!(sample(&v, "rtrec_ring_high_water_bytes", None) > 0.0);
    // Every series says whose it is.
    let labels = &v["samples"][0][1];
    assert_eq!(labels["dir"], dir.path().to_str().unwrap());
    assert_eq!(labels["prefix"], "rec");
    // Nothing but the file is left beside it (no temporary file).
    let names: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}
