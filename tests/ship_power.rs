//! `rtrec ship` through power cuts of the device it runs on (issue 46,
//! item 8: "the device killed and power-cut mid-upload … the ledger under
//! the crash emulator's states"), against a real S3 server (SeaweedFS).
//!
//! The card is an ext4 image on the emulated eMMC with its write log on
//! ([`rtrec_emu::writelog`]), holding three closed recordings (single-PUT
//! files and a multipart one). Each cycle, as a service on a board that
//! loses power would: the card is mounted, `rtrec ship --after-ship
//! delete` starts, and the power is cut, half of the time at a random
//! moment, half just after a ledger write began (its temporary file
//! seen); the shipper is killed there (the server keeps what it had
//! acknowledged, as a real one does) and the card becomes a crash state
//! of the write log at that moment ([`CrashState::random`]: every write
//! since the last flush landing or not, torn in 512-byte sectors),
//! `e2fsck` replays its journal, and it is the next cycle's card.
//!
//! What every cut must leave (checked on the card before the next run):
//! - the ledger reads (the old one or the new one, never a mix);
//! - it claims nothing the bucket lacks: each `file` line's object is
//!   there with its size and CRC32C, each `recording` line's manifest
//!   is there listing the recording's files;
//! - nothing is lost: each file of the recordings is on the card
//!   byte-exact, or its recording's manifest is in the bucket and its
//!   object holds the same bytes.
//!
//! After the cuts one run without a cut ships the rest, and then: every
//! recording's manifest and files are in the bucket byte-exact, the card
//! holds none of their files, no object under the prefix is one no
//! manifest lists (none duplicated), and the bytes sent up (counted by a
//! proxy in front of the server) exceed a clean run's by at most one part
//! per cut. Multipart uploads a cut left begun but not in the ledger are
//! counted and printed (the bucket's lifecycle rule ends them,
//! docs/ship.md).
//!
//! `RTREC_SHIP_CUTS` sets the number of cuts (10 by default; a release
//! check runs more) and `RTREC_SHIP_SEED` the seed (printed).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::show;
use common::weed::{crc32c_of, record, ship_command, weed, Proxy, Weed};
use rtrec_emu::crashimg::{CrashState, SplitMix};
use rtrec_emu::writelog::Log;
use rtrec_engine::reader::{LedgerEntry, ShipLedger};
use rtrec_host::emufs::EmulatorCommand;
use rtrec_host::features::{self, Feature};
use rtrec_host::loopfs::{require_privileged, LoopFs, LoopFsOptions};
use rtrec_host::tools;

/// The card's size and its ext4 journal's.
const CARD_BYTES: u64 = 160 << 20;
/// The journal of the card (MiB).
const JOURNAL_MIB: u32 = 8;
/// The shipper's part size (`ship_command`'s) and so the most a cut may
/// cost again.
const PART: u64 = 5 << 20;
/// What a restart may send again beside a part: its requests' headers
/// (HEADs, a listing, signatures).
const SLACK: u64 = 64 << 10;
/// The shipper's pace: slow enough that cuts fall inside the uploads.
const BWLIMIT: &str = "4MiB";

/// One file of the recordings: its recording's manifest key and its own
/// key under the cut runs' prefix, its bytes.
struct Expected {
    manifest: String,
    key: String,
    bytes: Vec<u8>,
}

/// The emulated eMMC's ext4 card, a copy of `from` when given, its write
/// log into `log`.
fn card(from: Option<&Path>, log: &Path, parent: &Path) -> LoopFs {
    let mut args = rtrec_emu::DeviceArg::parse("emmc")
        .unwrap()
        .emulator_args()
        .unwrap();
    args.push("--write-log".into());
    args.push(log.into());
    LoopFs::create(&LoopFsOptions {
        size: CARD_BYTES,
        journal_mib: JOURNAL_MIB,
        parent: Some(parent.to_path_buf()),
        emulator: Some(EmulatorCommand {
            program: env!("CARGO_BIN_EXE_rtrec").into(),
            args,
        }),
        from_image: from.map(Path::to_path_buf),
        ..LoopFsOptions::default()
    })
    .unwrap()
}

