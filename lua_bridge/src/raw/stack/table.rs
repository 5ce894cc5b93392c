//! Raw table accesses on a [`Stack`]: each checks that it is given a
//! table, and none runs a metamethod (raw rule 2).

use std::ffi::{c_int, CStr};

use mlua::ffi;

use super::{not_a_table, Stack};
use crate::raw::{api, LResult, Raise};

impl Stack<'_> {
    /// Whether the value at `idx` is a table.
    #[inline(always)]
    fn is_table(&self, idx: c_int) -> bool {
        idx == ffi::LUA_REGISTRYINDEX || self.type_of(idx) == ffi::LUA_TTABLE
    }

    /// Checks that `t` is a table; panics otherwise (a bug of the caller).
    #[inline(always)]
    fn table(&self, t: c_int) {
        if !self.is_table(t) {
            not_a_table(t);
        }
    }

    /// Pops a key and pushes `t[key]`, raw (raw rule 2).
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or the stack is empty.
    #[inline]
    pub fn rawget(&mut self, t: c_int) {
        self.table(t);
        assert!(self.has(1), "rawget: no key");
        // SAFETY: a table at `t` and a key on top; replaces the key.
        unsafe { api::rawget(self.l, t) }
    }

    /// Pushes `t[n]`, raw; returns its type.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table.
    #[inline]
    pub fn rawgeti(&mut self, t: c_int, n: c_int) -> c_int {
        self.table(t);
        // SAFETY: a table at `t` (checked).
        unsafe { self.rawgeti_unchecked(t, n) }
    }

    /// [`Stack::rawgeti`] without checking that `t` is a table (a hot loop
    /// over an array checked once).
    ///
    /// # Safety
    ///
    /// `t` holds a table.
    #[inline(always)]
    pub unsafe fn rawgeti_unchecked(&mut self, t: c_int, n: c_int) -> c_int {
        debug_assert!(self.is_table(t));
        self.slot();
        // SAFETY: a table at `t` (contract), a free slot.
        unsafe { api::rawgeti_type(self.l, t, n) }
    }

    /// Pushes `t[name]`, raw; returns its type.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table.
    pub fn rawget_field(&mut self, t: c_int, name: &CStr) -> c_int {
        let t = self.abs(t);
        self.push_cstr(name);
        self.rawget(t);
        self.type_of(-1)
    }

    /// Pops a value and a key below it and sets `t[key] = value`, raw.
    ///
    /// # Errors
    ///
    /// "table index is nil" or "... is NaN" (`IllegalParams`), with both
    /// popped.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or fewer than two values are on the
    /// stack.
    pub fn rawset(&mut self, t: c_int) -> LResult<()> {
        self.table(t);
        assert!(self.has(2), "rawset: no key and value");
        let bad = match self.type_of(-2) {
            ffi::LUA_TNIL => Some("table index is nil"),
            ffi::LUA_TNUMBER if self.to_number(-2).is_some_and(f64::is_nan) => {
                Some("table index is NaN")
            }
            _ => None,
        };
        if let Some(bad) = bad {
            self.pop(2);
            return Err(Raise::illegal(bad));
        }
        self.bump(-2);
        self.room += 2;
        // SAFETY: a table at `t`, a key that is neither nil nor NaN (so
        // the raw set cannot raise) and a value on top.
        unsafe { ffi::lua_rawset(self.l, t) };
        Ok(())
    }

    /// Pops a value and sets `t[n] = value`, raw.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or the stack is empty.
    #[inline]
    pub fn rawseti(&mut self, t: c_int, n: i64) {
        self.table(t);
        assert!(self.has(1), "rawseti: no value");
        self.bump(-1);
        self.room += 1;
        // SAFETY: a table at `t` and a value on top.
        unsafe { ffi::lua_rawseti(self.l, t, n as ffi::lua_Integer) }
    }

    /// Pops a value and sets `t[name] = value`, raw.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or the stack is empty.
    pub fn set_field(&mut self, t: c_int, name: &CStr) {
        let t = self.abs(t);
        assert!(self.has(1), "set_field: no value");
        self.push_cstr(name);
        self.insert(-2);
        // A string key is neither nil nor NaN.
        let _ = self.rawset(t);
    }

    /// Pops a table (or nil) and makes it the metatable of the value at
    /// `idx`.
    ///
    /// # Panics
    ///
    /// Panics when the top is not a table or nil, or `idx` is invalid.
    #[inline(always)]
    pub fn set_metatable(&mut self, idx: c_int) {
        // A relative index the handle knows of stays relative: the
        // metatable on top is popped after `idx` is resolved.
        let idx = if idx < -1 && idx > ffi::LUA_REGISTRYINDEX && self.has(-idx) {
            idx
        } else {
            self.abs(idx)
        };
        assert!(
            matches!(self.type_of(-1), ffi::LUA_TTABLE | ffi::LUA_TNIL),
            "set_metatable: not a table"
        );
        self.bump(-1);
        self.room += 1;
        // SAFETY: a valid index and a table or nil on top.
        unsafe { ffi::lua_setmetatable(self.l, idx) };
    }

    /// Pushes the metatable of the value at `idx`, if it has one.
    pub fn get_metatable(&mut self, idx: c_int) -> bool {
        if !self.readable(idx) {
            return false;
        }
        if self.room < 1 {
            self.grow();
        }
        // SAFETY: an acceptable index, a free slot.
        let has = unsafe { ffi::lua_getmetatable(self.l, idx) } != 0;
        if has {
            self.bump(1);
            self.room -= 1;
        }
        has
    }

    /// Pops a key and pushes the next key and value of table `t` after it
    /// (`lua_next`, raw); returns false, with nothing pushed, at the end.
    ///
    /// # Safety
    ///
    /// The key on top is nil or the key this function last pushed for `t`,
    /// and no new key was assigned to `t` since (`lua_next` raises
    /// otherwise, raw rule 2).
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or the stack is empty.
    pub unsafe fn next(&mut self, t: c_int) -> bool {
        self.table(t);
        assert!(self.has(1), "next: no key");
        // SAFETY: a table at `t`, a key on top that `lua_next` finds
        // (contract); one free slot more is needed for the value.
        if self.room < 1 {
            self.grow();
        }
        // SAFETY: as above.
        let more = unsafe { ffi::lua_next(self.l, t) } != 0;
        if more {
            self.bump(1);
            self.room -= 1;
        } else {
            self.bump(-1);
            self.room += 1;
        }
        more
    }

    /// Pops `n` strings or numbers and pushes their concatenation.
    ///
    /// # Panics
    ///
    /// Panics when the top `n` values are not all strings or numbers (their
    /// `__concat` metamethods could raise).
    pub fn concat(&mut self, n: c_int) {
        assert!(n >= 1 && n <= self.t(), "concat: {n} values");
        for i in 0..n {
            assert!(
                matches!(self.type_of(-1 - i), ffi::LUA_TSTRING | ffi::LUA_TNUMBER),
                "concat: not a string"
            );
        }
        self.bump(-(n - 1));
        self.room += n - 1;
        // SAFETY: `n` strings or numbers on top: no metamethod runs; the
        // allocation does not fail on the limit in a body (raw rule 3).
        unsafe { ffi::lua_concat(self.l, n) }
    }

    /// Sets each `(name, f)` of `funcs` as `t[name] = f`, raw.
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table.
    pub fn set_funcs(&mut self, t: c_int, funcs: &[crate::raw::Reg]) {
        let t = self.abs(t);
        for (name, f) in funcs {
            self.push_cfunction(*f);
            self.set_field(t, name);
        }
    }

    /// Makes a metatable named `name` with `__index` = a table of `methods`,
    /// the metamethods `meta`, and `__metatable` = itself; returns its
    /// registry ref and address.
    ///
    /// `__metatable` makes `getmetatable` give the metatable itself, as
    /// without the field, but found at a known place (a LuaJIT trace then
    /// looks it up by its slot, not by walking a hash chain that the string
    /// seed changes).
    pub fn make_metatable(
        &mut self,
        name: &CStr,
        methods: &[crate::raw::Reg],
        meta: &[crate::raw::Reg],
    ) -> (c_int, *const std::ffi::c_void) {
        let mt = self.new_table(0, meta.len() as c_int + 3);
        self.set_funcs(mt, meta);
        let index = self.new_table(0, methods.len() as c_int);
        self.set_funcs(index, methods);
        self.set_field(mt, c"__index");
        self.push_cstr(name);
        self.set_field(mt, c"__name");
        self.push_value(mt);
        self.set_field(mt, c"__metatable");
        let p = self.to_pointer(mt);
        (self.make_ref(), p)
    }
}

