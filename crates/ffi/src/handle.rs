//! Handles that detect misuse: the opaque pointers the C caller holds
//! (`rtrec_recorder *`, `rtrec_timer *`) are never addresses. Each is a
//! slot index and a generation packed into a pointer-sized integer, looked
//! up in a table of slots that is never freed. A handle that was finished,
//! destroyed, never issued, or is garbage finds a slot of another
//! generation (or none) and the call returns `-EBADF`: no freed memory is
//! ever touched, as `sqlite3SafetyCheckOk()` does for `SQLITE_MISUSE`, but
//! with nothing read from the caller's pointer.
//!
//! Cost on the real-time path ([`Table::get`]): an index split, two
//! loads (the chunk and the slot's generation) and one predictable branch;
//! no lock, no atomic read-modify-write. Creating and closing a handle
//! take the table's mutex.
//!
//! Design choices:
//! - Slots live in chunks of [`CHUNK`] allocated on demand and never freed
//!   (reachable from a static: not a leak for valgrind), so a stale lookup
//!   always reads valid memory. A freed slot is reused by a later create,
//!   with the next generation.
//! - The generation is odd while a slot is live and even while free; a
//!   handle carries the odd generation it was issued with. Half of the
//!   pointer's bits hold it, less the kind's two, so a stale handle is
//!   caught until its slot was reused 2^29 times (2^13 on a 32-bit
//!   target).
//! - **Each table has a kind** ([`Kind`]), in the handle's top two bits:
//!   the recorders' and the timers' tables number their slots alike, so
//!   without it the first recorder and the first timer of a process are
//!   the same integer (`0x100000001`) and a timer handle given to
//!   `rtrec_recorder_finish()` would finish the recorder. With it a handle
//!   of one kind finds nothing in the other's table (`-EBADF`, as the
//!   header says), at no cost: the kind is compared with the generation,
//!   in the same branch.
//! - Not detected (documented in the header): two threads using one live
//!   handle at once (e.g. `record` on one thread while another finishes
//!   it). Catching that would cost the hot path an atomic read-modify-write.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Slots per chunk.
pub(crate) const CHUNK: usize = 256;
/// Chunks at most: with [`CHUNK`], 65,536 live handles of one kind.
const CHUNKS: usize = 256;
/// Bits of a handle that hold the slot index (+1, so no handle is NULL).
const INDEX_BITS: u32 = usize::BITS / 2;
/// Bits at the top of a handle that hold its table's [`Kind`].
const KIND_BITS: u32 = 2;
/// Bits of a handle that hold the generation: between the index and the
/// kind.
const GEN_BITS: u32 = usize::BITS - INDEX_BITS - KIND_BITS;

/// What a table holds, stored in the top bits of each of its handles so
/// that a handle of one kind is never live in another kind's table (see
/// the module docs). Never 0: a handle with no kind bits is garbage.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(usize)]
pub(crate) enum Kind {
    /// `rtrec_recorder *`.
    Recorder = 1,
    /// `rtrec_timer *`.
    Timer = 2,
}

struct Slot<T> {
    generation: AtomicUsize,
    value: AtomicPtr<T>,
}

/// A table of live objects of type `T`, addressed by handles.
pub(crate) struct Table<T> {
    /// Its kind, in the top bits of every handle it issues.
    kind: Kind,
    chunks: [AtomicPtr<Slot<T>>; CHUNKS],
    /// Free slot indices and the number of slots made so far.
    free: Mutex<(Vec<usize>, usize)>,
}

