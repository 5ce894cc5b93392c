//! The LuaJIT fast path of the encoder: tables read through LuaJIT's own
//! object layout instead of the C API.
//!
//! Through the C API an encode is mostly calls: `lua_next` finds the key it
//! was given again before it moves on (a hash lookup per key), and every key
//! and value is pushed, typed, read and popped. Here a table is its array
//! part and its node array, read in place in the order `lua_next` gives
//! (array slots `0..asize`, then nodes `0..=hmask`), and a value is its
//! 64-bit tagged word (`TValue` in LuaJIT's GC64 mode, the only mode of the
//! vendored x86-64 and arm64 builds).
//!
//! Rules the code keeps:
//!
//! 1. Nothing here runs Lua code or allocates a Lua object, so no
//!    collection can start and no table can change during the walk: every
//!    table read is reachable from the value on the stack and stays as it is.
//! 2. The walk either writes the whole value or gives up ([`Bail`]) without
//!    having done anything but append bytes; the caller then drops those
//!    bytes and encodes through the C API, which handles everything (a
//!    `__serialize` function, userdata, cdata other than scalars, `tostring`,
//!    every error and its message). So the output is the C API path's, byte
//!    for byte.
//! 3. The layout is not taken on trust: [`probe`] builds a table of known
//!    contents through the C API and reads it back through this layout when
//!    the module opens; on any mismatch the fast path stays off.
//!
//! One function of LuaJIT's own table code is called directly (it is in the
//! vendored static library): `lj_tab_getstr`, a raw string-keyed lookup.

use std::ffi::c_int;

use mlua::ffi;
use rmp::encode as mp;

use super::{Encoder, MAX_NESTING};
use crate::luajit::obj::{
    gcptr, itype, CDATA, FALSE, GC_MASK, ISNUM, LIGHTUD, NIL, STR, TAB, TRUE,
};
use crate::modules::serializer::{self, Hint, Shape};

/// `GCstr` (`lj_obj.h`); the bytes follow it.
#[repr(C)]
#[allow(dead_code)] // Every field, for the offsets of those read.
struct GcStr {
    nextgc: u64,
    marked: u8,
    gct: u8,
    reserved: u8,
    hashalg: u8,
    sid: u32,
    hash: u32,
    len: u32,
}

/// `GCtab` (`lj_obj.h`, GC64).
#[repr(C)]
#[allow(dead_code)] // Every field, for the offsets of those read.
struct GcTab {
    nextgc: u64,
    marked: u8,
    gct: u8,
    nomm: u8,
    colo: i8,
    /// `TValue[asize]`: the values of keys `0..asize`.
    array: *const u64,
    gclist: u64,
    metatable: *const GcTab,
    /// `Node[hmask + 1]`.
    node: *const Node,
    asize: u32,
    hmask: u32,
    freetop: u64,
}

/// `Node` (`lj_obj.h`, GC64).
#[repr(C)]
#[allow(dead_code)] // Every field, for the offsets of those read.
struct Node {
    val: u64,
    key: u64,
    next: u64,
}

extern "C" {
    /// The value of string key `key` in `t`, or null (`lj_tab.c`).
    fn lj_tab_getstr(t: *const GcTab, key: *const GcStr) -> *const u64;
}

/// What the fast path needs to know of the state, found by [`probe`].
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    /// The word of `msgpack.NULL` (a light userdata NULL).
    null: u64,
    /// The interned string `"__serialize"`, anchored by the module's
    /// registry ref of it.
    serialize: *const GcStr,
}

/// The encoder gave up on the fast path (rule 2).
pub(super) struct Bail;

impl From<super::Fail> for Bail {
    #[inline(always)]
    fn from(_: super::Fail) -> Bail {
        Bail
    }
}

type Walk<T = ()> = Result<T, Bail>;

