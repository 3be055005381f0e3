//! What one `record()` call costs a caller (issue 43, item 6): the time
//! between entry and return, measured from outside the call, as a C or Rust
//! caller would time it, beside the figure the recorder's own summary
//! gives (`record_ns`, timed inside the call).
//!
//! Run: `cargo bench -p rtrec-engine --bench record` (a few seconds).
//!
//! Design choice: a plain harness (`harness = false`) with the standard
//! library's clock rather than criterion. The figure wanted is a
//! distribution of single calls under the recorder's real conditions (a
//! writer thread draining the ring, files on a real file system), with
//! nothing dropped; criterion's model (many iterations of a closure, mean
//! and confidence interval) would hide the maximum and fill the ring. A
//! batch of calls is timed as one span and divided, so the clock read
//! (about 20–40 ns) is paid once per batch, not once per call; the
//! writer is given time to drain between batches, so no call meets a full
//! ring, and any drop fails the run.
//!
//! It prints, per record size: calls timed, the per-call mean of each
//! batch (median, p99, max over batches), and the summary's `record_ns`
//! (p50, max). Numbers move with the machine; nothing is asserted about
//! them.

use std::time::{Duration, Instant};

use rtrec_engine::{Config, Recorder};

/// Calls per timed batch: 64 KiB of 1 KiB records, well inside the default
/// ring, so no call waits for room.
const BATCH: usize = 64;
/// Batches per record size.
const BATCHES: usize = 2_000;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it once
    // quickly so the target stays compiled and working.
    let quick = !std::env::args().any(|a| a == "--bench");
    let batches = if quick { 20 } else { BATCHES };
    let dir = std::env::var_os("RTREC_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    println!(
        "record(): {BATCH} calls per batch, {batches} batches per size, files under {}",
        dir.display()
    );
    println!(
        "{:>8} {:>9} {:>12} {:>12} {:>12} {:>16} {:>16}",
        "size", "calls", "median ns", "p99 ns", "max ns", "summary p50 ns", "summary max ns"
    );
    for size in [64usize, 1024, 16 * 1024] {
        let tmp = tempfile::Builder::new()
            .prefix("rtrec-bench-record")
            .tempdir_in(&dir)
            .expect("a temporary directory for the bench's files");
        let cfg = Config {
            max_record: size,
            file_size: 256 << 20,
            ..Config::default()
        };
        let mut rec = Recorder::create(tmp.path(), cfg).expect("a recorder");
        let data = vec![0xa5u8; size];
        let batch = if size > 1024 { BATCH / 16 } else { BATCH };
        let mut means = Vec::with_capacity(batches);
        for _ in 0..batches {
            let t = Instant::now();
            for _ in 0..batch {
                rec.record(&data)
                    .expect("no drop: the ring is drained between batches");
            }
            means.push(t.elapsed().as_nanos() as f64 / batch as f64);
            // Let the writer drain the batch before the next one.
            std::thread::sleep(Duration::from_micros(200));
        }
        let summary = rec.finish().expect("the recording closes");
        assert_eq!(
            summary.records_dropped, 0,
            "a bench that dropped is not a figure"
        );
        means.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
        let (p50, max) = summary
            .record_ns
            .as_ref()
            .map(|l| (l.p50.to_string(), l.max.to_string()))
            .unwrap_or(("-".into(), "-".into()));
        println!(
            "{:>8} {:>9} {:>12.0} {:>12.0} {:>12.0} {:>16} {:>16}",
            size,
            batches * batch,
            at(0.5),
            at(0.99),
            at(1.0),
            p50,
            max
        );
    }
}
