//! `rtrec tune`: show the global changes rtrec has journaled (sysctls, I/O
//! schedulers, tracefs, mounts, loop devices) and put them back.
//!
//! Every rtrec command that changes global state journals each change in
//! `/run/rtrec` before making it, and undoes it when done; this command is
//! the manual way to undo what a killed rtrec left behind (the next rtrec
//! run that takes the global lock does it too).

use rtrec_host::sysctl::DirtySettings;
use rtrec_host::{restore_all_forced, restore_stale, state_dir};

use crate::cli::TuneArgs;

/// Runs `rtrec tune`.
pub fn run(a: &TuneArgs) -> crate::Result<i32> {
    if a.restore {
        let report = if a.force {
            restore_all_forced()?
        } else {
            restore_stale()?
        };
        if report.is_empty() {
            println!("nothing to restore: no rtrec process left changes behind");
        } else {
            print!("{report}");
        }
        return Ok(if report.failed.is_empty() { 0 } else { 1 });
    }
    let d = DirtySettings::read()?;
    println!("{}", serde_json::to_string_pretty(&d)?);
    println!("journal directory: {}", state_dir().display());
    Ok(0)
}
