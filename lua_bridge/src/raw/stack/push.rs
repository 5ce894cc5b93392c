//! Pushes onto a [`Stack`]: each takes a slot it counted (raw rule 4).

use std::ffi::{c_int, c_void, CStr};

use mlua::ffi;

use super::{invalid, Stack};
use crate::raw::api;

impl Stack<'_> {
    /// Pushes nil.
    #[inline]
    pub fn push_nil(&mut self) {
        self.slot();
        // SAFETY: a free slot (raw rule 4).
        unsafe { ffi::lua_pushnil(self.l) }
    }

    /// Takes a slot and runs the C API push `f` of `a`.
    #[inline(always)]
    fn push_with<A>(&mut self, f: unsafe extern "C-unwind" fn(*mut ffi::lua_State, A), a: A) {
        self.slot();
        // SAFETY: a free slot (raw rule 4); each `f` given here pushes one
        // value made of `a` (`lua_pushboolean`, `lua_pushinteger`,
        // `lua_pushnumber`, `lua_pushlightuserdata`: any `a`;
        // `lua_pushvalue`: an index its caller checked).
        unsafe { f(self.l, a) }
    }

    /// Pushes a boolean.
    #[inline]
    pub fn push_bool(&mut self, b: bool) {
        self.push_with(ffi::lua_pushboolean, c_int::from(b));
    }

    /// Pushes an integer (a number on LuaJIT).
    #[inline]
    pub fn push_int(&mut self, i: i64) {
        self.push_with(ffi::lua_pushinteger, i as ffi::lua_Integer);
    }

    /// Pushes a float.
    #[inline]
    pub fn push_number(&mut self, n: f64) {
        self.push_with(ffi::lua_pushnumber, n);
    }

    /// Pushes a string with these bytes.
    #[inline]
    pub fn push_bytes(&mut self, s: &[u8]) {
        self.slot();
        // SAFETY: a free slot; the allocation does not fail on the limit in
        // a body (raw rule 3).
        unsafe { api::push_bytes(self.l, s) }
    }

    /// Pushes a string.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }

    /// Pushes a C string's bytes.
    #[inline]
    pub fn push_cstr(&mut self, s: &CStr) {
        self.push_bytes(s.to_bytes());
    }

    /// Pushes a light userdata.
    #[inline]
    pub fn push_light(&mut self, p: *mut c_void) {
        self.push_with(ffi::lua_pushlightuserdata, p);
    }

    /// Pushes a C function (no upvalues).
    #[inline]
    pub fn push_cfunction(&mut self, f: ffi::lua_CFunction) {
        self.push_closure(f, 0);
    }

    /// Pushes a C closure over the `n` values on top, which it pops.
    ///
    /// # Panics
    ///
    /// Panics when fewer than `n` values are on the stack.
    pub fn push_closure(&mut self, f: ffi::lua_CFunction, n: c_int) {
        assert!((0..=self.t()).contains(&n), "push_closure: {n} upvalues");
        if n == 0 {
            self.slot();
        } else {
            self.bump(-(n - 1));
            self.room += n - 1;
        }
        // SAFETY: `n` values are on the stack, or a free slot for `n == 0`.
        unsafe { ffi::lua_pushcclosure(self.l, f, n) }
    }

    /// Pushes a copy of the value at `idx` (nil for an index past the top).
    #[inline]
    pub fn push_value(&mut self, idx: c_int) {
        if !self.readable(idx) {
            invalid(idx);
        }
        // An acceptable index (checked before the push moves the top).
        self.push_with(ffi::lua_pushvalue, idx);
    }

    /// Pushes the value a registry ref holds.
    #[inline]
    pub fn push_ref(&mut self, r: c_int) {
        self.slot();
        // SAFETY: a free slot; the registry is a table.
        unsafe { api::push_registry_ref(self.l, r) }
    }

    /// Pushes a new table with room for `narr` array and `nrec` other
    /// entries; returns its index.
    #[inline]
    pub fn new_table(&mut self, narr: c_int, nrec: c_int) -> c_int {
        self.slot();
        // SAFETY: a free slot.
        unsafe { ffi::lua_createtable(self.l, narr.max(0), nrec.max(0)) };
        self.t()
    }

    /// Pushes a new full userdata holding `v`; returns its address, which
    /// stays valid while the userdata lives (raw rule 6). `v` is never
    /// dropped unless a `__gc` metamethod drops it.
    ///
    /// # Panics
    ///
    /// At compile time, when `T` needs an alignment above 8 (what Lua
    /// guarantees its userdata).
    pub fn push_userdata<T>(&mut self, v: T) -> *mut T {
        const { assert!(std::mem::align_of::<T>() <= 8) };
        self.slot();
        // SAFETY: a free slot; the block is `size_of::<T>()` bytes aligned
        // to 8, written once here before anything can read it.
        unsafe {
            let p = ffi::lua_newuserdata(self.l, std::mem::size_of::<T>()).cast::<T>();
            p.write(v);
            p
        }
    }

    /// Pushes a new full userdata holding `v` (as [`Stack::push_userdata`])
    /// whose metatable is the table the registry ref `mt` holds (none for a
    /// ref of nil); returns its address.
    ///
    /// # Panics
    ///
    /// Panics when `mt` holds neither a table nor nil (`v` is not dropped).
    #[inline(always)]
    pub fn push_userdata_with<T>(&mut self, v: T, mt: c_int) -> *mut T {
        let p = self.push_userdata(v);
        self.push_ref(mt);
        self.set_metatable(-2);
        p
    }

    /// Pushes the table of globals.
    pub fn push_globals(&mut self) {
        self.slot();
        // SAFETY: a free slot.
        unsafe { ffi::lua_pushglobaltable(self.l) };
    }

    /// Pushes a new Lua thread of this state; returns it.
    pub fn push_new_thread(&mut self) -> *mut ffi::lua_State {
        self.slot();
        // SAFETY: a free slot; the allocation does not fail on the limit in
        // a body (raw rule 3).
        unsafe { ffi::lua_newthread(self.l) }
    }
}