impl Stack<'_> {
    /// [`Stack::next`] for a loop that may assign to `t` (nil to the key it
    /// is at, as a clear does) or that leaves on top a key `next` did not
    /// push: a key `t` does not hold is an error, not a Lua error raised
    /// across the caller (raw rule 2). A key whose value is not nil is
    /// checked by one raw get; any other goes through `lua_next` under
    /// `lua_pcall`.
    ///
    /// # Errors
    ///
    /// "invalid key to 'next'" (`IllegalParams`) when `t` does not hold
    /// the key (it is popped).
    ///
    /// # Panics
    ///
    /// Panics when `t` is not a table or the stack is empty.
    pub fn next_checked(&mut self, t: c_int) -> LResult<bool> {
        let t = self.abs(t);
        self.table(t);
        let key = self.abs(-1);
        if self.type_of(key) != ffi::LUA_TNIL {
            self.push_value(key);
            self.rawget(t);
            let held = self.type_of(-1) != ffi::LUA_TNIL;
            self.pop(1);
            if !held {
                return self.next_protected(t, key);
            }
        }
        // SAFETY: the key on top is nil or one `t` holds with a value, which
        // `lua_next` finds.
        Ok(unsafe { self.next(t) })
    }

    /// `lua_next` of the key at `key` (the top) under `lua_pcall`.
    #[cold]
    fn next_protected(&mut self, t: c_int, key: c_int) -> LResult<bool> {
        self.push_cfunction(crate::raw::wide_cfn!(next_raising));
        self.push_value(t);
        self.push_value(key);
        if self.pcall(2, 2).is_err() {
            self.settop(key - 1);
            return Err(Raise::illegal("invalid key to 'next'"));
        }
        if self.type_of(key + 1) == ffi::LUA_TNIL {
            self.settop(key - 1);
            return Ok(false);
        }
        self.remove(key);
        Ok(true)
    }
}