/// Checks the layout against a table made through the C API (rule 3):
/// `{[1] = 1.5, [2] = "__serialize", [3] = NULL, __serialize = true}`, its
/// own metatable. Returns `None` when anything reads back wrong.
///
/// # Safety
///
/// `l` is a valid state with room for 4 values; `serialize_ref` is a
/// registry ref of the string `"__serialize"`, kept for the state's life.
pub(crate) unsafe fn probe(l: *mut ffi::lua_State, serialize_ref: c_int) -> Option<Layout> {
    // SAFETY: caller's contract; every push is popped; the reads below stay
    // within the objects the C API reports.
    unsafe {
        let top = ffi::lua_gettop(l);
        ffi::lua_createtable(l, 3, 1);
        ffi::lua_pushnumber(l, 1.5);
        ffi::lua_rawseti(l, -2, 1);
        crate::raw::api::push_registry_ref(l, serialize_ref);
        let key = ffi::lua_topointer(l, -1).cast::<GcStr>();
        let mut len = 0;
        let bytes = ffi::lua_tolstring(l, -1, &mut len);
        ffi::lua_rawseti(l, -2, 2);
        ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
        ffi::lua_rawseti(l, -2, 3);
        crate::raw::api::push_registry_ref(l, serialize_ref);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rawset(l, -3);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setmetatable(l, -2);
        let t = ffi::lua_topointer(l, -1).cast::<GcTab>();
        let layout = check(t, key, bytes.cast(), len);
        ffi::lua_settop(l, top);
        layout
    }
}

/// [`probe`]'s reads.
unsafe fn check(
    t: *const GcTab,
    key: *const GcStr,
    bytes: *const u8,
    len: usize,
) -> Option<Layout> {
    // SAFETY: `t` is the probe table and `key` its string (caller); each
    // read is checked before the next one relies on it.
    unsafe {
        let key_ok =
            !key.is_null() && (*key).len == 11 && key.add(1).cast::<u8>() == bytes && len == 11;
        let tab = &*t;
        if !key_ok || tab.metatable != t || tab.asize != 4 || tab.array.is_null() {
            return None;
        }
        let a = std::slice::from_raw_parts(tab.array, 4);
        let str_word = (u64::from(STR) << 47) | key as u64;
        if a[0] != u64::MAX
            || a[1] != 1.5f64.to_bits()
            || a[2] != str_word
            || itype(a[3]) != LIGHTUD
        {
            return None;
        }
        let nodes = std::slice::from_raw_parts(tab.node, tab.hmask as usize + 1);
        let in_node = nodes
            .iter()
            .any(|n| n.key == str_word && itype(n.val) == TRUE);
        let got = lj_tab_getstr(t, key);
        if !in_node || got.is_null() || itype(*got) != TRUE {
            return None;
        }
        Some(Layout {
            null: a[3],
            serialize: key,
        })
    }
}

/// Whether a cdata's payload is 16 bytes past the object its tagged word
/// points at (`GCcdata` then the payload), checked on `msgpack.NULL`:
/// `null_ref` is a registry ref of a cdata.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values.
pub(crate) unsafe fn cdata_ok(l: *mut ffi::lua_State, null_ref: c_int) -> bool {
    // SAFETY: caller's contract; the table keeps the cdata alive while its
    // word is read; reads within the table's array part.
    unsafe {
        ffi::lua_createtable(l, 1, 0);
        crate::raw::api::push_registry_ref(l, null_ref);
        let payload = ffi::lua_topointer(l, -1) as u64;
        ffi::lua_rawseti(l, -2, 1);
        let tab = &*ffi::lua_topointer(l, -1).cast::<GcTab>();
        let ok = tab.asize >= 2 && {
            let v = *tab.array.add(1);
            itype(v) == CDATA && (v & GC_MASK) + 16 == payload
        };
        ffi::lua_settop(l, -2);
        ok
    }
}