/// Three closed recordings in `work/orig` (files of 4 MiB, a PUT each;
/// one of 14 MiB, three parts; a small one), and the first card
/// (`work/card-0.img`): them copied onto the emulated eMMC.
fn first_card(work: &Path) -> (PathBuf, PathBuf) {
    let orig = work.join("orig");
    std::fs::create_dir(&orig).unwrap();
    record(&orig, "12MiB", "4MiB");
    record(&orig, "14MiB", "64MiB");
    record(&orig, "1MiB", "64MiB");
    let image = work.join("card-0.img");
    let log = work.join("log-setup");
    let fs = card(None, &log, work);
    let o = Command::new("cp")
        .arg("-a")
        .arg(&orig)
        .arg(fs.path().join("rec"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    fs.remove().unwrap();
    let l = Log::open(&log).unwrap();
    CrashState::prefix(&l, l.entries.len())
        .build(&l, &image)
        .unwrap();
    std::fs::remove_dir_all(&log).unwrap();
    (orig, image)
}

/// The crash state of `log` at `CLOCK_MONOTONIC` time `at` (every entry
/// completed by then, those after the last flush landing as `seed`
/// draws) into `image`, checked and repaired by `e2fsck` as the next boot
/// would ([`rtrec_emu::crashimg::fsck`]); whether ext4 itself needed a
/// repair beyond its journal and summary counters.
fn cut_at(log_dir: &Path, at: u64, seed: u64, image: &Path) -> bool {
    let log = Log::open(log_dir).unwrap();
    let point = log.entries.partition_point(|e| e.time_ns <= at);
    let state = CrashState::random(&log, point, seed, 512);
    state.build(&log, image).unwrap();
    let f = rtrec_emu::crashimg::fsck(image).unwrap();
    assert!(
        f.code < 4,
        "seed {seed}: e2fsck could not repair the card ({}): {}",
        state.describe(),
        f.said
    );
    f.damage.is_some()
}

/// The rules every cut must leave (see the module docs); `what` names
/// the cut in a failure.
fn check_cut(w: &Weed, dir: &Path, expected: &BTreeMap<String, Expected>, what: &str) {
    let ledger = ShipLedger::read(dir).unwrap_or_else(|e| panic!("{what}: the ledger: {e}"));
    let holds = |key: &str, bytes: &[u8]| w.object(key).is_some_and(|b| b == bytes);
    for e in &ledger.entries {
        match e {
            LedgerEntry::File {
                name, size, crc32c, ..
            } => {
                let x = &expected[name];
                assert_eq!(
                    (*size, *crc32c),
                    (x.bytes.len() as u64, crc32c_of(&x.bytes)),
                    "{what}: {e:?}"
                );
                assert!(
                    holds(&x.key, &x.bytes),
                    "{what}: the ledger says {name} is shipped, the bucket lacks it"
                );
            }
            LedgerEntry::Recording { key, .. } => {
                let m: serde_json::Value =
                    serde_json::from_slice(&w.object(key).unwrap_or_else(|| {
                        panic!("{what}: the ledger says {key} is shipped, the bucket lacks it")
                    }))
                    .unwrap();
                let listed: BTreeSet<&str> = m["files"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["name"].as_str().unwrap())
                    .collect();
                let ours: BTreeSet<&str> = expected
                    .iter()
                    .filter(|(_, x)| x.manifest == *key)
                    .map(|(n, _)| n.as_str())
                    .collect();
                assert_eq!(listed, ours, "{what}: {key}");
            }
            _ => {}
        }
    }
    for (name, x) in expected {
        match std::fs::read(dir.join(name)) {
            Ok(b) => assert!(b == x.bytes, "{what}: {name} on the card changed"),
            Err(_) => assert!(
                w.object(&x.manifest).is_some() && holds(&x.key, &x.bytes),
                "{what}: {name} left the card but is not in the bucket (lost)"
            ),
        }
    }
}

#[test]
fn power_cuts_mid_shipping_lose_nothing_claim_nothing_unsent_and_resend_at_most_a_part() {
    let name =
        "power_cuts_mid_shipping_lose_nothing_claim_nothing_unsent_and_resend_at_most_a_part";
    if !require_privileged(name)
        || !tools::require(name, &[tools::E2FSCK])
        || !features::require(name, &[Feature::Fuse])
    {
        return;
    }
    let Some(bin) = weed(name) else { return };
    let cuts: u64 = std::env::var("RTREC_SHIP_CUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed = std::env::var("RTREC_SHIP_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(rtrec_sys::time::realtime_ns);
    eprintln!("{name}: seed {seed}, {cuts} cuts");
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();

    let (orig, mut image) = first_card(work);
    let w = Weed::start(bin);
    let proxy = Proxy::start(w.s3.clone(), 0);
    let endpoint = format!("http://{}", proxy.addr);

    // A clean run of the same recordings (prefix `base`): its bytes sent
    // up are the measure, its manifests name every file's key.
    let o = ship_command(&orig, &endpoint, "base").output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let clean = proxy.sent_up.swap(0, Ordering::SeqCst);
    let mut expected = BTreeMap::new();
    let mut recordings = 0;
    for e in ShipLedger::read(&orig).unwrap().entries {
        let LedgerEntry::Recording { key, .. } = e else {
            continue;
        };
        let m: serde_json::Value = serde_json::from_slice(&w.object(&key).unwrap()).unwrap();
        recordings += 1;
        for f in m["files"].as_array().unwrap() {
            let n = f["name"].as_str().unwrap().to_string();
            let x = Expected {
                manifest: key.replacen("base/", "cut/", 1),
                key: f["key"].as_str().unwrap().replacen("base/", "cut/", 1),
                bytes: std::fs::read(orig.join(&n)).unwrap(),
            };
            expected.insert(n, x);
        }
    }
    assert_eq!(recordings, 3, "the recordings shipped by the clean run");

    let mut rng = SplitMix::new(seed);
    let (mut done, mut made, mut repaired, mut at_ledger) = (0u64, 0u64, 0u64, 0u64);
    for k in 0..cuts {
        let log = work.join(format!("log-{k}"));
        let fs = card(Some(&image), &log, work);
        let dir = fs.path().join("rec");
        check_cut(&w, &dir, &expected, &format!("seed {seed}, before cut {k}"));
        let mut child = ship_command(&dir, &endpoint, "cut")
            .args(["--after-ship", "delete", "--bwlimit", BWLIMIT])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Half of the cuts just after a ledger write began, the rest at
        // any moment of the run's first 1.5 s.
        let t0 = Instant::now();
        if rng.below(2) == 0 {
            let tmp_ledger = dir.join(".shipped.tmp");
            while !tmp_ledger.exists()
                && child.try_wait().unwrap().is_none()
                && t0.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_micros(500));
            }
            at_ledger += 1;
            std::thread::sleep(Duration::from_micros(rng.below(30_000)));
        } else {
            let until = t0 + Duration::from_millis(rng.below(1500));
            while Instant::now() < until && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let finished = child.try_wait().unwrap();
        let _ = child.kill();
        child.wait().unwrap();
        let at = rtrec_sys::time::monotonic_ns();
        if let Some(s) = finished {
            assert!(s.success(), "seed {seed}, cut {k}: ship failed ({s})");
        }
        fs.remove().unwrap();
        let next = work.join(format!("card-{}.img", k + 1));
        repaired += u64::from(cut_at(&log, at, rng.next_u64(), &next));
        std::fs::remove_dir_all(&log).unwrap();
        std::fs::remove_file(&image).unwrap();
        image = next;
        made += 1;
        if finished.is_some() {
            // Everything was shipped before this cut: the rest would cut
            // an idle shipper.
            done += 1;
            break;
        }
    }

    // The run after the cuts, to its end.
    let log = work.join("log-last");
    let fs = card(Some(&image), &log, work);
    let dir = fs.path().join("rec");
    check_cut(
        &w,
        &dir,
        &expected,
        &format!("seed {seed}, after the last cut"),
    );
    let o = ship_command(&dir, &endpoint, "cut")
        .args(["--after-ship", "delete"])
        .output()
        .unwrap();
    assert!(o.status.success(), "seed {seed}: {}", show(&o));
    let left: Vec<PathBuf> = common::corpus::files(&dir);
    fs.remove().unwrap();
    assert!(
        left.is_empty(),
        "seed {seed}: files left after delete: {left:?}"
    );
    let sent = proxy.sent_up.load(Ordering::SeqCst);

    // Every object in the bucket as recorded, none twice.
    let objects = w.list("cut");
    let mut listed: BTreeSet<String> = BTreeSet::new();
    for (n, x) in &expected {
        assert!(
            w.object(&x.key).is_some_and(|b| b == x.bytes),
            "seed {seed}: {n}"
        );
        listed.insert(x.key.clone());
        listed.insert(x.manifest.clone());
    }
    let stray: Vec<_> = objects
        .iter()
        .filter(|(k, _)| !listed.contains(k))
        .collect();
    assert!(
        stray.is_empty(),
        "seed {seed}: objects no manifest lists: {stray:?}"
    );
    let begun = w
        .list(".uploads")
        .iter()
        .map(|(k, _)| k.split('/').nth(1).unwrap_or_default().to_string())
        .collect::<BTreeSet<_>>()
        .len();
    let resent = sent.saturating_sub(clean);
    eprintln!(
        "{name}: seed {seed}: {made} cuts ({at_ledger} at a ledger write, {repaired} needing \
         an ext4 repair beyond its journal and counters{}), {} objects present, 0 stray; sent up {sent} bytes against \
         a clean run's {clean}: {resent} again; {begun} uploads left begun",
        if done > 0 {
            ", shipping done before the last"
        } else {
            ""
        },
        listed.len(),
    );
    assert!(
        resent <= made * (PART + SLACK),
        "seed {seed}: {resent} bytes sent again over {made} cuts (at most a part each)"
    );
}
