//! `rtrec device probe DIR`: measures the storage under DIR into a device
//! profile (the measuring is `rtrec_emu::probe`'s), prints it, and writes
//! it with `-o` for `rtrec bench --device FILE` to replay on any machine.

use crate::cli::{DeviceAction, DeviceArgs};
use crate::{usage, Context, Result};

/// Runs `rtrec device`.
pub fn run(args: &DeviceArgs) -> Result<i32> {
    let DeviceAction::Probe { dir, output, name } = &args.action;
    if !dir.is_dir() {
        return usage(format!("'{}' is not a directory", dir.display()));
    }
    let mib = rtrec_emu::probe::bytes_written() >> 20;
    eprintln!(
        "rtrec device probe: writes {mib} MiB and issues about 200 flushes inside {} \
         (removed after): a few seconds on an SSD, about a minute on an SD card",
        dir.display()
    );
    let result = rtrec_emu::probe::probe(dir, name, |step| eprintln!("rtrec device probe: {step}"))
        .context(format!("probing the device under '{}'", dir.display()))?;
    for l in &result.lines {
        eprintln!("rtrec device probe: {l}");
    }
    // What it wrote must load as a profile, or it is not written.
    let json = serde_json::to_string_pretty(&result.profile).expect("plain data") + "\n";
    rtrec_emu::Profile::from_json(&json, "measured")
        .map_err(|e| crate::Error::Usage(e.to_string()))?;
    match output {
        Some(path) => {
            std::fs::write(path, &json).context(format!("writing '{}'", path.display()))?
        }
        None => print!("{json}"),
    }
    Ok(0)
}
