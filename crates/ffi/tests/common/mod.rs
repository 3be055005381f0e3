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

/// The version nodes of `crates/ffi/rtrec.map`, oldest first: each
/// node's name, the node it inherits (`None` for the first) and the
/// functions it names (`global:`).
pub fn map_nodes() -> Vec<(String, Option<String>, Vec<String>)> {
    let map = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rtrec.map"))
        .expect("reading crates/ffi/rtrec.map");
    // Comments out (`/* ... */`, not nested).
    let mut code = String::new();
    let mut rest = map.as_str();
    while let Some(at) = rest.find("/*") {
        code.push_str(&rest[..at]);
        let end = rest[at..]
            .find("*/")
            .expect("a closed comment in rtrec.map");
        rest = &rest[at + end + 2..];
    }
    code.push_str(rest);
    let mut nodes = Vec::new();
    let mut rest = code.as_str();
    while let Some(open) = rest.find('{') {
        let name = rest[..open].trim().to_string();
        let close = rest[open..].find('}').expect("a closed node in rtrec.map") + open;
        let body = &rest[open + 1..close];
        let after = &rest[close + 1..];
        let semi = after.find(';').expect("a node ends with ';'");
        let parent = Some(after[..semi].trim().to_string()).filter(|p| !p.is_empty());
        let global = body
            .split("local:")
            .next()
            .unwrap_or("")
            .replace("global:", "");
        let names = global
            .split(';')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        nodes.push((name, parent, names));
        rest = &after[semi + 1..];
    }
    assert!(!nodes.is_empty(), "rtrec.map names no version node");
    nodes
}

/// The functions the sources export (`#[no_mangle]` before `pub ...
/// extern "C" fn rtrec_...`), sorted.
pub fn source_functions() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            if l.trim() != "#[no_mangle]" {
                continue;
            }
            let f = lines.peek().copied().unwrap_or("");
            let at = f
                .find("fn rtrec_")
                .expect("#[no_mangle] on an rtrec_ function")
                + 3;
            let name: String = f[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names.sort();
    names
}

/// Checks `crates/ffi/rtrec.map` against the sources: every exported
/// function is named in exactly one node, nothing else is, no node names
/// a wildcard (a new function must be placed in its version's node by
/// hand), each node inherits the one before, and the newest node is the
/// library's version (`RTREC_<major>.<minor>` of `Cargo.toml`): a
/// function added without a version step fails here.
pub fn assert_map_matches_sources() {
    let nodes = map_nodes();
    let mut mapped: Vec<String> = nodes.iter().flat_map(|n| n.2.clone()).collect();
    for n in &mapped {
        assert!(
            !n.contains('*') && !n.contains('?'),
            "rtrec.map: '{n}' is a pattern, not a name"
        );
    }
    mapped.sort();
    let before = mapped.len();
    mapped.dedup();
    assert_eq!(before, mapped.len(), "rtrec.map names a function twice");
    assert_eq!(
        mapped,
        source_functions(),
        "rtrec.map and the sources' exported functions differ"
    );
    for w in nodes.windows(2) {
        assert_eq!(
            w[1].1.as_deref(),
            Some(w[0].0.as_str()),
            "{} must inherit {}",
            w[1].0,
            w[0].0
        );
    }
    let newest = &nodes.last().unwrap().0;
    let version = format!(
        "RTREC_{}.{}",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR")
    );
    assert_eq!(
        newest, &version,
        "the newest node of rtrec.map is not the library's version"
    );
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

/// Checks that `lib` exports exactly the functions of `rtrec.map`, each
/// with its node's version as its default version (`rtrec_x@@RTREC_0.2`,
/// `rtrec_dir_recover@@RTREC_0.3`), at least `min` of them, and that
/// `readelf -V` lists every node; prints the map it found (the ABI's
/// version map).
pub fn assert_versioned(lib: &Path, min: usize) {
    assert_map_matches_sources();
    let nodes = map_nodes();
    let node_names: Vec<&str> = nodes.iter().map(|n| n.0.as_str()).collect();
    let mut names: Vec<String> = exported_symbols(lib)
        .into_iter()
        .filter(|n| !node_names.contains(&n.as_str()))
        .collect();
    names.sort();
    let mut want: Vec<String> = nodes
        .iter()
        .flat_map(|(node, _, fns)| fns.iter().map(move |f| format!("{f}@@{node}")))
        .collect();
    want.sort();
    assert!(names.len() >= min, "{}: {names:?}", lib.display());
    assert_eq!(
        names,
        want,
        "{}: the exported symbols and their versions are not those of crates/ffi/rtrec.map",
        lib.display()
    );
    let v = std::process::Command::new("readelf")
        .arg("-V")
        .arg(lib)
        .output()
        .expect("running readelf -V");
    let v = String::from_utf8_lossy(&v.stdout);
    // Each node is defined. Whether the definition names its parent is
    // the linker's choice (GNU ld writes "Parent 1: RTREC_0.2", lld does
    // not; the loader never reads it): the map's own inheritance is
    // checked above.
    for (node, _, _) in &nodes {
        assert!(
            v.contains(&format!("Name: {node}")),
            "{}: no version definition {node}:\n{v}",
            lib.display()
        );
    }
    eprintln!("{}: version map", lib.display());
    for s in &names {
        eprintln!("  {s}");
    }
}
