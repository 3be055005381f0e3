//! `rtrec record` command lines for the tests: what every test's recording
//! shares is written once, and each test adds only the flags it varies.

use std::path::Path;

/// An `rtrec record` command line: `record --quiet --dir DIR` and the
/// flags a test sets, in the order set; setting a flag again replaces its
/// value.
#[derive(Clone, Debug)]
pub struct RecordArgs(Vec<String>);

impl RecordArgs {
    /// `record --quiet --dir DIR`: a recording into DIR with no table.
    pub fn into_dir(dir: impl AsRef<Path>) -> RecordArgs {
        let dir = dir
            .as_ref()
            .to_str()
            .expect("a UTF-8 directory")
            .to_string();
        RecordArgs(vec!["record".into(), "--quiet".into(), "--dir".into(), dir])
    }

    /// A short recording into DIR: `--period 1ms --size SIZE --count
    /// COUNT`.
    pub fn short(dir: impl AsRef<Path>, size: &str, count: u64) -> RecordArgs {
        RecordArgs::into_dir(dir)
            .set("--period", "1ms")
            .set("--size", size)
            .set("--count", count.to_string())
    }

    /// `FLAG VALUE`; replaces FLAG's value when it is set already.
    pub fn set(mut self, flag: &str, value: impl Into<String>) -> RecordArgs {
        let value = value.into();
        match self.0.iter().position(|a| a == flag) {
            Some(i) => self.0[i + 1] = value,
            None => self.0.extend([flag.to_string(), value]),
        }
        self
    }

    /// A flag that takes no value (`--stdin`).
    pub fn switch(mut self, flag: &str) -> RecordArgs {
        self.0.push(flag.to_string());
        self
    }

    /// Without the flag `flag`, one that takes no value (`--quiet`, for a
    /// test that reads the table).
    pub fn without(mut self, flag: &str) -> RecordArgs {
        self.0.retain(|a| a != flag);
        self
    }

    /// `words` appended as given (a test's own list of flags).
    pub fn with(mut self, words: &[&str]) -> RecordArgs {
        self.0.extend(words.iter().map(|w| w.to_string()));
        self
    }

    /// The words of the command line, `record` first.
    pub fn words(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}
