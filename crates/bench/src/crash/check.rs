//! One crash state checked against the durability contract: ext4 after
//! its journal replay, the recording directory read out of the image, then
//! `rtrec recover`, `verify --json` and `export`, each rule broken a kind
//! and one sentence ([`Checked`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::Context;

use super::content::{contents_but, names, recording_bytes, Content};
use super::matrix::{synthetic, Options, LOOP_BOUND_BYTES, RECORD_BYTES};

/// One broken rule: its kind and one sentence.
type Broken = (&'static str, String);

/// What one crash state showed.
pub(super) struct Checked {
    /// What `e2fsck` repaired first, if anything.
    pub(super) fs_repaired: Option<String>,
    /// Each broken rule: its kind and one sentence.
    pub(super) broken: Vec<(&'static str, String)>,
    /// The records the state owed (promised, less those retired under a
    /// claim it holds).
    pub(super) owed: u64,
}

/// Runs `cmd` with no stdin: its output, whatever its exit status.
fn run_out(cmd: &mut Command) -> anyhow::Result<Output> {
    cmd.stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))
}

/// The first line of `b` that is not blank, trimmed.
fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Checks the crash image `image` against the contract, with `promised`
/// the records the finished recording holds below the durable point
/// published before its crash point: ext4 ([`fsck`]), the directory read
/// out and recovered ([`read_out`]), the records ([`contract`]), then
/// `verify` and `export` ([`verify_and_export`]). A loop recording's
/// (`looped`) records below the highest RETIRED claim the directory holds
/// after `recover` are not owed (retired under a durable claim), and its
/// directory is held to [`LOOP_BOUND_BYTES`] before and after `recover`,
/// and `verify` of it must exit 0 after `recover`. The records of the
/// recordings `skip` (earlier power-cut cycles') are not this state's.
#[allow(clippy::too_many_arguments)]
pub(super) fn check(
    o: &Options,
    image: &Path,
    work: &Path,
    promised: &BTreeSet<u64>,
    events: bool,
    looped: bool,
    skip: &BTreeSet<u64>,
) -> anyhow::Result<Checked> {
    let mut broken = Vec::new();
    let fs_repaired = fsck(image, &mut broken)?;
    let out = work.join("out");
    let (dir, c, bytes_before) = read_out(o, image, &out, skip, &mut broken)?;
    let owed: BTreeSet<u64>;
    let promised = if looped {
        bound(bytes_before, recording_bytes(&dir), &mut broken);
        owed = promised.range(c.claimed_upto..).copied().collect();
        &owed
    } else {
        promised
    };
    let owed_count = promised.len() as u64;
    contract(promised, &c, looped, &mut broken);
    if c.files > 0 {
        verify_and_export(o, &c, &dir, work, promised, events, looped, &mut broken)?;
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(Checked {
        fs_repaired,
        broken,
        owed: owed_count,
    })
}

/// The journal replay a mount would do, then what a full check would
/// repair ([`rtrec_emu::crashimg::fsck`]): `fs-damaged` when the repair
/// leaves ext4 damaged; what it repaired, beyond the summary counters,
/// returned.
fn fsck(image: &Path, broken: &mut Vec<Broken>) -> anyhow::Result<Option<String>> {
    let f = rtrec_emu::crashimg::fsck(image)
        .with_context(|| format!("running e2fsck on '{}'", image.display()))?;
    if f.code >= 4 {
        broken.push((
            "fs-damaged",
            format!("e2fsck left ext4 damaged (exit {}): {}", f.code, f.said),
        ));
    }
    Ok(f.damage)
}

/// A loop's directory against its stated bound ([`LOOP_BOUND_BYTES`]),
/// before and after `recover`: `over-bound` past it.
fn bound(before: u64, after: u64, broken: &mut Vec<Broken>) {
    for (when, b) in [("before", before), ("after", after)] {
        if b > LOOP_BOUND_BYTES {
            broken.push((
                "over-bound",
                format!(
                    "the loop's recording and pool files took {b} bytes {when} recover, over its bound of {LOOP_BOUND_BYTES}"
                ),
            ));
        }
    }
}

/// The recording directory read out of `image` into `out` (`debugfs
/// rdump`, no mount), `rtrec recover` run on it (`recover-failed`), what
/// its files then hold (nothing when the image has no directory), and
/// the bytes of its recording and pool files before `recover`.
fn read_out(
    o: &Options,
    image: &Path,
    out: &Path,
    skip: &BTreeSet<u64>,
    broken: &mut Vec<Broken>,
) -> anyhow::Result<(PathBuf, Content, u64)> {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir(out)?;
    run_out(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump /rec {}", out.display()))
            .arg(image),
    )?;
    let dir = out.join("rec");
    let before = recording_bytes(&dir);
    let c = if dir.is_dir() {
        let r = run_out(Command::new(&o.rtrec).arg("recover").arg(&dir))?;
        if !r.status.success() {
            broken.push((
                "recover-failed",
                format!("recover failed: {}", first_line(&r.stderr)),
            ));
        }
        contents_but(&dir, skip)
    } else {
        Content::default()
    };
    Ok((dir, c, before))
}

/// The contract on the records `c` holds after `recover`: a recording with
/// durable records is there (`hidden`), no accepted record holds wrong
/// bytes (`wrong-bytes`), and every `promised` record is present or stored
/// as a loss (`missing`; in a loop recording, `retired-unclaimed` when
/// they all come before the first record present: a leading file gone
/// with no durable claim over it).
fn contract(promised: &BTreeSet<u64>, c: &Content, looped: bool, broken: &mut Vec<Broken>) {
    if !promised.is_empty() && c.files == 0 {
        broken.push((
            "hidden",
            format!(
                "hidden recording: {} records were durable, no .rtr file is there",
                promised.len()
            ),
        ));
    }
    if c.wrong > 0 {
        broken.push((
            "wrong-bytes",
            format!("{} accepted records hold wrong bytes", c.wrong),
        ));
    }
    let missing: Vec<u64> = promised
        .iter()
        .copied()
        .filter(|q| !c.seqs.contains(q) && !c.lost.contains(q))
        .collect();
    let first_present = c.seqs.first().copied().unwrap_or(u64::MAX);
    if looped && !missing.is_empty() && missing.iter().all(|&q| q < first_present) {
        broken.push((
            "retired-unclaimed",
            format!(
                "{} records below the durable point gone with their file(s) and no durable claim over them (first {})",
                missing.len(),
                missing[0]
            ),
        ));
    } else if !missing.is_empty() {
        broken.push((
            "missing",
            format!(
                "{} records below the durable point missing (first {}; {} of them in a crash-hole loss)",
                missing.len(),
                missing[0],
                missing.iter().filter(|q| c.cut.contains(q)).count()
            ),
        ));
    }
}

/// After `recover`: no file corrupt or without its header ([`verify`]),
/// and `export DIR` without flags (each event's files, with `events`)
/// reads every durable record, byte-exact ([`export`], [`exported`]).
#[allow(clippy::too_many_arguments)]
fn verify_and_export(
    o: &Options,
    c: &Content,
    dir: &Path,
    work: &Path,
    promised: &BTreeSet<u64>,
    events: bool,
    clean: bool,
    broken: &mut Vec<Broken>,
) -> anyhow::Result<()> {
    verify(o, dir, clean, broken)?;
    let out = work.join("export.bin");
    let (bytes, refused) = export(o, c, dir, &out, events)?;
    exported(&bytes, refused, promised, c, broken);
    let _ = std::fs::remove_file(&out);
    Ok(())
}

/// `rtrec verify --json` of `dir`: a file corrupt or not rtrec's is
/// `corrupt-after-recover`, no report at all `no-verify-report`; with
/// `clean` (a loop's directory, issue 44), any exit but 0 is
/// `verify-not-clean`.
fn verify(o: &Options, dir: &Path, clean: bool, broken: &mut Vec<Broken>) -> anyhow::Result<()> {
    let v = run_out(Command::new(&o.rtrec).args(["verify", "--json"]).arg(dir))?;
    if clean && !v.status.success() {
        let text = run_out(Command::new(&o.rtrec).arg("verify").arg(dir))?;
        let last = String::from_utf8_lossy(&text.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string();
        broken.push((
            "verify-not-clean",
            format!("verify after recover exits {:?}: {last}", v.status.code()),
        ));
    }
    match serde_json::from_slice::<serde_json::Value>(&v.stdout) {
        Ok(report) => {
            for f in report["files"].as_array().into_iter().flatten() {
                let status = f["status"].as_str().unwrap_or("?");
                if status == "corrupt" || status == "not_rtrec" {
                    let name = f["path"].as_str().or(f["file"].as_str()).unwrap_or("?");
                    let name = Path::new(name)
                        .file_name()
                        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
                    broken.push((
                        "corrupt-after-recover",
                        format!("verify after recover: {name} is {status}"),
                    ));
                }
            }
        }
        Err(_) => broken.push((
            "no-verify-report",
            format!(
                "verify gave no report (exit {:?}): {}",
                v.status.code(),
                first_line(&v.stderr)
            ),
        )),
    }
    Ok(())
}

/// `rtrec export` of `dir` into `out`, one recording at a time: the bytes
/// of every export that succeeded, and the first refusal
/// (`export-refused`, or `export-refused-crash-hole` when only the loss
/// frames `recover` put at a crash hole stood in its way).
fn export(
    o: &Options,
    c: &Content,
    dir: &Path,
    out: &Path,
    events: bool,
) -> anyhow::Result<(Vec<u8>, Option<Broken>)> {
    // One recording: `export DIR`; a flight recorder's events are
    // recordings of their own, exported one by one (`export DIR` asks
    // for one recording at a time).
    let targets = if events {
        event_groups(dir)
    } else {
        vec![vec![dir.to_path_buf()]]
    };
    let mut bytes = Vec::new();
    let mut refused = None;
    for t in &targets {
        let _ = std::fs::remove_file(out);
        let e = run_out(
            Command::new(&o.rtrec)
                .arg("export")
                .args(t)
                .arg("-o")
                .arg(out),
        )?;
        if e.status.success() {
            bytes.extend(std::fs::read(out).unwrap_or_default());
        } else if refused.is_none() {
            // Refused only for the losses, and every loss there is one
            // recover made at a crash hole.
            let why = String::from_utf8_lossy(&e.stderr);
            let kind = if !c.cut.is_empty()
                && c.lost.is_empty()
                && why.contains("stored as losses, 0 missing without a trace")
            {
                "export-refused-crash-hole"
            } else {
                "export-refused"
            };
            refused = Some((
                kind,
                format!(
                    "export {} refused (exit {:?}): {}",
                    if events { "of an event" } else { "DIR" },
                    e.status.code(),
                    first_line(&e.stderr)
                ),
            ));
        }
    }
    Ok((bytes, refused))
}

/// What the exports wrote against what was `promised`: the refusal, if
/// any; else records with wrong bytes (`export-wrong-bytes`) and durable
/// records neither exported nor stored as a loss (`export-misses`).
fn exported(
    bytes: &[u8],
    refused: Option<Broken>,
    promised: &BTreeSet<u64>,
    c: &Content,
    broken: &mut Vec<Broken>,
) {
    if promised.is_empty() {
        // Nothing was promised.
    } else if let Some(r) = refused {
        broken.push(r);
    } else {
        let mut seen = std::collections::BTreeSet::new();
        let mut wrong = 0u64;
        for r in bytes.chunks(RECORD_BYTES) {
            let seq = r
                .get(..8)
                .map_or(u64::MAX, |b| u64::from_le_bytes(b.try_into().expect("8")));
            if r == synthetic(seq).as_slice() {
                seen.insert(seq);
            } else {
                wrong += 1;
            }
        }
        if wrong > 0 {
            broken.push((
                "export-wrong-bytes",
                format!("export wrote {wrong} records with wrong bytes"),
            ));
        }
        // A record stored as a loss is counted, not exported.
        let missing = promised
            .iter()
            .filter(|q| !seen.contains(q) && !c.lost.contains(q))
            .count();
        if missing > 0 {
            broken.push((
                "export-misses",
                format!("export misses {missing} durable records"),
            ));
        }
    }
}

/// The `.rtr` files of `dir` grouped by event (the name without its
/// `-NNNN.rtr` file index), in name order.
fn event_groups(dir: &Path) -> Vec<Vec<PathBuf>> {
    let mut groups = std::collections::BTreeMap::<String, Vec<PathBuf>>::new();
    for n in names(dir).into_iter().filter(|n| n.ends_with(".rtr")) {
        let key = n
            .rsplit_once('-')
            .map_or(n.as_str(), |(k, _)| k)
            .to_string();
        groups.entry(key).or_default().push(dir.join(&n));
    }
    groups.into_values().collect()
}
