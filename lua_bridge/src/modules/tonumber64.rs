//! The global `tonumber64(value [, base])`: Tarantool master's
//! `lbox_tonumber64` (`src/lua/init.c`).
//!
//! - A number is returned as it is (a `base` other than 10 raises
//!   "argument 1 is not a string").
//! - A string, its surrounding spaces dropped, is read in `base` (2..=36;
//!   by default 10, or 16 after `0x`, 2 after `0b`), with an optional `-`
//!   and, in bases 2, 10 and 16, a `LL`, `ULL` or `LLU` suffix: the value
//!   as a number when it is within 10^14 - 1, else an `int64_t` (negative)
//!   or `uint64_t` cdata on LuaJIT; `nil` when the text is not a whole
//!   number, is empty or is out of the 64-bit range. A negative value with
//!   a `ULL` suffix wraps (`'-1ULL'` is 2^64 - 1).
//! - An integer or floating cdata (LuaJIT) is returned as it is; anything
//!   else gives `nil`.
//!
//! Errors (`IllegalParams` objects): `Usage: tonumber64(arg)`, `expected
//! integer as 2 argument`, `invalid argument 2, base out of range`.
//!
//! Difference from Tarantool: on Lua 5.4, which has no cdata, a value is an
//! integer; above 2^63 - 1 it is the integer with the same 64 bits (it
//! reads negative, as `uint64_t` arithmetic would wrap).

use std::ffi::c_int;

use mlua::ffi;

use crate::capi::lua;
use crate::raw::{lua_fn, Raise, Stack};

/// Tarantool's `DBL_INT_MAX` (`src/lua/utils.c`).
const DBL_INT_MAX: i64 = 100_000_000_000_000 - 1;

/// Sets the global `tonumber64`.
pub(crate) fn register(s: &mut Stack) {
    s.push_globals();
    s.push_cfunction(tonumber64);
    s.set_field(-2, c"tonumber64");
    s.pop(1);
}

/// C's `isspace` in the C locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// What a string reads as.
enum Parsed {
    /// Not a whole number, or out of range.
    Nil,
    /// A value and whether it is signed (negative).
    Value(u64, bool),
}

/// `strtoull(text, &end, base)` with `errno`: the value when it read all
/// of `text` with no error.
fn strtoull_whole(text: &[u8], base: c_int) -> Option<u64> {
    let c = std::ffi::CString::new(text).ok()?;
    let mut end = std::ptr::null_mut();
    // SAFETY: `c` is NUL-terminated, `end` gets a pointer into it; errno
    // is this thread's.
    let v = unsafe {
        *libc::__errno_location() = 0;
        libc::strtoull(c.as_ptr(), &mut end, base)
    };
    // SAFETY: as above.
    let errno = unsafe { *libc::__errno_location() };
    let used = (end as usize).wrapping_sub(c.as_ptr() as usize);
    (errno == 0 && used == text.len()).then_some(v)
}

/// `lbox_tonumber64`'s reading of a string in `base` (-1: by its prefix).
fn parse(text: &[u8], mut base: c_int) -> Parsed {
    let mut a = text;
    while let [rest @ .., last] = a {
        if !is_space(*last) {
            break;
        }
        a = rest;
    }
    while let [first, rest @ ..] = a {
        if !is_space(*first) {
            break;
        }
        a = rest;
    }
    let negative = a.first() == Some(&b'-');
    if negative {
        a = &a[1..];
    }
    if a.len() > 2 && a[0] == b'0' {
        if matches!(a[1], b'x' | b'X') && (base == 16 || base == -1) {
            base = 16;
            a = &a[2..];
        } else if matches!(a[1], b'b' | b'B') && (base == 2 || base == -1) {
            base = 2;
            a = &a[2..];
        }
    }
    let mut ull = false;
    if a.len() > 2 && matches!(base, 2 | 16 | -1) {
        let is_u = |c: u8| c == b'u' || c == b'U';
        let is_l = |c: u8| c == b'l' || c == b'L';
        let mut n = a.len();
        if is_u(a[n - 1]) {
            ull = true;
            n -= 1;
        }
        if is_l(a[n - 1]) && is_l(a[n - 2]) {
            n -= 2;
            if !ull && n > 0 && is_u(a[n - 1]) {
                ull = true;
                n -= 1;
            }
        } else {
            // master's `goto skip`: a stripped `u` stays stripped.
            ull = false;
        }
        a = &a[..n];
    }
    let base = if base == -1 { 10 } else { base };
    let Some(v) = strtoull_whole(a, base) else {
        return Parsed::Nil;
    };
    if a.is_empty() {
        return Parsed::Nil;
    }
    if !negative {
        return Parsed::Value(v, false);
    }
    if ull {
        return Parsed::Value((u64::MAX - v).wrapping_add(1), false);
    }
    if v != 0 && v - 1 > i64::MAX as u64 {
        return Parsed::Nil;
    }
    Parsed::Value(v.wrapping_neg(), true)
}

lua_fn! {
    /// `tonumber64(value [, base])`.
    fn tonumber64(s: &mut Stack) {
        if s.top() < 1 {
            return Err(Raise::illegal("Usage: tonumber64(arg)"));
        }
        let base = if s.is_none_or_nil(2) {
            -1
        } else {
            match s.to_number(2) {
                Some(b) if s.type_of(2) == ffi::LUA_TNUMBER => b as c_int,
                _ => return Err(Raise::illegal("expected integer as 2 argument")),
            }
        };
        if !(2..=36).contains(&base) && base != -1 {
            return Err(Raise::illegal("invalid argument 2, base out of range"));
        }
        let not_string = || Raise::illegal("argument 1 is not a string");
        match s.type_of(1) {
            ffi::LUA_TNUMBER => {
                if base != -1 && base != 10 {
                    return Err(not_string());
                }
                s.settop(1);
            }
            ffi::LUA_TSTRING => {
                let text = s.to_str(1).unwrap_or_default().to_vec();
                match parse(&text, base) {
                    Parsed::Nil => s.push_nil(),
                    Parsed::Value(v, signed) if cfg!(feature = "lua54") => {
                        let _ = signed;
                        s.push_int(v as i64);
                    }
                    Parsed::Value(v, signed) => {
                        lua::push_int64_within(s, v, !signed, DBL_INT_MAX)?;
                    }
                }
            }
            #[cfg(feature = "luajit")]
            crate::luajit::obj::LUA_TCDATA => {
                if base != -1 && base != 10 {
                    return Err(not_string());
                }
                use crate::luajit::cdata::Scalar;
                let scalar = crate::luajit::layout().ctypes.and_then(|ct| ct.read_at(s, 1));
                match scalar {
                    Some(Scalar::Int(_) | Scalar::Uint(_) | Scalar::F32(_) | Scalar::F64(_)) => {
                        s.settop(1)
                    }
                    _ => s.push_nil(),
                }
            }
            _ => s.push_nil(),
        }
        Ok(1)
    }
}
