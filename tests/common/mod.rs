//! Helpers shared by the command-line tests: running the binary, showing a
//! command's output in a failure message, a seeded PRNG for randomised
//! rounds, `rtrec record`'s command lines ([`record_args`]) and a short
//! recording with a loss ([`samples`]), a corpus of damaged
//! recording directories every reader must agree on ([`corpus`]), and a
//! real S3 server with a proxy in front of it ([`weed`]).
#![allow(dead_code)] // each test file uses its own subset

pub mod corpus;
pub mod record_args;
pub mod samples;
pub mod weed;

use std::process::{Command, Output, Stdio};

/// Runs the `rtrec` binary with `args`, stdin closed and without
/// `RUST_BACKTRACE` (so a panic shows as one, not as a test environment's
/// backtrace setting), and returns its output.
pub fn rtrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .stdin(Stdio::null())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("the rtrec binary runs")
}

/// `rtrec ARGS` with `input` written to its stdin, and what it printed.
#[allow(dead_code)] // Not every test crate feeds stdin.
pub fn rtrec_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = rtrec_piped(args);
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// `rtrec ARGS` started with its stdin, stdout and stderr piped, for a
/// test that feeds it while it runs.
pub fn rtrec_piped(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_rtrec"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("RUST_BACKTRACE")
        .spawn()
        .expect("the rtrec binary runs")
}

/// A command's exit code, stdout and stderr, for an assertion message.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A small deterministic PRNG (xorshift64*): seeded from the clock, or from
/// the environment variable the test names; the seed is printed so a
/// failing run can be replayed.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `var` when set, else from the clock.
    pub fn from_env(var: &str) -> Rng {
        let seed = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
            | 1;
        eprintln!("seed: {var}={seed}");
        Rng(seed)
    }

    /// Seeded from `var` when set, else from `seed`: a deterministic test
    /// that can still be replayed with another seed.
    pub fn from_env_or(var: &str, seed: u64) -> Rng {
        let seed = std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(seed)
            | 1;
        eprintln!("seed: {var}={seed}");
        Rng(seed)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}
