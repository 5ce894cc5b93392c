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
//! Each is written over its caller's [`Stack`] (capi rule 5). Those that
//! raise (`luaL_check*int64`, `luaT_error`, and `luaT_tolstring` or
//! `luaT_call` when a `__tostring` raises) return the error, which is
//! raised once the body returned (capi rule 3, raw rule 2); the Lua code
//! they run (`luaT_call`'s function, a `__tostring`) runs under
//! `lua_pcall`, with the memory limit in force.

use std::ffi::{c_char, c_int, c_void};

use mlua::ffi;

use super::diag::{self, Diag};
use super::guard;
use crate::raw::error::ErrorKind;
use crate::raw::memory::with_limit;
use crate::raw::{LResult, Raise, Stack};

/// Largest integer a double holds exactly (Tarantool's `DBL_INT_MAX`).
const DBL_INT_MAX: i64 = (1 << 53) - 1;

/// `lua_type` of a cdata (LuaJIT's `LUA_TCDATA`; never on Lua 5.4).
const LUA_TCDATA: c_int = 10;

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

    const NONE: Ffi = Ffi {
        null: ffi::LUA_NOREF,
        ctypes: None,
        int64: ffi::LUA_NOREF,
        uint64: ffi::LUA_NOREF,
    };

    static KEY: u8 = 0;

    const TYPES: &str =
        "local ffi = require('ffi') return ffi.typeof('int64_t'), ffi.typeof('uint64_t')";

    /// The FFI handles of `s`'s state (none when its stack cannot grow).
    /// The chunks run under `lua_pcall`; the stack is left as it was.
    pub(super) fn get(s: &mut Stack) -> Ffi {
        let key = (&raw const KEY).cast_mut().cast::<c_void>();
        if s.ensure(8).is_err() {
            return NONE;
        }
        s.push_light(key);
        s.rawget(ffi::LUA_REGISTRYINDEX);
        if s.type_of(-1) == ffi::LUA_TUSERDATA {
            let kept = s.to_userdata(-1).cast::<Ffi>();
            // SAFETY: the userdata at `registry[&KEY]` is only ever made
            // below, holding an `Ffi` (a `Copy` value); it is on the stack
            // while it is read.
            let kept = unsafe { kept.read() };
            s.pop(1);
            return kept;
        }
        s.pop(1);
        let top = s.top();
        let mut f = NONE;
        if s.load(TYPES, c"=luaL_pushint64").is_ok() && s.pcall(0, 2).is_ok() {
            f.uint64 = s.make_ref();
            f.int64 = s.make_ref();
        }
        s.settop(top);
        f.null = lj::null_ref(s);
        // Last: it checks for its own room, and the handle's is none after
        // the protected calls above.
        f.ctypes = lj::learn(s);
        s.push_light(key);
        s.push_userdata(f);
        // A light userdata key is neither nil nor NaN.
        let _ = s.rawset(ffi::LUA_REGISTRYINDEX);
        f
    }
}

/// Pushes a 64-bit integer `bits` (signed when `signed`) that a double
/// does not hold: a cdata of that type on LuaJIT, else a float.
///
/// # Errors
///
/// The error of the cdata's constructor (out of memory), on top.
fn push_wide(s: &mut Stack, bits: u64, signed: bool) -> LResult<()> {
    #[cfg(feature = "luajit")]
    {
        let f = cdata::get(s);
        let ctype = if signed { f.int64 } else { f.uint64 };
        if ctype != ffi::LUA_NOREF {
            s.push_ref(ctype);
            s.pcall(0, 1).map_err(|()| Raise::Top)?;
            if s.type_of(-1) == LUA_TCDATA {
                let payload = s.to_pointer(-1).cast::<u64>().cast_mut();
                // SAFETY: a new `int64_t` or `uint64_t` cdata (its ctype
                // called with no argument), on the stack: its payload
                // (`lua_topointer`) is 8 bytes of that type, aligned.
                unsafe { payload.write(bits) };
            }
            return Ok(());
        }
    }
    s.push_number(if signed {
        bits as i64 as f64
    } else {
        bits as f64
    });
    Ok(())
}

