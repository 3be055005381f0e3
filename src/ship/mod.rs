//! `rtrec ship DIR --to s3://BUCKET/PREFIX`: the closed recordings of a
//! directory into S3-compatible object storage, exactly once and
//! verified, once or as a service (`--watch`) (docs/ship.md, issue 46).
//! This module owns the command: its options, which recordings ship, the
//! order of the steps for one recording (files, manifest, ledger,
//! deletion), the watch loop and the summary. The client and what its
//! errors mean are [`store`]'s, one file's upload [`upload`]'s, the
//! manifest's schema [`manifest`]'s, pacing [`pace`]'s, the figures
//! [`summary`]'s, a converted copy's (`--convert`) `convert`'s.
//!
//! Design choices:
//! - **Closed recordings only**, in the engine's words
//!   ([`rtrec_engine::recordings`]): `complete`, `recovered` (closed by
//!   `rtrec recover`) or `aborted` (ended by its recorder), and not `in
//!   progress` (a live recorder's name claim). An `unfinished` recording
//!   waits for `recover`; a damaged one is left for a person.
//! - **A recording is shipped when its manifest is**: its files first,
//!   each verified, then `manifest.json`, then the ledger's `recording`
//!   line; `--after-ship delete` removes its files only after that line
//!   is durable.
//! - **Keys that list well for a fleet**:
//!   `PREFIX/DEVICE/YYYY-MM-DD/RECORDING_ID/FILE` (the date of its first
//!   record, UTC).
//! - **Out of the recorder's way**: idle I/O class and nice 19 for the
//!   whole process (set before any thread starts, so every thread has
//!   them), chunks dropped from the page cache once read.
//! - **A converted copy beside the `.rtr` files by default**
//!   (`--convert mcap|parquet`; `--no-rtr` ships it instead of them): the
//!   `.rtr` files are what `rtrec fetch` verifies and what the loop's
//!   budget counts as shipped, so leaving them out is a flag of its own.
//! - **A tokio runtime only here**, on the calling thread
//!   (current-thread): object_store is async, the rest of rtrec is not.

pub mod convert;
pub mod fleet;
pub mod manifest;
pub mod pace;
pub mod store;
pub mod summary;
pub mod upload;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rtrec_engine::reader::{LedgerEntry, ShipLedger};
use rtrec_engine::recordings::{Directory, Recording, State};

use crate::error::{usage, Error, Result};
use convert::{Conversion, ConvertFormat, MakeConverter};
use manifest::{Manifest, ManifestConverted, ManifestFile, MANIFEST_SCHEMA_VERSION};
use pace::{backoff, Bucket};
use store::{AccessArgs, Failure, Target};
use summary::{ShipSummary, SUMMARY_SCHEMA_VERSION};
use upload::{sum_of, Shipper};

/// What to do with a recording's files once it is shipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AfterShip {
    /// Leave them (a loop's budget retires shipped recordings first).
    Keep,
    /// Delete them once the manifest and the ledger's line are durable.
    Delete,
}

/// `rtrec ship`.
#[derive(Debug, clap::Args)]
pub struct ShipArgs {
    /// Recording directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to: s3://BUCKET/PREFIX (keys PREFIX/DEVICE/YYYY-MM-DD/RECORDING_ID/FILE).
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub to: String,
    /// How to reach the store.
    #[command(flatten)]
    pub access: AccessArgs,
    /// The device's name in the keys [default: /etc/machine-id, else the host name].
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// Keep running: ship each recording as it closes, through outages (a service).
    #[arg(long)]
    pub watch: bool,
    /// With --watch: how often to look for closed recordings.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub interval: Duration,
    /// The most bytes a second to send (e.g. 2MiB); none: no limit.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub bwlimit: Option<u64>,
    /// The size of an upload's parts; larger files go in parts, resumed after a kill (at least 5MiB).
    #[arg(long, value_name = "SIZE", default_value = "8MiB", value_parser = parse_part_size)]
    pub part_size: u64,
    /// What to do with a recording's files once it is shipped.
    #[arg(long, value_enum, default_value = "keep", value_name = "WHAT")]
    pub after_ship: AfterShip,
    /// Ship a converted copy of each recording beside its .rtr files, as `rtrec export --format FORMAT` writes it (docs/ship.md, "A converted copy") [default: none, the .rtr files only].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub convert: Option<ConvertFormat>,
    /// With --convert: decode each record into named, typed fields, as `rtrec export --layout` takes it (e.g. `t:u32,x:f32`).
    #[arg(long, value_name = "LAYOUT", requires = "convert")]
    pub layout: Option<String>,
    /// With --convert: convert recordings with gaps too (gaps are rows of the copy, counted in its manifest); else such a recording ships without a copy, the reason in its manifest.
    #[arg(long, requires = "convert")]
    pub allow_gaps: bool,
    /// With --convert: ship the converted copy instead of the .rtr files (a recording the exporter refuses still ships its .rtr files).
    #[arg(long, requires = "convert")]
    pub no_rtr: bool,
    /// Write the run's summary as JSON to FILE (docs/ship.md, "Summary").
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `--interval`.
fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let ns = rtrec_units::parse_duration(s).map_err(|e| e.to_string())?;
    if ns < 100_000_000 {
        return Err("at least 100ms".into());
    }
    Ok(Duration::from_nanos(ns))
}

