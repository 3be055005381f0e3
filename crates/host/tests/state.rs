//! The journal keeps its promise: what is recorded is put back by the owner,
//! while a panic unwinds, and by the next process when the owner was killed.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use rtrec_host::loopfs::require_privileged;
use rtrec_host::{
    restore_all_forced_in_with, restore_stale_in_with, Allowlist, Change, Error, GlobalLock,
    Journal, Restorer, Wait,
};
use rtrec_host::{sysctl, tracefs};

/// The restore's allowlist widened to the test's own files under `work`
/// (rtrec itself obeys only what it could have changed).
fn allowing(work: &tempfile::TempDir) -> Allowlist {
    Allowlist::rtrec().with_root(work.path())
}

/// Writes the journal of a dead owner: our pid with a start time we did not
/// have (as if our pid had belonged to an earlier process).
fn write_dead_owners_journal(dir: &Path, changes: &[Change]) -> std::path::PathBuf {
    write_journal(dir, serde_json::json!({}), changes)
}

/// Writes a dead owner's journal with the extra top-level fields `extra`.
fn write_journal(
    dir: &Path,
    mut extra: serde_json::Value,
    changes: &[Change],
) -> std::path::PathBuf {
    let entries: Vec<_> = changes
        .iter()
        .enumerate()
        .map(|(i, c)| serde_json::json!({ "id": i + 1, "change": c }))
        .collect();
    let pid = std::process::id();
    let path = dir.join(format!("owner-{pid}-1.json"));
    let json = extra.as_object_mut().unwrap();
    json.insert("version".into(), 1.into());
    json.insert("pid".into(), pid.into());
    json.insert("starttime".into(), 1.into());
    json.insert("entries".into(), entries.into());
    fs::write(&path, extra.to_string()).unwrap();
    path
}

#[test]
fn a_recorded_file_is_removed_by_undo_and_the_journal_file_goes_with_its_last_entry() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("made-by-rtrec");
    let journal = Journal::open_in(state.path()).unwrap();

    let id = journal
        .record(Change::RemoveFile { path: file.clone() })
        .unwrap();
    fs::write(&file, "x").unwrap();
    let stored = fs::read_to_string(journal.path()).unwrap();
    assert!(stored.contains(r#""kind": "remove_file""#), "{stored}");

    journal.undo(id).unwrap();
    assert!(!file.exists());
    assert!(!journal.path().exists());
    assert!(journal.pending().is_empty());
    // Undoing is idempotent, and a second undo of the same id says so.
    assert!(matches!(journal.undo(id), Err(Error::NoSuchEntry(_))));
}

#[test]
fn a_restorer_undoes_everything_while_a_panic_unwinds() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("d");
    let file = dir.join("f");
    let (state_path, dir2, file2) = (state.path().to_owned(), dir.clone(), file.clone());

    let result = std::thread::spawn(move || {
        let restorer = Restorer::from(Journal::open_in(&state_path).unwrap());
        restorer
            .record(Change::RemoveDir { path: dir2.clone() })
            .unwrap();
        fs::create_dir(&dir2).unwrap();
        restorer
            .record(Change::RemoveFile {
                path: file2.clone(),
            })
            .unwrap();
        fs::write(&file2, "x").unwrap();
        panic!("boom (expected by the test)");
    })
    .join();

    assert!(result.is_err());
    assert!(!file.exists() && !dir.exists());
    assert!(journal_files(state.path()).is_empty());
}

#[test]
fn undoing_an_entry_first_undoes_newer_changes_to_the_same_file() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let knob = work.path().join("tracing_on");
    fs::write(&knob, "a").unwrap();
    let lock = GlobalLock::acquire_in(state.path()).unwrap();
    let journal = lock.journal();

    let first = tracefs::set_trace_file(journal, &knob, "b").unwrap();
    tracefs::set_trace_file(journal, &knob, "c").unwrap();
    assert_eq!(fs::read_to_string(&knob).unwrap(), "c");

    journal.undo(first).unwrap();
    assert_eq!(fs::read_to_string(&knob).unwrap(), "a");
    assert!(journal.pending().is_empty());
}

#[test]
fn a_machine_wide_change_without_the_global_lock_is_refused_and_not_recorded() {
    let state = private_state_dir();
    let journal = Journal::open_in(state.path()).unwrap();

    let result = journal.record(Change::Sysctl {
        name: "vm.dirty_ratio".into(),
        old: "20".into(),
    });

    assert!(
        matches!(result, Err(Error::GlobalLockNotHeld { .. })),
        "{result:?}"
    );
    assert!(journal.pending().is_empty());
    assert!(!journal.path().exists());
}

