//! The one trait every export format implements, below the formats and the
//! list of exports ([`super`]) that drives them.

use crate::report::BenchReport;

/// One output format.
pub trait Exporter {
    /// The file's content for `report`.
    ///
    /// # Errors
    /// The report cannot be rendered in this format.
    fn serialize(&self, report: &BenchReport) -> anyhow::Result<Vec<u8>>;
}
