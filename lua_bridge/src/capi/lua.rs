//! The Lua helpers of the C module API (Tarantool's `src/lua/utils.h` and
//! `error.h`): 64-bit integers, `luaT_call`/`luaT_error` over the
//! diagnostics, `luaT_state`, `luaT_tolstring`, `luaL_iscallable`, and
//! `NULL` (`luaL_pushnull`/`luaL_isnull`).
//!
//! On LuaJIT a 64-bit integer beyond 2^53 is an `int64_t`/`uint64_t`
//! cdata, as in Tarantool; the C types of cdata are read as the msgpack
//! encoder reads them (`luajit::cdata`: ids learnt at start-up, never
//! assumed). On Lua 5.4 integers are Lua integers (a `uint64_t` above
//! 2^63 - 1 is a float), and there is no cdata.
//!
//! The functions that raise (`luaL_check*int64`, `luaT_error`) hold no
//! Rust value when they call `lua_error` (capi rule 3, raw rule 2).

use std::ffi::{c_char, c_int, c_void, CStr};

use mlua::ffi;

use super::diag::{self, Diag};
use super::guard;
use crate::raw::api as lua;
use crate::raw::error::ErrorKind;

/// Largest integer a double holds exactly (Tarantool's `DBL_INT_MAX`).
const DBL_INT_MAX: i64 = (1 << 53) - 1;

#[cfg(feature = "luajit")]
mod cdata {
    //! The FFI handles of a Lua state, made on first use and kept in its
    //! registry (at `registry[&KEY]`, a userdata), so a later runtime on
    //! the same thread never sees another state's refs.

    use std::ffi::{c_int, c_void};

    use mlua::ffi;

    use crate::luajit::cdata::{self as lj, CTypes};
    use crate::raw::Stack;

    /// What the helpers need of the FFI.
    #[derive(Clone, Copy)]
    pub(super) struct Ffi {
        /// `ffi.cast('void *', 0)`, or `LUA_NOREF`.
        pub null: c_int,
        pub ctypes: Option<CTypes>,
        /// `ffi.typeof('int64_t')` and `ffi.typeof('uint64_t')`, or
        /// `LUA_NOREF`.
        pub int64: c_int,
        pub uint64: c_int,
    }

    static KEY: u8 = 0;

    const TYPES: &str =
        "local ffi = require('ffi') return ffi.typeof('int64_t'), ffi.typeof('uint64_t')";

    /// The FFI handles of `l`'s state.
    ///
    /// # Safety
    ///
    /// `l` is a valid state (Lua code runs on it, under `lua_pcall`).
    pub(super) unsafe fn get(l: *mut ffi::lua_State) -> Ffi {
        let key = (&raw const KEY).cast_mut().cast::<c_void>();
        // SAFETY: caller's contract; the registry entry, when there, is a
        // userdata holding an `Ffi`; every push is popped. The probe and
        // the chunk run under lua_pcall and leave the stack as it was.
        unsafe {
            let mut f = Ffi {
                null: ffi::LUA_NOREF,
                ctypes: None,
                int64: ffi::LUA_NOREF,
                uint64: ffi::LUA_NOREF,
            };
            if ffi::lua_checkstack(l, 8) == 0 {
                return f;
            }
            ffi::lua_pushlightuserdata(l, key);
            ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
            if ffi::lua_type(l, -1) == ffi::LUA_TUSERDATA {
                let kept = ffi::lua_touserdata(l, -1).cast::<Ffi>().read();
                ffi::lua_pop(l, 1);
                return kept;
            }
            ffi::lua_pop(l, 1);
            {
                let mut s = Stack::from_state(l);
                f.ctypes = lj::learn(&mut s);
                f.null = lj::null_ref(&mut s);
            }
            let top = ffi::lua_gettop(l);
            let name = c"=luaL_pushint64".as_ptr();
            if ffi::luaL_loadbuffer(l, TYPES.as_ptr().cast(), TYPES.len(), name) == 0
                && ffi::lua_pcall(l, 0, 2, 0) == 0
            {
                f.uint64 = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
                f.int64 = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            }
            ffi::lua_settop(l, top);
            ffi::lua_pushlightuserdata(l, key);
            let u = ffi::lua_newuserdata(l, std::mem::size_of::<Ffi>()).cast::<Ffi>();
            u.write(f);
            ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
            f
        }
    }
}

