//! What one `rtrec ship` run did: the summary `--json FILE` writes and
//! whose figures the last line prints (docs/ship.md, "Summary").
//!
//! Design choice: **one struct is the JSON schema** (units in the field
//! names, a schema version), as `record --json`'s summary is.

use serde::Serialize;

/// The summary's schema version.
pub const SUMMARY_SCHEMA_VERSION: u32 = 1;

/// What a run shipped and what it cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ShipSummary {
    /// [`SUMMARY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `s3://BUCKET/PREFIX`.
    pub to: String,
    /// The device name in the keys.
    pub device: String,
    /// Recordings whose manifest this run wrote.
    pub recordings_shipped: u64,
    /// Closed recordings found already in the bucket, whole (their
    /// manifest there), and only entered in the ledger.
    pub recordings_already_there: u64,
    /// Recordings left for a later run: in progress, or not closed
    /// (`rtrec recover` closes an interrupted one), or damaged.
    pub recordings_not_closed: u64,
    /// Recordings whose files this run deleted (`--after-ship delete`).
    pub recordings_deleted: u64,
    /// Files (and manifests) this run sent and verified in the bucket.
    pub files_shipped: u64,
    /// Files found in the bucket with the same size and CRC32C, not sent.
    pub files_already_there: u64,
    /// Converted copies (`--convert`) this run sent and verified (also
    /// counted in `files_shipped`).
    pub converted_shipped: u64,
    /// Recordings the exporter refused to convert (gaps without
    /// `--allow-gaps`, a record that does not fit `--layout`): shipped
    /// without a copy, the reason in their manifest.
    pub conversions_refused: u64,
    /// Bytes sent in object and part bodies.
    pub bytes_shipped: u64,
    /// Of these, bytes a previous run may have sent already: the first
    /// part sent of an upload resumed from the ledger (it may have been in
    /// flight when that run stopped), and whole uploads begun again.
    pub bytes_resent: u64,
    /// Multipart uploads resumed from the ledger.
    pub uploads_resumed: u64,
    /// Attempts that failed and were tried again later.
    pub failures_retried: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// `bytes_shipped` over `seconds`, MiB/s.
    pub mib_per_s: f64,
    /// CPU time of the process (user + system), seconds.
    pub cpu_seconds: f64,
    /// CPU seconds per MiB shipped (none when nothing was sent).
    pub cpu_s_per_mib: Option<f64>,
}

impl ShipSummary {
    /// Brings the derived figures up to date for a run of `seconds`
    /// that used `cpu_ns` of CPU.
    pub fn finish(&mut self, seconds: f64, cpu_ns: u64) {
        let mib = self.bytes_shipped as f64 / (1u64 << 20) as f64;
        self.seconds = seconds;
        self.mib_per_s = if seconds > 0.0 { mib / seconds } else { 0.0 };
        self.cpu_seconds = cpu_ns as f64 / 1e9;
        self.cpu_s_per_mib = (mib > 0.0).then(|| self.cpu_seconds / mib);
    }

    /// The last line a run prints.
    pub fn line(&self) -> String {
        let cpu = self
            .cpu_s_per_mib
            .map_or_else(|| "-".to_string(), |c| format!("{c:.4}"));
        format!(
            "shipped {} recordings ({} already there, {} not closed yet), {} files, {} bytes \
             ({} re-sent) in {:.1} s, {:.1} MiB/s, {cpu} CPU s/MiB",
            self.recordings_shipped,
            self.recordings_already_there,
            self.recordings_not_closed,
            self.files_shipped,
            self.bytes_shipped,
            self.bytes_resent,
            self.seconds,
            self.mib_per_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_derives_its_rates_and_says_them_on_one_line() {
        let mut s = ShipSummary {
            bytes_shipped: 4 << 20,
            recordings_shipped: 1,
            files_shipped: 3,
            ..ShipSummary::default()
        };
        s.finish(2.0, 1_000_000_000);
        assert_eq!(s.mib_per_s, 2.0);
        assert_eq!(s.cpu_s_per_mib, Some(0.25));
        assert_eq!(
            s.line(),
            "shipped 1 recordings (0 already there, 0 not closed yet), 3 files, 4194304 bytes \
             (0 re-sent) in 2.0 s, 2.0 MiB/s, 0.2500 CPU s/MiB"
        );
        let mut idle = ShipSummary::default();
        idle.finish(1.0, 5);
        assert_eq!(idle.cpu_s_per_mib, None);
    }
}
