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
//! A small direct-mapped table: a name's slot is picked by a hash of its
//! bytes, a miss replaces what the slot held (its refs released). Bounded:
//! at most [`SLOTS`] names of at most [`NAME_MAX`] bytes (a longer name is
//! left to the handler).

use std::ffi::c_int;

use mlua::ffi;

use crate::raw::Stack;

/// Names kept at once.
const SLOTS: usize = 64;

/// Longer names are left to the CALL handler.
const NAME_MAX: usize = 256;

/// One name: its bytes, the refs of its pieces' strings, and whether the
/// last piece is a method (`a.b:c`).
struct Entry {
    name: Box<[u8]>,
    pieces: Box<[c_int]>,
    method: bool,
}

/// The cache (in a serving cord's per-cord state).
#[derive(Default)]
pub(crate) struct CallNames {
    slots: Vec<Option<Entry>>,
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
        }
        let i = (hash(name) % SLOTS as u64) as usize;
        if self.slots[i].as_ref().is_none_or(|e| &*e.name != name) {
            let entry = make(s, name)?;
            if let Some(old) = self.slots[i].replace(entry) {
                for r in old.pieces.iter() {
                    s.unref(*r);
                }
            }
        }
        let entry = self.slots[i].as_ref().expect("filled above");
        walk(s, entry)
    }
}

/// FNV-1a of `b`.
fn hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
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
    let pieces = parts
        .iter()
        .map(|p| {
            s.push_bytes(p);
            s.make_ref()
        })
        .collect();
    Some(Entry {
        name: name.into(),
        pieces,
        method,
    })
}

/// The raw walk of `entry`'s pieces from the globals (`s` has room for
/// four values).
fn walk(s: &mut Stack, entry: &Entry) -> Option<Found> {
    let base = s.top();
    let give_up = |s: &mut Stack| {
        s.settop(base);
        None
    };
    s.push_globals();
    if s.type_of(-1) != ffi::LUA_TTABLE {
        return give_up(s);
    }
    // One type check per piece (each a C API call): a table to walk on,
    // the function at the end.
    let last = entry.pieces.len() - 1;
    for (i, &piece) in entry.pieces.iter().enumerate() {
        s.push_ref(piece);
        s.rawget(-2);
        let want = if i == last {
            ffi::LUA_TFUNCTION
        } else {
            ffi::LUA_TTABLE
        };
        if s.type_of(-1) != want {
            return give_up(s);
        }
        if i == last && entry.method {
            // [obj, fn] -> [fn, obj]
            s.insert(-2);
            return Some(Found::Method);
        }
        s.remove(-2);
    }
    Some(Found::Function)
}