#[test]
fn the_global_lock_is_exclusive_and_taking_it_twice_in_one_thread_is_an_error() {
    let state = private_state_dir();
    let lock = GlobalLock::acquire_in(state.path()).unwrap();

    assert!(GlobalLock::try_acquire_in(state.path()).unwrap().is_none());
    assert!(matches!(
        GlobalLock::acquire_in(state.path()),
        Err(Error::WouldDeadlock(_))
    ));
    let path = state.path().to_owned();
    let other_thread =
        std::thread::spawn(move || GlobalLock::try_acquire_in(&path).unwrap().is_none());
    assert!(other_thread.join().unwrap());

    drop(lock);
    assert!(GlobalLock::try_acquire_in(state.path()).unwrap().is_some());
}

#[test]
fn restore_stale_undoes_a_dead_owners_entries_newest_first_and_deletes_its_journal() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let (dir, inner, single, knob) = (
        work.path().join("d"),
        work.path().join("d/f"),
        work.path().join("a"),
        work.path().join("knob"),
    );
    fs::create_dir(&dir).unwrap();
    fs::write(&inner, "").unwrap();
    fs::write(&single, "").unwrap();
    fs::write(&knob, "last").unwrap();
    let journal = write_dead_owners_journal(
        state.path(),
        &[
            Change::RemoveDir { path: dir.clone() },
            Change::RemoveFile {
                path: inner.clone(),
            },
            Change::TraceFile {
                path: knob.clone(),
                old: "first".into(),
            },
            Change::TraceFile {
                path: knob.clone(),
                old: "middle".into(),
            },
            Change::RemoveFile {
                path: single.clone(),
            },
        ],
    );

    let report = restore_stale_in_with(state.path(), &allowing(&work)).unwrap();

    // The directory could only go after the file in it: newest first.
    assert!(!dir.exists() && !single.exists());
    assert_eq!(fs::read_to_string(&knob).unwrap(), "first");
    assert!(!journal.exists());
    let pid = std::process::id();
    assert_eq!(
        report.restored,
        vec![
            format!("remove file {} (left by pid {pid})", single.display()),
            format!("{} = \"middle\" (left by pid {pid})", knob.display()),
            format!("{} = \"first\" (left by pid {pid})", knob.display()),
            format!("remove file {} (left by pid {pid})", inner.display()),
            format!("remove directory {} (left by pid {pid})", dir.display()),
        ]
    );
    assert!(
        report.waiting.is_empty() && report.failed.is_empty(),
        "{report}"
    );
    // Nothing left: a second restore finds nothing.
    assert!(restore_stale_in_with(state.path(), &allowing(&work))
        .unwrap()
        .is_empty());
}

#[test]
fn a_journal_from_an_earlier_boot_only_has_its_files_removed() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let (single, knob) = (work.path().join("a"), work.path().join("knob"));
    fs::write(&single, "").unwrap();
    fs::write(&knob, "set since boot").unwrap();
    let journal = write_journal(
        state.path(),
        serde_json::json!({ "boot_id": "an-earlier-boot" }),
        &[
            Change::TraceFile {
                path: knob.clone(),
                old: "before the reboot".into(),
            },
            Change::RemoveFile {
                path: single.clone(),
            },
        ],
    );

    let report = restore_stale_in_with(state.path(), &allowing(&work)).unwrap();

    assert!(!single.exists());
    assert_eq!(fs::read_to_string(&knob).unwrap(), "set since boot");
    assert!(!journal.exists());
    assert_eq!(report.restored.len(), 2, "{report}");
    assert!(
        report.restored[1].contains("before the last reboot"),
        "{report}"
    );
}

#[test]
fn a_state_directory_others_can_write_to_is_refused_and_left_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();

    let result = Journal::open_in(dir.path());

    assert!(
        matches!(result, Err(Error::UnsafeStateDir { .. })),
        "{result:?}"
    );
    let mode = fs::metadata(dir.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o1777);
}

