//! The `rtrec` binary: parse the command line, dispatch one command, turn
//! the result into an exit code. All the work lives in the crates under
//! `crates/` and the command modules here.
//!
//! Exit codes: 0 success; 1 the command ran and found a problem (a corrupt
//! recording, a failed recording); 2 bad input (usage, configuration,
//! missing directory, too little space) or an I/O error before anything was
//! done; 130 interrupted by a signal.

mod cli;
mod device;
mod disk;
mod doctor;
mod error;
mod events;
mod explain;
mod export;
#[cfg(feature = "tables")]
mod info;
mod isolation;
#[cfg(feature = "tables")]
mod ls;
mod notify;
mod pool;
mod progress;
mod record;
mod recover;
#[cfg(feature = "report")]
mod report;
#[cfg(feature = "ship")]
mod ship;
mod signals;
mod status;
mod trigger;
mod tune;
mod verify;

/// `ship --convert`'s converter: the exporter's (`export::convert`), or
/// a refusal in a build without the table exports.
#[cfg(all(feature = "ship", feature = "tables"))]
const SHIP_CONVERTER: ship::convert::MakeConverter = export::convert::for_ship;
/// `ship --convert`'s converter: a refusal without the table exports.
#[cfg(all(feature = "ship", not(feature = "tables")))]
const SHIP_CONVERTER: ship::convert::MakeConverter = export::ship_converter_left_out;

fn main() {
    let cli = cli::parse();
    // Commands that only report die quietly when their reader goes
    // (`rtrec verify --json DIR | head`); a recording never does.
    let quiet_on_broken_pipe = match cli.command {
        cli::Command::Verify(_) | cli::Command::Events(_) | cli::Command::Doctor(_) => true,
        #[cfg(feature = "tables")]
        cli::Command::Ls(_) => true,
        #[cfg(feature = "tables")]
        cli::Command::Info(_) => true,
        #[cfg(feature = "completions")]
        cli::Command::Completions { .. } => true,
        #[cfg(feature = "man")]
        cli::Command::Man { .. } => true,
        _ => false,
    };
    if quiet_on_broken_pipe {
        let _ = rtrec_sys::default_sigpipe();
    }
    let result = match cli.command {
        cli::Command::Record(a) => record::run(&a),
        cli::Command::Recover(a) => recover::run(&a.dir),
        cli::Command::Verify(a) => verify::run(&a),
        cli::Command::Tune(a) => tune::run(&a),
        cli::Command::Pool(a) => pool::run(&a),
        cli::Command::Export(a) => export::run(&a),
        #[cfg(feature = "tables")]
        cli::Command::Ls(a) => ls::run(&a),
        #[cfg(feature = "tables")]
        cli::Command::Info(a) => info::run(&a),
        cli::Command::Events(a) => events::run(&a),
        #[cfg(feature = "ship")]
        cli::Command::Ship(a) => ship::run(&a, SHIP_CONVERTER),
        #[cfg(feature = "ship")]
        cli::Command::Fetch(a) => ship::fleet::fetch(&a),
        cli::Command::Doctor(a) => doctor::run(&a),
        #[cfg(feature = "report")]
        cli::Command::Report(a) => report::run(&a),
        #[cfg(feature = "bench")]
        cli::Command::Bench(a) => rtrec_bench::run(&a).map_err(error::Error::from),
        #[cfg(feature = "completions")]
        cli::Command::Completions { shell } => cli::completions(shell),
        #[cfg(feature = "man")]
        cli::Command::Man { command } => cli::man(command.as_deref()),
        cli::Command::Trigger(a) => trigger::run(&a),
        cli::Command::Device(a) => device::run(&a),
        #[cfg(feature = "bench")]
        cli::Command::BgLoad { args } => Ok(rtrec_bench::bgload_main(&args)),
        #[cfg(feature = "emu")]
        cli::Command::Emulate { args } => Ok(rtrec_emu::emulate_main(&args)),
        #[cfg(commands_left_out)]
        cli::Command::LeftOut(args) => cli::left_out(&args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) if e.is_broken_pipe() => 0,
        Err(e) => {
            eprintln!("rtrec: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
