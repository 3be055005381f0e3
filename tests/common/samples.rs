//! A short recording with a real loss, for the table and MCAP export tests:
//! records of the layout `t:u32,x:f32,y:f32`, one of them too large; and
//! bytes recorded from stdin across several files ([`record_stdin`]); a
//! recording's JSON lines export ([`export_jsonl`]).

use std::path::Path;

use rtrec_engine::{Config, Recorder};

/// The record of sequence number `i` under the layout `t:u32,x:f32,y:f32`.
pub fn sample(i: u32) -> Vec<u8> {
    let mut b = i.to_le_bytes().to_vec();
    b.extend_from_slice(&(i as f32 * 0.5).to_le_bytes());
    b.extend_from_slice(&(-(i as f32)).to_le_bytes());
    b
}

/// Records 10 samples into `dir` through the library; the fourth (seq 3)
/// is one byte too large, so the file stores a `too_large` loss there.
pub fn recording_with_a_loss(dir: &Path) -> Recorder {
    let cfg = Config {
        max_record: 12,
        file_size: 1 << 20,
        ..Config::default()
    };
    let mut rec = Recorder::create(dir, cfg).unwrap();
    for i in 0..10u32 {
        let mut r = sample(i);
        if i == 3 {
            r.push(0);
        }
        let _ = rec.record(&r);
    }
    rec
}

/// Records `input` from stdin into `dir` in 4 KiB records and 64 KiB
/// files (so it spans several files).
pub fn record_stdin(dir: &Path, input: &[u8]) {
    let d = dir.to_str().unwrap();
    let args = [
        "record",
        "--stdin",
        "--quiet",
        "--size",
        "4KiB",
        "--file-size",
        "64KiB",
        "--dir",
        d,
    ];
    let o = super::rtrec_stdin(&args, input);
    assert_eq!(o.status.code(), Some(0), "{}", super::show(&o));
}

/// `rtrec export --format jsonl --allow-gaps` of `dir` with `extra`
/// flags: one object a row.
pub fn export_jsonl(dir: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["export", "--format", "jsonl", "--allow-gaps"];
    args.extend(extra);
    args.extend([dir.to_str().unwrap(), "-o", "-"]);
    let o = super::rtrec(&args);
    assert_eq!(o.status.code(), Some(0), "{}", super::show(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
