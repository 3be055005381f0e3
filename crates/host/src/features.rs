//! The kernel features rtrec's studies, flags and tests depend on: one
//! detection each, the one sentence that says a kernel lacks it (and how to
//! get it), and the rule for a test that needs one.
//!
//! | feature ([`Feature::id`]) | needed by | detected from |
//! |---|---|---|
//! | `bfq` | S4's `bfq` cells, `--io-weight`, `--io-class` | a block device's `queue/scheduler` offering `bfq` (else: a module on disk, not loaded) |
//! | `bfq-cgroup` | S4's weights, `--io-weight` | BFQ, an I/O hierarchy, and BFQ's files in it (v1 `blkio.bfq.*`; v2 `io` enabled for child groups) |
//! | `io-cgroup` | S4, `--io-weight` | a cgroup v1 `blkio` mount or a v2 mount with the `io` controller ([`crate::cgroup::detect`]) |
//! | `io_uring` | `--io uring`, `--io uring-buffered` | `kernel.io_uring_disabled`, then a real `io_uring_setup` |
//! | `tracefs` | `--explain` | `tracefs` in `/proc/filesystems` |
//! | tracepoints (`tracepoint:SYSTEM/NAME` to hide one) | `--explain`'s causes | `events/SYSTEM/NAME` in a mounted tracefs ([`missing_tracepoints`]); the ones missing are listed in the explanation (`missing_tracepoints`) |
//! | `loop` | every test on a real ext4 image, the studies' devices | `/dev/loop-control` |
//! | `fuse` | `--device` (the emulated storage) | `/dev/fuse` and `fuse` in `/proc/filesystems` |
//! | `o_direct` | `--io direct`, `--io uring` | `O_DIRECT` set on a file in the directory ([`o_direct`]) |
//!
//! Design choices:
//! - **A missing kernel feature is not a missing privilege.** A test that
//!   needs one *skips* with one line naming it
//!   (`skipped NAME: this kernel has no BFQ (CONFIG_IOSCHED_BFQ)`), also
//!   under `RTREC_REQUIRE_PRIVILEGED=1`: many embedded and vendor kernels
//!   leave BFQ out, and the README's test command must pass there. Only
//!   when [`REQUIRE_FEATURES_ENV`] names the feature (or says `all`) does
//!   the skip fail the test — CI names those its machines always have.
//! - **Hiding a feature is how CI proves the skips without a second
//!   kernel**: [`HIDE_FEATURES_ENV`] (`bfq,io_uring,…`) makes its detection
//!   report it missing, for the tests *and* for rtrec itself (the studies
//!   and flags read the same detection), with the sentence a kernel without
//!   it gives, marked as hidden.
//! - **Detection reads, it never loads or mounts**: no `modprobe`, no
//!   mount; a module that is on disk but not loaded is named with the
//!   command that loads it.

use std::fmt;
use std::fs;
use std::path::Path;

use crate::cgroup;

/// A comma-separated list of [`Feature::id`]s that detection reports
/// missing, as on a kernel without them (CI's hidden-feature pass); the
/// calls into io_uring and `O_DIRECT` refuse as such a kernel does
/// (`rtrec_sys::hidden`).
pub const HIDE_FEATURES_ENV: &str = rtrec_sys::hidden::HIDE_FEATURES_ENV;

/// A comma-separated list of [`Feature::id`]s (or `all`) whose absence
/// fails a test instead of skipping it: set where the machine is known to
/// have them.
pub const REQUIRE_FEATURES_ENV: &str = "RTREC_REQUIRE_FEATURES";

/// A kernel feature rtrec can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// The BFQ I/O scheduler.
    Bfq,
    /// BFQ's cgroup support: per-group weights.
    BfqCgroup,
    /// An I/O cgroup hierarchy (v1 `blkio` or v2 `io`).
    IoCgroup,
    /// io_uring, not disabled.
    IoUring,
    /// tracefs in the kernel.
    Tracefs,
    /// Loop devices.
    Loop,
    /// FUSE.
    Fuse,
    /// `O_DIRECT` on a directory's file system (see [`o_direct`]).
    ODirect,
}

