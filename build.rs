//! Names the build that leaves commands out: `cfg(commands_left_out)` is
//! set when any of the cargo features that bring a command (`bench`,
//! `report`, `emu`, `completions`, `man`, `tables`: `ls`, `info` and the table exports; `arrow`: the
//! Arrow IPC export; `ship`; `bench` brings `trace`) is off,
//! as in the record-only build (docs/embedded.md). The `LeftOut`
//! subcommand, its dispatch and its one sentence are compiled under it,
//! so the list of features is written once, here.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(commands_left_out)");
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase())).is_some();
    if ![
        "bench",
        "report",
        "emu",
        "completions",
        "man",
        "tables",
        "arrow",
        "ship",
    ]
    .into_iter()
    .all(on)
    {
        println!("cargo::rustc-cfg=commands_left_out");
    }
}