/// `--bwlimit` (bytes a second; `2MiB` or `2MiB/s`).
fn parse_rate(s: &str) -> std::result::Result<u64, String> {
    let n = rtrec_units::parse_size(s.trim_end_matches("/s")).map_err(|e| e.to_string())?;
    if n < 1024 {
        return Err("at least 1KiB a second".into());
    }
    Ok(n)
}

/// `--part-size` (S3 refuses parts under 5 MiB but the last).
fn parse_part_size(s: &str) -> std::result::Result<u64, String> {
    let n = rtrec_units::parse_size(s).map_err(|e| e.to_string())?;
    if !(5 << 20..=1 << 30).contains(&n) {
        return Err("between 5MiB and 1GiB (S3's smallest part is 5 MiB)".into());
    }
    Ok(n)
}

/// The device's name: `--device`, else `/etc/machine-id`, else the host
/// name.
fn device_name(a: &ShipArgs) -> Result<String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let name = match &a.device {
        Some(d) => d.clone(),
        None => read("/etc/machine-id")
            .or_else(|| read("/proc/sys/kernel/hostname"))
            .unwrap_or_else(|| "unknown-device".into()),
    };
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return usage(format!(
            "--device '{name}' cannot be a key's part (it must be non-empty, without '/', not starting with '.')"
        ));
    }
    Ok(name)
}

/// `--convert`'s conversion (made by `make`), checked before anything is
/// read.
fn conversion(a: &ShipArgs, make: MakeConverter) -> Result<Option<Conversion>> {
    a.convert
        .map(|f| Conversion::new(make, f, a.layout.clone(), a.allow_gaps))
        .transpose()
}

/// Runs `rtrec ship`; `make` gives `--convert`'s converter (the
/// exporter's: see [`convert`]).
pub fn run(a: &ShipArgs, make: MakeConverter) -> Result<i32> {
    let target = Target::parse(&a.to).or_else(usage)?;
    if !a.dir.is_dir() {
        return usage(format!("'{}' is not a directory", a.dir.display()));
    }
    let device = device_name(a)?;
    let access = a.access.access();
    let conversion = conversion(a, make)?;
    let store = store::open(&target, &access).or_else(usage)?;
    let ledger = ShipLedger::read(&a.dir).or_else(usage)?;
    let dir = rtrec_sys::Dir::open_nofollow(&a.dir)
        .map_err(|e| Error::Usage(format!("cannot open '{}': {e}", a.dir.display())))?;
    // Before any thread starts, so every thread the runtime and the HTTP
    // client make has them: out of the recorder's way.
    let _ = rtrec_sys::set_thread_ioprio(3, 0);
    let _ = rtrec_sys::set_thread_nice(19);
    let stop = crate::signals::install()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the I/O runtime: {e}")))?;
    let mut s = Shipper {
        store,
        bucket_name: target.bucket.clone(),
        ledger,
        dir,
        pace: Bucket::new(
            a.bwlimit.unwrap_or(0),
            a.bwlimit.unwrap_or(0).max(a.part_size),
        ),
        part_size: a.part_size,
        summary: ShipSummary {
            schema_version: SUMMARY_SCHEMA_VERSION,
            to: a.to.clone(),
            device: device.clone(),
            ..ShipSummary::default()
        },
        refused: Default::default(),
    };
    let (t0, cpu0) = (Instant::now(), rtrec_sys::process_cpu_ns());
    let job = Job {
        a,
        target: &target,
        device: &device,
        conversion: conversion.as_ref(),
    };
    let outcome = rt.block_on(job.run(&mut s));
    drop(stop);
    s.summary.finish(
        t0.elapsed().as_secs_f64(),
        rtrec_sys::process_cpu_ns() - cpu0,
    );
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&s.summary)? + "\n";
        std::fs::write(path, text).map_err(|e| Error::Io {
            context: format!("writing '{}'", path.display()),
            source: e,
        })?;
    }
    // A refusal before anything was sent is its one sentence alone.
    let silent = matches!(outcome, Err(Failure::Refused(_))) && s.summary.bytes_shipped == 0;
    if !silent {
        println!("{}", s.summary.line());
    }
    match outcome {
        Ok(()) => Ok(0),
        Err(Failure::Refused(t)) => Err(Error::Usage(t)),
        Err(Failure::Later(t)) => Err(Error::Failed(format!(
            "{t} (what was shipped is in the ledger; the next run goes on from there)"
        ))),
    }
}

