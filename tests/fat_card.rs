//! A FAT card (issue 42, finding 12): every `--alloc` mode, both write
//! paths and an open-ended recording that switches files record there,
//! with `verify` clean, and the one warning that says the card cannot
//! pre-allocate (FAT through FUSE answers `fallocate` with `EOPNOTSUPP`,
//! refuses a truncate that changes nothing, has no `RENAME_NOREPLACE` and
//! reports no capacity; `crates/engine/src/file.rs` `reserve`,
//! `crates/sys/src/dir.rs` `rename_noreplace`, `crates/sys/src/file.rs`
//! `available_bytes`).
//!
//! Design choices:
//! - **FAT through FUSE** (`fusefat`, Debian's): this machine's kernel has
//!   no vfat. It is the harder case: the kernel's vfat has `fallocate`,
//!   `RENAME_NOREPLACE` and `statfs`, and zero-fills a fallocate that
//!   extends a file, as rtrec's fallback does.
//! - **fusefat single-threaded** (`-s`): its FAT code is not safe under
//!   FUSE's default worker threads. Two writes to one file at once — the
//!   writer's append beside the durable mark's rewrite of the file's
//!   start, as rtrec does every second — lost the file's clusters after
//!   the first in one CI run (verify: 1,860 of 2,000 records missing, the
//!   rest found at offset 512, the card's second 512-byte cluster). The
//!   kernel's vfat, what a board mounts, serialises writes to a file
//!   itself; this is the emulation's limit, not the card's.
//! - **A mount namespace of its own** (`unshare -m`, private): the card's
//!   mount is never in the machine's mount table, so there is no global
//!   state to journal and put back; it goes with the test's processes.

mod common;

use std::path::Path;
use std::process::Command;

use rtrec_host::features::{self, Feature};
use rtrec_host::loopfs::require_privileged;
use rtrec_host::tools::{self, FUSEFAT, MKFS_VFAT, UNSHARE};

const TEST: &str = "every_alloc_mode_records_on_a_fat_card_and_verifies_clean";

/// The cases: each `--alloc` mode in both write paths (2,000 records of
/// 1 KiB, known length), then an open-ended recording from stdin with
/// 1 MiB files (file switches, the pool made and refilled).
const SCRIPT: &str = r#"
set -u
cd "$WORK"
fusefat -s -o rw+ card.img mnt >/dev/null 2>&1 || { echo "MOUNT failed"; exit 1; }
for a in append fallocate fallocate-keep-size zero pool; do
  for m in ring inline; do
    mkdir -p "mnt/$a-$m"
    "$RTREC" record --dir "mnt/$a-$m" --alloc "$a" --mode "$m" --period 1ms \
      --size 1KiB --count 2000 --quiet 2>"$a-$m.err"
    r=$?
    "$RTREC" verify "mnt/$a-$m" >"$a-$m.verify" 2>&1
    echo "CASE $a-$m record=$r verify=$?"
  done
done
mkdir -p mnt/open
head -c 3000000 /dev/zero | "$RTREC" record --dir mnt/open --stdin --size 1KiB \
  --file-size 1MiB --quiet 2>open.err
r=$?
"$RTREC" verify mnt/open >open.verify 2>&1
echo "CASE open record=$r verify=$?"
fusermount -u mnt
"#;

#[test]
fn every_alloc_mode_records_on_a_fat_card_and_verifies_clean() {
    if !require_privileged(TEST)
        || !tools::require(TEST, &[MKFS_VFAT, FUSEFAT, UNSHARE])
        || !features::require(TEST, &[Feature::Fuse])
    {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::create_dir(w.join("mnt")).unwrap();
    let img = std::fs::File::create(w.join("card.img")).unwrap();
    img.set_len(256 << 20).unwrap();
    drop(img);
    let mkfs = Command::new("mkfs.vfat")
        .args(["-F", "32"])
        .arg(w.join("card.img"))
        .output()
        .unwrap();
    assert!(mkfs.status.success(), "{}", common::show(&mkfs));
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", SCRIPT])
        .env("WORK", w)
        .env("RTREC", env!("CARGO_BIN_EXE_rtrec"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let cases: Vec<&str> = out.lines().filter(|l| l.starts_with("CASE ")).collect();
    assert_eq!(cases.len(), 11, "{}", common::show(&o));
    for line in cases {
        let name = line.split_whitespace().nth(1).unwrap();
        let read = |ext: &str| std::fs::read_to_string(w.join(format!("{name}.{ext}"))).unwrap();
        let (err, verify) = (read("err"), read("verify"));
        assert!(
            line.ends_with("record=0 verify=0"),
            "{line}\nrecord said: {err}\nverify said: {verify}"
        );
        check_said(name, &err, w);
        let want = if name == "open" { 2930 } else { 2000 };
        assert!(
            verify.contains(&format!(
                ", {want} records, 0 lost (stored), 0 missing, 0 damaged"
            )) && verify.trim_end().ends_with("clean"),
            "{name}: {verify}"
        );
    }
}

/// What a recording on the card says on stderr: the card's one warning,
/// naming the directory and the cost, and nothing else.
fn check_said(name: &str, err: &str, w: &Path) {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{name}: {err}");
    assert!(
        lines[0].starts_with("rtrec: warning: 'mnt/")
            && lines[0].contains("cannot pre-allocate")
            && lines[0].contains("writes zeros"),
        "{name} ({}): {err}",
        w.display()
    );
}
