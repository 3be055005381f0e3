//! Where an export goes: the format and compression `-o`'s name says, and
//! the file itself, written under a temporary name and moved into place
//! only when it is whole.
//!
//! Design choices:
//! - **The name says the format** when `--format` does not: `.csv`,
//!   `.jsonl` (or `.ndjson`), `.mcap`, `.parquet`, `.arrow` (or `.feather`:
//!   Arrow's IPC file), `.arrows` (its stream), `.rtr` (framed), `.raw` or
//!   `.bin` (raw); any other name is raw, as before. A name that says one format
//!   while `--format` (or `--raw`, `--framed`) says another is refused:
//!   one of the two is a mistake. `.npy` is refused: NumPy's `.npy` is
//!   not what `--format numpy` writes (a JSON header line and rows for
//!   `np.frombuffer`), and `np.load` would fail on it.
//! - **`.gz` and `.zst` compress** raw, CSV, JSON lines and numpy exports,
//!   with the compressors already in the tree (flate2, zstd); MCAP
//!   compresses its own chunks (`--mcap-compression`), Parquet its own
//!   pages, Arrow IPC stays uncompressed for its readers to map, and a
//!   framed copy must stay a file `verify` reads, so these refuse them.
//! - **Whole or absent**: the export is written to `.NAME.export-PID` in
//!   the output's directory, made durable, then renamed to NAME (and the
//!   directory synced, as PostgreSQL's `durable_rename`); a failed export
//!   removes its temporary file, so a name that exists is a whole export.
//!   An existing NAME is refused before any input is read unless
//!   `--force`, and the rename without `--force` never replaces (a file
//!   that appeared meanwhile is refused too).

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use rtrec_sys::Dir;

use crate::cli::{ExportArgs, ExportFormat};
use crate::error::{usage, Error};

/// A compression `-o`'s name asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compress {
    /// None.
    None,
    /// `.gz`: gzip.
    Gzip,
    /// `.zst`: Zstandard.
    Zstd,
}

/// The format an extension names (`Ok(None)`: none).
fn format_of_ext(ext: &str) -> Result<Option<ExportFormat>, &'static str> {
    Ok(Some(match ext.to_ascii_lowercase().as_str() {
        "csv" => ExportFormat::Csv,
        "jsonl" | "ndjson" => ExportFormat::Jsonl,
        "mcap" => ExportFormat::Mcap,
        "parquet" => ExportFormat::Parquet,
        "arrow" | "feather" => ExportFormat::Arrow,
        "arrows" => ExportFormat::ArrowStream,
        "rtr" => ExportFormat::Framed,
        "raw" | "bin" => ExportFormat::Raw,
        "npy" => return Err("NumPy's .npy, which rtrec does not write (`--format numpy` writes a JSON header line and rows for np.frombuffer, docs/export.md); name the file otherwise"),
        _ => return Ok(None),
    }))
}

/// The flag that names `f`.
fn flag(f: ExportFormat) -> &'static str {
    match f {
        ExportFormat::Raw => "--format raw",
        ExportFormat::Framed => "--format framed",
        ExportFormat::Csv => "--format csv",
        ExportFormat::Jsonl => "--format jsonl",
        ExportFormat::Mcap => "--format mcap",
        ExportFormat::Numpy => "--format numpy",
        ExportFormat::Parquet => "--format parquet",
        ExportFormat::Arrow => "--format arrow",
        ExportFormat::ArrowStream => "--format arrow-stream",
    }
}

/// The format asked for (`--format`, `--raw`, `--framed`, else `-o`'s
/// extension, else raw) and the compression `-o`'s name asks for.
///
/// # Errors
/// A name that contradicts the flags, `.npy`, or a compression the
/// format does not take (one sentence each).
pub fn format_of(a: &ExportArgs) -> crate::error::Result<(ExportFormat, Compress)> {
    let given = match (a.format, a.framed, a.raw) {
        (Some(f), _, _) => Some(f),
        (None, true, _) => Some(ExportFormat::Framed),
        (None, false, true) => Some(ExportFormat::Raw),
        _ => None,
    };
    if a.output.as_os_str() == "-" {
        return Ok((given.unwrap_or(ExportFormat::Raw), Compress::None));
    }
    let name = a
        .output
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let (rest, compress) = if let Some(r) = name.strip_suffix(".gz") {
        (r, Compress::Gzip)
    } else if let Some(r) = name.strip_suffix(".zst") {
        (r, Compress::Zstd)
    } else {
        (name.as_str(), Compress::None)
    };
    let ext = Path::new(rest).extension().map(|e| e.to_string_lossy());
    let named = match ext.as_deref().map(format_of_ext) {
        None => None,
        Some(Ok(f)) => f,
        Some(Err(why)) => return usage(format!("-o '{name}' names {why}")),
    };
    let format = match (given, named) {
        (Some(g), Some(n)) if g != n => {
            return usage(format!(
                "-o '{name}' names {} but {} was given: rename the file or leave out the flag",
                flag(n),
                flag(g)
            ))
        }
        (Some(g), _) => g,
        (None, Some(n)) => n,
        (None, None) => ExportFormat::Raw,
    };
    if compress != Compress::None {
        match format {
            ExportFormat::Mcap => return usage(format!("-o '{name}': MCAP compresses its own chunks (--mcap-compression); name the file .mcap")),
            ExportFormat::Parquet => return usage(format!("-o '{name}': Parquet compresses its own pages (Snappy); name the file .parquet")),
            ExportFormat::Arrow | ExportFormat::ArrowStream => return usage(format!("-o '{name}': Arrow IPC stays uncompressed for its readers to map (Parquet is the compact table); leave out the compression suffix")),
            ExportFormat::Framed => return usage(format!("-o '{name}': a framed copy stays uncompressed, a file `rtrec verify` reads; leave out the compression suffix")),
            _ => {}
        }
        #[cfg(not(feature = "tables"))]
        return crate::error::left_out("the compressed exports (.gz, .zst)", "tables");
    }
    Ok((format, compress))
}

