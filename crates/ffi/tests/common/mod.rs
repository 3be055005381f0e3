//! What the C tests share: where the repository and the static library
//! built for this test run are, and what a static link needs (see
//! `c_example.rs` for how `librtrec.a` is found).
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};

/// What `librtrec.a` must be linked with (rustc's `native-static-libs`).
pub const NATIVE_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The static library built for this test run (see `c_example.rs`).
pub fn static_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("deps/");
    let profile_dir = deps.parent().expect("<target>/<profile>/");
    [deps.join("librtrec.a"), profile_dir.join("librtrec.a")].into_iter().find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "no librtrec.a in {} or {}; cargo test should have built it (crate-type staticlib in crates/ffi/Cargo.toml)",
            deps.display(),
            profile_dir.display()
        )
    })
}