/// Pushes a 64-bit integer `bits` (signed when `signed`) that a double
/// does not hold: a cdata of that type on LuaJIT, else a float.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values.
unsafe fn push_wide(l: *mut ffi::lua_State, bits: u64, signed: bool) {
    #[cfg(feature = "luajit")]
    // SAFETY: caller's contract; the ctype call makes a zeroed cdata whose
    // payload (`lua_topointer`) is 8 bytes of its integer type.
    unsafe {
        let f = cdata::get(l);
        let ctype = if signed { f.int64 } else { f.uint64 };
        if ctype != ffi::LUA_NOREF {
            lua::push_registry_ref(l, ctype);
            ffi::lua_call(l, 0, 1);
            ffi::lua_topointer(l, -1)
                .cast::<u64>()
                .cast_mut()
                .write(bits);
            return;
        }
    }
    let n = if signed {
        bits as i64 as f64
    } else {
        bits as f64
    };
    // SAFETY: caller's contract.
    unsafe { ffi::lua_pushnumber(l, n) };
}

/// `luaL_pushuint64(L, val)`: a number when a double holds `val` exactly,
/// else a `uint64_t` cdata (LuaJIT) or an integer / float (Lua 5.4).
///
/// # Safety
///
/// `L` is a valid state with room for 2 values.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_pushuint64(l: *mut ffi::lua_State, val: u64) {
    // SAFETY: caller's contract.
    unsafe {
        if cfg!(feature = "lua54") && val <= i64::MAX as u64 {
            ffi::lua_pushinteger(l, val as ffi::lua_Integer);
        } else if val <= DBL_INT_MAX as u64 {
            ffi::lua_pushnumber(l, val as f64);
        } else {
            push_wide(l, val, false);
        }
    }
}

/// `luaL_pushint64(L, val)`: a number when a double holds `val` exactly,
/// else an `int64_t` cdata (LuaJIT) or an integer (Lua 5.4).
///
/// # Safety
///
/// As [`luaL_pushuint64`].
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_pushint64(l: *mut ffi::lua_State, val: i64) {
    // SAFETY: caller's contract.
    unsafe {
        if cfg!(feature = "lua54") {
            ffi::lua_pushinteger(l, val as ffi::lua_Integer);
        } else if (-DBL_INT_MAX..=DBL_INT_MAX).contains(&val) {
            ffi::lua_pushnumber(l, val as f64);
        } else {
            push_wide(l, val as u64, true);
        }
    }
}

