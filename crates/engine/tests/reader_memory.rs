//! The reader walks a recording in constant memory: verifying a file many
//! times larger than the reader's buffer allocates at most about that
//! buffer, measured with a counting global allocator (peak live bytes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use rtrec_engine::reader::{verify_file, FileStatus, READ_BUF};
use rtrec_engine::{Alloc, Config, Flush, Mode, Recorder, MIB};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: allocated above with this layout.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn verifying_a_file_48_times_the_buffer_allocates_about_one_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        mode: Mode::Inline,
        alloc: Alloc::Append,
        flush: Flush::None,
        file_size: 64 * MIB,
        max_record: 1 << 20,
        ..Config::default()
    };
    let mut rec = Recorder::create(dir.path(), cfg).unwrap();
    // Records of 1 MiB: each payload as large as the reader's buffer.
    let payload = vec![0x5au8; 1 << 20];
    for _ in 0..48 {
        rec.record(&payload).unwrap();
    }
    let s = rec.finish().unwrap();
    drop(payload);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = verify_file(&s.files[0]).unwrap();
    let extra = PEAK.load(Ordering::Relaxed) - base;
    assert_eq!(r.status, FileStatus::Complete, "{:?}", r.notes);
    assert_eq!(r.records, 48);
    assert!(
        extra < READ_BUF + 256 * 1024,
        "verify of a 48 MiB file allocated {extra} bytes at its peak"
    );
}