impl Feature {
    /// Every feature, in the order of the module's table.
    pub const ALL: [Feature; 8] = [
        Feature::Bfq,
        Feature::BfqCgroup,
        Feature::IoCgroup,
        Feature::IoUring,
        Feature::Tracefs,
        Feature::Loop,
        Feature::Fuse,
        Feature::ODirect,
    ];

    /// The name the environment variables and reports use (`bfq`).
    pub fn id(self) -> &'static str {
        match self {
            Feature::Bfq => "bfq",
            Feature::BfqCgroup => "bfq-cgroup",
            Feature::IoCgroup => "io-cgroup",
            Feature::IoUring => "io_uring",
            Feature::Tracefs => "tracefs",
            Feature::Loop => "loop",
            Feature::Fuse => "fuse",
            Feature::ODirect => "o_direct",
        }
    }

    /// The feature whose [`id`](Feature::id) is `id`.
    pub fn from_id(id: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.id() == id)
    }

    /// What a kernel without it lacks, as a sentence's start: `this kernel
    /// has no BFQ (CONFIG_IOSCHED_BFQ)`.
    fn absent(self) -> &'static str {
        match self {
            Feature::Bfq => "this kernel has no BFQ (CONFIG_IOSCHED_BFQ)",
            Feature::BfqCgroup => {
                "this kernel has no BFQ cgroup support (CONFIG_BFQ_GROUP_IOSCHED)"
            }
            Feature::IoCgroup => {
                "this machine has no I/O cgroups (no cgroup v1 blkio mount, no cgroup v2 io controller)"
            }
            Feature::IoUring => "this kernel has no io_uring (CONFIG_IO_URING)",
            Feature::Tracefs => "this kernel has no tracefs (CONFIG_TRACING)",
            Feature::Loop => "this kernel has no loop devices (CONFIG_BLK_DEV_LOOP)",
            Feature::Fuse => "this kernel has no FUSE (CONFIG_FUSE_FS)",
            Feature::ODirect => "this file system refuses O_DIRECT",
        }
    }

    /// How to get it.
    fn remedy(self) -> &'static str {
        match self {
            Feature::Bfq | Feature::BfqCgroup => {
                "build the kernel with CONFIG_IOSCHED_BFQ and CONFIG_BFQ_GROUP_IOSCHED (y or m), or run on one that has them"
            }
            Feature::IoCgroup => "mount cgroup v1's blkio or enable cgroup v2's io controller",
            Feature::IoUring => {
                "build the kernel with CONFIG_IO_URING, or use --io buffered or direct"
            }
            Feature::Tracefs => "build the kernel with CONFIG_FTRACE and CONFIG_TRACING",
            Feature::Loop => "load the loop module (modprobe loop)",
            Feature::Fuse => "load the fuse module (modprobe fuse)",
            Feature::ODirect => "record on a file system that takes O_DIRECT (ext4, XFS), or use --io buffered",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Why a feature cannot be used: one sentence naming it and how to get it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The feature.
    pub feature: Feature,
    /// What this machine lacks (`this kernel has no BFQ
    /// (CONFIG_IOSCHED_BFQ)`), without the remedy.
    pub reason: String,
    /// How to get it.
    pub remedy: String,
    /// Reported missing because [`HIDE_FEATURES_ENV`] hides it; every
    /// sentence then ends saying so.
    pub hidden: bool,
}

impl Missing {
    /// The feature's own sentence.
    fn of(feature: Feature) -> Missing {
        Missing {
            feature,
            reason: feature.absent().to_string(),
            remedy: feature.remedy().to_string(),
            hidden: false,
        }
    }

    /// The sentence with another first half (what exactly was found).
    fn because(feature: Feature, reason: impl Into<String>) -> Missing {
        Missing {
            reason: reason.into(),
            ..Missing::of(feature)
        }
    }

    /// The one sentence a study or flag prints: `this kernel has no BFQ
    /// (CONFIG_IOSCHED_BFQ): NEED; REMEDY`, where `need` says who needs it
    /// for what (`S4 needs it for its bfq cells`).
    pub fn sentence(&self, need: &str) -> String {
        format!(
            "{}: {need}; {}{}",
            self.reason,
            self.remedy,
            self.hidden_note()
        )
    }

    fn hidden_note(&self) -> String {
        if self.hidden {
            format!(" (hidden by {HIDE_FEATURES_ENV})")
        } else {
            String::new()
        }
    }
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}){}", self.reason, self.remedy, self.hidden_note())
    }
}

