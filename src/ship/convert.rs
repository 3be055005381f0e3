//! `rtrec ship --convert mcap|parquet`: a converted copy of each recording
//! shipped beside its `.rtr` files, or instead of them with `--no-rtr`
//! (docs/ship.md, "A converted copy", issue 46 item 2). This module owns
//! the copy's way out: where it is written, its upload, and its entry in
//! the manifest; the conversion itself is the exporter's
//! (`export::convert`), handed in by `main` as a [`Converter`]: `ship`
//! sits below `cli` and `export` (which reads `cli`'s flags), so it
//! names neither.
//!
//! Design choices:
//! - **Written in `$TMPDIR`, never in the recording directory**: a copy
//!   there could be taken for a recording file and would count in a
//!   loop's disk budget. The file is `$TMPDIR/rtrec-convert-ID.EXT`
//!   (one recording's copy at a time, removed once it is in the bucket
//!   or refused; a kill leaves at most that one file, which the next run
//!   replaces). It takes space from `$TMPDIR`'s filesystem while it
//!   exists: point `TMPDIR` away from the recordings' card when both are
//!   one filesystem, and away from a RAM-backed `/tmp` for long recordings.
//! - **Uploaded like any file** ([`Shipper::ship_file`]): one PUT or parts
//!   by `--part-size`, CRC32C in its metadata and checked by a HEAD, the
//!   multipart upload in the ledger under the copy's name. The exporter
//!   writes the same bytes for the same recording every time (MCAP's
//!   zstd on one thread; Parquet without timestamps), so after a kill the
//!   copy made again resumes the upload where the ledger says, or is
//!   found in the bucket with the same size and CRC32C and not sent.
//!   It has no `file` line in the ledger: those name a recording file's
//!   index, which the loop's budget reads.
//! - **A refused conversion loses nothing silently**: a recording the
//!   exporter refuses (gaps without `--allow-gaps`, a record that does
//!   not fit `--layout`) ships its `.rtr` files all the same (also with
//!   `--no-rtr`), its manifest's `converted` entry says why, and the
//!   summary counts it (`conversions_refused`).

use std::path::Path;

use rtrec_engine::recordings::Recording;

use super::manifest::ManifestConverted;
use super::store::Failure;
use super::upload::{sum_of, Shipper};
use crate::error::{Error, Result};

/// The formats of `--convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ConvertFormat {
    /// MCAP, as `rtrec export --format mcap` writes it (Foxglove, MCAP's tools).
    Mcap,
    /// Parquet, as `rtrec export --format parquet` writes it (pandas, polars, DuckDB).
    Parquet,
}

impl ConvertFormat {
    /// Its name in the manifest and its object's extension.
    pub fn name(self) -> &'static str {
        match self {
            ConvertFormat::Mcap => "mcap",
            ConvertFormat::Parquet => "parquet",
        }
    }
}

/// What a conversion wrote, as the exporter's walk counted it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// Records written.
    pub records: u64,
    /// Gap rows (MCAP: messages on `TOPIC/gaps`; Parquet: rows whose
    /// record columns are null).
    pub gap_rows: u64,
    /// Records missing in those gaps.
    pub records_in_gaps: u64,
}

/// What converts a recording: the exporter, set up from `--convert`,
/// `--layout` and `--allow-gaps`.
pub trait Converter {
    /// Writes recording `r` converted to `out`. `Ok(Err(why))`: the
    /// exporter refuses it (corrupt, gaps without `--allow-gaps`), in its
    /// own sentence; nothing was written.
    ///
    /// # Errors
    /// A file of `r` that cannot be read, a record that does not fit the
    /// layout, a failed write.
    fn convert(
        &self,
        r: &Recording,
        out: &mut dyn std::io::Write,
    ) -> Result<std::result::Result<Converted, String>>;
}

/// Makes the [`Converter`] of `--convert FORMAT`, `--layout` and
/// `--allow-gaps` (checked before anything is read), or refuses in one
/// sentence; `main` gives the exporter's.
pub type MakeConverter = fn(ConvertFormat, Option<String>, bool) -> Result<Box<dyn Converter>>;

/// A run's conversion: the format and the exporter's settings.
pub struct Conversion {
    /// `--convert`.
    pub format: ConvertFormat,
    /// `--layout`, as given.
    pub layout: Option<String>,
    /// The exporter, set up.
    pub convert: Box<dyn Converter>,
}

