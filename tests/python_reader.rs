//! The Python reader package (`python/`): `pip install ./python` installs
//! it, and its pytest suite (`python/tests`) then runs against the
//! installed copy with this build's `rtrec` as the binary (`RTREC`):
//! every record's sequence number and times as `rtrec export` gives them,
//! a layout's columns in their dtypes, a loss as rows (`lost` true, as
//! many as `rtrec ls` counts) and a gap, a damaged copy refused by verify.
//!
//! Nothing is installed here but the package itself (`--no-deps` into a
//! temporary `--target`): without python3, pytest, numpy, pandas, polars or
//! pyarrow the test skips with one line naming `python3 -m pip install
//! pytest numpy pandas polars pyarrow`, and
//! fails instead under `RTREC_REQUIRE_PRIVILEGED=1` (CI installs them).

use std::path::Path;
use std::process::Command;

use rtrec_host::tools;

mod common;
use common::show;

const INSTALL: &str = "python3 -m pip install pytest numpy pandas polars pyarrow";

fn have_python_modules() -> bool {
    Command::new("python3")
        .args(["-c", "import pytest, numpy, pandas, polars, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_pip_installed_package_passes_its_tests_against_this_rtrec() {
    if !have_python_modules() {
        tools::skip(
            "the_pip_installed_package_passes_its_tests_against_this_rtrec",
            &format!("needs python3 with pytest, numpy, pandas, polars and pyarrow ({INSTALL})"),
        );
        return;
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = tempfile::tempdir().unwrap();
    let o = Command::new("python3")
        .args(["-m", "pip", "install", "-q", "--no-deps", "--target"])
        .arg(target.path())
        .arg(checkout.join("python"))
        .env("PIP_ROOT_USER_ACTION", "ignore")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "pip install ./python: {}", show(&o));
    assert!(target.path().join("rtrec").join("__init__.py").is_file());

    let o = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(checkout.join("python").join("tests"))
        .current_dir(target.path())
        .env("PYTHONPATH", target.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("RTREC", env!("CARGO_BIN_EXE_rtrec"))
        .env("RTREC_PY_TARGET", target.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "pytest python/tests: {}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(" passed"), "{out}");
    // Every test ran: a skip (no pandas, no RTREC_PY_TARGET) is not a pass.
    assert!(!out.contains("failed") && !out.contains("skipped"), "{out}");
    eprintln!(
        "pytest python/tests: {}",
        out.trim().lines().last().unwrap_or("")
    );
}