/// The integer at `idx` as Tarantool's `luaL_convertint64` reads it: a
/// number (truncated), an integer cdata, or a string `strtoll`/`strtoull`
/// parse (base 10; trailing text ignored).
///
/// # Safety
///
/// `l` is a valid state, `idx` an acceptable index.
unsafe fn convert(l: *mut ffi::lua_State, idx: c_int, unsigned: bool) -> Option<i64> {
    // SAFETY: caller's contract.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNUMBER => {
                if cfg!(feature = "lua54") && ffi::lua_isinteger(l, idx) != 0 {
                    return Some(ffi::lua_tointeger(l, idx) as i64);
                }
                let n = ffi::lua_tonumber(l, idx);
                Some(if unsigned && n >= i64::MAX as f64 {
                    n as u64 as i64
                } else {
                    n as i64
                })
            }
            ffi::LUA_TSTRING => {
                let s = ffi::lua_tolstring(l, idx, std::ptr::null_mut());
                let mut end: *mut c_char = std::ptr::null_mut();
                *libc::__errno_location() = 0;
                let v = match unsigned {
                    true => libc::strtoull(s, &mut end, 10) as i64,
                    false => libc::strtoll(s, &mut end, 10),
                };
                (*libc::__errno_location() == 0 && end.cast_const() != s).then_some(v)
            }
            #[cfg(feature = "luajit")]
            10 => {
                use crate::luajit::cdata::Scalar;
                let payload = ffi::lua_topointer(l, idx).cast::<u8>();
                match cdata::get(l).ctypes?.read_payload(payload)? {
                    Scalar::Int(i) => Some(i),
                    Scalar::Uint(u) => Some(u as i64),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Raises "expected TYPE as IDX argument" (Tarantool's message).
///
/// # Safety
///
/// `l` is the state of the running C function.
unsafe fn raise_expected(l: *mut ffi::lua_State, idx: c_int, ty: &CStr) -> ! {
    // SAFETY: caller's contract; nothing Rust owns is alive at lua_error.
    unsafe {
        ffi::lua_pushfstring(l, c"expected %s as %d argument".as_ptr(), ty.as_ptr(), idx);
        ffi::lua_error(l)
    }
}

/// `luaL_checkuint64(L, idx)`: the argument as `uint64_t`; raises
/// "expected uint64_t as IDX argument" when it is none.
///
/// # Safety
///
/// `L` is the state of the running C function; `idx` acceptable.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_checkuint64(l: *mut ffi::lua_State, idx: c_int) -> u64 {
    // SAFETY: caller's contract.
    match unsafe { convert(l, idx, true) } {
        Some(v) => v as u64,
        // SAFETY: caller's contract.
        None => unsafe { raise_expected(l, idx, c"uint64_t") },
    }
}

/// `luaL_checkint64(L, idx)`: the argument as `int64_t`; raises
/// "expected int64_t as IDX argument" when it is none.
///
/// # Safety
///
/// As [`luaL_checkuint64`].
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_checkint64(l: *mut ffi::lua_State, idx: c_int) -> i64 {
    // SAFETY: caller's contract.
    match unsafe { convert(l, idx, false) } {
        Some(v) => v,
        // SAFETY: caller's contract.
        None => unsafe { raise_expected(l, idx, c"int64_t") },
    }
}

/// `luaL_touint64(L, idx)`: as [`luaL_checkuint64`], 0 instead of an error.
///
/// # Safety
///
/// `L` is a valid state; `idx` acceptable.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_touint64(l: *mut ffi::lua_State, idx: c_int) -> u64 {
    // SAFETY: caller's contract.
    unsafe { convert(l, idx, true) }.unwrap_or(0) as u64
}

/// `luaL_toint64(L, idx)`: as [`luaL_checkint64`], 0 instead of an error.
///
/// # Safety
///
/// As [`luaL_touint64`].
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_toint64(l: *mut ffi::lua_State, idx: c_int) -> i64 {
    // SAFETY: caller's contract.
    unsafe { convert(l, idx, false) }.unwrap_or(0)
}

/// `luaL_iscdata(L, idx)`: 1 when the value is a cdata (never on Lua 5.4).
///
/// # Safety
///
/// `L` is a valid state; `idx` acceptable.
#[no_mangle]
pub unsafe extern "C" fn luaL_iscdata(l: *mut ffi::lua_State, idx: c_int) -> c_int {
    // SAFETY: caller's contract; 10 is LuaJIT's LUA_TCDATA.
    c_int::from(cfg!(feature = "luajit") && unsafe { ffi::lua_type(l, idx) } == 10)
}

/// `luaL_pushnull(L)`: pushes `msgpack.NULL`: `ffi.cast('void *', 0)` on
/// LuaJIT, a light userdata NULL on Lua 5.4.
///
/// # Safety
///
/// `L` is a valid state with room for 2 values.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_pushnull(l: *mut ffi::lua_State) {
    #[cfg(feature = "luajit")]
    // SAFETY: caller's contract.
    unsafe {
        let null = cdata::get(l).null;
        if null != ffi::LUA_NOREF {
            lua::push_registry_ref(l, null);
            return;
        }
    }
    // SAFETY: caller's contract.
    unsafe { ffi::lua_pushlightuserdata(l, std::ptr::null_mut()) };
}

