//! The C packaging as a user meets it: `scripts/install.sh --prefix`
//! installs the shared library under its SONAME (`librtrec.so.0`) with the
//! two links, the static library, the header and `rtrec.pc`; a C program
//! built with `pkg-config --cflags --libs rtrec` records through the
//! installed library and needs `librtrec.so.0`, not an unversioned name.
//! The installed library has no debug information, exports only the
//! `rtrec_*` functions, each versioned by its node of
//! `crates/ffi/rtrec.map` (`RTREC_0.2`, `RTREC_0.3`), and holds nothing
//! of the command line (no clap).

use std::path::Path;
use std::process::Command;

mod common;

#[test]
fn an_installed_rtrec_is_found_by_pkg_config_and_linked_by_its_soname() {
    let missing: Vec<&str> = ["cc", "pkg-config", "readelf"]
        .into_iter()
        .filter(|t| !common::runs(t))
        .collect();
    if !missing.is_empty() {
        let reason = format!("missing {}", missing.join(", "));
        assert!(
            std::env::var_os("RTREC_REQUIRE_PRIVILEGED").is_none(),
            "required: {reason}"
        );
        eprintln!("skipped: {reason}");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    let o = Command::new("bash")
        .arg(repo.join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "install.sh failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lib = prefix.join("lib");
    let soname = Command::new("readelf")
        .arg("-d")
        .arg(lib.join("librtrec.so"))
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&soname.stdout);
    assert!(dynamic.contains("[librtrec.so.0]"), "{dynamic}");
    common::assert_versioned(&lib.join("librtrec.so"), 16);
    // Installed without debug information (issue 42: 10.9 MB with it).
    let sections = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(lib.join("librtrec.so.0"))
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    assert!(
        !sections.contains(".debug_"),
        "the installed library carries debug information:\n{sections}"
    );
    let so = std::fs::read(lib.join("librtrec.so.0")).unwrap();
    eprintln!("installed librtrec.so: {} bytes", so.len());
    assert!(
        !so.windows(b"clap_builder".len())
            .any(|w| w == b"clap_builder"),
        "the command line's clap is linked into the library"
    );
    for f in ["librtrec.so.0", "librtrec.a", "pkgconfig/rtrec.pc"] {
        assert!(lib.join(f).exists(), "{f} not installed");
    }
    assert!(prefix.join("include/rtrec.h").exists());
    // A page for every command the binary lists, none for hidden ones.
    for c in ["record", "recover", "trigger", "device", "ls", "export"] {
        let page = prefix.join(format!("share/man/man1/rtrec-{c}.1"));
        assert!(page.exists(), "no man page for {c}");
    }
    assert!(!prefix.join("share/man/man1/rtrec-__bgload.1").exists());

    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "rtrec"])
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
        .output()
        .unwrap();
    let flags = String::from_utf8(flags.stdout).unwrap();
    assert!(flags.contains("-lrtrec"), "{flags}");
    let exe = tmp.path().join("record");
    let cc = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra"])
        .arg(repo.join("examples/record.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let needed = Command::new("readelf")
        .arg("-d")
        .arg(&exe)
        .output()
        .unwrap();
    let needed = String::from_utf8_lossy(&needed.stdout);
    assert!(
        needed.contains("Shared library: [librtrec.so.0]"),
        "{needed}"
    );
    let rec = tmp.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    let run = Command::new(&exe)
        .arg(&rec)
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(String::from_utf8_lossy(&run.stdout).contains("records_written=1000"));
}
