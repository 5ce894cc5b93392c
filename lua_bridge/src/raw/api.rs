//! Small helpers over the raw Lua C API (`mlua::ffi`), the same on LuaJIT and
//! Lua 5.4, for code that works on a `*mut lua_State` directly (setup, raw C
//! functions; a `lua_fn!` body has [`Stack`](super::Stack)). None of them
//! raises a Lua error (raw rule 2).

use std::ffi::{c_int, c_void};

use mlua::ffi;

use super::{LResult, Raise};

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

/// The text of the error value at `idx`: what `tostring` gives when the
/// value has a `__tostring` metamethod (as `lua` and Tarantool print it),
/// else [`describe`]'s (the message of an error object). The metamethod
/// runs under `lua_pcall`; when it fails or gives no string, the value is
/// described as if it had none.
///
/// # Safety
///
/// `l` is a thread inside a C function Lua called (Lua code may run on
/// it), with room for 2 values; `idx` is absolute.
pub unsafe fn describe_tostring(l: *mut ffi::lua_State, idx: c_int) -> String {
    // SAFETY: caller's contract; luaL_getmetafield reads raw and pushes
    // only what it found; lua_pcall catches every error of the metamethod;
    // the stack is left as it was.
    unsafe {
        let t = ffi::lua_type(l, idx);
        if t != ffi::LUA_TSTRING
            && t != ffi::LUA_TNUMBER
            && ffi::luaL_getmetafield(l, idx, c"__tostring".as_ptr()) != ffi::LUA_TNIL
        {
            ffi::lua_pushvalue(l, idx);
            let text = match ffi::lua_pcall(l, 1, 1, 0) {
                0 => to_str(l, -1).map(|b| String::from_utf8_lossy(b).into_owned()),
                _ => None,
            };
            ffi::lua_pop(l, 1);
            if let Some(text) = text {
                return text;
            }
        }
        describe(l, idx)
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

/// Sets `funcs` into the table on top of `l`.
///
/// # Safety
///
/// `l` is a valid state with a table on top, with room for one value.
pub unsafe fn set_funcs(l: *mut ffi::lua_State, funcs: &[super::Reg]) {
    for (name, f) in funcs {
        // SAFETY: caller's contract.
        unsafe {
            ffi::lua_pushcfunction(l, *f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
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

/// The `T` userdata at `idx` whose metatable is the table at address `mt`,
/// or `None`.
///
/// # Safety
///
/// `l` is a valid state with room for one value, `idx` a valid index; a
/// userdata with the metatable `mt` holds a live `T` (as [`new_udata`]
/// made it) for as long as the returned reference is used.
pub unsafe fn check_udata<'a, T>(
    l: *mut ffi::lua_State,
    idx: c_int,
    mt: *const c_void,
) -> Option<&'a T> {
    // SAFETY: caller's contract.
    unsafe { udata_with_mt(l, idx, mt).map(|p| &*p.cast::<T>()) }
}

/// Pushes a new userdata holding `v`, with the metatable of registry ref
/// `mt` (whose `__gc` should drop it).
///
/// # Safety
///
/// `l` is a valid state with room for 2 values; `T` needs no alignment
/// above 8.
pub unsafe fn new_udata<T>(l: *mut ffi::lua_State, v: T, mt: c_int) {
    // SAFETY: caller's contract; Lua aligns userdata to 8 bytes; the memory
    // is written once here.
    unsafe {
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<T>()).cast::<T>();
        p.write(v);
        push_registry_ref(l, mt);
        ffi::lua_setmetatable(l, -2);
    }
}

/// Makes a metatable named `name` with `__index` = a table of `methods`,
/// the metamethods `meta`, and `__metatable` = itself; returns its registry
/// ref and address.
///
/// `__metatable` makes `getmetatable` give the metatable itself, as
/// without the field, but found at a known place (a LuaJIT trace then
/// looks it up by its slot, not by walking a hash chain that the string
/// seed changes).
///
/// # Safety
///
/// `l` is a valid state with room for 3 values.
pub unsafe fn make_mt(
    l: *mut ffi::lua_State,
    name: &std::ffi::CStr,
    methods: &[super::Reg],
    meta: &[super::Reg],
) -> (c_int, *const c_void) {
    // SAFETY: caller's contract; fresh tables have no metamethods.
    unsafe {
        ffi::lua_createtable(l, 0, meta.len() as c_int + 3);
        set_funcs(l, meta);
        ffi::lua_createtable(l, 0, methods.len() as c_int);
        set_funcs(l, methods);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, -2, c"__metatable".as_ptr());
        let p = ffi::lua_topointer(l, -1);
        (ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX), p)
    }
}