/// `luaL_isnull(L, idx)`: whether the value is a NULL pointer (a `void *`
/// cdata on LuaJIT, a light userdata on Lua 5.4).
///
/// # Safety
///
/// `L` is a valid state; `idx` acceptable.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_isnull(l: *mut ffi::lua_State, idx: c_int) -> bool {
    // SAFETY: caller's contract.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TLIGHTUSERDATA => ffi::lua_touserdata(l, idx).is_null(),
            #[cfg(feature = "luajit")]
            10 => {
                use crate::luajit::cdata::Scalar;
                let payload = ffi::lua_topointer(l, idx).cast::<u8>();
                let ctypes = cdata::get(l).ctypes;
                ctypes.and_then(|c| c.read_payload(payload)) == Some(Scalar::Nil)
            }
            _ => false,
        }
    }
}

/// `luaT_state()`: the cord's main Lua state (NULL on a thread without a
/// luafiber Lua runtime). Code run on it cannot yield.
#[no_mangle]
pub extern "C" fn luaT_state() -> *mut ffi::lua_State {
    guard("luaT_state", std::ptr::null_mut(), || {
        crate::cord::try_with(|c| c.main).unwrap_or(std::ptr::null_mut())
    })
}

/// Records the error value on top of `l` as the diagnostics (Tarantool's
/// `luaT_toerror`): an error object keeps its `type` and `message`, any
/// other value becomes a `LuajitError` with its string form.
///
/// # Safety
///
/// `l` is a valid state with an error value on top and room for 3 values.
unsafe fn to_diag(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract; what is pushed is popped. The strings read
    // stay on the stack until the copy; nothing Rust owns is alive while
    // `tolstring` may raise (from a `__tostring`).
    unsafe {
        let err = ffi::lua_gettop(l);
        let (mut ty, mut msg) = (None, None);
        if ffi::lua_type(l, err) == ffi::LUA_TTABLE {
            ffi::lua_getfield(l, err, c"type".as_ptr());
            ffi::lua_getfield(l, err, c"message".as_ptr());
            if let (Some(t), Some(m)) = (lua::to_str(l, -2), lua::to_str(l, -1)) {
                (ty, msg) = (Some(t), Some(m));
            }
        }
        let msg = match msg {
            Some(m) => m,
            None => {
                let mut len = 0;
                let s = tolstring(l, err, &mut len);
                std::slice::from_raw_parts(s.cast::<u8>(), len)
            }
        };
        diag::put(Some(Diag {
            kind: ErrorKind::IllegalParams,
            message: String::from_utf8_lossy(msg).into_owned(),
            type_name: Some(ty.map_or("LuajitError".into(), |t| {
                String::from_utf8_lossy(t).into_owned()
            })),
        }));
        ffi::lua_settop(l, err);
    }
}

/// `luaT_call(L, nargs, nreturns)`: `lua_pcall`; on an error returns
/// non-zero with the error value left on the stack and recorded in the
/// diagnostics (for [`luaT_error`]).
///
/// # Safety
///
/// As `lua_pcall`.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaT_call(
    l: *mut ffi::lua_State,
    nargs: c_int,
    nreturns: c_int,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        if ffi::lua_pcall(l, nargs, nreturns, 0) == 0 {
            return 0;
        }
        to_diag(l);
    }
    1
}

