//! The C API of rtrec: `librtrec.so` / `librtrec.a` and `include/rtrec.h`.
//!
//! **Must not depend on**: anything but the engine and `rtrec-sys` — no
//! machine-wide state (`rtrec-host`), no bench, no command line.
//!
//! This crate owns the boundary between C and the engine and nothing else:
//! every exported function is `rtrec_<object>_<verb>`, objects are opaque
//! handles, functions return `0` (or a count) on success and `-errno` on
//! failure and never set `errno`, and no Rust panic crosses the boundary
//! (every exported function runs its body under `catch_unwind`; a caught
//! panic returns `-ENOTRECOVERABLE`, its text in `rtrec_last_error()`, and
//! a panic hook keeps it off the host's stderr).
//!
//! # Real-time contract
//!
//! [`rtrec_recorder_record`] keeps the engine's contract: once
//! [`rtrec_recorder_create`] has returned, it allocates nothing, takes no
//! lock and makes no system call (ring mode). It therefore never sets the
//! thread's error message either: its return value says everything. The
//! same holds for [`rtrec_recorder_trigger`].
//!
//! # Layout
//!
//! - [`error`]: `-errno` mapping, the thread's last error message, the
//!   panic guard and the extensible-struct rule (`struct_size`).
//! - [`config`]: `rtrec_config` and its strategy enums.
//! - [`recorder`]: the recorder handle (create, record, trigger, finish,
//!   abort).
//! - [`summary`]: `rtrec_summary`, what a recording did.
//! - [`timer`]: the periodic timer that measures lateness.
//! - [`pool`]: the file pool of a recording directory (prepare, status).
//! - [`recover`]: closing the recordings a crash interrupted
//!   (`rtrec_dir_recover`).
//! - `handle`: the table behind the opaque handles, which makes a finished
//!   or destroyed handle `-EBADF` instead of a use after free.
//! - `fork`: which process a recorder was created in, so that a child of
//!   `fork()` gets `-ECHILD` from its parent's recorders.
//! - [`log`]: the log callback for warnings, and the library's version.
//!
//! The header is generated from this crate by cbindgen (see
//! `cbindgen.toml`); `tests/header.rs` fails when the committed
//! `include/rtrec.h` differs from a fresh generation, and
//! `RTREC_BLESS=1 cargo test -p rtrec-ffi --test header` rewrites it.
//! Every exported item's doc comment becomes its C documentation.
#![deny(missing_docs)]
// The exported functions are `unsafe extern "C"`; their doc comments become
// the C documentation and state each pointer's contract in prose (what may
// be NULL, who frees what, which thread), as C readers expect, rather than
// under a Rust `# Safety` heading.
#![allow(clippy::missing_safety_doc)]

pub mod config;
pub mod error;
mod fork;
mod handle;
pub mod log;
pub mod pool;
pub mod recorder;
pub mod recover;
pub mod summary;
pub mod timer;

pub use config::{
    rtrec_alloc, rtrec_config, rtrec_config_init, rtrec_flush, rtrec_framing, rtrec_layout_size,
    rtrec_mode, rtrec_pool_empty,
};
pub use error::rtrec_last_error;
pub use log::{rtrec_log_fn, rtrec_log_level, rtrec_set_log, rtrec_version};
pub use pool::{rtrec_pool_prepare, rtrec_pool_state, rtrec_pool_status};
pub use recorder::{
    rtrec_recorder, rtrec_recorder_abort, rtrec_recorder_create, rtrec_recorder_destroy,
    rtrec_recorder_finish, rtrec_recorder_record, rtrec_recorder_trigger,
};
pub use recover::{rtrec_dir_recover, rtrec_recover_report};
pub use summary::{rtrec_latency, rtrec_summary, rtrec_summary_attach_timer};
pub use timer::{rtrec_timer, rtrec_timer_create, rtrec_timer_destroy, rtrec_timer_wait};

/// The tests of what the crate root ties together: the published sizes of
/// every extensible struct, which live in four modules, against the docs.
/// (Here, not in `error`, so that no module imports the crate root back.)
#[cfg(test)]
mod tests {
    use crate::error::Extensible;
    use crate::{rtrec_config, rtrec_pool_state, rtrec_recover_report, rtrec_summary};

    /// Issue 42, finding 12f: docs/c-api.md's table of published sizes is
    /// what the library accepts, struct by struct and version by version
    /// (the docs once said 184 where the library had grown to 208).
    #[test]
    fn the_published_sizes_in_c_api_md_are_the_ones_the_library_accepts() {
        let doc = include_str!("../../../docs/c-api.md");
        let table = doc
            .split("The published sizes (LP64 Linux):")
            .nth(1)
            .expect("c-api.md has the table of published sizes");
        let mut published: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (Some(name), Some(size)) = (cells.get(1), cells.get(3)) else {
                continue;
            };
            if let (Some(n), Ok(size)) = (name.strip_prefix('`'), size.parse::<usize>()) {
                let n = n.trim_end_matches('`').to_string();
                published.entry(n).or_default().push(size);
            }
        }
        let library: Vec<(&str, &[usize])> = vec![
            (rtrec_config::NAME, rtrec_config::SIZES),
            (rtrec_summary::NAME, rtrec_summary::SIZES),
            (rtrec_pool_state::NAME, rtrec_pool_state::SIZES),
            (rtrec_recover_report::NAME, rtrec_recover_report::SIZES),
        ];
        assert_eq!(published.len(), library.len(), "{published:?}");
        for (name, sizes) in library {
            assert_eq!(
                published.get(name).map(Vec::as_slice),
                Some(sizes),
                "c-api.md's sizes of {name}"
            );
        }
    }
}

/// The installed file's name the docs give is this library's version
/// (docs/embedded.md once said `librtrec.so.0.1.0` after 0.3.0 shipped).
#[cfg(test)]
#[test]
fn the_docs_name_the_installed_library_by_its_version() {
    let want = format!("librtrec.so.{}", env!("CARGO_PKG_VERSION"));
    for (doc, text) in [
        ("c-api.md", include_str!("../../../docs/c-api.md")),
        ("embedded.md", include_str!("../../../docs/embedded.md")),
    ] {
        for (at, _) in text.match_indices("librtrec.so.") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect();
            let name = name.trim_end_matches('.');
            // The SONAME (major only) and the full version are both fine.
            let major = format!("librtrec.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
            assert!(
                name == want || name == major || name.ends_with(".X.Y.Z"),
                "docs/{doc} names {name}; the library is {want}"
            );
        }
    }
}