/// One run's fixed inputs.
struct Job<'a> {
    /// The command line.
    a: &'a ShipArgs,
    /// Where to.
    target: &'a Target,
    /// The device's name.
    device: &'a str,
    /// `--convert`'s conversion.
    conversion: Option<&'a Conversion>,
}

impl Job<'_> {
    /// One pass, or (`--watch`) passes until a stop signal, waiting
    /// `--interval` between them and backing off after failures.
    async fn run(&self, s: &mut Shipper) -> std::result::Result<(), Failure> {
        let (mut failures, mut seen) = (0u32, None);
        loop {
            let wait = match self.pass(s, &mut seen).await {
                Ok(()) => {
                    failures = 0;
                    self.a.interval
                }
                Err(Failure::Refused(t)) => return Err(Failure::Refused(t)),
                Err(f) if !self.a.watch => return Err(f),
                Err(f) => {
                    failures += 1;
                    s.summary.failures_retried += 1;
                    let w = backoff(failures, self.a.interval, Duration::from_secs(300));
                    eprintln!(
                        "rtrec ship: {}; trying again in {:.0} s",
                        f.text(),
                        w.as_secs_f64()
                    );
                    w
                }
            };
            if !self.a.watch {
                return Ok(());
            }
            let until = Instant::now() + wait;
            while Instant::now() < until {
                if crate::signals::caught().is_some() {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(250).min(until - Instant::now())).await;
            }
            if crate::signals::caught().is_some() {
                return Ok(());
            }
        }
    }

    /// Ships every closed recording of the directory not shipped yet;
    /// reads the directory only when its queue changed since the last
    /// pass that went through (`seen`, see [`Queue`]).
    async fn pass(
        &self,
        s: &mut Shipper,
        seen: &mut Option<Queue>,
    ) -> std::result::Result<(), Failure> {
        let queue = Queue::of(&self.a.dir, &s.ledger);
        if queue.is_some() && queue == *seen {
            return Ok(());
        }
        let d = match Directory::read(&self.a.dir) {
            Ok(d) => d,
            // An empty directory is an empty queue (a service starts
            // before the first recording).
            Err(rtrec_engine::Error::Usage(t)) if t.contains("holds no recordings") => {
                return Ok(());
            }
            Err(e) => return Err(Failure::Later(e.to_string())),
        };
        let mut waiting = 0;
        for r in &d.recordings {
            let Some(id) = r.id else { continue };
            if r.copy {
                continue;
            }
            if s.ledger.recording_shipped(id) {
                // Files of a shipped recording still here under `delete`:
                // a kill or power cut between its ledger line and the
                // end of their deletion. They go now.
                if self.a.after_ship == AfterShip::Delete {
                    delete_files(s, r)?;
                }
                continue;
            }
            if !matches!(r.state, State::Complete | State::Recovered | State::Aborted) {
                waiting += 1;
                continue;
            }
            self.ship_recording(s, r, id).await?;
            if crate::signals::caught().is_some() {
                break;
            }
        }
        s.summary.recordings_not_closed = waiting;
        *seen = queue;
        Ok(())
    }

    /// Ships one closed recording: its converted copy (`--convert`), its
    /// files (not with `--no-rtr` once the copy is there), its manifest,
    /// the ledger's line, then (`--after-ship delete`) its files leave.
    async fn ship_recording(
        &self,
        s: &mut Shipper,
        r: &Recording,
        id: u64,
    ) -> std::result::Result<(), Failure> {
        let sm = r.summary();
        let id_hex = format!("{id:016x}");
        // The UTC date of its first record (else its first file's
        // creation): `utc_iso` begins with YYYY-MM-DD.
        let started = r.started_ns().unwrap_or_else(rtrec_sys::realtime_ns);
        let date = rtrec_engine::utc_iso(started)[..10].to_string();
        let base = [self.device, date.as_str(), id_hex.as_str()];
        let manifest_key = self.target.key(&[&base[..], &["manifest.json"]].concat());
        let (converted, mut sent_any) = match self.converted(s, r, &id_hex, &base).await? {
            Some((c, sent)) => (Some(c), sent),
            None => (None, false),
        };
        let copy_only = self.a.no_rtr && converted.as_ref().is_some_and(|c| c.object.is_some());
        let files = match copy_only {
            true => Vec::new(),
            false => self.ship_files(s, r, id, &base, &mut sent_any).await?,
        };
        let manifest = Manifest {
            schema_version: MANIFEST_SCHEMA_VERSION,
            device: self.device.to_string(),
            recording_id: id_hex.clone(),
            state: r.state.name(),
            event: r.is_event(),
            loop_recording: sm.budget == "loop",
            records: sm.records,
            payload_bytes: sm.bytes,
            lost: sm.lost,
            start: sm.start.clone(),
            start_ns: sm.start_ns,
            end_ns: r.files.iter().rev().find_map(|f| f.last_record_wall_ns),
            files,
            converted,
            shipped_ns: rtrec_sys::realtime_ns(),
            rtrec_version: env!("CARGO_PKG_VERSION"),
        };
        let there = !sent_any && s.holds_manifest(&manifest_key, &manifest).await?;
        if there {
            s.summary.recordings_already_there += 1;
        } else {
            let text = serde_json::to_vec_pretty(&manifest)
                .map_err(|e| Failure::Refused(format!("cannot encode a manifest: {e}")))?;
            s.put_bytes(&manifest_key, text).await?;
            s.summary.files_shipped += 1;
            s.summary.recordings_shipped += 1;
        }
        s.note(LedgerEntry::Recording {
            recording_id: id,
            wall_ns: rtrec_sys::realtime_ns(),
            key: manifest_key,
        })?;
        if self.a.after_ship == AfterShip::Delete {
            delete_files(s, r)?;
            s.summary.recordings_deleted += 1;
        }
        Ok(())
    }
    /// The files of `r` into the bucket (those the ledger does not hold
    /// already), each then in the ledger; returns their manifest entries.
    /// Sets `sent_any` when one was sent.
    async fn ship_files(
        &self,
        s: &mut Shipper,
        r: &Recording,
        id: u64,
        base: &[&str],
        sent_any: &mut bool,
    ) -> std::result::Result<Vec<ManifestFile>, Failure> {
        let mut files = Vec::new();
        for f in &r.files {
            let name = f.path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let key = self.target.key(&[base, &[name]].concat());
            let sum = sum_of(&f.path, s.part_size)
                .map_err(|e| Failure::Later(format!("reading '{}': {e}", f.path.display())))?;
            let known = s.ledger.file_shipped(name) == Some((sum.size, sum.crc32c));
            if !known {
                if s.ship_file(&f.path, &key, sum).await? {
                    s.summary.files_shipped += 1;
                    *sent_any = true;
                } else {
                    s.summary.files_already_there += 1;
                }
                s.note(LedgerEntry::File {
                    recording_id: id,
                    index: f.index.unwrap_or(0),
                    size: sum.size,
                    crc32c: sum.crc32c,
                    wall_ns: rtrec_sys::realtime_ns(),
                    name: name.to_string(),
                })?;
            }
            files.push(ManifestFile {
                name: name.to_string(),
                key,
                index: f.index,
                size_bytes: sum.size,
                crc32c: format!("{:08x}", sum.crc32c),
            });
        }
        Ok(files)
    }

    /// With `--convert`: the converted copy of `r` shipped ([`convert`]);
    /// its manifest entry and whether it was sent.
    async fn converted(
        &self,
        s: &mut Shipper,
        r: &Recording,
        id_hex: &str,
        base: &[&str],
    ) -> std::result::Result<Option<(ManifestConverted, bool)>, Failure> {
        let Some(c) = self.conversion else {
            return Ok(None);
        };
        let key_of = |name: &str| self.target.key(&[base, &[name]].concat());
        c.ship(s, r, id_hex, key_of).await.map(Some)
    }
}

