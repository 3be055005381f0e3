//! Raw framing's checksums: raw files hold the records' bytes only, so
//! the writer sums each file in chunks ([`format::RAW_CHUNK`]) as it
//! writes, and stores every file's sums, with the recording's counters
//! and configuration, in the sidecar `BASE.meta.json` when the recording
//! ends. `verify` checks a raw file against it.

use std::io;
use std::path::Path;

use rtrec_sys as sys;

use crate::config::Config;
use crate::format;

use super::report::WriterReport;

/// The chunk sums of the file being written and of the files closed.
#[derive(Default)]
pub(super) struct RawSums {
    /// The current file's.
    sum: format::RawSummer,
    /// The closed files', in order.
    closed: Vec<format::RawFileSums>,
}

impl RawSums {
    /// Sums bytes just written to the current file.
    pub(super) fn update(&mut self, body: &[u8]) {
        self.sum.update(body);
    }

    /// The current file, at `path`, is closed: its sums are kept under its
    /// name.
    pub(super) fn close_file(&mut self, path: &Path) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let sums = self.sum.finish_file(name.unwrap_or_default());
        self.closed.push(sums);
    }

    /// Writes the sidecar to `path` (a new file, fsynced): the files and
    /// their sums, whether the recording is `complete` and why not, the
    /// counters of `report` with `dropped`, and the configuration.
    pub(super) fn write_sidecar(
        &self,
        path: &Path,
        report: &WriterReport,
        dropped: u64,
        complete: bool,
        reason: &str,
        cfg: &Config,
    ) -> io::Result<()> {
        let meta = serde_json::json!({
            "format": "rtrec-raw-sidecar-2",
            "files": report.files,
            "chunk_bytes": format::RAW_CHUNK,
            "file_sums": self.closed,
            "complete": complete,
            "reason": reason,
            "records_written": report.records_written,
            "records_dropped": dropped,
            "bytes_written": report.bytes_written,
            "config": cfg,
        });
        sys::create_new(path).and_then(|mut f| {
            use std::io::Write;
            f.write_all(
                serde_json::to_string_pretty(&meta)
                    .unwrap_or_default()
                    .as_bytes(),
            )?;
            sys::fsync(&f)
        })
    }
}
