//! The fiber slots: a slab whose entries never move.
//!
//! Entries live in fixed chunks of [`CHUNK`] that are never reallocated, so
//! a running fiber's coroutine can be resumed in place through a pointer
//! into its slot while a nested spawn adds slots (state rule 1). Keys are
//! reused, most recently freed first, so the hot slots stay few and dense.

use std::ops::{Index, IndexMut};

use crate::state::Slot;

/// Entries per chunk.
const CHUNK: usize = 64;

enum Entry {
    /// Free; the next free key, or `u32::MAX`.
    Vacant(u32),
    Occupied(Slot),
}

pub(crate) struct Slots {
    chunks: Vec<Box<[Entry; CHUNK]>>,
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

    fn entry(&self, key: u32) -> Option<&Entry> {
        let chunk = self.chunks.get(key as usize / CHUNK)?;
        Some(&chunk[key as usize % CHUNK])
    }

    fn entry_mut(&mut self, key: u32) -> Option<&mut Entry> {
        let chunk = self.chunks.get_mut(key as usize / CHUNK)?;
        Some(&mut chunk[key as usize % CHUNK])
    }

    /// Stores `slot`; returns its key.
    pub fn insert(&mut self, slot: Slot) -> u32 {
        if self.free == u32::MAX {
            let base = (self.chunks.len() * CHUNK) as u32;
            // Threaded so that the chunk's first key is handed out first.
            self.chunks.push(Box::new(std::array::from_fn(|i| {
                let next = base + i as u32 + 1;
                Entry::Vacant(if i + 1 < CHUNK { next } else { u32::MAX })
            })));
            self.free = base;
        }
        let key = self.free;
        let entry = self.entry_mut(key).expect("a free key has an entry");
        let Entry::Vacant(next) = *entry else {
            unreachable!("the free list holds vacant entries only")
        };
        *entry = Entry::Occupied(slot);
        self.free = next;
        self.len += 1;
        key
    }

    /// Frees `key`'s slot.
    ///
    /// # Panics
    ///
    /// When `key` holds no slot.
    pub fn remove(&mut self, key: u32) -> Slot {
        let free = self.free;
        let entry = self.entry_mut(key).expect("a removed key has an entry");
        let Entry::Occupied(slot) = std::mem::replace(entry, Entry::Vacant(free)) else {
            panic!("slot {key} is free");
        };
        self.free = key;
        self.len -= 1;
        slot
    }

    pub fn get(&self, key: u32) -> Option<&Slot> {
        match self.entry(key)? {
            Entry::Occupied(slot) => Some(slot),
            Entry::Vacant(_) => None,
        }
    }

    pub fn get_mut(&mut self, key: u32) -> Option<&mut Slot> {
        match self.entry_mut(key)? {
            Entry::Occupied(slot) => Some(slot),
            Entry::Vacant(_) => None,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.chunks
            .iter()
            .flat_map(|c| c.iter())
            .filter_map(|e| match e {
                Entry::Occupied(slot) => Some(slot),
                Entry::Vacant(_) => None,
            })
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.chunks
            .iter_mut()
            .flat_map(|c| c.iter_mut())
            .filter_map(|e| match e {
                Entry::Occupied(slot) => Some(slot),
                Entry::Vacant(_) => None,
            })
    }
}

impl Index<u32> for Slots {
    type Output = Slot;

    fn index(&self, key: u32) -> &Slot {
        self.get(key).expect("a live key")
    }
}

impl IndexMut<u32> for Slots {
    fn index_mut(&mut self, key: u32) -> &mut Slot {
        self.get_mut(key).expect("a live key")
    }
}
