//! The fleet side of shipping (issue 46, item 7): `rtrec ls
//! s3://BUCKET/PREFIX` lists what every device shipped there, from the
//! manifests alone, and `rtrec fetch s3://BUCKET/…/RECORDING_ID DIR`
//! downloads one recording, checks each file against its manifest (size
//! and CRC32C) and verifies the recording as `rtrec verify` does.
//!
//! Design choices:
//! - **The manifests are the index.** A recording is in the bucket once
//!   its manifest is (the shipper writes it last), so listing reads
//!   `…/manifest.json` objects only: a recording whose upload a power cut
//!   interrupted is not listed, and no file is opened to list.
//! - **Read as the shipper wrote it, tolerant of more**: the fields below
//!   are those of manifest schema version 1 ([`super::manifest`]); a
//!   manifest of a later version is listed with what this rtrec knows of
//!   it, and one that does not parse is named in one line on stderr (the
//!   rest are still listed).
//! - **Nothing unverified lands under its name.** `fetch` writes each
//!   file to a hidden temporary name, compares its size and CRC32C with
//!   the manifest's, `fsync`s it and only then renames it; a file that
//!   does not match is refused in one sentence and removed, and the
//!   fetched recording must then verify clean (exit 1 otherwise, with
//!   `verify`'s verdict).
//! - **A converted copy is fetched and checked too** (`ship --convert`):
//!   its size and CRC32C against the manifest, as a file's; a recording
//!   shipped with `--no-rtr` is its copy alone (there is nothing for
//!   `verify` to read).
//! - **Credentials and endpoint as `ship` takes them** (flags, else
//!   `AWS_*`); `ls s3://` reads the environment only (`ls` has no room for
//!   them), as `aws s3 ls` does.

use std::io::Write as _;
use std::path::{Path, PathBuf};

#[cfg(feature = "tables")]
use futures_util::TryStreamExt as _;
use object_store::path::Path as Key;
#[cfg(feature = "tables")]
use object_store::ObjectStore as _;
use object_store::ObjectStoreExt as _;
use serde::Deserialize;

use super::store::{self, classify, AccessArgs, Failure, Target};
use crate::error::{usage, Error, Result};

/// A manifest as a fleet reads it (schema version 1's fields).
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct Listed {
    /// Its schema version.
    pub schema_version: u32,
    /// The device that shipped it.
    pub device: String,
    /// The recording's id, 16 hex digits.
    pub recording_id: String,
    /// Its state when shipped.
    pub state: String,
    /// Records intact.
    pub records: u64,
    /// Records not in the recording.
    pub lost: u64,
    /// Wall time of its first record, RFC 3339.
    #[serde(default)]
    pub start: Option<String>,
    /// Wall time of its first record, ns since the epoch.
    #[serde(default)]
    pub start_ns: Option<u64>,
    /// Wall time of its last record, ns since the epoch.
    #[serde(default)]
    pub end_ns: Option<u64>,
    /// Its files.
    pub files: Vec<ListedFile>,
    /// Its converted copy (`ship --convert`), or why there is none; absent
    /// from manifests shipped without it (and those of older rtrecs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converted: Option<ListedConverted>,
    /// The manifest's own key (set by the lister).
    #[serde(default)]
    pub manifest_key: String,
}

/// One file of a listed recording.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct ListedFile {
    /// Its name in the recording directory.
    pub name: String,
    /// Its object key.
    pub key: String,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Its CRC32C, 8 hex digits.
    pub crc32c: String,
}

/// A listed recording's converted copy (see
/// [`super::manifest::ManifestConverted`]).
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
pub struct ListedConverted {
    /// `mcap` or `parquet`.
    pub format: String,
    /// The layout it was converted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Why the exporter refused to convert it (then no object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The object, when converted: as a recording file's.
    #[serde(flatten)]
    pub object: Option<ListedFile>,
    /// Records in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// Gap rows in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_rows: Option<u64>,
    /// Records missing in those gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_in_gaps: Option<u64>,
}

/// `rtrec fetch`.
#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The recording in the bucket: s3://BUCKET/PREFIX/DEVICE/DATE/RECORDING_ID (as `rtrec ls s3://BUCKET/PREFIX` prints it).
    #[arg(value_name = "s3://…/RECORDING_ID")]
    pub from: String,
    /// The directory to put its files in (made if missing; a file of the same name already there is refused).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// How to reach the store.
    #[command(flatten)]
    pub access: AccessArgs,
}

/// A current-thread runtime for one command.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the I/O runtime: {e}")))
}

/// The sentence of a store error met while `doing`.
fn failed(e: &object_store::Error, doing: &str, bucket: &str) -> Error {
    match classify(e, doing, bucket) {
        Failure::Refused(s) => Error::Usage(s),
        Failure::Later(s) => Error::Failed(s),
    }
}

