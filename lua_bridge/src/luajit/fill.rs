//! Tables filled in place, for the msgpack decoder: a fresh table's
//! metatable, values stored into its array part, and scalars pushed, each a
//! word written where `lua_setmetatable`, `lua_rawseti` and
//! `lua_pushnumber` would write it, without their call and index walk.
//!
//! What makes a write in place right (cited as "fill rule N"):
//!
//! 1. The collector's write barrier (`lj_gc_barriert`) has work only when
//!    the table written is black. A store checks the table's `marked`
//!    bits first and, when it is black, leaves the store to the C API,
//!    which runs the barrier.
//! 2. A table made by `lua_createtable` is white until the collector next
//!    runs, which only an allocation can start: its metatable is set right
//!    after it is made (no barrier due).
//! 3. A store into the array part goes to a slot below `asize` (the array
//!    part `lua_createtable` made), else it is left to the C API.
//! 4. A pushed word is a number (NaN canonical, as `lua_pushnumber` makes
//!    it), a boolean, or a GC object anchored elsewhere (luajit rule 4 for
//!    the stack), into a slot the caller checked with `lua_checkstack`.

use super::entry::Entry;
use super::obj::{gcptr, itype, GcStr, GcTab, State, Word, GC_BLACK, STR};
use super::table::{Tables, Tv};

/// The token of the in-place writers: only the probe's findings make one
/// (luajit rule 1), from its entry and table tokens.
#[derive(Clone, Copy)]
pub(crate) struct Fill {
    bools: [Word; 2],
}

impl Fill {
    /// The writers, when the probe checked both the state's head and the
    /// table layout.
    pub(crate) fn new(entry: Option<Entry>, tables: Option<Tables>) -> Option<Fill> {
        tables?;
        Some(Fill {
            bools: entry?.bools,
        })
    }

    /// The word of the boolean `b`.
    #[inline(always)]
    pub(crate) fn bool_word(self, b: bool) -> Word {
        self.bools[usize::from(b)]
    }

    /// The word on top of `l`'s stack.
    ///
    /// # Safety
    ///
    /// `l` is a live state of the probed layout with a value on its stack.
    #[inline(always)]
    pub(crate) unsafe fn top_word(self, l: *mut mlua::ffi::lua_State) -> Word {
        // SAFETY: caller's contract; `top - 1` is the top value.
        unsafe { *(*l.cast::<State>()).top.sub(1) }
    }

    /// The word of the value on top of `s`, `None` on an empty stack. A
    /// word of a GC object stays valid while something anchors the object.
    pub(crate) fn top_word_of(self, s: &crate::raw::Stack) -> Option<Word> {
        if s.type_of(-1) == mlua::ffi::LUA_TNONE {
            return None;
        }
        // SAFETY: a live state (the handle's) of the probed layout (a
        // `Fill` is made only when the probe checked it, luajit rule 1),
        // with a value on its stack.
        Some(unsafe { self.top_word(s.as_ptr()) })
    }

    /// The table on top of `l`'s stack.
    ///
    /// # Safety
    ///
    /// As [`Fill::top_word`], the top value being a table.
    #[inline(always)]
    pub(crate) unsafe fn top_table(self, l: *mut mlua::ffi::lua_State) -> *mut GcTab {
        // SAFETY: caller's contract.
        gcptr::<GcTab>(unsafe { self.top_word(l) }).cast_mut()
    }

    /// Pushes `w` (fill rule 4).
    ///
    /// # Safety
    ///
    /// `l` is a live state of the probed layout with a free checked slot;
    /// `w` is a word of fill rule 4.
    #[inline(always)]
    pub(crate) unsafe fn push_word(self, l: *mut mlua::ffi::lua_State, w: Word) {
        // SAFETY: caller's contract.
        unsafe {
            let st = &mut *l.cast::<State>();
            *st.top = w;
            st.top = st.top.add(1);
        }
    }

    /// The bytes of the string that is the only value on `s` (the only
    /// argument of the running C function: `lua_gettop == 1 &&
    /// lua_type(1) == LUA_TSTRING`, read in place), else `None`.
    #[inline(always)]
    pub(crate) fn only_arg_str<'s>(self, s: &'s crate::raw::Stack) -> Option<&'s [u8]> {
        // SAFETY: a live state (the handle's) of the probed layout (luajit
        // rule 1), whose `base..top` are the values of its frame; a
        // string's `len` bytes follow its head, and live while it stays on
        // the stack, which `s`'s borrow keeps (popping takes `&mut`: raw
        // rule 6).
        unsafe {
            let st = &*s.as_ptr().cast::<State>();
            if st.top.cast_const() != st.base.add(1) || itype(*st.base) != STR {
                return None;
            }
            let s = gcptr::<GcStr>(*st.base);
            Some(std::slice::from_raw_parts(
                s.add(1).cast::<u8>(),
                (*s).len as usize,
            ))
        }
    }

    /// The value at `idx` of `s` (an index from 1 to the top), read in place
    /// (no `lua_type`, no `lua_topointer`): `None` for an index outside the
    /// stack's values.
    #[inline(always)]
    pub(crate) fn value_at<'s>(
        self,
        s: &'s crate::raw::Stack,
        idx: std::ffi::c_int,
    ) -> Option<Tv<'s>> {
        let i = usize::try_from(idx).ok()?.checked_sub(1)?;
        // SAFETY: a live state (the handle's) of the probed layout (luajit
        // rule 1), whose `base..top` are its values (what `index2adr` reads
        // for a positive index); a GC value lives while it stays on the
        // stack, which `s`'s borrow keeps (raw rule 6).
        unsafe {
            let st = &*s.as_ptr().cast::<State>();
            if i >= st.top.cast_const().offset_from(st.base) as usize {
                return None;
            }
            Some(Tv::of(*st.base.add(i)))
        }
    }

    /// Sets the metatable of the fresh table `t` (fill rule 2).
    ///
    /// # Safety
    ///
    /// `t` was made by `lua_createtable` and nothing allocated since; `mt`
    /// is a live table anchored for the state's life.
    #[inline(always)]
    pub(crate) unsafe fn set_fresh_metatable(self, t: *mut GcTab, mt: *const GcTab) {
        // SAFETY: caller's contract; the field of the checked layout.
        unsafe { (*t).metatable = mt };
    }

    /// Stores `w` at key `i` of `t`'s array part; false (nothing done) when
    /// the C API must do it (fill rules 1 and 3).
    ///
    /// # Safety
    ///
    /// `t` is a live table (on the stack); `w` is a live value's word.
    #[inline(always)]
    pub(crate) unsafe fn store(self, t: *mut GcTab, i: u32, w: Word) -> bool {
        // SAFETY: caller's contract; the fields of the checked layout, and
        // a slot below `asize`.
        unsafe {
            if i >= (*t).asize || (*t).marked & GC_BLACK != 0 {
                return false;
            }
            *(*t).array.cast_mut().add(i as usize) = w;
        }
        true
    }

    /// Moves the top value of `l` into key `i` of `t`'s array part (the
    /// table below it); false (nothing done) as for [`Fill::store`].
    ///
    /// # Safety
    ///
    /// As [`Fill::top_word`] and [`Fill::store`].
    #[inline(always)]
    pub(crate) unsafe fn pop_into(
        self,
        l: *mut mlua::ffi::lua_State,
        t: *mut GcTab,
        i: u32,
    ) -> bool {
        // SAFETY: caller's contract.
        unsafe {
            if !self.store(t, i, self.top_word(l)) {
                return false;
            }
            let st = &mut *l.cast::<State>();
            st.top = st.top.sub(1);
        }
        true
    }
}
