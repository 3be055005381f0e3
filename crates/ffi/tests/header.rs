//! `include/rtrec.h` is generated from this crate by cbindgen and
//! committed. These tests fail when the committed header differs from a
//! fresh generation (`RTREC_BLESS=1` rewrites it instead), and hold the
//! naming and documentation rules of the C API.

use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("../../include/rtrec.h")
}

/// The header as cbindgen generates it now. Parsing `src/lib.rs` (and the
/// modules it declares) directly needs no `cargo metadata` call.
fn generate() -> cbindgen::Bindings {
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml"))
        .expect("reading cbindgen.toml");
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir().join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header")
}

fn generated_text() -> String {
    let mut out = Vec::new();
    generate().write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn header_is_up_to_date() {
    let fresh = generated_text();
    let path = header_path();
    if std::env::var_os("RTREC_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("writing include/rtrec.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || committed.lines().count().min(fresh.lines().count()) + 1,
                |i| i + 1,
            );
        panic!(
            "include/rtrec.h differs from a fresh generation (first at line {line}); \
             regenerate it with `RTREC_BLESS=1 cargo test -p rtrec-ffi --test header` and commit it"
        );
    }
}

/// The exported functions, from the generated bindings.
fn exported() -> Vec<String> {
    generate()
        .dynamic_symbols_names()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_exported_function_is_named_rtrec_object_verb() {
    let names = exported();
    assert!(names.len() >= 11, "{names:?}");
    // Library-wide, with no object: the version, as
    // `sqlite3_libversion_number()` and liburing's `io_uring_major_version()`.
    for n in names.iter().filter(|n| *n != "rtrec_version") {
        let parts: Vec<&str> = n.split('_').collect();
        assert!(
            parts[0] == "rtrec" && parts.len() >= 3,
            "{n} is not rtrec_<object>_<verb>"
        );
        assert!(
            n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{n} is not lower snake case"
        );
    }
}

#[test]
fn every_exported_function_has_a_section_in_the_c_api_docs() {
    let docs = std::fs::read_to_string(crate_dir().join("../../docs/c-api.md"))
        .expect("reading docs/c-api.md");
    for n in exported() {
        assert!(
            docs.contains(&format!("## `{n}`")),
            "docs/c-api.md has no section `## `{n}``"
        );
    }
}

#[test]
fn every_function_in_the_header_carries_its_documentation() {
    let text = generated_text();
    let lines: Vec<&str> = text.lines().collect();
    for n in exported() {
        let declares = |l: &&str| {
            let t = l.trim_start();
            !t.starts_with('*') && !t.starts_with("/*") && t.contains(&format!("{n}("))
        };
        let at = lines
            .iter()
            .position(declares)
            .unwrap_or_else(|| panic!("{n} is not declared in the header"));
        assert!(
            lines[..at].last().is_some_and(|l| l.trim() == "*/"),
            "{n} has no doc comment in the header"
        );
    }
}