// `rtrec ls` is in the `tables` build only (src/main.rs): so is its
// listing of a bucket.
#[cfg(feature = "tables")]
/// Every manifest under `target`'s prefix, in key order; those that do
/// not parse are named on stderr.
async fn manifests(store: &store::Store, target: &Target) -> Result<Vec<Listed>> {
    let prefix = (!target.prefix.is_empty()).then(|| Key::from(target.prefix.as_str()));
    let metas: Vec<_> = store
        .list(prefix.as_ref())
        .try_collect()
        .await
        .map_err(|e| failed(&e, "listing the bucket", &target.bucket))?;
    let mut keys: Vec<Key> = metas
        .into_iter()
        .map(|m| m.location)
        .filter(|k| k.filename() == Some("manifest.json"))
        .collect();
    keys.sort();
    let mut out = Vec::new();
    for k in keys {
        let bytes = store
            .get(&k)
            .await
            .map_err(|e| failed(&e, &format!("reading '{k}'"), &target.bucket))?
            .bytes()
            .await
            .map_err(|e| failed(&e, &format!("reading '{k}'"), &target.bucket))?;
        match serde_json::from_slice::<Listed>(&bytes) {
            Ok(mut m) => {
                m.manifest_key = k.to_string();
                out.push(m);
            }
            Err(e) => eprintln!("rtrec: '{k}' is not a manifest this rtrec reads ({e}); skipped"),
        }
    }
    Ok(out)
}