impl std::error::Error for Missing {}

/// The ids in the comma-separated list of environment variable `var`.
fn env_list(var: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// True when [`HIDE_FEATURES_ENV`] hides `f`.
pub fn hidden(f: Feature) -> bool {
    rtrec_sys::hidden::hidden(f.id())
}

/// Whether this machine has `f`; for [`Feature::ODirect`], on the file
/// system of the current directory (use [`o_direct`] for another).
///
/// # Errors
/// Why not, in one sentence ([`Missing`]).
pub fn detect(f: Feature) -> Result<(), Missing> {
    if hidden(f) {
        return Err(Missing {
            hidden: true,
            ..Missing::of(f)
        });
    }
    match f {
        Feature::Bfq => bfq(),
        Feature::BfqCgroup => bfq_cgroup(),
        Feature::IoCgroup => cgroup::detect()
            .map(|_| ())
            .map_err(|_| Missing::of(Feature::IoCgroup)),
        Feature::IoUring => io_uring(),
        Feature::Tracefs => filesystem_type("tracefs")
            .then_some(())
            .ok_or_else(|| Missing::of(Feature::Tracefs)),
        Feature::Loop => Path::new("/dev/loop-control")
            .exists()
            .then_some(())
            .ok_or_else(|| Missing::of(Feature::Loop)),
        Feature::Fuse => (Path::new("/dev/fuse").exists() && filesystem_type("fuse"))
            .then_some(())
            .ok_or_else(|| Missing::of(Feature::Fuse)),
        Feature::ODirect => o_direct_probe(Path::new(".")),
    }
}

/// Whether the file system of `dir` takes `O_DIRECT` (a file is made in
/// it and removed; tmpfs refuses, for example).
///
/// # Errors
/// Why not, in one sentence naming the directory.
pub fn o_direct(dir: &Path) -> Result<(), Missing> {
    if hidden(Feature::ODirect) {
        return detect(Feature::ODirect);
    }
    o_direct_probe(dir)
}

fn o_direct_probe(dir: &Path) -> Result<(), Missing> {
    let path = dir.join(format!(".rtrec-o-direct-probe-{}", std::process::id()));
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            Missing::because(
                Feature::ODirect,
                format!("'{}' cannot be probed for O_DIRECT ({e})", dir.display()),
            )
        })?;
    let set = rtrec_sys::set_direct(&file, true);
    drop(file);
    let _ = fs::remove_file(&path);
    set.map_err(|e| {
        Missing::because(
            Feature::ODirect,
            format!(
                "the file system of '{}' refuses O_DIRECT ({e})",
                dir.display()
            ),
        )
    })
}

/// True when `/proc/filesystems` lists `name`.
fn filesystem_type(name: &str) -> bool {
    fs::read_to_string("/proc/filesystems")
        .is_ok_and(|t| t.lines().any(|l| l.split_whitespace().last() == Some(name)))
}

/// BFQ offered by some block device, or why not.
fn bfq() -> Result<(), Missing> {
    let offered: Vec<String> = fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| fs::read_to_string(e.path().join("queue/scheduler")).ok())
                .collect()
        })
        .unwrap_or_default();
    if offered.iter().any(|s| offers_bfq(s)) {
        return Ok(());
    }
    if bfq_module_on_disk() {
        return Err(Missing {
            feature: Feature::Bfq,
            reason: "this kernel has BFQ as a module that is not loaded".into(),
            remedy: "load it with `modprobe bfq`".into(),
            hidden: false,
        });
    }
    Err(Missing::of(Feature::Bfq))
}

/// True when a `queue/scheduler` text (`none [mq-deadline] kyber bfq`)
/// offers bfq.
pub fn offers_bfq(scheduler_text: &str) -> bool {
    scheduler_text
        .split_whitespace()
        .any(|s| s.trim_matches(['[', ']']) == "bfq")
}

/// True when the running kernel's modules include `bfq.ko` (any
/// compression), by `modules.dep`.
fn bfq_module_on_disk() -> bool {
    let Some(release) = crate::machine::kernel_release() else {
        return false;
    };
    fs::read_to_string(format!("/lib/modules/{release}/modules.dep")).is_ok_and(|t| {
        t.lines().any(|l| {
            l.split(':')
                .next()
                .and_then(|m| m.rsplit('/').next())
                .is_some_and(|m| m.starts_with("bfq.ko"))
        })
    })
}

