//! A loop recording's disk budget (issue 31, finding 3: "no disk budget";
//! docs/unattended.md, "Disk budget"): `rtrec record --keep` runs past
//! its budget on a partition smaller than what it writes without filling
//! it, `verify DIR` exits 0 afterwards and says which records were
//! retired, and `export DIR` reads it with no flag. While it writes ten
//! times its budget, the disk it takes, sampled every 100 ms (`st_blocks`
//! of every file in the directory and in `.pool/`), stays within the
//! stated bound: budget + one file + the pool's spare files + metadata,
//! beside a busy loop on every CPU.
//!
//! `RTREC_DU_CSV=PATH` writes the samples as CSV, `RTREC_DU_SVG=PATH` a
//! plot of them against the bound (docs/unattended-du.svg is one).

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::record_args::RecordArgs;
use common::{rtrec, show};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};

const MIB: u64 = 1 << 20;
/// The recording's files.
const FILE: u64 = MIB;
/// `--keep`: four files.
const BUDGET: u64 = 4 * MIB;
/// `--pool-files`: the pool's target count.
const POOL_FILES: u64 = 2;
/// Written in all: ten times the budget, more than the partition holds.
const TOTAL: u64 = 10 * BUDGET;
/// What the directory's small files may take (name claims, locks,
/// `pool.json`: a block each, with room to spare).
const METADATA: u64 = 64 << 10;

/// Bytes on disk (`st_blocks`) of every file in `dir` and in `dir/.pool`.
fn du(dir: &Path) -> u64 {
    // By inode: the retire thread renames a file from the directory into
    // `.pool/` (and the writer takes one back) while the two listings are
    // read, so a file can be listed in both; counted by path it was
    // counted twice (a sample 2 MiB over the bound under CPU load, in CI).
    // A file deleted or renamed between a listing and its stat is counted
    // where it is found next, or not at all.
    let mut seen = std::collections::BTreeMap::new();
    for d in [dir.to_path_buf(), dir.join(".pool")] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if let Ok(m) = std::fs::symlink_metadata(e.path()) {
                if m.is_file() {
                    seen.insert(m.ino(), m.blocks() * 512);
                }
            }
        }
    }
    seen.values().sum()
}

/// The recording of the test: ten times its budget, files of 1 MiB, the
/// pool's default policies, the producer waiting for room (no drop).
fn loop_args(dir: &Path, json: &Path) -> RecordArgs {
    RecordArgs::into_dir(dir)
        .set("--period", "2ms")
        .set("--size", "16KiB")
        .set("--total", format!("{}MiB", TOTAL / MIB))
        .set("--file-size", "1MiB")
        .set("--keep", format!("{}MiB", BUDGET / MIB))
        .set("--pool-files", POOL_FILES.to_string())
        .set("--on-full", "block")
        .set("--json", json.to_str().unwrap())
}

