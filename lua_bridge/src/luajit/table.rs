//! Tables read in place: a table is its array part and its node array, a
//! value its tagged word, with no C API call per key or value.
//!
//! A [`Table`] borrows the [`Stack`] its root table is on (luajit rule 3):
//! while it lives nothing can pop the root, run Lua code or allocate a Lua
//! object (each of those takes the stack `&mut`), so no collection can
//! start and no table reachable from the root can change. Every value read
//! from it ([`Tv`]) carries the same lifetime.

use std::ffi::c_int;
use std::marker::PhantomData;

use mlua::ffi;

use super::obj::{
    gcptr, itype, GcCdata, GcStr, GcTab, Node, Word, CDATA, ISNUM, NIL_WORD, STR, TAB,
};
#[cfg(feature = "luajit")]
use super::obj::{State, FUNC};
use crate::raw::Stack;

#[cfg(feature = "luajit")]
extern "C" {
    /// The value of string key `key` in `t`, or null (`lj_tab.c`, in the
    /// vendored static library): a raw lookup that allocates nothing.
    fn lj_tab_getstr(t: *const GcTab, key: *const GcStr) -> *const Word;
}

/// What the probe learnt of tables: the token the in-place table readers
/// need. Only the probe makes one (luajit rule 1).
#[derive(Clone, Copy)]
pub(crate) struct Tables {
    /// The word of a light userdata NULL (`msgpack.NULL` on Lua 5.4 terms).
    pub(super) null: Word,
    /// The interned string `"__serialize"`, anchored by a registry ref the
    /// probe keeps for the state's life.
    pub(super) serialize: *const GcStr,
}

/// A tagged value read from a live table (see the module doc).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Tv<'a>(Word, PhantomData<&'a GcTab>);

/// A slot of a table's hash part.
#[repr(transparent)]
pub(crate) struct Slot<'a>(Node, PhantomData<&'a GcTab>);

/// A live table, read in place (see the module doc).
#[derive(Clone, Copy)]
pub(crate) struct Table<'a> {
    t: &'a GcTab,
    tables: &'a Tables,
}

impl Tables {
    /// The table at `idx` of `s`, read in place while `s` is borrowed; `None`
    /// when the value is not a table.
    #[inline]
    pub(crate) fn root<'a>(&'a self, s: &'a Stack, idx: c_int) -> Option<Table<'a>> {
        if s.type_of(idx) != ffi::LUA_TTABLE {
            return None;
        }
        let t = s.to_pointer(idx).cast::<GcTab>();
        // SAFETY: a table's `lua_topointer` is its `GCtab`, of the layout the
        // probe checked (luajit rule 1); it lives while `s` is borrowed.
        let t = unsafe { &*t };
        Some(Table { t, tables: self })
    }

    /// The table `v` (a stack slot's value, read with
    /// [`Fill::value_at`](super::fill::Fill::value_at)), `None` for another
    /// type.
    #[inline(always)]
    pub(crate) fn table_of<'a>(&'a self, v: Tv<'a>) -> Option<Table<'a>> {
        (itype(v.0) == TAB).then(|| Table {
            // SAFETY: a live table (`Tv`'s borrow keeps it) of the layout
            // the probe checked (luajit rule 1).
            t: unsafe { &*gcptr::<GcTab>(v.0) },
            tables: self,
        })
    }

    /// Pushes the function at the end of the raw path `keys` from the
    /// globals of `s`'s thread (`a.b.c`: each key but the last gives a
    /// table, the last a function), and for a `method` the table it was
    /// found in above it (`a.b:c`: the function, then `a.b`): `true`.
    /// `false`, nothing pushed, when a key is missing or gives a value of
    /// another type (no metamethod is asked: a raw walk). The keys are
    /// interned strings (`lua_topointer` of each) that the caller keeps
    /// alive; at least one. `entry`: the state's entry token, if the probe
    /// made one (the globals are then read in place).
    ///
    /// A lookup per key in the tables' hash parts (`lj_tab_getstr`, where
    /// string keys always are) and the values written at the top in place:
    /// no C API call per key and no move of what was found (luajit rule
    /// 4's second case).
    #[cfg(feature = "luajit")]
    pub(crate) fn push_path(
        &self,
        s: &mut Stack,
        entry: Option<super::Entry>,
        keys: &[*const GcStr],
        method: bool,
    ) -> bool {
        let Some((&last, path)) = keys.split_last() else {
            return false;
        };
        if method && path.is_empty() {
            return false;
        }
        if s.room() < 2 && s.ensure(2).is_err() {
            return false;
        }
        let l = s.as_ptr();
        // SAFETY: reads of live tables (the globals, then each table found
        // in the one before) with interned strings the caller keeps alive;
        // nothing here allocates or runs Lua code, so nothing changes or
        // goes between the reads and the writes (luajit rule 3). On
        // LuaJIT a thread's globals are always a table (its `env`, read in
        // place with the entry token, else `lua_topointer`'s `GCtab`);
        // every value word is read as
        // `lj_obj.h` lays it out (luajit rule 1, the probe's token).
        unsafe {
            let mut t = match entry {
                Some(e) => e.globals(l),
                None => ffi::lua_topointer(l, ffi::LUA_GLOBALSINDEX).cast::<GcTab>(),
            };
            let mut obj = NIL_WORD;
            for &key in path {
                let v = lj_tab_getstr(t, key);
                if v.is_null() || itype(*v) != TAB {
                    return false;
                }
                obj = *v;
                t = gcptr::<GcTab>(obj);
            }
            let f = lj_tab_getstr(t, last);
            if f.is_null() || itype(*f) != FUNC {
                return false;
            }
            // Two free slots at `top` (counted above); the handle is told
            // of the pushes at once. A function and a table read from
            // live tables just now (luajit rule 4).
            let st = &mut *l.cast::<State>();
            *st.top = *f;
            st.top = st.top.add(1);
            s.assume_pushed(1);
            if method {
                *st.top = obj;
                st.top = st.top.add(1);
                s.assume_pushed(1);
            }
        }
        true
    }

