//! A recording's export as a library call: the converted copy `rtrec ship
//! --convert mcap|parquet` ships beside a recording's `.rtr` files
//! (docs/ship.md, "A converted copy"). This module owns turning one
//! recording the engine has read into the bytes `rtrec export DIR
//! --format F [--layout L] [--allow-gaps]` writes for it, and what the
//! walk counted (records, gap rows).
//!
//! Design choice: **the exporter's own path, not a second one** — the same
//! checks (a corrupt file or a gap refuses, with the exporter's sentence),
//! the same writers with the same defaults (MCAP: topic `/rtrec/records`,
//! zstd chunks; without a layout the records' bytes in base64 or their
//! text), so a shipped copy is byte for byte what `rtrec export` gives
//! for the same recording, and a refusal is the sentence `export` prints.

use std::io::Write;
use std::path::PathBuf;

use rtrec_engine::recordings::Recording;

use super::{
    layout_for, open_parts, parse_layout, range, refused_or_gaps, stored, write_walked, How,
    TableLayout,
};
use crate::cli::{ExportArgs, ExportFormat};
use crate::ship::convert::{ConvertFormat, Converted, Converter};

/// `ship`'s [`crate::ship::convert::MakeConverter`]: the exporter set up
/// for `--convert FORMAT [--layout L] [--allow-gaps]`.
///
/// # Errors
/// A layout that does not parse: the exporter's sentence.
pub fn for_ship(
    format: ConvertFormat,
    layout: Option<String>,
    allow_gaps: bool,
) -> crate::error::Result<Box<dyn Converter>> {
    let format = match format {
        ConvertFormat::Mcap => ExportFormat::Mcap,
        ConvertFormat::Parquet => ExportFormat::Parquet,
    };
    Ok(Box::new(Convert::new(format, layout, allow_gaps)?))
}

/// A conversion's settings, checked before any recording is read.
pub struct Convert {
    /// The export's arguments (`rtrec export - --format F …`).
    args: ExportArgs,
    /// `--layout`, parsed.
    layout: Option<TableLayout>,
}

impl Convert {
    /// The conversion into `format` (MCAP or Parquet), with `layout`
    /// (as `rtrec export --layout` takes it), refusing recordings with
    /// gaps unless `allow_gaps`.
    ///
    /// # Errors
    /// A layout that does not parse: the exporter's sentence.
    pub fn new(
        format: ExportFormat,
        layout: Option<String>,
        allow_gaps: bool,
    ) -> crate::error::Result<Convert> {
        let args = ExportArgs {
            inputs: Vec::new(),
            output: PathBuf::from("-"),
            force: false,
            format: Some(format),
            raw: false,
            framed: false,
            payload: None,
            layout,
            topic: None,
            mcap_compression: None,
            from: None,
            to: None,
            every: None,
            recording: None,
            all: false,
            salvage: false,
            allow_gaps,
        };
        let layout = parse_layout(&args, format)?;
        if format == ExportFormat::Mcap {
            super::mcap::Options::of(&args, layout.as_ref())?;
        }
        Ok(Convert { args, layout })
    }
}

impl Converter for Convert {
    /// Writes recording `r` converted to `out`. `Ok(Err(why))`: the
    /// exporter refuses it (corrupt, or gaps without `allow_gaps`), in its
    /// own sentence; nothing was written.
    ///
    /// # Errors
    /// A file of `r` that cannot be read or changed since it was read, a
    /// record that does not fit the layout, a failed write (part of the
    /// copy may have been written: the caller throws it away).
    fn convert(
        &self,
        r: &Recording,
        out: &mut dyn Write,
    ) -> crate::error::Result<Result<Converted, String>> {
        let parts = open_parts(r.clone())?;
        if let Err(why) = refused_or_gaps(&self.args, &parts) {
            return Ok(Err(why));
        }
        let selection =
            range::Selection::of(None, None, None).map_err(crate::error::Error::Usage)?;
        let format = self.args.format.unwrap_or(ExportFormat::Mcap);
        // The recording's own layout unless the conversion names one.
        let layout = layout_for(self.layout.as_ref(), stored(&self.args, r.layout()), format)?;
        let how = How {
            format,
            compress: super::output::Compress::None,
            layout: layout.as_ref(),
            selection: &selection,
        };
        let mut out = std::io::BufWriter::new(out);
        let walked = write_walked(&self.args, &how, &parts, &mut out)?;
        out.flush()?;
        Ok(Ok(Converted {
            records: walked.records,
            gap_rows: walked.gaps,
            records_in_gaps: walked.missing,
        }))
    }
}