/// What a pass would find to do, cheaply: the recording files the
/// ledger does not list as shipped, each with whether a recorder holds
/// it and, when none does, its size and modification time. A `--watch`
/// pass reads (verifies) the directory only when this changed: a
/// recording that closes (its claim released), a new file, a file
/// `recover` closed; not every interval while a recorder writes.
#[derive(Debug, PartialEq, Eq)]
struct Queue(Vec<(String, bool, u64, i128)>);

impl Queue {
    /// The queue of `dir` (`None` when it cannot be listed: read it).
    fn of(dir: &Path, ledger: &ShipLedger) -> Option<Queue> {
        use std::os::unix::fs::MetadataExt;
        let live = rtrec_engine::recovery::Live::of(dir).ok()?;
        let mut q = Vec::new();
        for p in rtrec_engine::reader::recording_files(dir).ok()? {
            let name = p.file_name()?.to_str()?.to_string();
            let m = std::fs::metadata(&p).ok()?;
            if ledger
                .file_shipped(&name)
                .is_some_and(|(size, _)| size == m.len())
            {
                continue;
            }
            if live.is_live(&name) {
                q.push((name, true, 0, 0));
            } else {
                let mtime = m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128;
                q.push((name, false, m.len(), mtime));
            }
        }
        Some(Queue(q))
    }
}

