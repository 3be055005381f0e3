//! `rtrec_recorder_record()` and `rtrec_recorder_trigger()` keep the
//! engine's real-time contract through the C boundary: the panic guard, the
//! pointer checks and the errno mapping allocate nothing, on the stored
//! path and on every drop path, with and without the flight recorder.
//! (That `Recorder::record` makes no system call is held by the engine's
//! own seccomp test; this wrapper adds none.)

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::ptr::null_mut;

use rtrec::{
    rtrec_config, rtrec_config_init, rtrec_recorder_create, rtrec_recorder_finish,
    rtrec_recorder_record, rtrec_recorder_trigger, rtrec_summary,
};

#[global_allocator]
static A: rtrec_sys::testing::CountingAllocator = rtrec_sys::testing::CountingAllocator;

fn allocs() -> u64 {
    rtrec_sys::testing::thread_allocations()
}

/// Records 5,000 records of 16 KiB through the C API, with a trigger every
/// 100 records and every kind of drop, counting allocations on this thread.
fn record_and_trigger_allocate_nothing(flight: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = CString::new(dir.path().as_os_str().as_bytes()).unwrap();
    // SAFETY: all-zero is a valid rtrec_config (integers, NULL pointer).
    let mut cfg: rtrec_config = unsafe { std::mem::zeroed() };
    cfg.struct_size = std::mem::size_of::<rtrec_config>();
    let mut rec = null_mut();
    // SAFETY: valid pointers throughout; finish frees the handle.
    unsafe {
        assert_eq!(rtrec_config_init(&mut cfg), 0);
        (cfg.max_record, cfg.ring_bytes, cfg.file_size) = (16384, 256 * 1024, 64 << 20);
        if flight {
            // Every trigger opens an event file: keep them small.
            cfg.file_size = 1 << 20;
            (
                cfg.flight_enabled,
                cfg.flight_pre_ns,
                cfg.flight_pre_bytes,
                cfg.flight_post_ns,
            ) = (1, 5_000_000, 256 * 1024, 1_000_000);
        }
        assert_eq!(rtrec_recorder_create(d.as_ptr(), &cfg, &mut rec), 0);
    }
    let buf = vec![1u8; 16384];
    let big = vec![2u8; 20000];
    let (mut full, mut too_large, mut invalid, mut triggers) = (0u64, 0u64, 0u64, 0u64);
    let before = allocs();
    for i in 0..5000 {
        if i % 100 == 50 {
            // SAFETY: a live handle, or NULL, which is checked.
            unsafe {
                assert_eq!(rtrec_recorder_trigger(rec), 0);
                assert_eq!(rtrec_recorder_trigger(null_mut()), -libc::EINVAL);
            }
            triggers += 1;
        }
        // SAFETY: a live handle and valid buffers (or NULL, which is checked).
        let r = unsafe {
            match i % 1000 {
                999 => rtrec_recorder_record(rec, big.as_ptr().cast(), big.len()),
                998 => rtrec_recorder_record(null_mut(), buf.as_ptr().cast(), buf.len()),
                _ => rtrec_recorder_record(rec, buf.as_ptr().cast(), buf.len()),
            }
        };
        match -r {
            0 => {}
            libc::ENOBUFS => full += 1,
            libc::EMSGSIZE => too_large += 1,
            libc::EINVAL => invalid += 1,
            e => panic!("unexpected -{e}"),
        }
    }
    let during = allocs() - before;
    let mut s = rtrec_summary {
        struct_size: std::mem::size_of::<rtrec_summary>(),
        ..Default::default()
    };
    // SAFETY: a live handle; finish frees it.
    assert_eq!(unsafe { rtrec_recorder_finish(rec, &mut s) }, 0);
    assert_eq!(
        during, 0,
        "rtrec_recorder_record() / rtrec_recorder_trigger() allocated {during} times (flight: {flight})"
    );
    assert_eq!(
        (too_large, invalid),
        (5, 5),
        "the test must exercise the drop and the NULL paths"
    );
    assert_eq!(
        (s.dropped_too_large, s.dropped_ring_full),
        (too_large, full)
    );
    assert_eq!(s.records_offered, 4995);
    assert_eq!(s.triggers, triggers);
    if flight {
        assert_eq!(s.flight_events, triggers, "every trigger saved an event");
    } else {
        assert_eq!(s.flight_events, 0);
    }
}

#[test]
fn record_and_trigger_through_the_c_api_allocate_nothing_even_when_they_drop() {
    record_and_trigger_allocate_nothing(false);
}

#[test]
fn record_and_trigger_allocate_nothing_with_the_flight_recorder() {
    record_and_trigger_allocate_nothing(true);
}
