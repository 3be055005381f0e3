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
//! `crates/ffi/rtrec.map` (`rtrec_x@@RTREC_0.2`, `rtrec_dir_recover@@RTREC_0.3`, linked so by
//! `crates/ffi/build.rs`), as the installed one does: both the one the
//! recipe builds and the one built for this test run are checked with
//! `readelf --dyn-syms` and `readelf -V`.

use std::path::Path;
use std::process::Command;

mod common;

/// Held by the tests that run `cargo build` (which relinks the libraries
/// in `target/release/deps/`) or read those libraries, so that one never
/// reads a library the other is rewriting.
static CARGO_OUTPUT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`CARGO_OUTPUT`], also after a test that held it failed.
fn cargo_output() -> std::sync::MutexGuard<'static, ()> {
    CARGO_OUTPUT.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _held = cargo_output();
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
    let _held = cargo_output();
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

/// The version map itself, without a library: every exported function of
/// the sources is named once, in a node; the newest node is the library's
/// version (`RTREC_0.4` for 0.4.0), so a function added without a version
/// step fails here (issue 42, finding 11).
#[test]
fn rtrec_map_names_every_exported_function_and_ends_at_the_librarys_version() {
    common::assert_map_matches_sources();
    let nodes = common::map_nodes();
    let newest = nodes.last().unwrap();
    // The newest node names a function (0.3: rtrec_dir_recover, 0.4:
    // rtrec_layout_size): a node without one would let an older library
    // load a program built against this one.
    assert!(
        newest.2.iter().any(|f| f == "rtrec_layout_size"),
        "rtrec_layout_size (added in 0.4) is not in {}",
        newest.0
    );
}

/// A program that calls a function of the newest node, linked against
/// this library, is refused by the loader when only an older library is
/// there: a library linked from the same `librtrec.a` with the map of the
/// version before (every function of the older nodes, none of the newest)
/// stands in for it. The refusal names the missing version.
#[test]
fn a_program_built_against_this_library_is_refused_by_an_older_one_by_the_version_it_needs() {
    if !common::have("cc", "gcc") || !common::have("readelf", "binutils") {
        return;
    }
    let _held = cargo_output();
    let nodes = common::map_nodes();
    assert!(nodes.len() >= 2, "only one version node");
    let (newest, _, new_fns) = nodes.last().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let archive = common::static_library();
    // Both libraries from the same archive: the current map, and the map
    // of the version before (its nodes only).
    let link = |map: &Path, out: &Path| {
        let o = Command::new("cc")
            .arg("-shared")
            .arg("-Wl,--whole-archive")
            .arg(&archive)
            .arg("-Wl,--no-whole-archive")
            .arg(format!("-Wl,--version-script={}", map.display()))
            .arg("-Wl,-soname,librtrec.so.0")
            .args(common::NATIVE_LIBS)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let new_dir = tmp.path().join("new");
    let old_dir = tmp.path().join("old");
    std::fs::create_dir_all(&new_dir).unwrap();
    std::fs::create_dir_all(&old_dir).unwrap();
    let mut old_map = String::new();
    for (node, parent, fns) in &nodes[..nodes.len() - 1] {
        let list: String = fns.iter().map(|f| format!("        {f};\n")).collect();
        let local = if parent.is_none() {
            "    local:\n        *;\n"
        } else {
            ""
        };
        let tail = parent.as_deref().unwrap_or("");
        old_map.push_str(&format!(
            "{node} {{\n    global:\n{list}{local}}} {tail};\n"
        ));
    }
    std::fs::write(tmp.path().join("old.map"), old_map).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    link(&repo.join("rtrec.map"), &new_dir.join("librtrec.so.0"));
    link(&tmp.path().join("old.map"), &old_dir.join("librtrec.so.0"));
    std::os::unix::fs::symlink("librtrec.so.0", new_dir.join("librtrec.so")).unwrap();
    // A program that calls the newest node's first function.
    let f = &new_fns[0];
    let src = tmp.path().join("p.c");
    std::fs::write(
        &src,
        format!("#include \"rtrec.h\"\n#include <stdio.h>\nint main(void) {{ printf(\"%p %d\\n\", (void *){f}, rtrec_version()); return 0; }}\n"),
    )
    .unwrap();
    let exe = tmp.path().join("p");
    let o = Command::new("cc")
        .arg("-I")
        .arg(repo.join("../../include"))
        .arg(&src)
        .arg("-L")
        .arg(&new_dir)
        .arg("-lrtrec")
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let needs = Command::new("readelf")
        .arg("-V")
        .arg(&exe)
        .output()
        .unwrap();
    let needs = String::from_utf8_lossy(&needs.stdout);
    assert!(needs.contains(&format!("Name: {newest}")), "{needs}");
    let run = |dir: &Path| {
        Command::new(&exe)
            .env("LD_LIBRARY_PATH", dir)
            .output()
            .unwrap()
    };
    let ok = run(&new_dir);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let refused = run(&old_dir);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "an older library ran it");
    assert!(
        err.contains(&format!("version `{newest}' not found")),
        "{err}"
    );
}