impl Encoder<'_> {
    /// Encodes the table at stack index `idx` through the fast path; on
    /// [`Bail`] the bytes it wrote are dropped and `false` returned (rule 2).
    ///
    /// # Safety
    ///
    /// `idx` holds a table; the caller runs no Lua code in between.
    pub(super) unsafe fn raw_root(&mut self, layout: &Layout, idx: c_int) -> bool {
        let start = self.out.used();
        // SAFETY: a table's `lua_topointer` is its `GCtab` (checked by
        // `probe`); rule 1.
        let r = unsafe {
            let t = ffi::lua_topointer(self.l, idx).cast::<GcTab>();
            self.raw_table(layout, t, 0)
        };
        if r.is_err() {
            self.out.truncate(start);
            return false;
        }
        true
    }

    /// The value of word `v`.
    #[inline(always)]
    unsafe fn raw_value(&mut self, layout: &Layout, v: u64, level: u32) -> Walk {
        let it = itype(v);
        if it <= ISNUM {
            return Ok(self.float(f64::from_bits(v))?);
        }
        // SAFETY: `v` is a live value of a table being walked (rule 1).
        unsafe {
            if it == STR {
                let s = gcptr::<GcStr>(v);
                let bytes = std::slice::from_raw_parts(s.add(1).cast::<u8>(), (*s).len as usize);
                return Ok(self.str(bytes)?);
            }
            self.raw_other(layout, v, level)
        }
    }

    /// [`Encoder::raw_value`] of what is not a number or string.
    #[inline(never)]
    unsafe fn raw_other(&mut self, layout: &Layout, v: u64, level: u32) -> Walk {
        match itype(v) {
            // SAFETY: a live table (rule 1).
            TAB => unsafe { self.raw_table(layout, gcptr(v), level) },
            NIL => Ok(self.head(|w| mp::write_nil(w))?),
            FALSE => Ok(self.head(|w| mp::write_bool(w, false))?),
            TRUE => Ok(self.head(|w| mp::write_bool(w, true))?),
            _ if v == layout.null => Ok(self.head(|w| mp::write_nil(w))?),
            CDATA => {
                // SAFETY: a live cdata; its payload follows its 16-byte
                // header (checked by `cdata_ok`).
                let payload = unsafe { gcptr::<u8>(v).add(16) };
                // SAFETY: as above.
                match self.st.ctypes.and_then(|ct| unsafe { ct.read(payload) }) {
                    Some(s) => Ok(self.scalar(s)?),
                    None => Err(Bail),
                }
            }
            _ => Err(Bail),
        }
    }

    /// A table: its `__serialize` hint, else Tarantool's array-or-map rule
    /// (as [`Encoder::table`]).
    unsafe fn raw_table(&mut self, layout: &Layout, t: *const GcTab, level: u32) -> Walk {
        // SAFETY: `t` is a live table (rule 1).
        unsafe {
            let tab = &*t;
            let mut hint = None;
            if !tab.metatable.is_null() && self.cfg.encode_load_metatables {
                let v = lj_tab_getstr(tab.metatable, layout.serialize);
                if !v.is_null() && *v != u64::MAX {
                    if itype(*v) != STR {
                        return Err(Bail);
                    }
                    let s = gcptr::<GcStr>(*v);
                    let len = (*s).len as usize;
                    hint = match serializer::hint(std::slice::from_raw_parts(s.add(1).cast(), len))
                    {
                        Some(Hint::Array) => Some(Shape::Array(max_key(tab))),
                        Some(Hint::Map) => Some(Shape::Map),
                        None => return Err(Bail),
                    };
                }
            }
            if level >= self.cfg.encode_max_depth.min(MAX_NESTING) || !super::stack_ok() {
                return Err(Bail);
            }
            let shape = match hint {
                Some(shape) => shape,
                None => self.raw_inspect(tab)?,
            };
            match shape {
                Shape::Array(n) => {
                    let n = u32::try_from(n).map_err(|_| Bail)?;
                    self.head(|w| mp::write_array_len(w, n).map(drop))?;
                    self.raw_elements(layout, tab, n, level)
                }
                Shape::Map if (tab.asize as usize + tab.hmask as usize) < 15 => {
                    let start = self.begin_container()?;
                    let n = self.raw_entries(layout, tab, level)?;
                    Ok(self.end_container(start, n, true)?)
                }
                Shape::Map => {
                    // Room for more than 15 pairs: the header is written
                    // for the count, not moved into place after the pairs
                    // (which costs depth x size in a deep nest).
                    let n = count(tab);
                    self.head(|w| mp::write_map_len(w, n).map(drop))?;
                    let written = self.raw_entries(layout, tab, level)?;
                    debug_assert_eq!(written, n);
                    Ok(())
                }
            }
        }
    }

    /// Tarantool's default rule, as [`Encoder::inspect`]: an array when
    /// every key is a positive integer and the array is not excessively
    /// sparse; its length is the largest key.
    fn raw_inspect(&mut self, tab: &GcTab) -> Walk<Shape> {
        let (mut size, mut max) = (0f64, 0f64);
        // SAFETY: the parts of a live table (rule 1).
        let (array, nodes) = unsafe { parts(tab) };
        for (i, &v) in array.iter().enumerate() {
            if v != u64::MAX {
                if i == 0 {
                    return Ok(Shape::Map);
                }
                size += 1.0;
                max = i as f64;
            }
        }
        for n in nodes {
            if n.val == u64::MAX {
                continue;
            }
            if itype(n.key) > ISNUM {
                return Ok(Shape::Map);
            }
            let k = f64::from_bits(n.key);
            if !(k >= 1.0 && k.floor() == k) {
                return Ok(Shape::Map);
            }
            size += 1.0;
            max = max.max(k);
        }
        serializer::sparse_rule(size, max, &self.cfg).map_err(|_| Bail)
    }

    /// Elements `1..=n`: array slots, then keys in the hash part (Bail: the
    /// C API path reads those).
    unsafe fn raw_elements(&mut self, layout: &Layout, tab: &GcTab, n: u32, level: u32) -> Walk {
        // SAFETY: the parts of a live table (rule 1).
        let (array, _) = unsafe { parts(tab) };
        if n == 0 {
            return Ok(());
        }
        let Some(elements) = array.get(1..=n as usize) else {
            return Err(Bail);
        };
        for &v in elements {
            // SAFETY: a live value (rule 1).
            unsafe { self.raw_value(layout, v, level + 1)? };
        }
        Ok(())
    }

    /// Every key and value, in `lua_next` order; returns how many.
    unsafe fn raw_entries(&mut self, layout: &Layout, tab: &GcTab, level: u32) -> Walk<u32> {
        let mut count: u32 = 0;
        // SAFETY: the parts of a live table and their values (rule 1).
        unsafe {
            let (array, nodes) = parts(tab);
            for (i, &v) in array.iter().enumerate() {
                if v != u64::MAX {
                    count = count.checked_add(1).ok_or(Bail)?;
                    self.int(i as i64)?;
                    self.raw_value(layout, v, level + 1)?;
                }
            }
            for n in nodes {
                if n.val != u64::MAX {
                    count = count.checked_add(1).ok_or(Bail)?;
                    self.raw_value(layout, n.key, level + 1)?;
                    self.raw_value(layout, n.val, level + 1)?;
                }
            }
        }
        Ok(count)
    }
}