    /// Whether `v` is a light userdata NULL.
    #[inline(always)]
    pub(crate) fn is_null(&self, v: Tv<'_>) -> bool {
        v.0 == self.null
    }
}

impl<'a> Tv<'a> {
    /// The value of the word `w`.
    ///
    /// # Safety
    ///
    /// `w` is a live value's word (a GC object's stays alive for `'a`).
    #[inline(always)]
    pub(crate) unsafe fn of(w: Word) -> Tv<'a> {
        Tv(w, PhantomData)
    }

    /// The word, as `lj_obj.h` has it.
    #[inline(always)]
    pub(crate) fn word(self) -> Word {
        self.0
    }

    /// Its tag (`itype`).
    #[inline(always)]
    pub(crate) fn tag(self) -> u32 {
        itype(self.0)
    }

    /// Whether it is nil (an empty slot).
    #[inline(always)]
    pub(crate) fn is_nil(self) -> bool {
        self.0 == NIL_WORD
    }

    /// The number it holds.
    #[inline(always)]
    pub(crate) fn number(self) -> Option<f64> {
        (itype(self.0) <= ISNUM).then(|| f64::from_bits(self.0))
    }

    /// The bytes of the string it holds.
    #[inline(always)]
    pub(crate) fn str(self) -> Option<&'a [u8]> {
        if itype(self.0) != STR {
            return None;
        }
        let s = gcptr::<GcStr>(self.0);
        // SAFETY: a live string (the module doc) of the checked layout: its
        // `len` bytes follow the head.
        Some(unsafe { std::slice::from_raw_parts(s.add(1).cast::<u8>(), (*s).len as usize) })
    }

    /// The payload of the cdata it holds (it follows the `GCcdata` head).
    #[inline(always)]
    pub(crate) fn cdata(self) -> Option<*const u8> {
        (itype(self.0) == CDATA).then(|| gcptr::<GcCdata>(self.0).wrapping_add(1).cast::<u8>())
    }
}

impl<'a> Slot<'a> {
    /// Its key.
    #[inline(always)]
    pub(crate) fn key(&self) -> Tv<'a> {
        Tv(self.0.key, PhantomData)
    }

    /// Its value (nil for a free slot).
    #[inline(always)]
    pub(crate) fn val(&self) -> Tv<'a> {
        Tv(self.0.val, PhantomData)
    }
}

impl<'a> Table<'a> {
    /// The table `v` holds, if it holds one.
    #[inline(always)]
    pub(crate) fn child(&self, v: Tv<'a>) -> Option<Table<'a>> {
        (itype(v.0) == TAB).then(|| Table {
            // SAFETY: a live table (the module doc) of the checked layout.
            t: unsafe { &*gcptr::<GcTab>(v.0) },
            tables: self.tables,
        })
    }

    /// The array part: the values of keys `0..asize`.
    #[inline(always)]
    pub(crate) fn array(&self) -> &'a [Tv<'a>] {
        if self.t.asize == 0 {
            return &[];
        }
        // SAFETY: LuaJIT keeps `asize` values at `array` (luajit rule 1);
        // `Tv` is a transparent word.
        unsafe { std::slice::from_raw_parts(self.t.array.cast(), self.t.asize as usize) }
    }

    /// The hash part (a table without one points at a shared dummy node).
    #[inline(always)]
    pub(crate) fn slots(&self) -> &'a [Slot<'a>] {
        // SAFETY: LuaJIT keeps `hmask + 1` nodes at `node`; `Slot` is a
        // transparent node.
        unsafe { std::slice::from_raw_parts(self.t.node.cast(), self.t.hmask as usize + 1) }
    }

    /// The size of the array part and the hash mask (the table's room).
    #[inline(always)]
    pub(crate) fn sizes(&self) -> (u32, u32) {
        (self.t.asize, self.t.hmask)
    }

    /// Its metatable.
    #[inline(always)]
    pub(crate) fn metatable(&self) -> Option<Table<'a>> {
        let mt = self.t.metatable;
        if mt.is_null() {
            return None;
        }
        // SAFETY: a live table's metatable is a live table or null.
        let t = unsafe { &*mt };
        Some(Table {
            t,
            tables: self.tables,
        })
    }

    /// `t.__serialize`, raw (nil when absent).
    #[inline]
    pub(crate) fn serialize_field(&self) -> Tv<'a> {
        #[cfg(feature = "luajit")]
        {
            // SAFETY: a raw lookup in a live table, with the interned string
            // the probe anchored; it allocates nothing.
            let v = unsafe { lj_tab_getstr(self.t, self.tables.serialize) };
            if v.is_null() {
                return Tv(NIL_WORD, PhantomData);
            }
            // SAFETY: a value slot of the live table.
            Tv(unsafe { *v }, PhantomData)
        }
        #[cfg(not(feature = "luajit"))]
        Tv(NIL_WORD, PhantomData)
    }

    /// Whether `other` is the same table.
    #[inline(always)]
    pub(crate) fn same(&self, other: &Table<'_>) -> bool {
        std::ptr::eq(self.t, other.t)
    }

    /// The token this table was read with.
    #[inline(always)]
    pub(crate) fn tables(&self) -> &'a Tables {
        self.tables
    }
}
