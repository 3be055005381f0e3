//! `rtrec_recorder_record()` keeps the engine's real-time contract through
//! the C boundary: the panic guard, the pointer checks and the errno
//! mapping allocate nothing, on the stored path and on every drop path.
//! (That `Recorder::record` makes no system call is held by the engine's
//! own seccomp test; this wrapper adds none.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::ptr::null_mut;

use rtrec::{
    rtrec_config, rtrec_config_init, rtrec_recorder_create, rtrec_recorder_finish,
    rtrec_recorder_record, rtrec_summary,
};

struct Counting;
thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}
// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        System.realloc(p, l, n)
    }
}
#[global_allocator]
static A: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

#[test]
fn record_through_the_c_api_allocates_nothing_even_when_it_drops() {
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
        assert_eq!(rtrec_recorder_create(d.as_ptr(), &cfg, &mut rec), 0);
    }
    let buf = vec![1u8; 16384];
    let big = vec![2u8; 20000];
    let (mut full, mut too_large, mut invalid) = (0u64, 0u64, 0u64);
    let before = allocs();
    for i in 0..5000 {
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
        "rtrec_recorder_record() allocated {during} times"
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
}