#[test]
fn a_dead_owners_machine_wide_changes_wait_while_another_process_holds_the_global_lock() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let (single, knob) = (work.path().join("a"), work.path().join("knob"));
    fs::write(&single, "").unwrap();
    fs::write(&knob, "changed").unwrap();
    let journal = write_dead_owners_journal(
        state.path(),
        &[
            Change::TraceFile {
                path: knob.clone(),
                old: "orig".into(),
            },
            Change::RemoveFile {
                path: single.clone(),
            },
        ],
    );
    // Another process holds the lock: a shell that locks it and becomes sleep.
    let mut holder = rtrec_host::testing::hold_global_lock(state.path());

    let report = restore_stale_in_with(state.path(), &allowing(&work));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let report = report.unwrap();

    assert!(!single.exists());
    assert_eq!(fs::read_to_string(&knob).unwrap(), "changed");
    assert_eq!(report.restored.len(), 1, "{report}");
    assert_eq!(report.waiting.len(), 1, "{report}");
    assert!(
        report.waiting[0].contains("waits for the global lock"),
        "{report}"
    );
    assert!(journal.exists());

    // The next holder of the lock puts the rest back.
    let wait = Wait {
        allow: allowing(&work),
        ..Wait::default()
    };
    let lock = GlobalLock::acquire_with(state.path(), &wait).unwrap();
    assert_eq!(fs::read_to_string(&knob).unwrap(), "orig");
    assert_eq!(lock.restored().restored.len(), 1, "{}", lock.restored());
    assert!(!journal.exists());
}

const RECORD_CHILD: &str = "child_records_a_file_to_remove_and_waits_to_be_killed";

#[test]
fn child_records_a_file_to_remove_and_waits_to_be_killed() {
    if !is_child(RECORD_CHILD) {
        return;
    }
    let path = std::env::var_os("RTREC_TEST_FILE").unwrap();
    let journal = Journal::open().unwrap();
    journal
        .record(Change::RemoveFile { path: path.into() })
        .unwrap();
    ready_and_wait(&[]);
}

#[test]
fn a_live_owners_changes_are_left_alone_unless_the_restore_is_forced() {
    let state = private_state_dir();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("a");
    fs::write(&file, "").unwrap();
    let child = spawn_child(RECORD_CHILD, state.path(), &[("RTREC_TEST_FILE", &file)]);

    assert!(restore_stale_in_with(state.path(), &allowing(&work))
        .unwrap()
        .is_empty());
    assert!(file.exists());

    let report = restore_all_forced_in_with(state.path(), &allowing(&work)).unwrap();
    assert!(!file.exists());
    assert_eq!(
        report.restored,
        vec![format!(
            "remove file {} (left by pid {})",
            file.display(),
            child.pid()
        )]
    );
    assert!(journal_files(state.path()).is_empty());
    child.kill();
}

const SYSCTL_CHILD: &str = "child_sets_dirty_expire_centisecs_and_waits_to_be_killed";
const CHILD_EXPIRE: &str = "4321";

#[test]
fn child_sets_dirty_expire_centisecs_and_waits_to_be_killed() {
    if !is_child(SYSCTL_CHILD) {
        return;
    }
    let lock = GlobalLock::acquire().unwrap();
    sysctl::set(lock.journal(), "vm.dirty_expire_centisecs", CHILD_EXPIRE).unwrap();
    ready_and_wait(&[]);
}

#[test]
fn a_sysctl_changed_by_a_process_killed_with_sigkill_is_put_back_by_the_next_holder_of_the_lock() {
    if !require_privileged(
        "a_sysctl_changed_by_a_process_killed_with_sigkill_is_put_back_by_the_next_holder_of_the_lock",
    ) {
        return;
    }
    let state = shared_state_dir();
    let child = spawn_child(SYSCTL_CHILD, &state, &[]);
    // The child holds the global lock: nobody else changes the value now.
    assert_eq!(
        sysctl::read("vm.dirty_expire_centisecs").unwrap(),
        CHILD_EXPIRE
    );
    let prefix = format!("owner-{}-", child.pid());
    let journal = journal_files(&state)
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .expect("the child's journal");
    let stored: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&journal).unwrap()).unwrap();
    let change = &stored["entries"][0]["change"];
    assert_eq!(change["kind"], "sysctl");
    assert_eq!(change["name"], "vm.dirty_expire_centisecs");
    let found = change["old"].as_str().unwrap().to_string();

    child.kill();
    let _lock = GlobalLock::acquire_in(&state).unwrap();

    assert_eq!(sysctl::read("vm.dirty_expire_centisecs").unwrap(), found);
    assert!(!journal.exists());
}