/// `luaT_cpcall(L, func, ud)`: calls `func` with the light userdata `ud`
/// in protected mode; on an error as [`luaT_call`].
///
/// # Safety
///
/// As `lua_cpcall`.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaT_cpcall(
    l: *mut ffi::lua_State,
    func: ffi::lua_CFunction,
    ud: *mut c_void,
) -> c_int {
    // SAFETY: caller's contract.
    unsafe {
        ffi::lua_pushcfunction(l, func);
        ffi::lua_pushlightuserdata(l, ud);
        luaT_call(l, 1, 0)
    }
}

/// `luaT_error(L)`: raises the last error of the diagnostics as an error
/// object (`type`, `message`); "unknown error" when there is none.
///
/// # Safety
///
/// `L` is the state of the running C function.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaT_error(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: caller's contract; the Rust values are dropped before
    // lua_error.
    unsafe {
        {
            let d = diag::last().unwrap_or(Diag {
                kind: ErrorKind::IllegalParams,
                message: "unknown error".into(),
                type_name: None,
            });
            let mut s = crate::raw::Stack::from_state(l);
            crate::raw::error::push(&mut s, d.kind, &d.message);
            if let Some(t) = d.type_name {
                s.push_str(&t);
                s.set_field(-2, c"type");
            }
        }
        ffi::lua_error(l)
    }
}

/// `luaT_tolstring(L, idx, len)`: pushes the value's string form, as
/// `tostring` makes it (`__tostring`, booleans, nil, `type: address`), and
/// returns it (its length in `*len` when `len` is not NULL).
///
/// # Safety
///
/// `L` is a valid state with room for 2 values; `idx` acceptable; `len`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaT_tolstring(
    l: *mut ffi::lua_State,
    idx: c_int,
    len: *mut usize,
) -> *const c_char {
    // SAFETY: caller's contract.
    unsafe { tolstring(l, idx, len) }
}

/// # Safety
///
/// As [`luaT_tolstring`]'s.
unsafe fn tolstring(l: *mut ffi::lua_State, idx: c_int, len: *mut usize) -> *const c_char {
    // SAFETY: caller's contract (of `luaT_tolstring`).
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        if ffi::luaL_callmeta(l, idx, c"__tostring".as_ptr()) == 0 {
            match ffi::lua_type(l, idx) {
                ffi::LUA_TNUMBER | ffi::LUA_TSTRING => ffi::lua_pushvalue(l, idx),
                ffi::LUA_TBOOLEAN => {
                    let s = if ffi::lua_toboolean(l, idx) != 0 {
                        c"true"
                    } else {
                        c"false"
                    };
                    ffi::lua_pushstring(l, s.as_ptr());
                }
                ffi::LUA_TNIL => {
                    ffi::lua_pushstring(l, c"nil".as_ptr());
                }
                t => {
                    let name = ffi::lua_typename(l, t);
                    ffi::lua_pushfstring(l, c"%s: %p".as_ptr(), name, ffi::lua_topointer(l, idx));
                }
            }
        }
        ffi::lua_tolstring(l, -1, len)
    }
}

/// `luaL_iscallable(L, idx)`: 1 for a function or a value whose metatable
/// has `__call`. Difference: a cdata is never callable here (Tarantool
/// looks into function pointer types and metatypes).
///
/// # Safety
///
/// `L` is a valid state with room for 1 value; `idx` acceptable.
#[no_mangle]
pub unsafe extern "C-unwind" fn luaL_iscallable(l: *mut ffi::lua_State, idx: c_int) -> c_int {
    // SAFETY: caller's contract; the metafield read is popped.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TFUNCTION => 1,
            10 if cfg!(feature = "luajit") => 0,
            _ => {
                if ffi::luaL_getmetafield(l, idx, c"__call".as_ptr()) == ffi::LUA_TNIL {
                    return 0;
                }
                ffi::lua_pop(l, 1);
                1
            }
        }
    }
}
