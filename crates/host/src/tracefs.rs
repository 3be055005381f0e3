//! Tracefs switches (`tracing_on`, `events/*/enable`, `set_event`): changed
//! only through a [`Journal`], which records the old content before the new
//! one is written. Machine-wide, so changing them needs the
//! [`GlobalLock`](crate::lock::GlobalLock).

use std::fs;
use std::path::Path;

use crate::change::{Change, EntryId};
use crate::error::{io_err, Result};
use crate::journal::Journal;
use crate::kernfs::write_file;

/// Writes `value` to tracefs file `path` (`/sys/kernel/tracing/tracing_on`,
/// `…/events/jbd2/enable`, `…/set_event`), recording its old content first.
///
/// The old content must be writable back as it reads: an
/// `events/<system>/enable` that reads `X` (some of its events on) is not;
/// record its events' own `enable` files instead.
///
/// # Errors
/// As [`crate::sysctl::set`].
pub fn set_trace_file(journal: &Journal, path: &Path, value: &str) -> Result<EntryId> {
    let old = fs::read_to_string(path)
        .map_err(io_err(format_args!("reading {}", path.display())))?
        .trim_end()
        .to_string();
    let id = journal.record(Change::TraceFile {
        path: path.to_owned(),
        old,
    })?;
    if let Err(e) = write_file(path, value) {
        let _ = journal.forget(id);
        return Err(io_err(format_args!(
            "writing {value:?} to {}",
            path.display()
        ))(e));
    }
    Ok(id)
}