/// `lua_next(l, 1)` of `[t, key]`: the next key and value, or two nils at
/// the end. Not under `protect`: it owns nothing, and the error `lua_next`
/// raises for a key the table does not hold goes to the caller's
/// `lua_pcall`.
///
/// # Safety
///
/// Called by `lua_pcall` with a table and a key.
unsafe extern "C-unwind" fn next_raising(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: a table at 1 and a key above it; a C function has
    // LUA_MINSTACK free slots for the two values.
    unsafe {
        if ffi::lua_next(l, 1) == 0 {
            ffi::lua_pushnil(l);
            ffi::lua_pushnil(l);
        }
    }
    2
}

#[cfg(test)]
mod tests {
    use mlua::ffi;

    use crate::LuaRuntime;

    #[test]
    fn next_checked_goes_on_past_a_cleared_key_and_refuses_a_foreign_one() {
        let rt = LuaRuntime::new().expect("a runtime");
        let s = &mut rt.main_stack();
        let base = s.top();
        let t = s.new_table(0, 3);
        for (k, v) in [(c"a", 1), (c"b", 2), (c"c", 3)] {
            s.push_int(v);
            s.set_field(t, k);
        }
        let mut seen = 0;
        s.push_nil();
        while s.next_checked(t).expect("a key of the table") {
            seen += 1;
            // Clear the key `next` is then given: the protected path.
            s.pop(1);
            s.push_value(-1);
            s.push_nil();
            s.rawset(t).expect("a string key");
        }
        assert_eq!(seen, 3);
        assert_eq!(s.top(), t);
        s.push_cstr(c"zz");
        assert!(s.next_checked(t).is_err(), "a key the table never held");
        assert_eq!(s.top(), t);
        s.push_nil();
        assert!(!s.next_checked(t).expect("an empty table"));
        assert_eq!(s.type_of(t), ffi::LUA_TTABLE);
        s.settop(base);
    }
}