// Only `rtrec ls` (the tables build) uses it.
#[cfg(feature = "tables")]
/// `rtrec ls s3://BUCKET/PREFIX [--json]`: every shipped recording under
/// the prefix, from its manifest.
pub fn ls(url: &str, json: bool, recording: Option<&str>) -> Result<i32> {
    let target = Target::parse(url).or_else(usage)?;
    let store = store::open(&target, &AccessArgs::default_env().access()).or_else(usage)?;
    let mut listed = runtime()?.block_on(manifests(&store, &target))?;
    if let Some(want) = recording {
        listed.retain(|m| m.recording_id.starts_with(want));
        if listed.is_empty() {
            return usage(format!(
                "no recording under '{url}' has an id starting '{want}'"
            ));
        }
    }
    if json {
        let doc = serde_json::json!({
            "schema_version": 1,
            "bucket": target.bucket,
            "prefix": target.prefix,
            "recordings": listed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    if listed.is_empty() {
        println!("'{url}' holds no shipped recordings (no manifest.json under it)");
        return Ok(0);
    }
    println!(
        "{:<20} {:<16} {:<24} {:>9} {:>9} {:>7} {:<10} {:>5} {:>9}  LOCATION",
        "DEVICE", "RECORDING", "START", "DURATION", "RECORDS", "LOST", "STATE", "FILES", "SIZE"
    );
    for m in &listed {
        let duration = match (m.start_ns, m.end_ns) {
            (Some(a), Some(b)) if b >= a => rtrec_units::format_duration(b - a),
            _ => "-".into(),
        };
        let size: u64 = m.files.iter().map(|f| f.size_bytes).sum();
        let location = m
            .manifest_key
            .strip_suffix("/manifest.json")
            .unwrap_or(&m.manifest_key);
        println!(
            "{:<20} {:<16} {:<24} {:>9} {:>9} {:>7} {:<10} {:>5} {:>9}  s3://{}/{location}",
            m.device,
            m.recording_id,
            m.start.as_deref().unwrap_or("-"),
            duration,
            m.records,
            m.lost,
            m.state,
            m.files.len(),
            rtrec_units::format_size(size),
            target.bucket
        );
    }
    Ok(0)
}

// Only `rtrec ls` (the tables build) uses it.
#[cfg(feature = "tables")]
impl AccessArgs {
    /// No flags: the environment alone.
    fn default_env() -> AccessArgs {
        AccessArgs {
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key_file: None,
            ca_file: None,
        }
    }
}

/// `rtrec fetch s3://…/RECORDING_ID DIR`.
pub fn fetch(a: &FetchArgs) -> Result<i32> {
    let target = Target::parse(&a.from).or_else(usage)?;
    if target.prefix.is_empty() {
        return usage(format!(
            "'{}' names a bucket, not a recording: give s3://BUCKET/…/RECORDING_ID as `rtrec ls s3://BUCKET` prints it",
            a.from
        ));
    }
    let store = store::open(&target, &a.access.access()).or_else(usage)?;
    std::fs::create_dir_all(&a.dir).map_err(|e| Error::Io {
        context: format!("creating '{}'", a.dir.display()),
        source: e,
    })?;
    let rt = runtime()?;
    let key = Key::from(format!("{}/manifest.json", target.prefix));
    let bytes = rt
        .block_on(async {
            store.get(&key).await?.bytes().await
        })
        .map_err(|e| match e {
            object_store::Error::NotFound { .. } => Error::Usage(format!(
                "no recording at '{}': '{key}' is not in the bucket (a recording is there once its manifest is)",
                a.from
            )),
            e => failed(&e, &format!("reading '{key}'"), &target.bucket),
        })?;
    let m: Listed = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Failed(format!("'{key}' is not a manifest this rtrec reads: {e}")))?;
    let mut fetched = 0u64;
    for f in &m.files {
        fetched += fetch_file(&rt, &store, &target, &key, f, &a.dir)?;
    }
    let copy = m.converted.as_ref().and_then(|c| c.object.as_ref());
    if let Some(f) = copy {
        fetched += fetch_file(&rt, &store, &target, &key, f, &a.dir)?;
    }
    if m.files.is_empty() {
        return copy_alone(a, &m, &key, fetched);
    }
    let copy_note = copy.map_or(String::new(), |f| {
        format!(" and its converted copy '{}'", f.name)
    });
    let d = rtrec_engine::recordings::Directory::read(&a.dir)?;
    let got = d
        .recordings
        .iter()
        .find(|r| r.summary().id == m.recording_id)
        .map(|r| r.summary());
    let Some(s) = got else {
        return Err(Error::Failed(format!(
            "the files fetched into '{}' hold no recording {}",
            a.dir.display(),
            m.recording_id
        )));
    };
    println!(
        "fetched recording {} of {} ({} file(s){copy_note}, {}) into '{}': {} records, {} lost, {}",
        m.recording_id,
        m.device,
        m.files.len(),
        rtrec_units::format_size(fetched),
        a.dir.display(),
        s.records,
        s.lost,
        s.state.name()
    );
    if s.records != m.records || s.lost != m.lost {
        eprintln!(
            "rtrec: the fetched recording holds {} records and {} lost; its manifest says {} and {}",
            s.records, s.lost, m.records, m.lost
        );
        return Ok(1);
    }
    Ok(0)
}

/// A recording shipped with `--no-rtr`: its converted copy is all there
/// is, checked against the manifest (size and CRC32C); there is no
/// recording for `verify` to read.
fn copy_alone(a: &FetchArgs, m: &Listed, key: &Key, fetched: u64) -> Result<i32> {
    let Some(f) = m.converted.as_ref().and_then(|c| c.object.as_ref()) else {
        return Err(Error::Failed(format!(
            "the manifest '{key}' lists no file and no converted copy"
        )));
    };
    println!(
        "fetched the converted copy of recording {} of {} ('{}', {}; shipped without its .rtr files) into '{}'",
        m.recording_id,
        m.device,
        f.name,
        rtrec_units::format_size(fetched),
        a.dir.display()
    );
    Ok(0)
}

/// Fetches file `f` of the manifest `key` into `dir` ([`write_whole`])
/// after checking it against the manifest: its bytes.
fn fetch_file(
    rt: &tokio::runtime::Runtime,
    store: &store::Store,
    target: &Target,
    key: &Key,
    f: &ListedFile,
    dir: &Path,
) -> Result<u64> {
    if f.name.contains('/') || f.name.starts_with('.') || f.name.is_empty() {
        return Err(Error::Failed(format!(
            "the manifest '{key}' names a file '{}' that is not a plain file name; nothing of it was written",
            f.name
        )));
    }
    let dest = dir.join(&f.name);
    if dest.exists() {
        return usage(format!(
            "'{}' is already there; fetch into an empty directory",
            dest.display()
        ));
    }
    let data = rt
        .block_on(async { store.get(&Key::from(f.key.as_str())).await?.bytes().await })
        .map_err(|e| failed(&e, &format!("reading '{}'", f.key), &target.bucket))?;
    let crc = format!("{:08x}", rtrec_engine::crc::crc32c(&data));
    if data.len() as u64 != f.size_bytes || crc != f.crc32c {
        return Err(Error::Failed(format!(
            "the object '{}' does not match its manifest ({} bytes with CRC32C {crc}, the manifest says {} with {}); nothing of it was written",
            f.key,
            data.len(),
            f.size_bytes,
            f.crc32c
        )));
    }
    write_whole(dir, &f.name, &data)?;
    Ok(data.len() as u64)
}

/// Writes `data` as `dir/name`: a hidden temporary name, `fsync`, rename,
/// the directory `fsync`ed.
fn write_whole(dir: &Path, name: &str, data: &[u8]) -> Result<()> {
    let d = rtrec_sys::Dir::open_nofollow(dir).map_err(|e| Error::Io {
        context: format!("opening '{}'", dir.display()),
        source: e,
    })?;
    rtrec_sys::replace_atomic_in(&d, name, 0o644, |f| f.write_all(data)).map_err(|e| Error::Io {
        context: format!("writing '{}'", dir.join(name).display()),
        source: e,
    })
}
