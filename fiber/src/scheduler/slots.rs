//! A slab whose entries never move, with generation-tagged handles (the
//! scheduler keeps its fibers' slots in one).
//!
//! Entries live in fixed chunks of [`CHUNK`] that are never reallocated or
//! freed while the slab lives, so a value can be used in place through a
//! pointer into its entry while other values are added (the scheduler
//! resumes a fiber's coroutine in place while a nested spawn adds slots:
//! state rule 1), and a [`Handle`] points straight at its entry: a lookup
//! is one load and one compare of the id the value was inserted with. Keys
//! are reused, most recently freed first, so the hot entries stay few and
//! dense.
//!
//! The chunks are kept as raw pointers (made by `Box::into_raw`, freed by
//! `Drop`), and every access to an entry goes through them or through a
//! handle's pointer, derived from them: no `Box` or reference to a chunk is
//! held that a handle's pointer could be invalidated by.
//!
//! A leaf: it knows nothing of fibers. Its one contract: a handle is used
//! only with the slab that made it, while that slab lives (a `Handle` is
//! not `Send`, and the scheduler has one slab per thread: state rule 1).

use std::fmt;
use std::ptr::NonNull;

/// Entries per chunk.
const CHUNK: usize = 64;

/// A place for one value: on a cache line of its own (`align(64)`), the id
/// first and the value right after it (`repr(C)`), so the value's layout
/// decides which of its fields share the id's line (the scheduler's slot
/// puts what a switch touches there).
#[repr(C, align(64))]
pub(crate) struct Entry<T> {
    /// The id of the value in `value`, or 0 while it is free (so no handle
    /// matches a free entry: ids are above 0).
    id: u64,
    /// `Some` exactly while `id` is not 0.
    value: Option<T>,
    /// This entry's key.
    key: u32,
    /// While free: the next free key, or `u32::MAX`.
    next_free: u32,
}

/// A value's entry with the value's id as its generation tag: the entry is
/// the value's while it holds that id.
pub(crate) struct Handle<T> {
    pub entry: NonNull<Entry<T>>,
    pub id: u64,
}

impl<T> Clone for Handle<T> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

impl<T> PartialEq for Handle<T> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.entry == other.entry && self.id == other.id
    }
}

impl<T> Eq for Handle<T> {}

impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("entry", &self.entry)
            .field("id", &self.id)
            .finish()
    }
}

pub(crate) struct Slots<T> {
    /// The chunks, each `CHUNK` entries from `Box::into_raw`.
    chunks: Vec<NonNull<Entry<T>>>,
    /// The most recently freed key, or `u32::MAX`.
    free: u32,
    len: usize,
}

impl<T> Slots<T> {
    pub const fn new() -> Slots<T> {
        Slots {
            chunks: Vec::new(),
            free: u32::MAX,
            len: 0,
        }
    }

    /// The entry of `key`, which is below `chunks.len() * CHUNK`.
    fn entry(&self, key: u32) -> NonNull<Entry<T>> {
        let chunk = self.chunks[key as usize / CHUNK];
        // SAFETY: the index is within the chunk's `CHUNK` entries.
        unsafe { chunk.add(key as usize % CHUNK) }
    }

    /// Stores `value` under `id`, which is above 0; returns its handle.
    #[cfg(test)]
    pub fn insert(&mut self, id: u64, value: T) -> Handle<T> {
        self.insert_with(id, || value)
    }

