//! `record --status FILE`: the recording's live counters, kept in a file
//! that is replaced atomically about every 20 ms and once more with the
//! final counts when the recording has ended.
//!
//! Two formats, chosen by the file's name (design choice: the name is what
//! the reader already keys on — node_exporter's textfile collector reads
//! only `*.prom` files — so no second flag can disagree with it):
//! - `*.prom`: the Prometheus text exposition format (version 0.0.4), for
//!   node_exporter's textfile collector (`docs/status.md`). Counters end in
//!   `_total`, times are in seconds and sizes in bytes, as Prometheus's
//!   naming conventions ask (the `# TYPE` line names the series as
//!   node_exporter's own do: `…_total`); every series carries the recording's `dir` and
//!   `prefix` as labels, so several recorders on one board stay apart.
//! - anything else: one JSON line (the [`LiveSnapshot`] fields and `done`).
//!
//! The temporary file is created `O_EXCL|O_NOFOLLOW` relative to the
//! directory and renamed over the name (a planted symlink is replaced,
//! never written through); its name starts with a dot and ends in `.tmp`,
//! so the textfile collector never reads a half-written file. It is not
//! fsynced: it is for watching, and lives outside the recording's
//! filesystem.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rtrec_engine::{LiveSnapshot, LiveStats};

/// How often the file is replaced while recording.
const INTERVAL: Duration = Duration::from_millis(20);

/// The format of a status file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON line.
    Json,
    /// Prometheus text exposition format 0.0.4.
    Prometheus,
}

impl Format {
    /// `*.prom` is [`Format::Prometheus`], anything else [`Format::Json`].
    pub fn of(path: &Path) -> Format {
        match path.extension() {
            Some(e) if e == "prom" => Format::Prometheus,
            _ => Format::Json,
        }
    }
}

/// Who the counters belong to: the labels of every Prometheus series.
#[derive(Clone, Debug)]
pub struct Labels {
    /// The recording's directory.
    pub dir: String,
    /// The recording's file-name prefix.
    pub prefix: String,
}

/// The JSON line: the snapshot's fields and `done`, in the order of their
/// names. Design choice: written by hand, not through a
/// `serde_json::Value` (the board's record-only binary has no room for
/// serde_json's value serialiser, docs/embedded.md), with the keys in the
/// order such a value wrote them, so the line is the same; a unit test
/// holds the two to the same text.
pub fn json(s: &LiveSnapshot, done: bool) -> String {
    let n = |v: u64| v.to_string();
    let b = |v: bool| v.to_string();
    let fields = [
        ("bytes_written", n(s.bytes_written)),
        ("done", b(done)),
        ("drops_ring_full", n(s.drops_ring_full)),
        ("drops_too_large", n(s.drops_too_large)),
        ("drops_writer_failed", n(s.drops_writer_failed)),
        ("durable_seq", n(s.durable_seq)),
        ("events", n(s.events)),
        ("max_lateness_ns", n(s.max_lateness_ns)),
        ("max_write_ns", n(s.max_write_ns)),
        ("missed_periods", n(s.missed_periods)),
        ("records_dropped", n(s.records_dropped)),
        ("records_queued", n(s.records_queued)),
        ("records_taken", n(s.records_taken)),
        ("records_written", n(s.records_written)),
        ("retired_bytes", n(s.retired_bytes)),
        ("retired_files", n(s.retired_files)),
        ("retired_unclaimed", n(s.retired_unclaimed)),
        ("retired_unshipped", n(s.retired_unshipped)),
        ("retired_unshipped_bytes", n(s.retired_unshipped_bytes)),
        ("ring_capacity_bytes", n(s.ring_capacity_bytes)),
        ("ring_high_water_bytes", n(s.ring_high_water_bytes)),
        ("ring_used_bytes", n(s.ring_used_bytes)),
        ("writer_failed", b(s.writer_failed)),
        ("written_seq", n(s.written_seq)),
    ];
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{key}\":{value}");
    }
    out.push_str("}\n");
    out
}

