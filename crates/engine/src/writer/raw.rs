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

/// The sidecar's document (`BASE.meta.json`; what `verify` reads of it:
/// `crate::reader::raw`). Design choice: written from this struct, not
/// from a `serde_json::Value` (the board's record-only binary has no room
/// for serde_json's value serialiser, docs/embedded.md); its fields are in
/// the order of their names, as that value wrote them. Inside `config` the
/// keys are in [`Config`]'s order (the value sorted them): the same
/// document to a JSON reader.
#[derive(serde::Serialize)]
struct Sidecar<'a> {
    /// The recording's payload bytes.
    bytes_written: u64,
    /// [`format::RAW_CHUNK`].
    chunk_bytes: u64,
    /// Whether the recording ended complete.
    complete: bool,
    /// The recording's configuration.
    config: &'a Config,
    /// Each closed file's sums, in order.
    file_sums: &'a [format::RawFileSums],
    /// The recording's files, in order.
    files: &'a [std::path::PathBuf],
    /// The sidecar's format.
    format: &'static str,
    /// Why the recording is not complete (empty when it is).
    reason: &'a str,
    /// Records dropped.
    records_dropped: u64,
    /// Records written.
    records_written: u64,
}

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
        let meta = Sidecar {
            bytes_written: report.bytes_written,
            chunk_bytes: format::RAW_CHUNK,
            complete,
            config: cfg,
            file_sums: &self.closed,
            files: &report.files,
            format: "rtrec-raw-sidecar-2",
            reason,
            records_dropped: dropped,
            records_written: report.records_written,
        };
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
