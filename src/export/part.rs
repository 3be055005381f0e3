//! One input file of an export: open, its header read and its contents
//! verified (what [`super::rows`] and the copies walk).

use std::fs::File;

use rtrec_engine::format::FileHeader;
use rtrec_engine::reader::FileReport;

/// One input file of the recording, verified.
pub struct Part {
    /// The file, open for reading.
    pub src: File,
    /// Its header.
    pub header: FileHeader,
    /// What verifying it found.
    pub report: FileReport,
}

impl Part {
    /// The file's name as given, for messages.
    pub fn name(&self) -> String {
        self.report.path.display().to_string()
    }
}
