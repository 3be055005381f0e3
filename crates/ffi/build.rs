//! Links `librtrec.so` as it is installed: with its SONAME,
//! `librtrec.so.<major>`, so that a program linked against it records the
//! major version it needs and the dynamic loader finds `librtrec.so.0`
//! installed beside later minor versions; and with the symbol versions of
//! `rtrec.map` (`rtrec_version@@RTREC_0.2`,
//! `rtrec_dir_recover@@RTREC_0.3`, …), so that the library of the build
//! tree and the one `scripts/install.sh` installs export the same names.
//!
//! # Symbol versions
//!
//! rustc links a cdylib with a version script of its own, an anonymous
//! node listing the exported symbols (`{ global: rtrec_...; local: *; };`),
//! passed first. A second `--version-script` does not help: GNU ld refuses
//! it ("anonymous version tag cannot be combined with other version
//! tags"), and lld, rustc's default linker on x86_64 Linux since 1.90,
//! silently keeps the anonymous node (both seen with rustc 1.95;
//! `-Wl,--default-symver` would name the version after the SONAME, not
//! the map's nodes). So this script writes a wrapper that the C compiler
//! driver runs the link step under (GCC's `-wrapper`, which wraps
//! `collect2` whichever linker it then runs, GNU ld or lld): the wrapper
//! replaces the argument `--version-script=<rustc's temporary dir>/list`
//! with `--version-script=<this crate>/rtrec.map` and runs the link. The
//! map names every exported function, in the node of the version that
//! added it, and nothing else: the set rustc lists (every exported
//! function is `#[no_mangle]` `rtrec_*`; `tests/common/mod.rs` checks the
//! map against the sources). `crates/ffi/tests/build_tree.rs` checks with `readelf` that every
//! exported symbol of the library cargo makes is versioned.
//!
//! Design choices: a wrapper of the driver, not a linker of our own
//! (`-C linker=` is not something a build script can set for a cdylib,
//! and a workspace `.cargo/config.toml` would apply to every crate and be
//! overridden by users' own); a post-link relink cannot run from a build
//! script, which runs before the crate is compiled. When the driver is not
//! GCC (clang has no `-wrapper`), the library is linked without versions
//! and the build says so in a warning; `scripts/install.sh` relinks the
//! installed library from `librtrec.a` with the map in any case.
//!
//! For 0.x versions the major is 0 and stays 0 until 1.0: the C API keeps
//! compatibility within it through its struct versions (`struct_size`)
//! and append-only enums (docs/c-api.md).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets it");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librtrec.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=rtrec.map");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    version_symbols();
}

/// The C compiler driver rustc links with: cargo's `RUSTC_LINKER` when
/// one is configured (`CARGO_TARGET_<TRIPLE>_LINKER`, as the cross builds
/// set it), else rustc's default, `cc`.
fn linker() -> String {
    std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into())
}

/// Whether `driver` is GCC (it takes `-wrapper`).
fn is_gcc(driver: &str) -> bool {
    Command::new(driver)
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            let v = String::from_utf8_lossy(&o.stdout);
            o.status.success() && v.contains("Free Software Foundation") && !v.contains("clang")
        })
}

/// `s` quoted for a POSIX shell.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Writes the link wrapper into `OUT_DIR` and gives it to the driver
/// (see the crate docs), or warns when it cannot.
fn version_symbols() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"));
    let map =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("rtrec.map");
    let driver = linker();
    let wrapper = out.join("link-with-rtrec-map.sh");
    // `-wrapper` takes a comma-separated list: a path with a comma cannot
    // be given.
    let why_not = if !is_gcc(&driver) {
        Some(format!(
            "the linker driver '{driver}' is not GCC (no -wrapper)"
        ))
    } else if wrapper.to_string_lossy().contains(',') {
        Some(format!("OUT_DIR '{}' has a comma", out.display()))
    } else {
        None
    };
    if let Some(why) = why_not {
        println!(
            "cargo:warning=librtrec.so is linked without the symbol versions of rtrec.map: {why}; scripts/install.sh relinks it with them"
        );
        return;
    }
    let script = format!(
        "#!/bin/sh\n\
         # Written by crates/ffi/build.rs: runs the link step with rustc's\n\
         # anonymous version script replaced by rtrec.map (see build.rs).\n\
         map={}\n\
         for a; do\n  shift\n  case $a in\n    --version-script=*/rustc*/list) set -- \"$@\" \"--version-script=$map\" ;;\n    *) set -- \"$@\" \"$a\" ;;\n  esac\ndone\n\
         exec \"$@\"\n",
        sh_quote(&map.to_string_lossy())
    );
    std::fs::write(&wrapper, script).expect("writing the link wrapper into OUT_DIR");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("making the link wrapper executable");
    println!("cargo:rustc-cdylib-link-arg=-wrapper");
    println!("cargo:rustc-cdylib-link-arg={}", wrapper.display());
}
