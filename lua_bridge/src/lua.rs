//! Small helpers over the raw Lua C API (`mlua::ffi`), the same on LuaJIT and
//! Lua 5.4. None of them raises a Lua error (cfunc rule 2).

use std::ffi::{c_int, c_void};

use mlua::ffi;

use crate::cfunc::{LResult, Raise};

/// Pushes `s` as a Lua string.
///
/// # Safety
///
/// `l` is a valid state with room for one value.
pub unsafe fn push_str(l: *mut ffi::lua_State, s: &str) {
    // SAFETY: caller's contract.
    unsafe { push_bytes(l, s.as_bytes()) };
}

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

/// The number at `idx`, or `None` when it is not a number (strings are not
/// converted).
///
/// # Safety
///
/// `l` is a valid state, `idx` a valid index.
pub unsafe fn to_number(l: *mut ffi::lua_State, idx: c_int) -> Option<f64> {
    // SAFETY: caller's contract.
    unsafe { (ffi::lua_type(l, idx) == ffi::LUA_TNUMBER).then(|| ffi::lua_tonumber(l, idx)) }
}

/// A timeout argument in seconds: `None` when absent or nil (wait forever).
/// NaN and non-numbers are refused with `usage`; negative values mean
/// already expired (zero).
///
/// # Safety
///
/// `l` is a valid state.
#[inline]
pub unsafe fn opt_timeout(
    l: *mut ffi::lua_State,
    idx: c_int,
    usage: &str,
) -> LResult<Option<std::time::Duration>> {
    // SAFETY: caller's contract.
    if unsafe { ffi::lua_type(l, idx) } <= ffi::LUA_TNIL {
        return Ok(None);
    }
    // SAFETY: caller's contract.
    unsafe { timeout(l, idx, usage) }
}

/// [`opt_timeout`] for a value that is there.
unsafe fn timeout(
    l: *mut ffi::lua_State,
    idx: c_int,
    usage: &str,
) -> LResult<Option<std::time::Duration>> {
    // SAFETY: caller's contract.
    match unsafe { to_number(l, idx) } {
        Some(t) if !t.is_nan() => Ok(seconds(t)),
        _ => Err(Raise::illegal(usage)),
    }
}

/// Seconds as a `Duration`: negative is zero, beyond what a `Duration` holds
/// (or infinite) is `None` (forever).
pub fn seconds(t: f64) -> Option<std::time::Duration> {
    if t <= 0.0 {
        return Some(std::time::Duration::ZERO);
    }
    std::time::Duration::try_from_secs_f64(t).ok()
}

/// Runs `chunk` (named `name`) once at setup with the arguments `args`
/// pushes (returning their count), dropping its results; leaves the stack
/// as it was. A chunk that fails to load or raises changes nothing more
/// than it did before failing, so setup goes on with what was there.
///
/// # Safety
///
/// `l` is a valid state outside any `lua_fn` body, with room for the
/// function and the arguments.
pub unsafe fn run_setup_chunk(
    l: *mut ffi::lua_State,
    chunk: &str,
    name: &std::ffi::CStr,
    args: impl FnOnce() -> c_int,
) {
    // SAFETY: caller's contract; the chunk runs under lua_pcall.
    unsafe {
        let top = ffi::lua_gettop(l);
        if ffi::luaL_loadbuffer(l, chunk.as_ptr().cast(), chunk.len(), name.as_ptr()) == 0 {
            let n = args();
            ffi::lua_pcall(l, n, 0, 0);
        }
        ffi::lua_settop(l, top);
    }
}
