//! Test support: a process that holds the global lock, for the tests of
//! waiting for it (always compiled, as `rtrec_sys::testing` is and for the
//! same reason; the linker drops it from every binary). The lock's file name comes from the code that owns it, so the
//! tests cannot drift from it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::lockfile::GLOBAL_LOCK;

/// A shell that holds the global lock of the state directory `dir` and
/// then becomes `sleep 60`: `flock -x` on the file
/// [`GlobalLock`](crate::GlobalLock) takes, with its pid written in it as
/// a holder writes it (so it is named as the holder). Kill it to free the
/// lock.
///
/// # Panics
/// When the shell cannot start or does not say that it holds the lock.
pub fn hold_global_lock(dir: &Path) -> Child {
    let mut holder = Command::new("sh")
        .args([
            "-c",
            r#"exec 9>>"$1" && flock -x 9 && echo $$ >"$1" && echo locked && exec sleep 60"#,
            "sh",
        ])
        .arg(dir.join(GLOBAL_LOCK))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");
    holder
}
