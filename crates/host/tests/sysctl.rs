//! The write-back sysctls are put back exactly as found, in ratio mode and
//! in bytes mode. Each test holds the global lock of the shared test state
//! directory, so they never interleave with each other or with the other
//! test binaries of this crate.

mod common;

use common::shared_state_dir;
use rtrec_host::loopfs::require_privileged;
use rtrec_host::sysctl::{self, DirtySettings, FLUSHER_OFF};
use rtrec_host::{GlobalLock, Journal, Restorer};

const MIB: u64 = 1 << 20;

#[test]
fn flusher_off_is_applied_and_put_back_exactly_when_the_lock_is_dropped() {
    if !require_privileged("flusher_off_is_applied_and_put_back_exactly_when_the_lock_is_dropped") {
        return;
    }
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let found = DirtySettings::read().unwrap();

    sysctl::apply_flusher_off(lock.journal()).unwrap();
    for (name, value) in FLUSHER_OFF {
        assert_eq!(sysctl::read(name).unwrap(), value, "{name}");
    }
    assert_eq!(lock.journal().pending().len(), FLUSHER_OFF.len());

    // Dropping puts back, then releases: look while holding it again.
    drop(lock);
    let _lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    assert_eq!(DirtySettings::read().unwrap(), found);
}

#[test]
fn dirty_settings_found_in_bytes_mode_are_put_back_as_bytes() {
    if !require_privileged("dirty_settings_found_in_bytes_mode_are_put_back_as_bytes") {
        return;
    }
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let found = DirtySettings::read().unwrap();
    // Switch to bytes mode (recorded in the lock's journal, put back last).
    let bytes_mode = DirtySettings {
        dirty_ratio: 0,
        dirty_background_ratio: 0,
        dirty_bytes: 64 * MIB,
        dirty_background_bytes: 32 * MIB,
        ..found
    };
    bytes_mode.apply(lock.journal()).unwrap();
    assert_eq!(DirtySettings::read().unwrap(), bytes_mode);

    // Writing the ratios zeroes the bytes; undoing must bring the bytes back,
    // not write the ratios' old value (0) back.
    let inner = Restorer::from(Journal::open_in(&shared_state_dir()).unwrap());
    sysctl::apply_flusher_off(&inner).unwrap();
    let flusher_off = DirtySettings::read().unwrap();
    assert_eq!((flusher_off.dirty_ratio, flusher_off.dirty_bytes), (100, 0));
    assert_eq!(
        (
            flusher_off.dirty_background_ratio,
            flusher_off.dirty_background_bytes
        ),
        (100, 0)
    );
    inner.finish().unwrap();
    assert_eq!(DirtySettings::read().unwrap(), bytes_mode);

    lock.journal().undo_all().unwrap();
    assert_eq!(DirtySettings::read().unwrap(), found);
}

#[test]
fn dirty_settings_found_in_ratio_mode_are_put_back_as_ratios_after_bytes_were_set() {
    if !require_privileged(
        "dirty_settings_found_in_ratio_mode_are_put_back_as_ratios_after_bytes_were_set",
    ) {
        return;
    }
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    let found = DirtySettings::read().unwrap();
    assert_eq!(
        found.dirty_bytes, 0,
        "this test expects ratio mode: {found:?}"
    );

    let id = sysctl::set(lock.journal(), "vm.dirty_bytes", &(48 * MIB).to_string()).unwrap();
    assert_eq!(sysctl::read("vm.dirty_ratio").unwrap(), "0");

    lock.journal().undo(id).unwrap();
    assert_eq!(DirtySettings::read().unwrap(), found);
}

#[test]
fn sysctls_set_under_the_lock_are_put_back_when_a_panic_unwinds() {
    if !require_privileged("sysctls_set_under_the_lock_are_put_back_when_a_panic_unwinds") {
        return;
    }
    let found = std::thread::spawn(|| {
        let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
        let found = DirtySettings::read().unwrap();
        sysctl::apply_flusher_off(lock.journal()).unwrap();
        sysctl::set(lock.journal(), "vm.dirty_writeback_centisecs", "1234").unwrap();
        std::panic::panic_any(found);
    })
    .join()
    .unwrap_err();
    let found = found.downcast::<DirtySettings>().unwrap();

    let _lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();
    assert_eq!(DirtySettings::read().unwrap(), *found);
}

#[test]
fn a_failed_write_leaves_nothing_recorded() {
    if !require_privileged("a_failed_write_leaves_nothing_recorded") {
        return;
    }
    let lock = GlobalLock::acquire_in(&shared_state_dir()).unwrap();

    assert!(sysctl::set(lock.journal(), "vm.dirty_ratio", "not-a-number").is_err());
    assert!(sysctl::set(lock.journal(), "vm.no_such_sysctl", "1").is_err());
    assert!(lock.journal().pending().is_empty());
}