impl<T> Table<T> {
    /// An empty table of `kind` (for a `static`).
    pub(crate) const fn new(kind: Kind) -> Table<T> {
        Table {
            kind,
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
            free: Mutex::new((Vec::new(), 0)),
        }
    }

    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        let chunk = self.chunks.get(index / CHUNK)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a non-NULL chunk is an array of CHUNK slots that is never
        // freed; index % CHUNK is in it.
        Some(unsafe { &*chunk.add(index % CHUNK) })
    }

    /// The slot index and generation of `handle`, or `None` when it is
    /// not of this table's kind.
    fn split(&self, handle: usize) -> Option<(usize, usize)> {
        if handle >> (INDEX_BITS + GEN_BITS) != self.kind as usize {
            return None;
        }
        let index = (handle & ((1usize << INDEX_BITS) - 1)).wrapping_sub(1);
        Some((index, (handle >> INDEX_BITS) & ((1usize << GEN_BITS) - 1)))
    }

    /// Stores `value` and returns its handle (never 0); `None` when the
    /// table is full.
    pub(crate) fn insert(&self, value: Box<T>) -> Option<usize> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let index = match free.0.pop() {
            Some(i) => i,
            None => {
                let i = free.1;
                if i >= CHUNK * CHUNKS || i + 1 >= 1usize << INDEX_BITS {
                    return None;
                }
                if i % CHUNK == 0 {
                    let chunk: Box<[Slot<T>]> = (0..CHUNK)
                        .map(|_| Slot {
                            generation: AtomicUsize::new(0),
                            value: AtomicPtr::new(std::ptr::null_mut()),
                        })
                        .collect();
                    self.chunks[i / CHUNK]
                        .store(Box::into_raw(chunk).cast::<Slot<T>>(), Ordering::Release);
                }
                free.1 += 1;
                i
            }
        };
        let slot = self.slot(index)?;
        slot.value.store(Box::into_raw(value), Ordering::Release);
        let max_gen = (1usize << GEN_BITS) - 1;
        let mut g = (slot.generation.load(Ordering::Relaxed) + 1) & max_gen;
        if g % 2 == 0 {
            g = 1;
        }
        slot.generation.store(g, Ordering::Release);
        Some(((self.kind as usize) << (INDEX_BITS + GEN_BITS)) | (g << INDEX_BITS) | (index + 1))
    }

    /// The live object of `handle`, or `None` (stale, closed, garbage).
    /// The real-time lookup: no lock, one branch on the generation.
    ///
    /// # Safety
    ///
    /// No other thread closes this handle while the reference is used
    /// (the caller's contract: one thread per handle at a time).
    #[inline]
    // The `&mut` comes from the table, not from `&self`: exclusive per
    // handle by the caller's contract (this fn is unsafe for that).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get(&self, handle: usize) -> Option<&mut T> {
        let (index, generation) = self.split(handle)?;
        let slot = self.slot(index)?;
        if slot.generation.load(Ordering::Acquire) != generation || generation % 2 == 0 {
            return None;
        }
        let p = slot.value.load(Ordering::Acquire);
        // SAFETY: live (generation matched), owned by the table, and used
        // by one thread at a time per the caller's contract.
        unsafe { p.as_mut() }
    }

    /// Takes the object of `handle` out of the table: the handle is dead
    /// from now on (every later use finds `None`). `None` when it was not
    /// live, so of two threads closing one handle only one gets it.
    pub(crate) fn remove(&self, handle: usize) -> Option<Box<T>> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let (index, generation) = self.split(handle)?;
        let slot = self.slot(index)?;
        if slot.generation.load(Ordering::Acquire) != generation || generation % 2 == 0 {
            return None;
        }
        slot.generation.store(generation + 1, Ordering::Release);
        let p = slot.value.swap(std::ptr::null_mut(), Ordering::AcqRel);
        free.0.push(index);
        // SAFETY: put there by `insert` with Box::into_raw, taken once.
        (!p.is_null()).then(|| unsafe { Box::from_raw(p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_handle_is_dead_and_its_slot_is_reused_under_another_handle() {
        let t: Table<u32> = Table::new(Kind::Recorder);
        let a = t.insert(Box::new(7)).unwrap();
        assert_ne!(a, 0);
        // SAFETY: one thread.
        assert_eq!(unsafe { t.get(a) }.copied(), Some(7));
        assert_eq!(t.remove(a).as_deref(), Some(&7));
        // SAFETY: one thread.
        assert!(unsafe { t.get(a) }.is_none());
        assert!(t.remove(a).is_none(), "a second close finds nothing");
        let b = t.insert(Box::new(8)).unwrap();
        assert_ne!(a, b, "the reused slot has a new generation");
        // SAFETY: one thread.
        assert!(unsafe { t.get(a) }.is_none());
        // SAFETY: one thread.
        assert_eq!(unsafe { t.get(b) }.copied(), Some(8));
    }

    #[test]
    fn garbage_handles_find_nothing() {
        let t: Table<u32> = Table::new(Kind::Recorder);
        let a = t.insert(Box::new(1)).unwrap();
        for h in [0, 1, a + 1, a ^ (1 << INDEX_BITS), usize::MAX, 0xdead_beef] {
            // SAFETY: one thread.
            assert!(unsafe { t.get(h) }.is_none(), "{h:#x}");
        }
    }

    #[test]
    fn a_handle_of_one_kind_is_dead_in_the_other_kinds_table() {
        let recorders: Table<u32> = Table::new(Kind::Recorder);
        let timers: Table<u32> = Table::new(Kind::Timer);
        // The first slot of each, first generation: the same integer
        // before handles had a kind.
        let r = recorders.insert(Box::new(1)).unwrap();
        let t = timers.insert(Box::new(2)).unwrap();
        assert_ne!(r, t);
        assert_eq!(
            r & ((1usize << (INDEX_BITS + GEN_BITS)) - 1),
            t & ((1usize << (INDEX_BITS + GEN_BITS)) - 1)
        );
        // SAFETY: one thread.
        unsafe {
            assert!(recorders.get(t).is_none());
            assert!(timers.get(r).is_none());
        }
        assert!(
            recorders.remove(t).is_none(),
            "a timer cannot end a recorder"
        );
        assert!(timers.remove(r).is_none());
        // SAFETY: one thread.
        assert_eq!(unsafe { recorders.get(r) }.copied(), Some(1));
        assert_eq!(recorders.remove(r).as_deref(), Some(&1));
        assert_eq!(timers.remove(t).as_deref(), Some(&2));
    }

    #[test]
    fn more_handles_than_a_chunk_holds_are_all_distinct_and_live() {
        let t: Table<usize> = Table::new(Kind::Recorder);
        let hs: Vec<usize> = (0..CHUNK * 2 + 3)
            .map(|i| t.insert(Box::new(i)).unwrap())
            .collect();
        for (i, h) in hs.iter().enumerate() {
            // SAFETY: one thread.
            assert_eq!(unsafe { t.get(*h) }.copied(), Some(i));
        }
        for h in hs {
            assert!(t.remove(h).is_some());
        }
    }
}
