//! `rtrec recover DIR`: after a crash, move recordings left unfinished in
//! the pool (`DIR/.pool`) back into `DIR`, and say what was moved. Every
//! recording start does the same; this command does it without recording.
//! The moved files are unfinished recordings: `rtrec verify` reports their
//! intact prefix.
//!
//! Exit codes: 0 done (also when there was nothing to recover), 2 usage or
//! I/O errors.

use rtrec_engine::pool::Pool;

use crate::cli::RecoverArgs;

/// Runs `rtrec recover`.
pub fn run(a: &RecoverArgs) -> crate::error::Result<i32> {
    if !a.dir.is_dir() {
        return crate::error::usage(format!("'{}' is not a directory", a.dir.display()));
    }
    let Some(pool) = Pool::open(&a.dir)? else {
        println!(
            "{}: no pool, nothing to recover (files of other allocation modes are always in the directory)",
            a.dir.display()
        );
        return Ok(0);
    };
    let moved = pool.recover()?;
    if moved.is_empty() {
        println!("{}: no unfinished recording in the pool", a.dir.display());
    }
    for (from, to) in &moved {
        println!(
            "recovered an unfinished recording: '{}' moved back as '{}'",
            from.display(),
            to.display()
        );
    }
    Ok(0)
}
