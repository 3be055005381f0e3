//! The build-tree recipe of `docs/c-api.md` ("Shared library from the build
//! tree, without installing") runs as written: the shell block is taken
//! from the document and run with `bash -e` in the repository, so the
//! document cannot drift from what works. The program it builds records
//! 1,000 records through `target/release/librtrec.so.0`.
//!
//! The recipe starts with `cargo build --release -p rtrec-ffi`; cargo holds
//! its build lock only while building, not while tests run, so running it
//! from a test works (it may relink the library with the features of a
//! plain build). The test writes `target/release/librtrec.so.0`, the link
//! the recipe makes, and puts the program in a temporary `TMPDIR`.
//!
//! The library cargo makes carries the symbol versions of
//! `crates/ffi/rtrec.map` (`rtrec_*@@RTREC_0.2`, linked so by
//! `crates/ffi/build.rs`), as the installed one does: both the one the
//! recipe builds and the one built for this test run are checked with
//! `readelf --dyn-syms` and `readelf -V`.

use std::path::Path;
use std::process::Command;

mod common;

/// The first ```sh block after `marker` in `doc`.
fn block_after<'a>(doc: &'a str, marker: &str) -> &'a str {
    let at = doc
        .find(marker)
        .unwrap_or_else(|| panic!("no '{marker}' in docs/c-api.md"));
    let rest = &doc[at..];
    let start = rest.find("```sh\n").expect("a ```sh block") + "```sh\n".len();
    let len = rest[start..].find("```").expect("the block's end");
    &rest[start..start + len]
}

#[test]
fn the_documented_build_tree_recipe_runs_as_written() {
    let have_cc = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_cc {
        assert!(
            std::env::var_os("RTREC_REQUIRE_PRIVILEGED").is_none(),
            "required: cc"
        );
        eprintln!("skipped: no cc");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(repo.join("docs/c-api.md")).unwrap();
    let recipe = block_after(&doc, "Shared library from the build tree");
    assert!(
        recipe.contains("LD_LIBRARY_PATH=target/release"),
        "{recipe}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new("bash")
        .arg("-ec")
        .arg(recipe)
        .current_dir(&repo)
        .env("TMPDIR", tmp.path())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "the recipe failed ({}):\n{recipe}\n--- stdout\n{stdout}--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("records_written=1000"), "{stdout}");
    if common::have("readelf", "binutils") {
        common::assert_versioned(&repo.join("target/release/librtrec.so"), 16);
    }
}

/// `librtrec.so` as cargo linked it for this test run (beside the test
/// binary, in `deps/`, built from the sources under test; see
/// `c_example.rs` on where cargo puts the library's crate types).
#[test]
fn the_library_cargo_links_exports_every_function_with_the_version_of_rtrec_map() {
    if !common::have("readelf", "binutils") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib = [
        deps.join("librtrec.so"),
        deps.parent().unwrap().join("librtrec.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .expect("cargo test builds librtrec.so (crate-type cdylib)");
    common::assert_versioned(&lib, 16);
}