/// BFQ's group weights usable, or why not.
fn bfq_cgroup() -> Result<(), Missing> {
    detect(Feature::Bfq)?;
    let h = cgroup::detect().map_err(|_| Missing::of(Feature::IoCgroup))?;
    match h.version {
        cgroup::Version::V1Blkio => {
            let has = fs::read_dir(&h.root).is_ok_and(|d| {
                d.filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().starts_with("blkio.bfq."))
            });
            has.then_some(()).ok_or_else(|| {
                Missing::because(
                    Feature::BfqCgroup,
                    format!(
                        "this kernel has no BFQ cgroup support (CONFIG_BFQ_GROUP_IOSCHED): no blkio.bfq.* in {}",
                        h.root.display()
                    ),
                )
            })
        }
        cgroup::Version::V2 => {
            let control =
                fs::read_to_string(h.root.join("cgroup.subtree_control")).unwrap_or_default();
            control
                .split_whitespace()
                .any(|c| c == "io")
                .then_some(())
                .ok_or_else(|| Missing {
                    feature: Feature::BfqCgroup,
                    reason: format!(
                        "cgroup v2's io controller is not enabled for child groups ({}/cgroup.subtree_control)",
                        h.root.display()
                    ),
                    remedy: "enable it (echo +io > cgroup.subtree_control), which changes every group of the machine".into(),
                    hidden: false,
                })
        }
    }
}

/// io_uring usable by this process, or why not.
fn io_uring() -> Result<(), Missing> {
    let disabled = fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(0);
    if disabled == 2 {
        return Err(Missing {
            feature: Feature::IoUring,
            reason: "io_uring is disabled on this machine (kernel.io_uring_disabled = 2)".into(),
            remedy: "sysctl kernel.io_uring_disabled=0, or use --io buffered or direct".into(),
            hidden: false,
        });
    }
    match rtrec_sys::uring::UringWriter::new(1, 4096, 4096) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            Err(Missing::of(Feature::IoUring))
        }
        Err(e) => Err(Missing {
            feature: Feature::IoUring,
            reason: format!(
                "the kernel refused io_uring ({e}; kernel.io_uring_disabled = {disabled})"
            ),
            remedy: "allow it (sysctl kernel.io_uring_disabled, a seccomp filter), or use --io buffered or direct".into(),
            hidden: false,
        }),
    }
}

/// The tracepoints among `events` (`sched/sched_switch`) that the tracefs
/// mounted at (or instance) `root` lacks: those whose `events/SYSTEM/NAME`
/// is not a directory. Every one when [`Feature::Tracefs`] is hidden, and
/// each that [`HIDE_FEATURES_ENV`] names as `tracepoint:SYSTEM/NAME` (so a
/// test can take one tracepoint from a kernel that has it).
pub fn missing_tracepoints(root: &Path, events: &[&str]) -> Vec<String> {
    let all_hidden = hidden(Feature::Tracefs);
    events
        .iter()
        .filter(|ev| {
            all_hidden
                || rtrec_sys::hidden::hidden(&format!("tracepoint:{ev}"))
                || !root.join("events").join(ev).is_dir()
        })
        .map(|ev| ev.to_string())
        .collect()
}

/// For tests that need kernel features: true when this machine has every
/// one of `features`; otherwise prints `skipped TEST: REASON` on stderr and
/// returns false, so the test can return early.
///
/// # Panics
/// When a feature is missing and [`REQUIRE_FEATURES_ENV`] names it (or
/// says `all`). `RTREC_REQUIRE_PRIVILEGED=1` alone does not: a kernel
/// without a feature is not a machine without privileges.
pub fn require(test: &str, features: &[Feature]) -> bool {
    for &f in features {
        if let Err(m) = detect(f) {
            return skip(test, &m);
        }
    }
    true
}

