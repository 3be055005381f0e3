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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::fleet::Listed;

    /// A manifest of one file, with `converted`.
    fn manifest(converted: Option<ManifestConverted>) -> Manifest {
        Manifest {
            schema_version: MANIFEST_SCHEMA_VERSION,
            device: "dev1".into(),
            recording_id: "00000000000000ab".into(),
            state: "complete",
            event: false,
            loop_recording: false,
            records: 10,
            payload_bytes: 120,
            lost: 1,
            start: None,
            start_ns: None,
            end_ns: None,
            files: vec![ManifestFile {
                name: "rec-0000.rtr".into(),
                key: "p/dev1/2026-12-07/00000000000000ab/rec-0000.rtr".into(),
                index: Some(0),
                size_bytes: 4096,
                crc32c: "0a1b2c3d".into(),
            }],
            converted,
            shipped_ns: 1,
            rtrec_version: "0",
        }
    }

    #[test]
    fn without_convert_a_manifest_is_as_before_and_the_fleet_reads_every_form() {
        let plain = serde_json::to_value(manifest(None)).unwrap();
        assert!(plain.get("converted").is_none(), "{plain}");
        let listed: Listed = serde_json::from_value(plain).unwrap();
        assert!(listed.converted.is_none());

        let refused = ManifestConverted {
            format: "mcap",
            layout: None,
            refused: Some("1 records are missing; nothing was exported".into()),
            object: None,
        };
        let v = serde_json::to_value(manifest(Some(refused))).unwrap();
        assert_eq!(
            v["converted"],
            serde_json::json!({"format": "mcap", "refused": "1 records are missing; nothing was exported"})
        );
        let listed: Listed = serde_json::from_value(v).unwrap();
        let c = listed.converted.unwrap();
        assert!(c.object.is_none() && c.refused.is_some());

        let object = ConvertedObject {
            name: "00000000000000ab.mcap".into(),
            key: "p/dev1/2026-12-07/00000000000000ab/00000000000000ab.mcap".into(),
            size_bytes: 2048,
            crc32c: "01020304".into(),
            records: 9,
            gap_rows: 1,
            records_in_gaps: 1,
        };
        let shipped = ManifestConverted {
            format: "mcap",
            layout: Some("t:u32".into()),
            refused: None,
            object: Some(object),
        };
        let v = serde_json::to_value(manifest(Some(shipped))).unwrap();
        assert_eq!(v["converted"]["size_bytes"], 2048, "{v}");
        let listed: Listed = serde_json::from_value(v).unwrap();
        let c = listed.converted.unwrap();
        let f = c.object.unwrap();
        assert_eq!(
            (f.name.as_str(), f.size_bytes),
            ("00000000000000ab.mcap", 2048)
        );
        assert_eq!((c.records, c.gap_rows), (Some(9), Some(1)));
    }
}
