//! A restore obeys only the journal entries rtrec could have written: a
//! journal naming an arbitrary file, sysctl or mount point is refused entry
//! by entry, with a message, and nothing outside is touched.

mod common;

use std::fs;

use common::private_state_dir;
use rtrec_host::{restore_all_forced_in, restore_stale_in, sysctl, Change};

#[test]
fn a_journal_naming_what_rtrec_never_changes_is_refused_and_nothing_is_touched() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let victim = work.path().join("victim");
    fs::write(&victim, "keep").unwrap();
    let victim_dir = work.path().join("dir");
    fs::create_dir(&victim_dir).unwrap();
    let swappiness = sysctl::read("vm.swappiness").unwrap();
    let changes = [
        Change::TraceFile {
            path: victim.clone(),
            old: "overwritten".into(),
        },
        Change::RemoveFile {
            path: victim.clone(),
        },
        Change::RemoveDir {
            path: victim_dir.clone(),
        },
        Change::Sysctl {
            name: "vm.swappiness".into(),
            old: "0".into(),
        },
        Change::Mount {
            target: "/proc".into(),
        },
        Change::LoopDevice {
            device: "/dev/loop0".into(),
            image: victim.clone(),
        },
    ];
    let entries: Vec<_> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| serde_json::json!({ "id": i + 1, "change": c }))
        .collect();
    let journal = state
        .path()
        .join(format!("owner-{}-1.json", std::process::id()));
    let json = serde_json::json!({
        "version": 1, "pid": std::process::id(), "starttime": 1, "entries": entries,
    });
    fs::write(&journal, json.to_string()).unwrap();

    let report = restore_stale_in(state.path()).unwrap();

    assert!(report.restored.is_empty(), "{report}");
    assert_eq!(report.failed.len(), changes.len(), "{report}");
    for line in &report.failed {
        assert!(
            line.starts_with("refused ") && line.ends_with("the entry was dropped"),
            "{line}"
        );
    }
    assert!(
        report.failed.iter().any(|l| l.contains("vm.swappiness")
            && l.contains("rtrec changes only the vm.dirty_* sysctls")),
        "{report}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    assert!(victim_dir.is_dir());
    assert_eq!(sysctl::read("vm.swappiness").unwrap(), swappiness);
    assert!(rtrec_host::mounts::mount_at("/proc".as_ref())
        .unwrap()
        .is_some());
    // Dropped, not kept to be refused again.
    assert!(!journal.exists());
    assert!(restore_all_forced_in(state.path()).unwrap().is_empty());
}