/// [`require`] for a feature found missing by other means (a tracepoint
/// list, a directory's `O_DIRECT`): prints `skipped TEST: REASON` and
/// returns false.
///
/// # Panics
/// As [`require`].
pub fn skip(test: &str, missing: &Missing) -> bool {
    let required = env_list(REQUIRE_FEATURES_ENV);
    if required
        .iter()
        .any(|s| s == "all" || s == missing.feature.id())
    {
        panic!(
            "{test} needs {}, and {REQUIRE_FEATURES_ENV} forbids skipping it: {missing}",
            missing.feature
        );
    }
    eprintln!(
        "skipped {test}: {}{}",
        missing.reason,
        missing.hidden_note()
    );
    false
}

/// The features write back-end `io` (`rtrec record --io`'s name:
/// `buffered`, `direct`, `uring`, `uring-buffered`) needs.
pub fn of_io(io: &str) -> &'static [Feature] {
    match io {
        "direct" => &[Feature::ODirect],
        "uring" => &[Feature::IoUring, Feature::ODirect],
        "uring-buffered" => &[Feature::IoUring],
        _ => &[],
    }
}

/// For tests that iterate the write back-ends: true when back-end `io`
/// can write into `dir` here ([`of_io`]; `O_DIRECT` on `dir`'s file
/// system); otherwise prints `skipped TEST (--io IO): REASON` and returns
/// false, so the test goes on with the next back-end.
///
/// # Panics
/// As [`require`].
pub fn require_io(test: &str, io: &str, dir: &Path) -> bool {
    for &f in of_io(io) {
        let found = match f {
            Feature::ODirect => o_direct(dir),
            f => detect(f),
        };
        if let Err(m) = found {
            return skip(&format!("{test} (--io {io})"), &m);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_has_one_id_and_reads_back_from_it() {
        for f in Feature::ALL {
            assert_eq!(Feature::from_id(f.id()), Some(f));
            assert!(!f.absent().is_empty() && !f.remedy().is_empty());
        }
        let mut ids: Vec<_> = Feature::ALL.iter().map(|f| f.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Feature::ALL.len());
        assert_eq!(Feature::from_id("cfq"), None);
    }

    #[test]
    fn a_scheduler_list_offers_bfq_only_when_it_names_it() {
        assert!(offers_bfq("mq-deadline kyber [bfq] none"));
        assert!(offers_bfq("[none] bfq"));
        assert!(!offers_bfq("none [mq-deadline] kyber"));
        assert!(!offers_bfq("bfq-strict"));
    }

    #[test]
    fn the_sentence_names_the_kernel_option_the_needer_and_the_remedy() {
        let m = Missing::of(Feature::Bfq);
        assert_eq!(
            m.sentence("S4 needs it for its bfq cells"),
            "this kernel has no BFQ (CONFIG_IOSCHED_BFQ): S4 needs it for its bfq cells; \
             build the kernel with CONFIG_IOSCHED_BFQ and CONFIG_BFQ_GROUP_IOSCHED (y or m), \
             or run on one that has them"
        );
    }

    #[test]
    fn a_missing_tracepoint_is_named_and_a_present_one_is_not() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("events/sched/sched_switch")).unwrap();
        let found =
            missing_tracepoints(d.path(), &["sched/sched_switch", "jbd2/jbd2_start_commit"]);
        if hidden(Feature::Tracefs) {
            // CI's hidden-feature pass: every tracepoint is missing.
            assert_eq!(found, ["sched/sched_switch", "jbd2/jbd2_start_commit"]);
            return;
        }
        assert_eq!(found, ["jbd2/jbd2_start_commit"]);
    }

    #[test]
    fn o_direct_is_probed_where_the_build_tree_is_and_a_missing_directory_is_named() {
        let here = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        if hidden(Feature::ODirect) {
            // CI's hidden-feature pass: the refusal is the kernel's own.
            let m = o_direct(here.path()).expect_err("hidden");
            assert!(m.hidden && m.feature == Feature::ODirect, "{m}");
            return;
        }
        assert_eq!(
            o_direct_probe(here.path()),
            Ok(()),
            "the build tree's file system"
        );
        assert!(
            fs::read_dir(here.path()).unwrap().next().is_none(),
            "the probe file is removed"
        );
        let gone = here.path().join("gone");
        let m = o_direct_probe(&gone).expect_err("no directory, no probe");
        assert_eq!(m.feature, Feature::ODirect);
        assert!(m.reason.contains(&format!("'{}'", gone.display())), "{m}");
    }
}