impl Shipper {
    /// Whether the bucket holds a manifest of this recording listing the
    /// same files (names, sizes and CRC32C) and the same converted copy
    /// (or none): the recording is there whole.
    async fn holds_manifest(&self, key: &str, m: &Manifest) -> std::result::Result<bool, Failure> {
        use object_store::ObjectStoreExt;
        let got = match self.store.get(&object_store::path::Path::from(key)).await {
            Ok(g) => g.bytes().await,
            Err(object_store::Error::NotFound { .. }) => return Ok(false),
            Err(e) => Err(e),
        };
        let bytes =
            got.map_err(|e| store::classify(&e, &format!("reading '{key}'"), &self.bucket_name))?;
        let theirs: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let ours = serde_json::to_value(&m.files).unwrap_or_default();
        let copy = serde_json::to_value(&m.converted).unwrap_or_default();
        let their_copy = theirs.get("converted").unwrap_or(&serde_json::Value::Null);
        Ok(theirs.get("files") == Some(&ours) && *their_copy == copy)
    }
}

/// Removes a shipped recording's files from the directory (its ledger
/// line is durable), then makes their absence durable and drops its
/// ledger lines.
fn delete_files(s: &mut Shipper, r: &Recording) -> std::result::Result<(), Failure> {
    let fail = |p: &Path, e: std::io::Error| {
        Failure::Refused(format!("cannot delete the shipped '{}': {e}", p.display()))
    };
    for f in &r.files {
        let name = f.path.file_name().unwrap_or_default();
        match s.dir.remove_file(name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(&f.path, e)),
        }
    }
    s.dir.sync().map_err(|e| fail(s.dir.path(), e))?;
    let id = r.id;
    let names: Vec<String> = r
        .files
        .iter()
        .filter_map(|f| f.path.file_name()?.to_str().map(str::to_string))
        .collect();
    s.ledger
        .retain(|rid| Some(rid) != id, |n| !names.iter().any(|m| m == n));
    s.write_ledger()
}