/// Pushes `val` as Tarantool's FFI returns a `uint64_t`: a `uint64_t`
/// cdata on LuaJIT whatever its size (`digest.xxhash64` gives `1ULL`), an
/// integer with the same 64 bits on Lua 5.4 (above `2^63 - 1` it reads
/// negative: Lua 5.4 has no unsigned integers, and a float would lose the
/// low bits).
///
/// # Errors
///
/// The error of the cdata's constructor (out of memory), on top.
pub(crate) fn push_uint64_cdata(s: &mut Stack, val: u64) -> LResult<()> {
    if cfg!(feature = "lua54") {
        s.push_int(val as i64);
        Ok(())
    } else {
        push_wide(s, val, false)
    }
}

/// The integer at `idx` as a `uint64_t` argument of an FFI call reads it
/// (`luaL_convertint64`'s rule: a number truncated, an integer cdata, a
/// numeric string), or `None`.
pub(crate) fn to_uint64(s: &mut Stack, idx: c_int) -> Option<u64> {
    convert(s, idx, true).map(|v| v as u64)
}

capi! {
    /// `luaL_pushuint64(L, val)`: a number when a double holds `val`
    /// exactly, else a `uint64_t` cdata (LuaJIT) or an integer / float (Lua
    /// 5.4).
    ///
    /// # Safety
    ///
    /// `L` is a valid state.
    fn luaL_pushuint64(s: &mut Stack, val: u64) {
        push_uint64(s, val)
    }
}

/// `luaL_pushuint64` for the bridge's own modules: a number when a double
/// holds `val` exactly, else a `uint64_t` cdata (LuaJIT) or an integer /
/// float (Lua 5.4).
///
/// # Errors
///
/// The error of the cdata's constructor (out of memory), on top.
pub(crate) fn push_uint64(s: &mut Stack, val: u64) -> LResult<()> {
    if cfg!(feature = "lua54") && val <= i64::MAX as u64 {
        s.push_int(val as i64);
    } else if val <= DBL_INT_MAX as u64 {
        s.push_number(val as f64);
    } else {
        push_wide(s, val, false)?;
    }
    Ok(())
}

capi! {
    /// `luaL_pushint64(L, val)`: a number when a double holds `val`
    /// exactly, else an `int64_t` cdata (LuaJIT) or an integer (Lua 5.4).
    ///
    /// # Safety
    ///
    /// As [`luaL_pushuint64`].
    fn luaL_pushint64(s: &mut Stack, val: i64) {
        push_int64_within(s, val as u64, false, DBL_INT_MAX)
    }
}

/// Pushes a 64-bit integer as Tarantool's Lua decoders do: a number when
/// `-bound <= val <= bound` (Tarantool's `DBL_INT_MAX` is 10^14 - 1), else
/// an `int64_t` (`uint64_t` when `unsigned`) cdata on LuaJIT; an integer on
/// Lua 5.4 (a float past `i64::MAX`). `val` holds the value's 64 bits.
///
/// # Errors
///
/// The error of the cdata's constructor (out of memory), on top.
pub(crate) fn push_int64_within(
    s: &mut Stack,
    val: u64,
    unsigned: bool,
    bound: i64,
) -> LResult<()> {
    if cfg!(feature = "lua54") {
        if unsigned && val > i64::MAX as u64 {
            s.push_number(val as f64);
        } else {
            s.push_int(val as i64);
        }
    } else if unsigned && val <= bound as u64 {
        s.push_number(val as f64);
    } else if !unsigned && (-bound..=bound).contains(&(val as i64)) {
        s.push_number(val as i64 as f64);
    } else {
        push_wide(s, val, !unsigned)?;
    }
    Ok(())
}

