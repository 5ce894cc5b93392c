//! The Lua strings of recent CALL function names and EVAL expressions,
//! kept by registry ref (the design's "cached refs on every hot path"): a
//! request whose name was seen lately pushes its string with one
//! `lua_rawgeti` instead of interning its bytes again (`lj_str_new`: a hash
//! of the bytes, a walk of the string table's chain, a compare).
//!
//! A small direct-mapped table: a name's slot is picked by its length and
//! its first and last bytes, a miss replaces what the slot held. Bounded
//! (at most [`SLOTS`] names, [`NAME_MAX`] bytes each), so a peer sending
//! ever new names costs one ref swap per request and no growth. A slot
//! also keeps whether its name is a plain global one, so a CALL of a
//! cached name does not scan its bytes for `.` and `:` again.

use std::ffi::c_int;

use crate::fiber::handlers::is_plain_name;
use crate::raw::Stack;

/// Names kept at once.
const SLOTS: usize = 32;

/// Longer names (an EVAL's whole chunk) are pushed as bytes each time.
const NAME_MAX: usize = 64;

/// One cached name: its bytes, the registry ref of its Lua string, and
/// whether it is a plain global name ([`is_plain_name`]).
struct Slot {
    len: u8,
    plain: bool,
    bytes: [u8; NAME_MAX],
    r: c_int,
}

/// The cache (in the server's per-cord state).
#[derive(Default)]
pub(super) struct Names {
    slots: Vec<Option<Slot>>,
}

/// The slot `name` goes to; `None` for a name the cache does not keep
/// (empty or longer than [`NAME_MAX`]).
#[inline(always)]
fn slot_of(name: &[u8]) -> Option<usize> {
    let (&first, &last) = (name.first()?, name.last()?);
    if name.len() > NAME_MAX {
        return None;
    }
    Some((name.len() ^ usize::from(first) ^ (usize::from(last) << 2)) % SLOTS)
}

impl Names {
    /// The cached string of `name`: the registry ref of its Lua string and
    /// whether it is a plain global name ([`is_plain_name`], known with no
    /// scan of its bytes).
    #[inline]
    pub(super) fn find(&self, name: &[u8]) -> Option<(c_int, bool)> {
        let slot = self.slots.get(slot_of(name)?)?.as_ref()?;
        (&slot.bytes[..usize::from(slot.len)] == name).then_some((slot.r, slot.plain))
    }

    /// Pushes a new Lua string of `name` onto `s` (which has room for two
    /// values) and keeps it in the cache when the name fits (replacing
    /// what its slot held).
    pub(super) fn push_new(&mut self, s: &mut Stack, name: &[u8]) {
        s.push_bytes(name);
        let Some(i) = slot_of(name) else {
            return;
        };
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        s.push_value(-1);
        let r = s.make_ref();
        let mut bytes = [0u8; NAME_MAX];
        bytes[..name.len()].copy_from_slice(name);
        let old = self.slots[i].replace(Slot {
            len: name.len() as u8,
            plain: is_plain_name(name),
            bytes,
            r,
        });
        if let Some(old) = old {
            s.unref(old.r);
        }
    }
}
