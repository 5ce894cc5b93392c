//! The fiber slots: a slab whose entries never move.
//!
//! Entries live in fixed chunks of [`CHUNK`] that are never reallocated or
//! freed while the slab lives, so a running fiber's coroutine can be resumed
//! in place through a pointer into its slot while a nested spawn adds slots
//! (state rule 1), and a [`Handle`] points straight at its entry: a lookup
//! is one load and one compare of the fiber id. Keys are reused, most
//! recently freed first, so the hot slots stay few and dense.
//!
//! The chunks are kept as raw pointers (made by `Box::into_raw`, freed by
//! `Drop`), and every access to an entry goes through them or through a
//! handle's pointer, derived from them: no `Box` or reference to a chunk is
//! held that a handle's pointer could be invalidated by.

use std::ptr::NonNull;

use crate::state::{Handle, Slot};

/// Entries per chunk.
const CHUNK: usize = 64;

/// A place for one slot.
pub(crate) struct Entry {
    /// The id of the fiber in `slot`, or 0 while it is free (fiber ids
    /// start above 100, so no handle matches a free entry).
    fid: u64,
    /// This entry's key.
    key: u32,
    /// While free: the next free key, or `u32::MAX`.
    next_free: u32,
    /// `Some` exactly while `fid` is not 0.
    slot: Option<Slot>,
}

pub(crate) struct Slots {
    /// The chunks, each `CHUNK` entries from `Box::into_raw`.
    chunks: Vec<NonNull<Entry>>,
    /// The most recently freed key, or `u32::MAX`.
    free: u32,
    len: usize,
}

impl Slots {
    pub const fn new() -> Slots {
        Slots {
            chunks: Vec::new(),
            free: u32::MAX,
            len: 0,
        }
    }

    /// The entry of `key`, which is below `chunks.len() * CHUNK`.
    fn entry(&self, key: u32) -> NonNull<Entry> {
        let chunk = self.chunks[key as usize / CHUNK];
        // SAFETY: the index is within the chunk's `CHUNK` entries.
        unsafe { chunk.add(key as usize % CHUNK) }
    }

    /// Stores `slot`, whose fiber id is above 0; returns its handle.
    pub fn insert(&mut self, slot: Slot) -> Handle {
        if self.free == u32::MAX {
            let base = (self.chunks.len() * CHUNK) as u32;
            // Threaded so that the chunk's first key is handed out first.
            let chunk: Box<[Entry; CHUNK]> = Box::new(std::array::from_fn(|i| {
                let next = base + i as u32 + 1;
                Entry {
                    fid: 0,
                    key: base + i as u32,
                    next_free: if i + 1 < CHUNK { next } else { u32::MAX },
                    slot: None,
                }
            }));
            self.chunks
                .push(NonNull::from(Box::leak(chunk)).cast::<Entry>());
            self.free = base;
        }
        let ptr = self.entry(self.free);
        // SAFETY: an entry of a live chunk; `&mut self` excludes every other
        // access to it for this call.
        let entry = unsafe { &mut *ptr.as_ptr() };
        debug_assert!(entry.slot.is_none() && slot.running.fid > 0);
        self.free = entry.next_free;
        entry.fid = slot.running.fid;
        entry.slot = Some(slot);
        self.len += 1;
        Handle {
            entry: ptr,
            fid: entry.fid,
        }
    }

    /// Frees `h`'s slot and returns it.
    ///
    /// # Panics
    ///
    /// When `h`'s fiber has no slot.
    pub fn remove(&mut self, h: Handle) -> Slot {
        // SAFETY: as in `get_mut`.
        let entry = unsafe { &mut *h.entry.as_ptr() };
        assert!(entry.fid == h.fid, "fiber {} has no slot", h.fid);
        let slot = entry.slot.take().expect("an entry with an id holds a slot");
        entry.fid = 0;
        entry.next_free = self.free;
        self.free = entry.key;
        self.len -= 1;
        slot
    }

    /// `h`'s slot, or `None` once its fiber is gone.
    #[inline(always)]
    pub fn get(&self, h: Handle) -> Option<&Slot> {
        // SAFETY: handles are made only by `insert` of this thread's one
        // slab (a `Handle` is not `Send`), so `h.entry` points into a chunk
        // that lives as long as the slab; `&self` excludes writes.
        let entry = unsafe { &*h.entry.as_ptr() };
        if entry.fid != h.fid {
            return None;
        }
        // SAFETY: an entry with a fiber id holds a slot (`insert`, `remove`).
        Some(unsafe { entry.slot.as_ref().unwrap_unchecked() })
    }

    /// `h`'s slot, or `None` once its fiber is gone.
    #[inline(always)]
    pub fn get_mut(&mut self, h: Handle) -> Option<&mut Slot> {
        // SAFETY: as in `get`; `&mut self` excludes every other access.
        let entry = unsafe { &mut *h.entry.as_ptr() };
        if entry.fid != h.fid {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { entry.slot.as_mut().unwrap_unchecked() })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, chunk by chunk.
    fn entries(&self) -> impl Iterator<Item = NonNull<Entry>> + '_ {
        self.chunks.iter().flat_map(|&chunk| {
            // SAFETY: within the chunk's `CHUNK` entries.
            (0..CHUNK).map(move |i| unsafe { chunk.add(i) })
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &Slot> {
        // SAFETY: entries of live chunks; `&self` excludes writes.
        self.entries()
            .filter_map(|e| unsafe { (*e.as_ptr()).slot.as_ref() })
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        let entries: Vec<NonNull<Entry>> = self.entries().collect();
        // SAFETY: distinct entries of live chunks, each lent once; `&mut
        // self` excludes every other access while they are.
        entries
            .into_iter()
            .filter_map(|e| unsafe { (*e.as_ptr()).slot.as_mut() })
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        for &chunk in &self.chunks {
            // SAFETY: made by `Box::leak` of a `Box<[Entry; CHUNK]>` in
            // `insert`, freed only here.
            drop(unsafe { Box::from_raw(chunk.cast::<[Entry; CHUNK]>().as_ptr()) });
        }
    }
}

impl std::ops::Index<Handle> for Slots {
    type Output = Slot;

    fn index(&self, h: Handle) -> &Slot {
        self.get(h).expect("a live fiber")
    }
}

impl std::ops::IndexMut<Handle> for Slots {
    fn index_mut(&mut self, h: Handle) -> &mut Slot {
        self.get_mut(h).expect("a live fiber")
    }
}