/// The integer at `idx` as Tarantool's `luaL_convertint64` reads it: a
/// number (truncated), an integer cdata, or a string `strtoll`/`strtoull`
/// parse (base 10; trailing text ignored).
fn convert(s: &mut Stack, idx: c_int, unsigned: bool) -> Option<i64> {
    match s.type_of(idx) {
        ffi::LUA_TNUMBER => {
            if cfg!(feature = "lua54") && s.is_integer(idx) {
                return s.to_integer(idx);
            }
            let n = s.to_number(idx)?;
            Some(if unsigned && n >= i64::MAX as f64 {
                n as u64 as i64
            } else {
                n as i64
            })
        }
        ffi::LUA_TSTRING => strtoint(s.to_str(idx)?, unsigned),
        #[cfg(feature = "luajit")]
        LUA_TCDATA => {
            use crate::luajit::cdata::Scalar;
            match cdata::get(s).ctypes?.read_at(s, idx)? {
                Scalar::Int(i) => Some(i),
                Scalar::Uint(u) => Some(u as i64),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `s` as C's `strtoll` (`strtoull` when `unsigned`, the result's bits)
/// parses it in base 10: leading white space, a sign, digits, anything
/// after ignored; `None` with no digit or out of range (`ERANGE`).
/// `strtoull` negates a `-` number, as C's does.
fn strtoint(s: &[u8], unsigned: bool) -> Option<i64> {
    let s = &s[s
        .iter()
        .take_while(|c| b" \t\n\x0b\x0c\r".contains(c))
        .count()..];
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut m: u64 = 0;
    for &d in &s[..digits] {
        m = m.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    match (unsigned, neg) {
        (true, false) => Some(m as i64),
        (true, true) => Some(m.wrapping_neg() as i64),
        (false, false) => i64::try_from(m).ok(),
        (false, true) => (m <= 1 << 63).then(|| (m as i64).wrapping_neg()),
    }
}

/// "expected TYPE as IDX argument" (Tarantool's message), to raise.
fn expected(idx: c_int, ty: &str) -> Raise {
    Raise::Message(format!("expected {ty} as {idx} argument"))
}

capi! {
    /// `luaL_checkuint64(L, idx)`: the argument as `uint64_t`; raises
    /// "expected uint64_t as IDX argument" when it is none.
    ///
    /// # Safety
    ///
    /// `L` is the state of the running C function.
    fn luaL_checkuint64(s: &mut Stack, idx: c_int) -> u64 {
        match convert(s, idx, true) {
            Some(v) => Ok(v as u64),
            None => Err(expected(idx, "uint64_t")),
        }
    }
}

capi! {
    /// `luaL_checkint64(L, idx)`: the argument as `int64_t`; raises
    /// "expected int64_t as IDX argument" when it is none.
    ///
    /// # Safety
    ///
    /// As [`luaL_checkuint64`].
    fn luaL_checkint64(s: &mut Stack, idx: c_int) -> i64 {
        convert(s, idx, false).ok_or_else(|| expected(idx, "int64_t"))
    }
}

capi! {
    /// `luaL_touint64(L, idx)`: as [`luaL_checkuint64`], 0 instead of an
    /// error.
    ///
    /// # Safety
    ///
    /// `L` is a valid state.
    fn luaL_touint64(s: &mut Stack, idx: c_int) -> u64 {
        Ok(convert(s, idx, true).unwrap_or(0) as u64)
    }
}

capi! {
    /// `luaL_toint64(L, idx)`: as [`luaL_checkint64`], 0 instead of an
    /// error.
    ///
    /// # Safety
    ///
    /// As [`luaL_touint64`].
    fn luaL_toint64(s: &mut Stack, idx: c_int) -> i64 {
        Ok(convert(s, idx, false).unwrap_or(0))
    }
}

capi! {
    /// `luaL_iscdata(L, idx)`: 1 when the value is a cdata (never on Lua
    /// 5.4).
    ///
    /// # Safety
    ///
    /// `L` is a valid state.
    fn luaL_iscdata(s: &mut Stack, idx: c_int) -> c_int {
        Ok(c_int::from(cfg!(feature = "luajit") && s.type_of(idx) == LUA_TCDATA))
    }
}

capi! {
    /// `luaL_pushnull(L)`: pushes `msgpack.NULL`: `ffi.cast('void *', 0)`
    /// on LuaJIT, a light userdata NULL on Lua 5.4.
    ///
    /// # Safety
    ///
    /// `L` is a valid state.
    fn luaL_pushnull(s: &mut Stack) {
        #[cfg(feature = "luajit")]
        {
            let null = cdata::get(s).null;
            if null != ffi::LUA_NOREF {
                s.push_ref(null);
                return Ok(());
            }
        }
        s.push_light(std::ptr::null_mut());
        Ok(())
    }
}

capi! {
    /// `luaL_isnull(L, idx)`: whether the value is a NULL pointer (a `void
    /// *` cdata on LuaJIT, a light userdata on Lua 5.4).
    ///
    /// # Safety
    ///
    /// `L` is a valid state.
    fn luaL_isnull(s: &mut Stack, idx: c_int) -> bool {
        Ok(match s.type_of(idx) {
            ffi::LUA_TLIGHTUSERDATA => s.to_userdata(idx).is_null(),
            #[cfg(feature = "luajit")]
            LUA_TCDATA => {
                use crate::luajit::cdata::Scalar;
                let ctypes = cdata::get(s).ctypes;
                ctypes.and_then(|c| c.read_at(s, idx)) == Some(Scalar::Nil)
            }
            _ => false,
        })
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

/// Records the error value on top of `s` as the diagnostics (Tarantool's
/// `luaT_toerror`): an error object keeps its `type` and `message` (read
/// raw: the fields are its own), any other value becomes a `LuajitError`
/// with its string form. The stack is left as it was.
///
/// # Errors
///
/// The error of the value's `__tostring`, on top.
fn to_diag(s: &mut Stack) -> LResult<()> {
    let err = s.top();
    let mut found = None;
    if s.type_of(err) == ffi::LUA_TTABLE {
        s.rawget_field(err, c"type");
        s.rawget_field(err, c"message");
        if let (Some(t), Some(m)) = (s.to_str(-2), s.to_str(-1)) {
            found = Some((lossy(t), lossy(m)));
        }
    }
    let (ty, message) = match found {
        Some((t, m)) => (t, m),
        None => ("LuajitError".into(), lossy(tolstring(s, err)?.0)),
    };
    s.settop(err);
    diag::put(Some(Diag {
        kind: ErrorKind::IllegalParams,
        message,
        type_name: Some(ty),
    }));
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `lua_pcall` for `luaT_call`: 0, or 1 with the error recorded in the
/// diagnostics and left on the stack.
fn call(s: &mut Stack, nargs: c_int, nreturns: c_int) -> LResult<c_int> {
    if with_limit(|| s.pcall(nargs, nreturns)).is_ok() {
        return Ok(0);
    }
    to_diag(s)?;
    Ok(1)
}

capi! {
    /// `luaT_call(L, nargs, nreturns)`: `lua_pcall`; on an error returns
    /// non-zero with the error value left on the stack and recorded in the
    /// diagnostics (for [`luaT_error`]).
    ///
    /// # Safety
    ///
    /// As `lua_pcall`.
    fn luaT_call(s: &mut Stack, nargs: c_int, nreturns: c_int) -> c_int {
        call(s, nargs, nreturns)
    }
}

capi! {
    /// `luaT_cpcall(L, func, ud)`: calls `func` with the light userdata
    /// `ud` in protected mode; on an error as [`luaT_call`].
    ///
    /// # Safety
    ///
    /// As `lua_cpcall`.
    fn luaT_cpcall(s: &mut Stack, func: ffi::lua_CFunction, ud: *mut c_void) -> c_int {
        s.push_cfunction(func);
        s.push_light(ud);
        call(s, 1, 0)
    }
}

capi! {
    /// `luaT_error(L)`: raises the last error of the diagnostics as an
    /// error object (`type`, `message`); "unknown error" when there is
    /// none.
    ///
    /// # Safety
    ///
    /// `L` is the state of the running C function.
    fn luaT_error(s: &mut Stack) -> c_int {
        let d = diag::last().unwrap_or(Diag {
            kind: ErrorKind::IllegalParams,
            message: "unknown error".into(),
            type_name: None,
        });
        crate::raw::error::push(s, d.kind, &d.message);
        if let Some(t) = d.type_name {
            s.push_str(&t);
            s.set_field(-2, c"type");
        }
        Err(Raise::Top)
    }
}

capi! {
    /// `luaT_tolstring(L, idx, len)`: pushes the value's string form, as
    /// `tostring` makes it (`__tostring`, booleans, nil, `type: address`),
    /// and returns it (its length in `*len` when `len` is not NULL); raises
    /// the error of a `__tostring` that raises.
    ///
    /// # Safety
    ///
    /// `L` is a valid state; `idx` acceptable; `len` NULL or writable.
    fn luaT_tolstring(
        s: &mut Stack,
        idx: c_int,
        len: *mut usize => Option<&mut usize>,
    ) -> *const c_char {
        let (p, n) = match tolstring(s, idx)? {
            (b, true) => (b.as_ptr().cast(), b.len()),
            (_, false) => (std::ptr::null(), 0),
        };
        if let Some(len) = len {
            *len = n;
        }
        Ok(p)
    }
}

/// Pushes the string form of the value at `idx` ([`luaT_tolstring`]'s)
/// and returns its bytes, with `false` when a `__tostring` gave neither a
/// string nor a number (then the bytes are empty).
///
/// # Errors
///
/// The error of the value's `__tostring`, on top.
fn tolstring<'s>(s: &'s mut Stack, idx: c_int) -> LResult<(&'s [u8], bool)> {
    // A positive index past the top stays: it reads as none.
    let idx = if idx > 0 { idx } else { s.abs(idx) };
    if s.get_metafield(idx, c"__tostring") != ffi::LUA_TNIL {
        s.push_value(idx);
        with_limit(|| s.pcall(1, 1)).map_err(|()| Raise::Top)?;
    } else {
        match s.type_of(idx) {
            ffi::LUA_TNUMBER | ffi::LUA_TSTRING => s.push_value(idx),
            ffi::LUA_TBOOLEAN => s.push_str(if s.to_bool(idx) { "true" } else { "false" }),
            ffi::LUA_TNIL => s.push_str("nil"),
            _ => s.push_type_address(idx),
        }
    }
    Ok(match s.coerce_str(-1) {
        Some(b) => (b, true),
        None => (&[], false),
    })
}

capi! {
    /// `luaL_iscallable(L, idx)`: 1 for a function or a value whose
    /// metatable has `__call`. Difference: a cdata is never callable here
    /// (Tarantool looks into function pointer types and metatypes).
    ///
    /// # Safety
    ///
    /// `L` is a valid state; `idx` acceptable.
    fn luaL_iscallable(s: &mut Stack, idx: c_int) -> c_int {
        Ok(match s.type_of(idx) {
            ffi::LUA_TFUNCTION => 1,
            LUA_TCDATA if cfg!(feature = "luajit") => 0,
            _ => {
                if s.get_metafield(idx, c"__call") == ffi::LUA_TNIL {
                    return Ok(0);
                }
                s.pop(1);
                1
            }
        })
    }
}
