//! A shipped recording's manifest (`…/RECORDING_ID/manifest.json`): what
//! the bucket holds of it, written after every one of its files, so that
//! its presence means the recording is there whole (docs/ship.md,
//! "Manifest").
//!
//! Design choice: **one struct is the schema** (serde, every field
//! documented, units in the names, [`MANIFEST_SCHEMA_VERSION`]); a fleet
//! tool reads the manifests alone to list what every device shipped.

use serde::Serialize;

/// The manifest's schema version; it grows when a field changes meaning
/// or goes away.
pub const MANIFEST_SCHEMA_VERSION: u32 = 1;

/// One file of a shipped recording.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ManifestFile {
    /// Its name in the recording directory (and the last part of its key).
    pub name: String,
    /// Its object key.
    pub key: String,
    /// Its index in the recording.
    pub index: Option<u32>,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// The CRC32C (Castagnoli) of all its bytes, 8 hex digits.
    pub crc32c: String,
}

/// The manifest of one shipped recording.
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The device it came from (`--device`, else `/etc/machine-id`, else
    /// the host name).
    pub device: String,
    /// The recording's id, 16 hex digits.
    pub recording_id: String,
    /// Its state when shipped (`complete`, `recovered` or `aborted`).
    pub state: &'static str,
    /// A flight-recorder event (its first file opens with a trigger).
    pub event: bool,
    /// A loop recording (header flag `LOOP`).
    pub loop_recording: bool,
    /// Records intact.
    pub records: u64,
    /// Payload bytes of those records.
    pub payload_bytes: u64,
    /// Records not in the recording (as `rtrec ls` counts them).
    pub lost: u64,
    /// Wall time of its first record, RFC 3339.
    pub start: Option<String>,
    /// Wall time of its first record, ns since the epoch.
    pub start_ns: Option<u64>,
    /// Wall time of its last record, ns since the epoch.
    pub end_ns: Option<u64>,
    /// Its files, in index order (none with `--no-rtr`, unless the
    /// conversion was refused).
    pub files: Vec<ManifestFile>,
    /// Its converted copy (`--convert`), or why there is none; absent
    /// without `--convert` (a manifest as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converted: Option<ManifestConverted>,
    /// When the manifest was written (ns since the epoch).
    pub shipped_ns: u64,
    /// The rtrec that shipped it.
    pub rtrec_version: &'static str,
}

/// The converted copy of a shipped recording (`--convert`), or the
/// exporter's refusal.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ManifestConverted {
    /// `mcap` or `parquet`.
    pub format: &'static str,
    /// The layout it was converted with (`--layout`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Why the exporter refused to convert it (its sentence); there is no
    /// object then, and the `.rtr` files are shipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The object, when converted (its fields inline).
    #[serde(flatten)]
    pub object: Option<ConvertedObject>,
}

/// The object of a converted copy.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ConvertedObject {
    /// Its name (`RECORDING_ID.mcap` or `.parquet`; the last part of its
    /// key, the name `rtrec fetch` gives it).
    pub name: String,
    /// Its object key.
    pub key: String,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// The CRC32C (Castagnoli) of all its bytes, 8 hex digits.
    pub crc32c: String,
    /// Records in it.
    pub records: u64,
    /// Gap rows in it (MCAP: messages on `TOPIC/gaps`; Parquet: rows
    /// whose record columns are null).
    pub gap_rows: u64,
    /// Records missing in those gaps.
    pub records_in_gaps: u64,
}
