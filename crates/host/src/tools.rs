//! The external programs rtrec and its tests run, the Debian package that
//! brings each, and the one rule for a test whose program is missing.
//!
//! Design choice: a test that needs a program which is not installed
//! *skips* with one line that names the program and its package
//! (`skipped NAME: needs mkfs.xfs (Debian package xfsprogs)`), so the
//! README's test command passes on a fresh machine; under
//! `RTREC_REQUIRE_PRIVILEGED=1` (CI, which installs every package first)
//! the same test *fails*, so a skip can never pass for a success there.
//! `.ci/run` proves the first half by running the test command again with
//! `mkfs.xfs` hidden from `PATH`.

use std::fs;
use std::os::unix::fs::PermissionsExt;

/// Set to `1` (as CI does) to make [`require`] and
/// [`crate::loopfs::require_privileged`] fail a test instead of skipping it.
pub const REQUIRE_PRIVILEGED_ENV: &str = "RTREC_REQUIRE_PRIVILEGED";

/// A program found on `PATH`, and the Debian package that installs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// The command's name, as looked up on `PATH`.
    pub command: &'static str,
    /// The Debian package that installs it.
    pub package: &'static str,
}

/// `mkfs.ext4`: every loop-device test formats an ext4 image.
pub const MKFS_EXT4: Tool = Tool {
    command: "mkfs.ext4",
    package: "e2fsprogs",
};
/// `e2fsck`: the power-cut tests check the file system of each snapshot.
pub const E2FSCK: Tool = Tool {
    command: "e2fsck",
    package: "e2fsprogs",
};
/// `debugfs`: the power-cut tests read an unmounted image's files.
pub const DEBUGFS: Tool = Tool {
    command: "debugfs",
    package: "e2fsprogs",
};
/// `mkfs.xfs`: the power-cut tests snapshot an ext4 image on XFS with
/// `cp --reflink=always`.
pub const MKFS_XFS: Tool = Tool {
    command: "mkfs.xfs",
    package: "xfsprogs",
};
/// `mount`: loop-mounting images.
pub const MOUNT: Tool = Tool {
    command: "mount",
    package: "mount",
};
/// `losetup`: attaching loop devices.
pub const LOSETUP: Tool = Tool {
    command: "losetup",
    package: "mount",
};
/// `strace`: the test that no pooled recording calls `fallocate`.
pub const STRACE: Tool = Tool {
    command: "strace",
    package: "strace",
};
/// `ffmpeg`: the `--stdin` video stream tests.
pub const FFMPEG: Tool = Tool {
    command: "ffmpeg",
    package: "ffmpeg",
};
/// `ffprobe`: checks the exported video stream.
pub const FFPROBE: Tool = Tool {
    command: "ffprobe",
    package: "ffmpeg",
};
/// `fio`: S4 with `--with-fio` and the throughput study's reference.
pub const FIO: Tool = Tool {
    command: "fio",
    package: "fio",
};
/// `setpriv`: runs rtrec as `nobody` in the unprivileged `--explain` tests.
pub const SETPRIV: Tool = Tool {
    command: "setpriv",
    package: "util-linux",
};
/// `chromium`: renders the HTML report in the browser test.
pub const CHROMIUM: Tool = Tool {
    command: "chromium",
    package: "chromium",
};
/// `mkfs.vfat`: formats the FAT card of the FAT test.
pub const MKFS_VFAT: Tool = Tool {
    command: "mkfs.vfat",
    package: "dosfstools",
};
/// `fusefat`: mounts that FAT card through FUSE (this kernel has no vfat).
pub const FUSEFAT: Tool = Tool {
    command: "fusefat",
    package: "fusefat",
};
/// `unshare`: gives the FAT test a mount namespace of its own.
pub const UNSHARE: Tool = Tool {
    command: "unshare",
    package: "util-linux",
};

/// `openssl`: makes a private CA and a server certificate for the TLS
/// shipping test.
pub const OPENSSL: Tool = Tool {
    command: "openssl",
    package: "openssl",
};

/// Every program of this module: what the README lists and `.ci/run`
/// installs.
pub const ALL: [Tool; 16] = [
    MKFS_EXT4, E2FSCK, DEBUGFS, MKFS_XFS, MOUNT, LOSETUP, STRACE, FFMPEG, FFPROBE, FIO, SETPRIV,
    CHROMIUM, MKFS_VFAT, FUSEFAT, UNSHARE, OPENSSL,
];

impl Tool {
    /// True when an executable file of this name is on `PATH`.
    pub fn on_path(&self) -> bool {
        std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| {
                fs::metadata(dir.join(self.command))
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
        })
    }

    /// Why this tool cannot be used: `"needs mkfs.xfs (Debian package
    /// xfsprogs)"`.
    pub fn missing_reason(&self) -> String {
        format!("needs {} (Debian package {})", self.command, self.package)
    }
}

/// The first of `tools` that is not on `PATH`.
pub fn first_missing(tools: &[Tool]) -> Option<Tool> {
    tools.iter().copied().find(|t| !t.on_path())
}

/// For tests that run external programs: true when every one of `tools` is
/// on `PATH`; otherwise prints `skipped TEST: needs CMD (Debian package
/// PKG)` on stderr and returns false, so the test can return early.
///
/// # Panics
/// When a tool is missing and `RTREC_REQUIRE_PRIVILEGED=1` (as in CI), so
/// that a skip cannot pass for a success.
pub fn require(test: &str, tools: &[Tool]) -> bool {
    match first_missing(tools) {
        None => true,
        Some(missing) => skip(test, &missing.missing_reason()),
    }
}

/// The rule of [`require`] for any other missing piece (a Python package,
/// say): prints `skipped TEST: REASON` and returns false, or panics under
/// `RTREC_REQUIRE_PRIVILEGED=1`. `reason` starts with "needs …".
///
/// # Panics
/// Under `RTREC_REQUIRE_PRIVILEGED=1`.
pub fn skip(test: &str, reason: &str) -> bool {
    if std::env::var_os(REQUIRE_PRIVILEGED_ENV).is_some_and(|v| v == "1") {
        panic!("{test} {reason}, and {REQUIRE_PRIVILEGED_ENV}=1 forbids skipping it");
    }
    eprintln!("skipped {test}: {reason}");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_that_is_nowhere_is_missing_and_its_reason_names_the_package() {
        let ghost = Tool {
            command: "rtrec-no-such-program-anywhere",
            package: "rtrec-ghost",
        };
        assert!(!ghost.on_path());
        assert_eq!(first_missing(&[ghost]), Some(ghost));
        assert_eq!(
            ghost.missing_reason(),
            "needs rtrec-no-such-program-anywhere (Debian package rtrec-ghost)"
        );
    }

    #[test]
    fn sh_is_found_on_path_as_the_control() {
        let sh = Tool {
            command: "sh",
            package: "dash",
        };
        assert!(sh.on_path());
        assert_eq!(first_missing(&[sh]), None);
    }

    #[test]
    fn every_tool_is_listed_once() {
        let mut names: Vec<_> = ALL.iter().map(|t| t.command).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }
}