#[test]
fn a_loop_recording_stays_within_its_disk_bound_and_verifies_clean() {
    if !require_privileged("a_loop_recording_stays_within_its_disk_bound_and_verifies_clean") {
        return;
    }
    // 32 MiB: less than the 40 MiB the recording writes.
    let fs = LoopFs::create(&LoopFsOptions {
        size: 32 * MIB,
        journal_mib: 4,
        ..LoopFsOptions::default()
    })
    .unwrap();
    let dir = fs.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let json = fs.path().join("rec.json");
    let args = loop_args(&dir, &json);
    let words = args.words();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(&words)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Beside a busy loop on every CPU: the retire thread gets only its
    // share, and the bound must hold anyway (at nice 19 and without the
    // writer's catch-up it was broken by 3 files so).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs: Vec<_> = (0..cpus)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut samples: Vec<(f64, u64)> = Vec::new();
    while child.try_wait().unwrap().is_none() {
        samples.push((t0.elapsed().as_secs_f64(), du(&dir)));
        std::thread::sleep(Duration::from_millis(100));
    }
    samples.push((t0.elapsed().as_secs_f64(), du(&dir)));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", show(&out));

    let bound = BUDGET + FILE + POOL_FILES * FILE + METADATA;
    let max = samples.iter().map(|s| s.1).max().unwrap();
    eprintln!(
        "{} samples, max {max} bytes, bound {bound} bytes (budget {BUDGET} + one file {FILE} + {POOL_FILES} pool files + {METADATA} metadata)",
        samples.len()
    );
    write_plot(&samples, bound);
    for (t, bytes) in &samples {
        assert!(
            *bytes <= bound,
            "at {t:.1} s the recording took {bytes} bytes, more than its bound {bound}"
        );
    }

    // It wrote ten times its budget, retired what was over it, dropped
    // nothing.
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["records_dropped"], 0, "{v}");
    assert!(
        v["bytes_written"].as_u64().unwrap() >= TOTAL - 16 * 1024,
        "{v}"
    );
    let retired = v["retired_files"].as_u64().unwrap();
    assert!(retired >= 30, "{v}");
    assert!(
        v["retired_bytes"].as_u64().unwrap() >= retired * (FILE / 2),
        "{v}"
    );
    let seq_to = v["retired_seq_to"].as_u64().unwrap();
    assert!(seq_to > 0, "{v}");
    // Every claim was made durable: no retired file was kept for want of
    // one.
    assert_eq!(v["retired_unclaimed"], 0, "{v}");

    // verify DIR: clean, and it says which records were retired.
    let o = rtrec(&["verify", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let said = format!("seq 0–{} (files 0–", seq_to - 1);
    assert!(
        text.contains(&said) && text.contains("retired by the loop, the last at"),
        "{text}"
    );

    // export DIR: no flag needed; the records kept, exactly.
    let raw = fs.path().join("out.raw");
    let o = rtrec(&["export", dir.to_str().unwrap(), "-o", raw.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let records_total = v["records_written"].as_u64().unwrap();
    let kept = std::fs::metadata(&raw).unwrap().len() / (16 * 1024);
    assert_eq!(kept + seq_to, records_total);
    std::fs::remove_file(&raw).unwrap();
    fs.remove().unwrap();
}

/// `RTREC_DU_CSV`: the samples as `seconds,bytes`; `RTREC_DU_SVG`: a plot
/// of them (MiB over seconds) with the bound and the budget as lines.
fn write_plot(samples: &[(f64, u64)], bound: u64) {
    if let Some(p) = std::env::var_os("RTREC_DU_CSV") {
        let mut csv = String::from("seconds,bytes\n");
        for (t, b) in samples {
            csv += &format!("{t:.3},{b}\n");
        }
        std::fs::write(p, csv).unwrap();
    }
    if let Some(p) = std::env::var_os("RTREC_DU_SVG") {
        std::fs::write(p, svg(samples, bound)).unwrap();
    }
}

/// A small hand-written SVG: the samples as a line, the bound and the
/// budget as dashed lines, axes in seconds and MiB.
fn svg(samples: &[(f64, u64)], bound: u64) -> String {
    let (w, h, left, bottom) = (640.0, 320.0, 60.0, 40.0);
    let t_max = samples.last().map_or(1.0, |s| s.0).max(1.0);
    let y_max = (bound as f64 / MIB as f64 * 1.15).ceil();
    let x = |t: f64| left + t / t_max * (w - left - 20.0);
    let y = |mib: f64| h - bottom - mib / y_max * (h - bottom - 20.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let points: Vec<String> = samples
        .iter()
        .map(|(t, b)| format!("{:.1},{:.1}", x(*t), y(*b as f64 / MIB as f64)))
        .collect();
    for (mib, label, color) in [
        (bound as f64 / MIB as f64, "bound", "#c0392b"),
        (BUDGET as f64 / MIB as f64, "budget (--keep)", "#7f8c8d"),
    ] {
        s += &format!(
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"{color}\" stroke-dasharray=\"6 4\"/>\n<text x=\"{2:.1}\" y=\"{3:.1}\" fill=\"{color}\" text-anchor=\"end\">{label} {mib:.2} MiB</text>\n",
            y(mib),
            w - 20.0,
            w - 22.0,
            y(mib) - 4.0
        );
    }
    s += &format!(
        "<polyline fill=\"none\" stroke=\"#2c6fbb\" stroke-width=\"2\" points=\"{}\"/>\n",
        points.join(" ")
    );
    s += &format!(
        "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/>\n<line x1=\"{left}\" y1=\"20\" x2=\"{left}\" y2=\"{0}\" stroke=\"black\"/>\n",
        h - bottom,
        w - 20.0
    );
    for i in 0..=4 {
        let t = t_max * i as f64 / 4.0;
        let mib = y_max * i as f64 / 4.0;
        s += &format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{t:.1}</text>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{mib:.1}</text>\n",
            x(t),
            h - bottom + 16.0,
            left - 6.0,
            y(mib) + 4.0
        );
    }
    s += &format!(
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">seconds (a recording writing {} MiB, ten times its budget; du sampled every 100 ms)</text>\n<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">MiB on disk</text>\n</svg>\n",
        (left + w) / 2.0,
        h - 6.0,
        TOTAL / MIB,
        h / 2.0,
        h / 2.0
    );
    s
}
