//! Helpers shared by the integration tests of the `rtrec` binary.

use std::process::Output;

/// A finished command's exit code, stdout and stderr, for a failure message.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
