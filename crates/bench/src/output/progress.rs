//! The one factory for progress bars: a bar per case while it runs, drawn
//! on stderr only when stdout is a terminal (hidden otherwise, so that
//! redirected output is plain).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` timed calls for case `name`.
pub fn case_bar(name: &str, len: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), draw_target());
    bar.set_style(
        ProgressStyle::with_template("{prefix:<24} [{bar:30}] {pos:>6}/{len:6} {msg} (eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(name.to_string());
    bar
}

fn draw_target() -> ProgressDrawTarget {
    if std::io::stdout().is_terminal() {
        ProgressDrawTarget::stderr_with_hz(10)
    } else {
        ProgressDrawTarget::hidden()
    }
}
