//! `rtrec ls DIR`: one line per recording in a directory (oldest first,
//! by first record, or creation while it has none) — its id, start,
//! duration, records, losses, state, files and size — as `ros2 bag info`
//! tells what a bag holds; `--json` for scripts.
//!
//! Design choices:
//! - **A recording is its id**, as everywhere (files of one directory
//!   with the same header recording id), never its file names; its first
//!   file's name is shown to pick it by (`export --recording`).
//! - **The state is the engine's** (`rtrec_engine::recordings::State`:
//!   the recording's worst file, in the one precedence every command
//!   uses, docs/recordings.md).
//! - **Lost** counts every record that is not in the recording: dropped
//!   while recording (stored losses and drops the end frame counts),
//!   missing without a trace (missing files included), and cut by recover
//!   after a crash hole. What a loop retired on purpose is not a loss;
//!   `--json` gives it apart, and `lost_after` the sequence number from
//!   which an unknown count is lost (a missing last file).
//! - **Which budget owns it** (`BUDGET`, `--json`'s `budget`): `loop`
//!   for a loop recording (header flag `LOOP`), which the next loop of its
//!   prefix may retire, oldest first, for its disk budget; `-` for any
//!   other, which no budget retires unless a loop runs with `--keep-scope
//!   dir`, and then it names each one it retired (docs/unattended.md,
//!   "What the budget owns").
//! - **Shipped** (`SHIPPED`, `--json`'s `shipped` and
//!   `retired_unshipped_files`): in a directory `rtrec ship` sends (its
//!   ledger `.shipped` is there), `yes` for a recording whose manifest is
//!   in the bucket, `no` otherwise, and after a `+` the count of its
//!   leading files a loop retired with no verified copy in the bucket
//!   (`no+3`: gone before they were shipped); `-` and absent from the
//!   JSON in a directory nobody ships. A ledger that does not decode is
//!   said once on stderr and ships nothing (every recording `no`), as the
//!   loop's budget reads it (docs/unattended.md, "The budget knows").
//! - It only reads: it verifies each file as `verify` does (the records
//!   and losses are verify's), looks at the name claims without removing
//!   any, and changes nothing.

use std::path::PathBuf;

use rtrec_engine::reader::{ShipLedger, SHIP_LEDGER};
use rtrec_engine::recordings::{Directory, Recording, Summary, SCHEMA_VERSION};
use rtrec_units::{format_duration, format_size};

use crate::error::usage;

/// `rtrec ls`.
#[derive(Debug, clap::Args)]
pub struct LsArgs {
    /// Recording directory (or, with the feature `ship`, s3://BUCKET/PREFIX: the recordings shipped there, from their manifests).
    #[arg(value_name = "DIR", default_value = "rtrec-data")]
    pub dir: PathBuf,
    /// Print JSON (one object with `schema_version` and a `recordings`
    /// array, docs/recordings-schema.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// List only this recording: its id, a unique prefix of it or one of
    /// its files' names (as `export --recording`); one sentence and exit 2
    /// when none or several match.
    #[arg(long, value_name = "ID|FILE")]
    pub recording: Option<String>,
}

/// Runs `rtrec ls`.
pub fn run(a: &LsArgs) -> crate::error::Result<i32> {
    // A bucket: what every device shipped there (docs/ship.md, "The
    // fleet side").
    #[cfg(feature = "ship")]
    if let Some(url) = a.dir.to_str().filter(|d| d.starts_with("s3://")) {
        return crate::ship::fleet::ls(url, a.json, a.recording.as_deref());
    }
    if !a.dir.is_dir() {
        return usage(format!("'{}' is not a directory", a.dir.display()));
    }
    let d = Directory::read(&a.dir)?;
    let ledger = ledger(&a.dir);
    let summary = |r: &Recording| {
        let mut s = r.summary();
        if let Some(l) = &ledger {
            let (shipped, unshipped) = r.shipping(l);
            s.shipped = Some(shipped);
            s.retired_unshipped_files = Some(unshipped);
        }
        s
    };
    let listed: Vec<Summary> = match &a.recording {
        None => d.recordings.iter().map(summary).collect(),
        Some(want) => vec![summary(d.resolve(want).or_else(usage)?)],
    };
    if a.json {
        let doc = serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "dir": a.dir,
            "recordings": listed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    if listed.is_empty() {
        println!("'{}' holds no recordings", a.dir.display());
        return Ok(0);
    }
    println!(
        "{:<16}  {:<24}  {:>9}  {:>9}  {:>6}  {:<11}  {:<6}  {:<7}  {:>5}  {:>9}  FIRST FILE",
        "RECORDING",
        "START (UTC)",
        "DURATION",
        "RECORDS",
        "LOST",
        "STATE",
        "BUDGET",
        "SHIPPED",
        "FILES",
        "SIZE"
    );
    for l in &listed {
        let name = l
            .first_file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let name = if l.copy {
            format!("{name} (a framed copy)")
        } else {
            name
        };
        println!(
            "{:<16}  {:<24}  {:>9}  {:>9}  {:>6}  {:<11}  {:<6}  {:<7}  {:>5}  {:>9}  {name}",
            l.id,
            l.start.as_deref().unwrap_or("-"),
            l.duration_s
                .map_or_else(|| "-".to_string(), |s| format_duration((s * 1e9) as u64)),
            l.records,
            l.lost,
            l.state.name(),
            l.budget,
            shipped_cell(l),
            l.files,
            format_size(l.size_bytes),
        );
    }
    Ok(0)
}

/// The shipping ledger of `dir` when there is one (`None`: nobody ships
/// it); one that does not decode is said on stderr and ships nothing.
fn ledger(dir: &std::path::Path) -> Option<ShipLedger> {
    std::fs::symlink_metadata(dir.join(SHIP_LEDGER)).ok()?;
    Some(ShipLedger::read(dir).unwrap_or_else(|e| {
        eprintln!("rtrec: {e}; no recording is listed as shipped");
        ShipLedger::default()
    }))
}

/// The `SHIPPED` cell (see the module docs).
fn shipped_cell(s: &Summary) -> String {
    match (s.shipped, s.retired_unshipped_files) {
        (None, _) => "-".into(),
        (Some(yes), n) => {
            let word = if yes { "yes" } else { "no" };
            match n.unwrap_or(0) {
                0 => word.into(),
                n => format!("{word}+{n}"),
            }
        }
    }
}
