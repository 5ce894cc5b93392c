//! Small helpers over the raw Lua C API (`mlua::ffi`), the same on LuaJIT and
//! Lua 5.4, for code that works on a `*mut lua_State` directly (setup, raw C
//! functions; a `lua_fn!` body has [`Stack`](super::Stack)). None of them
//! raises a Lua error (raw rule 2).

use std::ffi::c_int;

use mlua::ffi;

/// The bytes of the string at `idx` (not converting numbers), or `None`.
///
/// # Safety
///
/// `l` is a valid state, `idx` a valid index; the slice lives as long as the
/// string stays on the stack.
pub unsafe fn to_str<'a>(l: *mut ffi::lua_State, idx: c_int) -> Option<&'a [u8]> {
    // SAFETY: caller's contract.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TSTRING {
            return None;
        }
        let mut len = 0;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        Some(std::slice::from_raw_parts(p.cast(), len))
    }
}

/// Pushes the value a registry ref holds.
///
/// # Safety
///
/// `l` is a valid state with room for one value.
#[inline]
pub unsafe fn push_registry_ref(l: *mut ffi::lua_State, r: c_int) {
    // SAFETY: caller's contract; the registry is a table.
    unsafe {
        #[cfg(feature = "luajit")]
        ffi::lua_rawgeti_(l, ffi::LUA_REGISTRYINDEX, r);
        #[cfg(not(feature = "luajit"))]
        ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, ffi::lua_Integer::from(r));
    }
}

// mlua's Lua 5.1/LuaJIT bindings give `lua_rawget`, `lua_rawgeti` and
// `lua_pushlstring` the Lua 5.4 signatures by calling `lua_type` or
// `lua_tolstring` after the real function: one more C call each. The hot
// paths below call the engine's own functions (the `_` names there).

/// `lua_rawget` (pops the key, pushes `t[key]` of the table at `idx`)
/// without a result type.
///
/// # Safety
///
/// As `lua_rawget`: `idx` holds a table and a key is on top.
#[inline(always)]
pub unsafe fn rawget(l: *mut ffi::lua_State, idx: c_int) {
    // SAFETY: caller's contract.
    unsafe {
        #[cfg(feature = "luajit")]
        ffi::lua_rawget_(l, idx);
        #[cfg(not(feature = "luajit"))]
        ffi::lua_rawget(l, idx);
    }
}

/// `lua_rawget` returning the type of the value pushed (one C call on Lua
/// 5.4, two on LuaJIT).
///
/// # Safety
///
/// As `lua_rawget`: a table at `idx`, a key on top.
#[inline(always)]
pub unsafe fn rawget_type(l: *mut ffi::lua_State, idx: c_int) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        #[cfg(feature = "luajit")]
        {
            ffi::lua_rawget_(l, idx);
            ffi::lua_type(l, -1)
        }
        #[cfg(not(feature = "luajit"))]
        ffi::lua_rawget(l, idx)
    }
}

/// `lua_rawgeti` returning the type of the value pushed (one C call on Lua
/// 5.4, two on LuaJIT).
///
/// # Safety
///
/// As `lua_rawgeti`: `idx` holds a table, and a slot is free for the value.
#[inline(always)]
pub unsafe fn rawgeti_type(l: *mut ffi::lua_State, idx: c_int, n: c_int) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        #[cfg(feature = "luajit")]
        {
            ffi::lua_rawgeti_(l, idx, n);
            ffi::lua_type(l, -1)
        }
        #[cfg(not(feature = "luajit"))]
        ffi::lua_rawgeti(l, idx, ffi::lua_Integer::from(n))
    }
}

/// Pushes `s` as a Lua string (`lua_pushlstring`, not reading the result
/// back).
///
/// # Safety
///
/// `l` is a valid state with room for one value.
#[inline(always)]
pub unsafe fn push_bytes(l: *mut ffi::lua_State, s: &[u8]) {
    // SAFETY: caller's contract; `s` is valid for `s.len()` bytes and its
    // pointer is never null.
    unsafe {
        #[cfg(feature = "luajit")]
        ffi::lua_pushlstring_(l, s.as_ptr().cast(), s.len());
        #[cfg(not(feature = "luajit"))]
        ffi::lua_pushlstring(l, s.as_ptr().cast(), s.len());
    }
}