    /// Stores what `make` gives under `id`, which is above 0; returns its
    /// handle. The value is made in its entry (a fiber's slot, 192 bytes,
    /// is not built aside and copied in).
    #[inline(always)]
    pub fn insert_with(&mut self, id: u64, make: impl FnOnce() -> T) -> Handle<T> {
        if self.free == u32::MAX {
            let base = (self.chunks.len() * CHUNK) as u32;
            // Threaded so that the chunk's first key is handed out first.
            // Made in place on the heap: as a `Box::new` of an array, the
            // chunk (12 KiB of fiber slots) would first be built on the
            // stack of the fiber that spawns, which may have only 16 KiB.
            let chunk: Box<[Entry<T>; CHUNK]> = (0..CHUNK)
                .map(|i| Entry {
                    id: 0,
                    key: base + i as u32,
                    next_free: if i + 1 < CHUNK {
                        base + i as u32 + 1
                    } else {
                        u32::MAX
                    },
                    value: None,
                })
                .collect::<Vec<_>>()
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("a chunk has CHUNK entries"));
            self.chunks
                .push(NonNull::from(Box::leak(chunk)).cast::<Entry<T>>());
            self.free = base;
        }
        let ptr = self.entry(self.free);
        // SAFETY: an entry of a live chunk; `&mut self` excludes every other
        // access to it for this call.
        let entry = unsafe { &mut *ptr.as_ptr() };
        debug_assert!(entry.value.is_none() && id > 0);
        entry.value = Some(make());
        self.free = entry.next_free;
        entry.id = id;
        self.len += 1;
        Handle { entry: ptr, id }
    }

    /// Frees `h`'s entry and drops its value where it lies, never moving
    /// it out (a fiber's slot is 192 bytes, copied at each fiber's end
    /// when it was moved out to be dropped).
    ///
    /// # Panics
    ///
    /// When `h`'s value is gone.
    pub fn discard(&mut self, h: Handle<T>) {
        // SAFETY: as in `get`; `&mut self` excludes every other access.
        let entry = unsafe { &mut *h.entry.as_ptr() };
        assert!(
            entry.id == h.id && entry.value.is_some(),
            "{} has no entry",
            h.id
        );
        entry.id = 0;
        entry.next_free = self.free;
        self.free = entry.key;
        self.len -= 1;
        entry.value = None;
    }

    /// Frees `h`'s entry and returns its value.
    ///
    /// # Panics
    ///
    /// When `h`'s value is gone.
    #[cfg(test)]
    pub fn remove(&mut self, h: Handle<T>) -> T {
        // SAFETY: as in `get`; `&mut self` excludes every other access.
        let entry = unsafe { &mut *h.entry.as_ptr() };
        assert!(entry.id == h.id, "{} has no entry", h.id);
        let value = entry
            .value
            .take()
            .expect("an entry with an id holds a value");
        entry.id = 0;
        entry.next_free = self.free;
        self.free = entry.key;
        self.len -= 1;
        value
    }

    /// `h`'s value, or `None` once it is gone.
    #[inline(always)]
    pub fn get(&self, h: Handle<T>) -> Option<&T> {
        // SAFETY: state rule 1 (the module's one contract): `h` was made by
        // `insert` of this slab, so `h.entry` points into a chunk that lives
        // as long as the slab; `&self` excludes writes.
        let entry = unsafe { &*h.entry.as_ptr() };
        if entry.id != h.id {
            return None;
        }
        // SAFETY: an entry with an id holds a value (`insert`, `discard`).
        Some(unsafe { entry.value.as_ref().unwrap_unchecked() })
    }

    /// `h`'s value, or `None` once it is gone.
    #[inline(always)]
    pub fn get_mut(&mut self, h: Handle<T>) -> Option<&mut T> {
        // SAFETY: as in `get`; `&mut self` excludes every other access.
        let entry = unsafe { &mut *h.entry.as_ptr() };
        if entry.id != h.id {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { entry.value.as_mut().unwrap_unchecked() })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, chunk by chunk.
    fn entries(&self) -> impl Iterator<Item = NonNull<Entry<T>>> + '_ {
        self.chunks.iter().flat_map(|&chunk| {
            // SAFETY: within the chunk's `CHUNK` entries.
            (0..CHUNK).map(move |i| unsafe { chunk.add(i) })
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        // SAFETY: entries of live chunks; `&self` excludes writes.
        self.entries()
            .filter_map(|e| unsafe { (*e.as_ptr()).value.as_ref() })
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let entries: Vec<NonNull<Entry<T>>> = self.entries().collect();
        // SAFETY: distinct entries of live chunks, each lent once; `&mut
        // self` excludes every other access while they are.
        entries
            .into_iter()
            .filter_map(|e| unsafe { (*e.as_ptr()).value.as_mut() })
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        for &chunk in &self.chunks {
            // SAFETY: made by `Box::leak` of a `Box<[Entry<T>; CHUNK]>` in
            // `insert`, freed only here.
            drop(unsafe { Box::from_raw(chunk.cast::<[Entry<T>; CHUNK]>().as_ptr()) });
        }
    }
}

impl<T> std::ops::Index<Handle<T>> for Slots<T> {
    type Output = T;

    fn index(&self, h: Handle<T>) -> &T {
        self.get(h).expect("a live value")
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for Slots<T> {
    fn index_mut(&mut self, h: Handle<T>) -> &mut T {
        self.get_mut(h).expect("a live value")
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn a_discarded_value_is_dropped_in_place_and_its_key_reused() {
        let mut s = Slots::new();
        let kept = std::rc::Rc::new(());
        let h = s.insert(1, kept.clone());
        s.discard(h);
        assert_eq!(std::rc::Rc::strong_count(&kept), 1);
        assert!(s.get(h).is_none());
        let again = s.insert(2, kept.clone());
        assert_eq!(again.entry, h.entry);
        assert!(s.get(again).is_some());
    }

    #[test]
    fn handles_find_their_values_until_removed_and_keys_are_reused() {
        let mut s = Slots::new();
        let hs: Vec<_> = (1..=150u64).map(|id| s.insert(id, id * 10)).collect();
        assert_eq!(s.len(), 150);
        for h in &hs {
            assert_eq!(s.get(*h), Some(&(h.id * 10)));
        }
        // Values stay where they are while others are added.
        let first: *const u64 = &s[hs[0]];
        let more = s.insert(1000, 0);
        assert_eq!(first, &s[hs[0]] as *const u64);
        assert_eq!(s.remove(more), 0);
        // A removed value's handle finds nothing, even once its key is
        // reused: the id tells them apart.
        assert_eq!(s.remove(hs[7]), 80);
        assert!(s.get(hs[7]).is_none());
        let reused = s.insert(2000, 1);
        assert_eq!(reused.entry, hs[7].entry, "the most recently freed key");
        assert!(s.get(hs[7]).is_none());
        assert_eq!(s[reused], 1);
        for v in s.iter_mut() {
            *v += 1;
        }
        assert_eq!(s.iter().count(), 150);
        assert_eq!(
            s.iter().sum::<u64>(),
            (1..=150u64).map(|i| i * 10).sum::<u64>() - 80 + 1 + 150
        );
        for h in hs.iter().filter(|h| h.id != 8) {
            s.remove(*h);
        }
        s.remove(reused);
        assert!(s.is_empty());
    }

    #[test]
    fn values_left_in_the_slab_are_dropped_with_it() {
        let counted = std::rc::Rc::new(());
        let mut s = Slots::new();
        for id in 1..=70 {
            s.insert(id, counted.clone());
        }
        assert_eq!(std::rc::Rc::strong_count(&counted), 71);
        drop(s);
        assert_eq!(std::rc::Rc::strong_count(&counted), 1);
    }
}
