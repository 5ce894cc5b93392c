//! Small helpers over the raw Lua C API (`mlua::ffi`), the same on LuaJIT and
//! Lua 5.4, for code that works on a `*mut lua_State` directly (setup, raw C
//! functions; a `lua_fn!` body has [`Stack`](super::Stack)). None of them
//! raises a Lua error (raw rule 2).

use std::ffi::{c_int, c_void};

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
    // SAFETY: caller's contract.
    unsafe { rawgeti(l, ffi::LUA_REGISTRYINDEX, r) };
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

/// `lua_rawgeti` (pushes `t[n]` of the table at `idx`) without a result
/// type.
///
/// # Safety
///
/// As `lua_rawgeti`: `idx` holds a table, room for one value.
#[inline(always)]
pub unsafe fn rawgeti(l: *mut ffi::lua_State, idx: c_int, n: c_int) {
    // SAFETY: caller's contract.
    unsafe {
        #[cfg(feature = "luajit")]
        ffi::lua_rawgeti_(l, idx, n);
        #[cfg(not(feature = "luajit"))]
        ffi::lua_rawgeti(l, idx, ffi::lua_Integer::from(n));
    }
}

/// `lua_rawgeti` returning the type of the value pushed (one C call on Lua
/// 5.4, two on LuaJIT).
///
/// # Safety
///
/// As [`rawgeti`].
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

/// The block of the userdata at `idx` when its metatable is the table at
/// address `mt`, else `None`.
///
/// Four API calls on the hot path: a light userdata is not told apart from
/// a full one, which only matters when the debug library gave light
/// userdata one of the bridge's metatables (it can break memory safety in
/// other ways too).
///
/// # Safety
///
/// `l` is a valid state with room for one value, `idx` a valid index.
#[inline]
pub unsafe fn udata_with_mt(
    l: *mut ffi::lua_State,
    idx: c_int,
    mt: *const c_void,
) -> Option<*mut c_void> {
    // SAFETY: caller's contract; the metatable pushed is popped again.
    unsafe {
        let p = ffi::lua_touserdata(l, idx);
        if p.is_null() || ffi::lua_getmetatable(l, idx) == 0 {
            return None;
        }
        let same = ffi::lua_topointer(l, -1) == mt;
        ffi::lua_settop(l, -2);
        same.then_some(p)
    }
}

/// The registry table's address: the same for every thread of one Lua state.
///
/// # Safety
///
/// `l` is a valid state.
pub unsafe fn registry_ptr(l: *mut ffi::lua_State) -> *const c_void {
    // SAFETY: caller's contract; the registry pseudo-index is always valid.
    unsafe { ffi::lua_topointer(l, ffi::LUA_REGISTRYINDEX) }
}

/// A printable form of the value at `idx` that runs no metamethod other than
/// an error object's message.
///
/// # Safety
///
/// `l` is valid and `idx` a valid index; room for one value.
pub unsafe fn describe(l: *mut ffi::lua_State, idx: c_int) -> String {
    // SAFETY: caller's contract; every value pushed is popped.
    unsafe {
        let idx = if idx < 0 {
            ffi::lua_gettop(l) + idx + 1
        } else {
            idx
        };
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut len = 0;
                let p = ffi::lua_tolstring(l, idx, &mut len);
                String::from_utf8_lossy(std::slice::from_raw_parts(p.cast(), len)).into_owned()
            }
            ffi::LUA_TTABLE => {
                ffi::lua_pushstring(l, c"message".as_ptr());
                ffi::lua_rawget(l, idx);
                let s = to_str(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
                ffi::lua_pop(l, 1);
                s.unwrap_or_else(|| format!("table: {:p}", ffi::lua_topointer(l, idx)))
            }
            ffi::LUA_TNIL => "nil".into(),
            t => {
                let name = std::ffi::CStr::from_ptr(ffi::lua_typename(l, t));
                format!(
                    "{}: {:p}",
                    name.to_string_lossy(),
                    ffi::lua_topointer(l, idx)
                )
            }
        }
    }
}

/// Releases a registry ref if it is one.
///
/// # Safety
///
/// `l` is a thread of the state the ref belongs to.
pub unsafe fn unref(l: *mut ffi::lua_State, r: c_int) {
    if r != ffi::LUA_NOREF && r != ffi::LUA_REFNIL {
        // SAFETY: caller's contract; luaL_unref does not allocate.
        unsafe { ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r) };
    }
}

/// Whether the GC may run now: false inside a `__gc` finalizer, and (on
/// LuaJIT, which cannot tell the two apart) after `collectgarbage("stop")`.
///
/// # Safety
///
/// `l` is a valid Lua state.
pub unsafe fn gc_running(l: *mut ffi::lua_State) -> bool {
    #[cfg(feature = "luajit")]
    {
        /// `LUA_GCISRUNNING` of LuaJIT's `lua.h` (not in mlua's bindings).
        const LUA_GCISRUNNING: c_int = 9;
        // LuaJIT stops GC steps while a finalizer runs.
        // SAFETY: LUA_GCISRUNNING only reads the GC state.
        unsafe { ffi::lua_gc(l, LUA_GCISRUNNING, 0) != 0 }
    }
    #[cfg(not(feature = "luajit"))]
    {
        // Lua 5.4's lua_gc returns -1 while a finalizer runs; a stopped
        // collector is not reported here, so the cord's flag stays false.
        // SAFETY: LUA_GCCOUNT only reads the GC state.
        unsafe { ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) >= 0 }
    }
}