impl Conversion {
    /// The conversion `--convert FORMAT [--layout L] [--allow-gaps]` asks
    /// for, made by `make`, checked before anything is read.
    ///
    /// # Errors
    /// `make`'s: a layout that does not parse (the exporter's sentence), a
    /// build without the exporter.
    pub fn new(
        make: MakeConverter,
        format: ConvertFormat,
        layout: Option<String>,
        allow_gaps: bool,
    ) -> Result<Conversion> {
        Ok(Conversion {
            format,
            convert: make(format, layout.clone(), allow_gaps)?,
            layout,
        })
    }

    /// Converts recording `r` (id `id_hex`) and ships the copy as the
    /// object `key_of(NAME)`; returns its manifest entry and whether it
    /// was sent (`false`: already in the bucket, or refused).
    ///
    /// # Errors
    /// The upload's; the copy's file in `$TMPDIR` failing (tried again
    /// later).
    pub async fn ship(
        &self,
        s: &mut Shipper,
        r: &Recording,
        id_hex: &str,
        key_of: impl Fn(&str) -> String,
    ) -> std::result::Result<(ManifestConverted, bool), Failure> {
        let ext = self.format.name();
        let path = std::env::temp_dir().join(format!("rtrec-convert-{id_hex}.{ext}"));
        let made = self.make(r, &path);
        let mut entry = ManifestConverted {
            format: ext,
            layout: self.layout.clone(),
            refused: None,
            object: None,
        };
        let done = match made {
            Ok(Ok(c)) => {
                self.send(s, &path, &key_of(&format!("{id_hex}.{ext}")), c)
                    .await
            }
            Ok(Err(why)) => {
                // Said at once, and kept in the manifest and the summary;
                // once a recording, however often it is tried.
                if s.refused.insert(id_hex.to_string()) {
                    eprintln!(
                        "rtrec ship: recording {id_hex} is not converted to {ext}: {why}; its .rtr files ship"
                    );
                    s.summary.conversions_refused += 1;
                }
                entry.refused = Some(why);
                Ok(None)
            }
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_file(&path);
        let sent = match done? {
            Some((object, sent)) => {
                entry.object = Some(object);
                sent
            }
            None => false,
        };
        Ok((entry, sent))
    }

    /// Writes the copy of `r` as a new file at `path` (a stale one of an
    /// earlier run removed first; `create_new` never follows a link
    /// another user put there). `Ok(Err(why))`: the exporter refused it,
    /// no file is left.
    fn make(
        &self,
        r: &Recording,
        path: &Path,
    ) -> std::result::Result<std::result::Result<Converted, String>, Failure> {
        let later = |e: std::io::Error| {
            Failure::Later(format!(
                "writing the converted copy '{}': {e}",
                path.display()
            ))
        };
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(later(e)),
            _ => {}
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(later)?;
        match self.convert.convert(r, &mut f) {
            Ok(Ok(c)) => Ok(Ok(c)),
            Ok(Err(why)) => Ok(Err(why)),
            // The copy's file (a full $TMPDIR): the next attempt may do.
            Err(Error::Io { context, source }) => Err(later(std::io::Error::new(
                source.kind(),
                format!("{context}: {source}"),
            ))),
            // The exporter's refusal of this recording (a record that
            // does not fit the layout): the manifest says it.
            Err(e) => Ok(Err(e.to_string())),
        }
    }

    /// Ships the copy at `path` as `key`; returns its manifest object and
    /// whether it was sent.
    async fn send(
        &self,
        s: &mut Shipper,
        path: &Path,
        key: &str,
        c: Converted,
    ) -> std::result::Result<Option<(super::manifest::ConvertedObject, bool)>, Failure> {
        let sum = sum_of(path, s.part_size).map_err(|e| {
            Failure::Later(format!(
                "reading the converted copy '{}': {e}",
                path.display()
            ))
        })?;
        let sent = s.ship_file(path, key, sum).await?;
        if sent {
            s.summary.files_shipped += 1;
            s.summary.converted_shipped += 1;
        } else {
            s.summary.files_already_there += 1;
        }
        let name = key.rsplit('/').next().unwrap_or(key).to_string();
        Ok(Some((
            super::manifest::ConvertedObject {
                name,
                key: key.to_string(),
                size_bytes: sum.size,
                crc32c: format!("{:08x}", sum.crc32c),
                records: c.records,
                gap_rows: c.gap_rows,
                records_in_gaps: c.records_in_gaps,
            },
            sent,
        )))
    }
}
