//! The functions a host's direct local calls name (`"app.work"`,
//! `"obj:method"`), found again at each call as Tarantool's CALL finds
//! them (`box_lua_find`: a redefined global is seen at once), without
//! interning the name's pieces per call: each distinct name's pieces are
//! kept as registry refs of their Lua strings (the design's "cached refs
//! on every hot path"), and the walk from the globals is raw (`rawget`: no
//! metamethod runs, so nothing can raise or yield outside the call's
//! fiber). A piece the raw walk does not find (an `__index` may give it),
//! a value on the way that is not a table, or a last value that is not a
//! function leaves the name to the CALL handler, inside the fiber, which
//! runs the metamethods or raises "Procedure 'NAME' is not defined" as
//! before.
//!
//! On LuaJIT with the probed table layout the walk reads the tables in
//! place ([`Tables::push_path`]: a hash lookup per piece with the pieces'
//! interned strings, the function written at the top), with the same
//! outcome as the C API walk, which Lua 5.4 takes.
//!
//! A small direct-mapped table: a name's slot is picked by a hash of its
//! bytes, a miss replaces what the slot held (its refs released). Bounded:
//! at most [`SLOTS`] names of at most [`NAME_MAX`] bytes (a longer name is
//! left to the handler).

use std::ffi::c_int;

use mlua::ffi;

use crate::luajit::obj::GcStr;
use crate::luajit::table::Tables;
use crate::raw::{api, Stack};

/// Names kept at once.
const SLOTS: usize = 64;

/// Longer names are left to the CALL handler.
const NAME_MAX: usize = 256;

/// One name: its bytes, the refs of its pieces' strings and the strings
/// themselves (`lua_topointer`: alive while their refs are), and whether
/// the last piece is a method (`a.b:c`).
struct Entry {
    name: Box<[u8]>,
    pieces: Box<[c_int]>,
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    keys: Box<[*const GcStr]>,
    method: bool,
}

/// The cache (in a serving cord's per-cord state).
#[derive(Default)]
pub(crate) struct CallNames {
    slots: Vec<Option<Entry>>,
    /// The in-place table readers of the cord's state (LuaJIT), taken at
    /// the first name.
    tables: Option<Tables>,
    /// Its entry token (the globals read in place), taken with it.
    entry: Option<crate::luajit::Entry>,
}

/// What [`CallNames::push_function`] pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The function.
    Function,
    /// The function, then the object of a method call (its first
    /// argument).
    Method,
}

impl CallNames {
    /// Pushes the function `name` names (and, for `a.b:c`, the object
    /// `a.b` above it) onto `s`, found by a raw walk from `s`'s globals;
    /// `None` with the stack as it was when the raw walk cannot tell (see
    /// the module doc), or the name cannot be kept.
    pub(crate) fn push_function(&mut self, s: &mut Stack, name: &[u8]) -> Option<Found> {
        if name.is_empty() || name.len() > NAME_MAX || s.ensure(4).is_err() {
            return None;
        }
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
            let layout = crate::luajit::layout();
            self.tables = layout.tables;
            self.entry = layout.entry;
        }
        let i = (hash(name) % SLOTS as u64) as usize;
        if self.slots[i].as_ref().is_none_or(|e| !same(&e.name, name)) {
            let entry = make(s, name)?;
            if let Some(old) = self.slots[i].replace(entry) {
                for r in old.pieces.iter() {
                    s.unref(*r);
                }
            }
        }
        let entry = self.slots[i].as_ref().expect("filled above");
        #[cfg(feature = "luajit")]
        if let Some(t) = &self.tables {
            return t
                .push_path(s, self.entry, &entry.keys, entry.method)
                .then_some(if entry.method {
                    Found::Method
                } else {
                    Found::Function
                });
        }
        walk(s, entry)
    }
}

/// A hash of `b` for its slot: its length and its bytes taken 8 at a time
/// (a few instructions for a usual name, where FNV-1a's byte steps were
/// some 50); a name of 8 to 16 bytes as its first and last 8 (the words
/// [`same`] compares).
fn hash(b: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let n = b.len();
    let mut h = (n as u64).wrapping_mul(K);
    if (8..=16).contains(&n) {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        h = (h ^ word(0)).wrapping_mul(K).rotate_left(29);
        h = (h ^ word(n - 8)).wrapping_mul(K).rotate_left(29);
        return h ^ (h >> 32);
    }
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The last 8 bytes (overlapping the chunks before), or the short
        // name's bytes: no copy of a variable length.
        let w = match b.len().checked_sub(8) {
            Some(at) => u64::from_le_bytes(b[at..].try_into().expect("8 bytes")),
            None => rest
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, &c)| w | u64::from(c) << (8 * i)),
        };
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

/// Whether the names `a` and `b` are the same bytes: a usual name (8 to 16
/// bytes) as two words, others as slices.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if !(8..=16).contains(&n) {
        return a == b;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
}

/// The entry of `name`: its pieces (split at `.` and `:`, a `:` only
/// before the last) made Lua strings and kept by ref; `None` for a name
/// the handler must judge (an empty piece, a piece after a method's).
fn make(s: &mut Stack, name: &[u8]) -> Option<Entry> {
    let mut parts = Vec::new();
    let (mut start, mut after_colon, mut method) = (0, false, false);
    let ends = (0..=name.len()).filter(|&i| i == name.len() || matches!(name[i], b'.' | b':'));
    for end in ends {
        if end == start || method {
            return None;
        }
        method = after_colon;
        after_colon = end < name.len() && name[end] == b':';
        parts.push(&name[start..end]);
        start = end + 1;
    }
    let (pieces, keys): (Vec<c_int>, Vec<*const GcStr>) = parts
        .iter()
        .map(|p| {
            s.push_bytes(p);
            let key = s.to_pointer(-1).cast::<GcStr>();
            (s.make_ref(), key)
        })
        .unzip();
    Some(Entry {
        name: name.into(),
        pieces: pieces.into(),
        keys: keys.into(),
        method,
    })
}

/// The raw walk of `entry`'s pieces from the globals (`s` has room for
/// four values), straight through the C API: one registry read, one raw
/// read and one type check per piece, and a move of what it found down
/// over the table it came from.
fn walk(s: &mut Stack, entry: &Entry) -> Option<Found> {
    let base = s.top();
    let l = s.as_ptr();
    let last = entry.pieces.len() - 1;
    // SAFETY: room for four values (the caller's); raw reads and moves run
    // no Lua code and raise nothing; the handle learns the top again
    // (`sync`) before it is used.
    let found = unsafe {
        ffi::lua_pushglobaltable(l);
        let mut found = None;
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            for (i, &piece) in entry.pieces.iter().enumerate() {
                api::push_registry_ref(l, piece);
                let want = if i == last {
                    ffi::LUA_TFUNCTION
                } else {
                    ffi::LUA_TTABLE
                };
                if api::rawget_type(l, -2) != want {
                    break;
                }
                if i < last {
                    // [t, v] -> [v]
                    ffi::lua_replace(l, -2);
                } else if entry.method {
                    // [obj, fn] -> [fn, obj]
                    ffi::lua_insert(l, -2);
                    found = Some(Found::Method);
                } else {
                    ffi::lua_replace(l, -2);
                    found = Some(Found::Function);
                }
            }
        }
        if found.is_none() {
            ffi::lua_settop(l, base);
        }
        s.sync();
        found
    };
    found
}
