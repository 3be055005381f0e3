//! The progress line of the record-only build: without the `progress-bar`
//! feature (indicatif, with `console` and `unicode-width`: 36 KB of a
//! board binary that must stay under 1 MB, docs/embedded.md), long work
//! shows one plain line on the terminal, rewritten in place. Whether to
//! show anything at all (only on a terminal) is the caller's decision, as
//! with the bar of the full build.
#![cfg_attr(feature = "progress-bar", allow(dead_code))]

use std::io::Write;

/// One line on stderr, rewritten in place (`\r`, the text, then blanks
/// over what the longer line before left).
#[derive(Default)]
pub struct Line {
    width: usize,
}

impl Line {
    /// Shows `text` in place of the line before.
    pub fn show(&mut self, text: &str) {
        let pad = self.width.saturating_sub(text.chars().count());
        self.width = text.chars().count();
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{text}{:pad$}", "");
        let _ = e.flush();
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        let w = self.width;
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r{:w$}\r", "");
        let _ = e.flush();
        self.width = 0;
    }
}
