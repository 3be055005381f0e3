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

/// Whether `tool --version` runs.
pub fn runs(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `tool` runs; when not, the test skips with one line naming the
/// Debian `package`, or fails under `RTREC_REQUIRE_PRIVILEGED` (CI).
pub fn have(tool: &str, package: &str) -> bool {
    let ok = runs(tool);
    if !ok {
        assert!(
            std::env::var_os("RTREC_REQUIRE_PRIVILEGED").is_none(),
            "required: {tool} (apt-get install {package})"
        );
        eprintln!("skipped: {tool} is missing (apt-get install {package})");
    }
    ok
}

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

/// The version node of `crates/ffi/rtrec.map` (`RTREC_0.2`): the name
/// before the first `{` outside a comment.
pub fn map_version() -> String {
    let map = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rtrec.map"))
        .expect("reading crates/ffi/rtrec.map");
    let code: String = map.split("*/").last().unwrap_or(&map).to_string();
    code.split('{')
        .next()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .expect("rtrec.map names a version node")
        .to_string()
}

/// The symbols `lib` exports (defined, global or weak), as `readelf
/// --dyn-syms -W` prints them (`name@@VERSION` when versioned).
pub fn exported_symbols(lib: &Path) -> Vec<String> {
    let o = std::process::Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(lib)
        .output()
        .expect("running readelf");
    assert!(o.status.success(), "readelf {}", lib.display());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            (f.len() >= 8 && matches!(f[4], "GLOBAL" | "WEAK") && f[6] != "UND")
                .then(|| f[7].to_string())
        })
        .collect()
}

/// Checks that `lib` exports only `rtrec_*` symbols, at least `min` of
/// them, each with the version of `rtrec.map` as its default version
/// (`rtrec_x@@RTREC_0.2`), and that readelf -V lists that version
/// definition.
pub fn assert_versioned(lib: &Path, min: usize) {
    let version = map_version();
    let names: Vec<String> = exported_symbols(lib)
        .into_iter()
        .filter(|n| *n != version)
        .collect();
    assert!(names.len() >= min, "{}: {names:?}", lib.display());
    for n in &names {
        assert!(
            n.starts_with("rtrec_") && n.ends_with(&format!("@@{version}")),
            "{}: {n} is exported without the {version} version of crates/ffi/rtrec.map",
            lib.display()
        );
    }
    let v = std::process::Command::new("readelf")
        .arg("-V")
        .arg(lib)
        .output()
        .expect("running readelf -V");
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.contains(&format!("Name: {version}")),
        "{}: no version definition {version}:\n{v}",
        lib.display()
    );
}
