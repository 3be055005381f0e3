//! The `rtrec` binary: parse the command line, dispatch one command, turn
//! the result into an exit code. All the work lives in the crates under
//! `crates/` and the command modules here.
//!
//! Exit codes: 0 success; 1 the command ran and found a problem (a corrupt
//! recording, a failed recording); 2 bad input (usage, configuration,
//! missing directory, too little space) or an I/O error before anything was
//! done; 130 interrupted by a signal.

mod cli;
mod export;
mod pool;
mod record;
mod recover;
mod signals;
mod tune;
mod verify;

/// An error caused by what the user asked for: exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

/// Shorthand for a usage error.
pub fn usage<T>(msg: impl Into<String>) -> anyhow::Result<T> {
    Err(Usage(msg.into()).into())
}

fn main() {
    let cli = cli::parse();
    let result = match cli.command {
        cli::Command::Record(a) => record::run(&a),
        cli::Command::Recover(a) => recover::run(&a),
        cli::Command::Verify(a) => verify::run(&a),
        cli::Command::Tune(a) => tune::run(&a),
        cli::Command::Pool(a) => pool::run(&a),
        cli::Command::Export(a) => export::run(&a),
        cli::Command::Bench(a) => rtrec_bench::run(&a),
        cli::Command::BgLoad { args } => Ok(rtrec_bench::bgload_main(&args)),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    std::process::exit(0);
                }
            }
            // The engine's error type says itself whether it is bad input
            // (`Error::is_bad_input`); the binary does not list variants.
            let bad_input = e.downcast_ref::<Usage>().is_some()
                || e.downcast_ref::<rtrec_bench::Error>().is_some()
                || e.downcast_ref::<rtrec_engine::Error>()
                    .is_some_and(rtrec_engine::Error::is_bad_input);
            eprintln!("rtrec: {}", chain(&e));
            if bad_input {
                2
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}

/// The error and its causes on one line, each cause once.
fn chain(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
