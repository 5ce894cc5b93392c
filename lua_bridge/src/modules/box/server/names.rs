//! The Lua strings of recent CALL function names and EVAL expressions,
//! kept by registry ref (the design's "cached refs on every hot path"): a
//! request whose name was seen lately pushes its string with one
//! `lua_rawgeti` instead of interning its bytes again (`lj_str_new`: a hash
//! of the bytes, a walk of the string table's chain, a compare).
//!
//! A small direct-mapped table: a name's slot is picked by its length and
//! its first and last bytes, a miss replaces what the slot held. Bounded
//! (at most [`SLOTS`] names, [`NAME_MAX`] bytes each), so a peer sending
//! ever new names costs one ref swap per request and no growth.

use std::ffi::c_int;

use crate::raw::Stack;

/// Names kept at once.
const SLOTS: usize = 32;

/// Longer names (an EVAL's whole chunk) are pushed as bytes each time.
const NAME_MAX: usize = 64;

/// One cached name: its bytes and the registry ref of its Lua string.
struct Slot {
    len: u8,
    bytes: [u8; NAME_MAX],
    r: c_int,
}

/// The cache (in the server's per-cord state).
#[derive(Default)]
pub(super) struct Names {
    slots: Vec<Option<Slot>>,
}

impl Names {
    /// Pushes the Lua string of `name` onto `s` (which has room for two
    /// values), from the cache when it holds it, else made and kept.
    #[inline]
    pub(super) fn push(&mut self, s: &mut Stack, name: &[u8]) {
        let (Some(&first), Some(&last)) = (name.first(), name.last()) else {
            s.push_bytes(name);
            return;
        };
        if name.len() > NAME_MAX {
            s.push_bytes(name);
            return;
        }
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        let i = (name.len() ^ usize::from(first) ^ (usize::from(last) << 2)) % SLOTS;
        if let Some(slot) = &self.slots[i] {
            if &slot.bytes[..usize::from(slot.len)] == name {
                s.push_ref(slot.r);
                return;
            }
        }
        s.push_bytes(name);
        s.push_value(-1);
        let r = s.make_ref();
        let mut bytes = [0u8; NAME_MAX];
        bytes[..name.len()].copy_from_slice(name);
        let old = self.slots[i].replace(Slot {
            len: name.len() as u8,
            bytes,
            r,
        });
        if let Some(old) = old {
            s.unref(old.r);
        }
    }
}