/// Refuses an existing output without `--force` (before any input is
/// read), and a directory always.
///
/// # Errors
/// One sentence.
pub fn check_free(out: &Path, force: bool) -> crate::error::Result<()> {
    if out.as_os_str() == "-" {
        return Ok(());
    }
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => usage(format!(
            "'{}' is a directory: give a file name with -o",
            out.display()
        )),
        Ok(_) if !force => usage(format!("'{}' exists: --force replaces it", out.display())),
        _ => Ok(()),
    }
}

/// The output file while it is written: a temporary name in the output's
/// directory.
pub struct Target {
    dir: Dir,
    name: OsString,
    tmp: OsString,
    force: bool,
    /// The temporary file.
    pub file: File,
}

impl Target {
    /// Creates the temporary file for `out`.
    ///
    /// # Errors
    /// The directory cannot be opened or the file created (one sentence).
    pub fn create(out: &Path, force: bool) -> crate::error::Result<Target> {
        let cannot =
            |e: std::io::Error| Error::Usage(format!("cannot create '{}': {e}", out.display()));
        let (dir, name) = Dir::of_file(out).map_err(cannot)?;
        let name = name.to_os_string();
        let mut tmp = OsString::from(".");
        tmp.push(&name);
        tmp.push(format!(".export-{}", std::process::id()));
        let file = dir.create_excl(&tmp, 0o644).map_err(cannot)?;
        Ok(Target {
            dir,
            name,
            tmp,
            force,
            file,
        })
    }

    /// Makes the file durable and gives it its name; its size.
    ///
    /// # Errors
    /// A failed sync or rename (the temporary file is removed), or a file
    /// that appeared under the name meanwhile without `--force`.
    pub fn commit(self) -> crate::error::Result<u64> {
        let moved = rtrec_sys::fsync(&self.file).and_then(|()| {
            if self.force {
                self.dir.rename_replace(&self.tmp, &self.name)
            } else {
                self.dir.rename_noreplace(&self.tmp, &self.dir, &self.name)
            }
        });
        let shown = self.dir.join(&self.name).display().to_string();
        match moved {
            Ok(()) => {
                self.dir.sync()?;
                Ok(self.file.metadata()?.len())
            }
            Err(e) => {
                self.abandon();
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    return usage(format!("'{shown}' appeared while the export ran: nothing was replaced; --force replaces it"));
                }
                Err(Error::Io {
                    context: format!("writing '{shown}'"),
                    source: e,
                })
            }
        }
    }

    /// Removes the temporary file (a failed export).
    pub fn abandon(&self) {
        let _ = self.dir.remove_file(&self.tmp);
    }
}

/// The writer of an export: plain, or through a compressor that must be
/// finished.
pub enum Sink<W: Write> {
    /// Uncompressed.
    Plain(W),
    /// gzip.
    #[cfg(feature = "tables")]
    Gzip(flate2::write::GzEncoder<W>),
    /// Zstandard.
    #[cfg(feature = "tables")]
    Zstd(zstd::Encoder<'static, W>),
}

impl<W: Write> Sink<W> {
    /// `w`, compressed as `c` asks.
    ///
    /// # Errors
    /// The compressor cannot start.
    pub fn new(w: W, c: Compress) -> std::io::Result<Sink<W>> {
        Ok(match c {
            Compress::None => Sink::Plain(w),
            #[cfg(feature = "tables")]
            Compress::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            #[cfg(feature = "tables")]
            Compress::Zstd => Sink::Zstd(zstd::Encoder::new(w, 3)?),
            #[cfg(not(feature = "tables"))]
            _ => Sink::Plain(w),
        })
    }

    /// Ends the compressed stream and flushes.
    ///
    /// # Errors
    /// The write's.
    // One variant in the record-only build (no compressors).
    #[cfg_attr(not(feature = "tables"), allow(clippy::infallible_destructuring_match))]
    pub fn finish(self) -> std::io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            #[cfg(feature = "tables")]
            Sink::Gzip(g) => g.finish()?,
            #[cfg(feature = "tables")]
            Sink::Zstd(z) => z.finish()?,
        };
        w.flush()
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(b),
            #[cfg(feature = "tables")]
            Sink::Gzip(g) => g.write(b),
            #[cfg(feature = "tables")]
            Sink::Zstd(z) => z.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            #[cfg(feature = "tables")]
            Sink::Gzip(g) => g.flush(),
            #[cfg(feature = "tables")]
            Sink::Zstd(z) => z.flush(),
        }
    }
}