/// The keys of a table with a value.
fn count(tab: &GcTab) -> u32 {
    // SAFETY: the parts of a live table (rule 1).
    let (array, nodes) = unsafe { parts(tab) };
    let live = array.iter().filter(|&&v| v != u64::MAX).count()
        + nodes.iter().filter(|n| n.val != u64::MAX).count();
    // A table holds fewer than 2^32 keys (LuaJIT's sizes are 32-bit).
    live as u32
}

/// The largest positive integer key, 0 if none (as
/// [`Encoder::max_key`]).
fn max_key(tab: &GcTab) -> u64 {
    // SAFETY: the parts of a live table (rule 1).
    let (array, nodes) = unsafe { parts(tab) };
    let mut max = array.iter().rposition(|&v| v != u64::MAX).unwrap_or(0) as f64;
    for n in nodes {
        if n.val != u64::MAX && itype(n.key) <= ISNUM {
            let k = f64::from_bits(n.key);
            if k > max && k.floor() == k {
                max = k;
            }
        }
    }
    max as u64
}

/// The array part and the node array of a table.
///
/// # Safety
///
/// `tab` is a live table that does not change while the slices live.
#[inline(always)]
unsafe fn parts(tab: &GcTab) -> (&[u64], &[Node]) {
    // SAFETY: caller's contract; LuaJIT keeps `asize` words at `array` and
    // `hmask + 1` nodes at `node` (a table without a hash part points at a
    // shared one-node dummy).
    unsafe {
        let array = if tab.asize == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(tab.array, tab.asize as usize)
        };
        (
            array,
            std::slice::from_raw_parts(tab.node, tab.hmask as usize + 1),
        )
    }
}