/// A label value escaped as the exposition format asks (`\\`, `\"`,
/// `\n`).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A series: its name (as the `# TYPE` line gives it), type, help text,
/// and its samples' extra labels and values (from a snapshot, and whether
/// the recording has ended).
type Series = (
    &'static str,
    &'static str,
    &'static str,
    fn(&LiveSnapshot, bool) -> Vec<(&'static str, f64)>,
);

/// Every series, in the order the file lists them (docs/status.md).
const SERIES: &[Series] = &[
    (
        "rtrec_records_queued_total",
        "counter",
        "Records accepted by record() (copied into the ring, or written in inline mode).",
        |s, _| vec![("", s.records_queued as f64)],
    ),
    (
        "rtrec_records_written_total",
        "counter",
        "Records whose write() returned: they survive the death of the process.",
        |s, _| vec![("", s.records_written as f64)],
    ),
    (
        "rtrec_records_taken_total",
        "counter",
        "Records the writer thread is done with (its heartbeat): queued minus taken wait for it; a count that stops while records wait is a stuck writer.",
        |s, _| vec![("", s.records_taken as f64)],
    ),
    (
        "rtrec_writer_failed",
        "gauge",
        "1 once writing failed for good: every record is dropped and counted, and the recording ends (exit 1).",
        |s, _| vec![("", if s.writer_failed { 1.0 } else { 0.0 })],
    ),
    (
        "rtrec_records_durable_total",
        "counter",
        "Records below the durable point (on storage, or their loss is): they survive a power cut.",
        |s, _| vec![("", s.durable_seq as f64)],
    ),
    (
        "rtrec_records_dropped_total",
        "counter",
        "Records dropped, by cause; each loss is stored in the recording.",
        |s, _| {
            vec![
                ("cause=\"ring_full\"", s.drops_ring_full as f64),
                ("cause=\"too_large\"", s.drops_too_large as f64),
                ("cause=\"writer_failed\"", s.drops_writer_failed as f64),
            ]
        },
    ),
    (
        "rtrec_written_bytes_total",
        "counter",
        "Payload bytes written.",
        |s, _| vec![("", s.bytes_written as f64)],
    ),
    (
        "rtrec_missed_periods_total",
        "counter",
        "Periods whose release was missed (synthetic source).",
        |s, _| vec![("", s.missed_periods as f64)],
    ),
    (
        "rtrec_flight_events_total",
        "counter",
        "Flight-recorder events started.",
        |s, _| vec![("", s.events as f64)],
    ),
    (
        "rtrec_retired_files_total",
        "counter",
        "Files a loop recording (--keep) or --keep-events retired (recycled into the pool or deleted).",
        |s, _| vec![("", s.retired_files as f64)],
    ),
    (
        "rtrec_retired_bytes_total",
        "counter",
        "Bytes of the retired files (header and frames).",
        |s, _| vec![("", s.retired_bytes as f64)],
    ),
    (
        "rtrec_retired_unclaimed_files",
        "gauge",
        "Retired files kept on disk because the claim or retirement record naming them could not be made durable: the directory grows past its budget by these.",
        |s, _| vec![("", s.retired_unclaimed as f64)],
    ),
    (
        "rtrec_retired_unshipped_files_total",
        "counter",
        "Files of earlier recordings not yet shipped (rtrec ship's ledger) that the loop's budget retired, beyond --unshipped-headroom or by the age limit.",
        |s, _| vec![("", s.retired_unshipped as f64)],
    ),
    (
        "rtrec_retired_unshipped_bytes_total",
        "counter",
        "Bytes on disk of those files.",
        |s, _| vec![("", s.retired_unshipped_bytes as f64)],
    ),
    (
        "rtrec_ring_capacity_bytes",
        "gauge",
        "The ring's capacity (0 without a ring).",
        |s, _| vec![("", s.ring_capacity_bytes as f64)],
    ),
    (
        "rtrec_ring_used_bytes",
        "gauge",
        "Bytes waiting in the ring at the writer's last look.",
        |s, _| vec![("", s.ring_used_bytes as f64)],
    ),
    (
        "rtrec_ring_high_water_bytes",
        "gauge",
        "The fullest the ring has been since the start.",
        |s, _| vec![("", s.ring_high_water_bytes as f64)],
    ),
    (
        "rtrec_write_max_seconds",
        "gauge",
        "The longest write() call since the start.",
        |s, _| vec![("", s.max_write_ns as f64 / 1e9)],
    ),
    (
        "rtrec_lateness_max_seconds",
        "gauge",
        "The latest a period's release has been since the start.",
        |s, _| vec![("", s.max_lateness_ns as f64 / 1e9)],
    ),
    (
        "rtrec_recording_done",
        "gauge",
        "1 once the recording has ended and these are its final counts.",
        |_, done| vec![("", if done { 1.0 } else { 0.0 })],
    ),
];

/// The Prometheus text: one `# HELP` and `# TYPE` per series, one sample
/// per label set.
pub fn prometheus(s: &LiveSnapshot, done: bool, labels: &Labels) -> String {
    let base = format!(
        "dir=\"{}\",prefix=\"{}\"",
        escape(&labels.dir),
        escape(&labels.prefix)
    );
    let mut out = String::new();
    for (name, kind, help, samples) in SERIES {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (extra, value) in samples(s, done) {
            let sep = if extra.is_empty() { "" } else { "," };
            let _ = writeln!(out, "{name}{{{base}{sep}{extra}}} {value}");
        }
    }
    out
}

/// Starts the thread that keeps `path` up to date until `done` is set,
/// then writes the final counts once more and ends.
pub fn spawn(
    path: PathBuf,
    labels: Labels,
    live: Arc<LiveStats>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<std::io::Result<()>> {
    let format = Format::of(&path);
    std::thread::spawn(move || {
        let (dir, name) = rtrec_sys::Dir::of_file(&path)?;
        let mut tmp = std::ffi::OsString::from(".");
        tmp.push(name);
        tmp.push(".tmp");
        let name = name.to_os_string();
        loop {
            let finished = done.load(Ordering::Acquire);
            let snap = live.snapshot();
            let text = match format {
                Format::Json => json(&snap, finished),
                Format::Prometheus => prometheus(&snap, finished, &labels),
            };
            dir.remove_file(&tmp)?;
            dir.create_excl(&tmp, 0o644)?.write_all(text.as_bytes())?;
            dir.rename_replace(&tmp, &name)?;
            if finished {
                return Ok(());
            }
            std::thread::sleep(INTERVAL);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> LiveSnapshot {
        LiveSnapshot {
            records_queued: 10,
            records_written: 9,
            records_dropped: 3,
            durable_seq: 8,
            drops_ring_full: 2,
            drops_writer_failed: 1,
            max_write_ns: 1_500_000,
            ring_capacity_bytes: 1 << 20,
            retired_files: 4,
            retired_bytes: 4 << 20,
            retired_unclaimed: 1,
            retired_unshipped: 2,
            retired_unshipped_bytes: 3 << 20,
            records_taken: 7,
            writer_failed: true,
            ..LiveSnapshot::default()
        }
    }

    #[test]
    fn the_name_chooses_the_format() {
        assert_eq!(Format::of(Path::new("/run/x.prom")), Format::Prometheus);
        assert_eq!(Format::of(Path::new("/run/x.json")), Format::Json);
        assert_eq!(Format::of(Path::new("/run/prom")), Format::Json);
    }

    #[test]
    fn prometheus_series_carry_units_causes_and_escaped_labels() {
        let labels = Labels {
            dir: "/data/a \"b\"".into(),
            prefix: "rec".into(),
        };
        let t = prometheus(&snap(), false, &labels);
        let base = r#"dir="/data/a \"b\"",prefix="rec""#;
        for line in [
            format!("rtrec_records_queued_total{{{base}}} 10"),
            format!("rtrec_records_durable_total{{{base}}} 8"),
            format!("rtrec_records_dropped_total{{{base},cause=\"ring_full\"}} 2"),
            format!("rtrec_records_dropped_total{{{base},cause=\"writer_failed\"}} 1"),
            format!("rtrec_write_max_seconds{{{base}}} 0.0015"),
            format!("rtrec_ring_capacity_bytes{{{base}}} 1048576"),
            format!("rtrec_retired_files_total{{{base}}} 4"),
            format!("rtrec_retired_bytes_total{{{base}}} 4194304"),
            format!("rtrec_retired_unclaimed_files{{{base}}} 1"),
            format!("rtrec_retired_unshipped_files_total{{{base}}} 2"),
            format!("rtrec_retired_unshipped_bytes_total{{{base}}} 3145728"),
            format!("rtrec_recording_done{{{base}}} 0"),
            format!("rtrec_records_taken_total{{{base}}} 7"),
            format!("rtrec_writer_failed{{{base}}} 1"),
            "# TYPE rtrec_records_dropped_total counter".to_string(),
        ] {
            assert!(t.lines().any(|l| l == line), "no line {line:?} in\n{t}");
        }
    }

    #[test]
    fn the_json_line_is_what_a_serde_json_value_wrote() {
        // Every field a different value, so a key paired with another
        // field's value shows.
        let s = LiveSnapshot {
            records_queued: 101,
            records_written: 102,
            records_dropped: 103,
            written_seq: 104,
            durable_seq: 105,
            events: 106,
            bytes_written: 107,
            drops_ring_full: 108,
            drops_too_large: 109,
            drops_writer_failed: 110,
            missed_periods: 111,
            max_write_ns: 112,
            max_lateness_ns: 113,
            ring_capacity_bytes: 114,
            ring_used_bytes: 115,
            ring_high_water_bytes: 116,
            retired_files: 117,
            retired_bytes: 118,
            retired_unclaimed: 119,
            retired_unshipped: 120,
            retired_unshipped_bytes: 121,
            records_taken: 122,
            writer_failed: true,
        };
        for done in [false, true] {
            let mut v = serde_json::to_value(s).unwrap();
            v.as_object_mut()
                .unwrap()
                .insert("done".into(), done.into());
            assert_eq!(json(&s, done), v.to_string() + "\n");
        }
    }

    #[test]
    fn the_json_line_keeps_its_keys_and_says_done() {
        let v: serde_json::Value = serde_json::from_str(&json(&snap(), true)).unwrap();
        assert_eq!(v["records_queued"], 10);
        assert_eq!(v["durable_seq"], 8);
        assert_eq!(v["done"], true);
        assert_eq!(v["records_taken"], 7);
        assert_eq!(v["writer_failed"], true);
    }
}
