//! Gives `librtrec.so` its SONAME, `librtrec.so.<major>`, so that a program
//! linked against it records the major version it needs and the dynamic
//! loader finds `librtrec.so.0` installed beside later minor versions
//! (`scripts/install.sh` installs `librtrec.so.0.1.0` with the two links).
//!
//! Symbol versions (`rtrec.map`) are not passed here: rustc hands the
//! linker a version script of its own first, and GNU ld and lld use the
//! first one, so a second `--version-script` is silently ignored.
//! `scripts/install.sh` links the installed `librtrec.so` from
//! `librtrec.a` with `rtrec.map` instead (as zlib-rs does).
//!
//! Design choice: for 0.x versions the major is 0 and stays 0 until 1.0 —
//! the C API keeps compatibility within it through its struct versions
//! (`struct_size`) and append-only enums (docs/c-api.md).

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets it");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librtrec.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
