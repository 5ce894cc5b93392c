//! The decoding functions of a msgpack module: `decode`,
//! `decode_unchecked`, `ibuf_decode`, `decode_array_header`,
//! `decode_map_header` (Tarantool's `lua_msgpack_decode*`,
//! `lua_ibuf_msgpack_decode`, `lua_decode_{array,map}_header`).
//!
//! A pointer argument is a `char *` or `const char *` cdata (LuaJIT), or a
//! light userdata (a buffer pointer where there is no FFI); the pointer
//! returned is of the argument's kind. Argument errors are strings, as
//! Tarantool's `luaL_error`; bad MsgPack found by the check is Tarantool's
//! `ClientError` ("Invalid MsgPack - truncated input").

use std::ffi::c_int;

use luafiber_runtime::ibuf;

use super::decode::reader::{self, Head, Reader};
use super::decode::Decoder;
use super::{settle, state, State};
use crate::modules::buffer;
use crate::raw::error::{type_name, ErrorKind};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// A pointer argument: its address and kind.
#[derive(Clone, Copy)]
pub(super) enum Ptr {
    /// A `char *` (0) or `const char *` (1) cdata.
    Cdata(usize, usize),
    /// A light userdata.
    Light(usize),
}

impl Ptr {
    pub(super) fn addr(self) -> usize {
        match self {
            Ptr::Cdata(a, _) | Ptr::Light(a) => a,
        }
    }

    /// Pushes a pointer of the same kind at `addr`.
    pub(super) fn push(self, s: &mut Stack, st: &State, addr: usize) -> LResult<()> {
        match (self, st.x.cdata) {
            (Ptr::Cdata(_, kind), Some(c)) => c.push_ptr(s, kind, addr),
            _ => {
                s.push_light(addr as *mut std::ffi::c_void);
                Ok(())
            }
        }
    }
}

/// The pointer argument at `idx` (Tarantool's `luaL_checkconstchar`).
pub(super) fn to_ptr(s: &Stack, st: &State, idx: c_int) -> Option<Ptr> {
    if s.type_of(idx) == mlua::ffi::LUA_TLIGHTUSERDATA {
        return Some(Ptr::Light(s.to_userdata(idx) as usize));
    }
    let (addr, kind) = st.x.cdata?.read_ptr(s, idx)?;
    Some(Ptr::Cdata(addr, kind))
}

/// Lua's `luaL_checkinteger` for argument `idx` of function `name`.
pub(super) fn check_integer(s: &Stack, idx: c_int, name: &str) -> LResult<i64> {
    if let Some(n) = s.to_number(idx) {
        return Ok(n as i64);
    }
    if let Some(n) = s
        .to_str(idx)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| t.trim().parse::<f64>().ok())
    {
        return Ok(n as i64);
    }
    let got = if s.type_of(idx) == mlua::ffi::LUA_TNONE {
        "no value".to_string()
    } else {
        type_name(s.type_of(idx)).to_string_lossy().into_owned()
    };
    Err(Raise::Message(format!(
        "bad argument #{idx} to '{name}' (number expected, got {got})"
    )))
}

/// The bytes from `ptr` on: `len` of them, or, without a length, as many
/// as the live ibuf holding `ptr` has (a light userdata must be in one);
/// a cdata pointer into no ibuf is read as Tarantool reads it, trusting
/// the caller for the bytes of one value. A NULL pointer raises.
///
/// The contract is the Lua caller's, which no Rust caller can check: `ptr`
/// is a pointer argument of a Lua call (a [`Ptr`] is only made by
/// [`to_ptr`]), and whoever passes a cdata pointer vouches that it and the
/// `len` bytes after it (or the one MsgPack value there) are readable, as
/// Tarantool's `decode(ptr, size)` and `decode_unchecked(ptr)` require. The
/// slice is used before anything runs that could free them (the callers
/// copy the value out, or read only its header).
fn bytes_at<'a>(ptr: Ptr, len: Option<usize>) -> LResult<&'a [u8]> {
    let addr = ptr.addr();
    if addr == 0 {
        // Tarantool would read address 0; a NULL is refused here.
        return Err(Raise::Message("msgpack.decode: the pointer is NULL".into()));
    }
    let avail = match (buffer::readable(addr, None), ptr) {
        (Some(n), _) => n,
        (None, Ptr::Cdata(..)) => isize::MAX as usize - addr,
        (None, Ptr::Light(_)) => {
            return Err(Raise::Message(
                "msgpack.decode: the pointer is not inside a live ibuf".into(),
            ))
        }
    };
    let n = len.unwrap_or(avail);
    // SAFETY: the Lua caller's contract for a cdata pointer (see above),
    // or the bytes of a live ibuf up to its `wpos`.
    Ok(unsafe { std::slice::from_raw_parts(addr as *const u8, n) })
}

/// Decodes the value at `ptr` (`len` bytes, or unbounded), checking it
/// first; pushes the value and the pointer after it.
fn decode_ptr(s: &mut Stack, st: &State, ptr: Ptr, len: Option<usize>) -> LResult<c_int> {
    // The value is copied out before any Lua object is made, so Lua code
    // run by the collector cannot free it under the decoder.
    let src = bytes_at(ptr, len)?;
    // Checked whether asked or not: the copy needs the value's length.
    let used = reader::check(src).map_err(|b| b.raise())?;
    ibuf::with_cord_scratch(|copy| -> LResult<()> {
        copy.extend_from_slice(&src[..used])
            .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
        Decoder::new(st).decode(s, copy.data())?;
        Ok(())
    })?;
    ptr.push(s, st, ptr.addr() + used)?;
    Ok(2)
}

/// The shared body of `decode` and `decode_unchecked`.
fn decode_entry(s: &mut Stack, check: bool) -> LResult<c_int> {
    let top = s.top();
    let r = decode_args(s, top, check);
    r.map_err(|e| settle(s, top.max(2), e))
}

fn decode_args(s: &mut Stack, top: c_int, check: bool) -> LResult<c_int> {
    // The decoder copies the words of the state it needs.
    let dec = Decoder::new(&state(s));
    // `decode(s)`, the hot path: the string read in place (an empty one
    // is the decoder's "truncated input", as the check's).
    if let Some(r) = dec.decode_only_arg(s) {
        let used = r?;
        s.push_int((used + 1) as i64);
        return Ok(2);
    }
    if top >= 1 && s.type_of(1) == mlua::ffi::LUA_TSTRING {
        let len = s.to_str(1).map_or(0, <[u8]>::len);
        let offset = if top > 1 {
            let o = check_integer(s, 2, if check { "decode" } else { "decode_unchecked" })? - 1;
            if o < 0 || o as usize >= len {
                return Err(Raise::Message(
                    "msgpack.decode: offset is out of bounds".into(),
                ));
            }
            o as usize
        } else {
            0
        };
        s.settop(1);
        let used = dec.decode_arg(s, offset)?;
        s.push_int((offset + used + 1) as i64);
        return Ok(2);
    }
    let st = state(s);
    let Some(ptr) = (top >= 1).then(|| to_ptr(s, &st, 1)).flatten() else {
        return Err(Raise::Message(
            "msgpack.decode: a Lua string or 'char *' expected".into(),
        ));
    };
    let len = if check {
        let n = check_integer(s, 2, "decode")?;
        if n < 0 {
            return Err(Raise::Message(
                "msgpack.decode: size can't be negative".into(),
            ));
        }
        Some(n as usize)
    } else {
        None
    };
    s.settop(1);
    decode_ptr(s, &st, ptr, len)
}

lua_fn! {
    /// `msgpack.decode(s [, pos])` / `msgpack.decode(ptr, size)`.
    pub(super) fn mp_decode(s: &mut Stack) {
        decode_entry(s, true)
    }
}

lua_fn! {
    /// `msgpack.decode_unchecked(s [, pos])` / `(ptr)`: no check first (the
    /// decoder still bounds every read of a string or an ibuf).
    pub(super) fn mp_decode_unchecked(s: &mut Stack) {
        decode_entry(s, false)
    }
}

lua_fn! {
    /// `msgpack.ibuf_decode(rpos)`: the pointer after the value at `rpos`,
    /// and the value.
    pub(super) fn mp_ibuf_decode(s: &mut Stack) {
        let st = state(s);
        let Some(ptr) = to_ptr(s, &st, 1) else {
            return Err(Raise::Message("expected cdata as 1 argument".into()));
        };
        if ptr.addr() == 0 {
            return Err(Raise::Message("msgpack.ibuf_decode: rpos is null".into()));
        }
        s.settop(1);
        let n = decode_ptr(s, &st, ptr, None).map_err(|e| settle(s, 1, e))?;
        debug_assert_eq!(n, 2);
        // (value, pointer) -> (pointer, value)
        s.insert(-2);
        Ok(2)
    }
}

/// The shared body of the header decoders: `map` picks the kind.
fn decode_header(s: &mut Stack, map: bool) -> LResult<c_int> {
    let name = if map {
        "msgpack.decode_map_header"
    } else {
        "msgpack.decode_array_header"
    };
    if s.top() != 2 {
        return Err(Raise::Message(format!("Usage: {name}(ptr, size)")));
    }
    let st = state(s);
    let Some(ptr) = to_ptr(s, &st, 1) else {
        return Err(Raise::Message(format!("{name}: 'char *' expected")));
    };
    let size = check_integer(s, 2, name.trim_start_matches("msgpack."))?;
    if size <= 0 {
        return Err(Raise::Message(format!("{name}: non-positive size")));
    }
    // Only the header is read.
    let data = bytes_at(ptr, Some(size as usize))?;
    let is_kind = match data[0] {
        0x80..=0x8f | 0xde | 0xdf => map,
        0x90..=0x9f | 0xdc | 0xdd => !map,
        _ => false,
    };
    if !is_kind {
        return Err(Raise::Message(format!("{name}: unexpected msgpack type")));
    }
    let mut r = Reader { data, pos: 0 };
    let n = match r.head() {
        Ok(Head::Map(n) | Head::Array(n)) => n,
        _ => return Err(Raise::Message(format!("{name}: unexpected end of buffer"))),
    };
    s.push_int(i64::from(n));
    ptr.push(s, &st, ptr.addr() + r.pos)?;
    Ok(2)
}

lua_fn! {
    /// `msgpack.decode_array_header(ptr, size)`: the array's length and
    /// the pointer after its header.
    pub(super) fn mp_decode_array_header(s: &mut Stack) {
        decode_header(s, false)
    }
}

lua_fn! {
    /// `msgpack.decode_map_header(ptr, size)`: the map's pair count and the
    /// pointer after its header.
    pub(super) fn mp_decode_map_header(s: &mut Stack) {
        decode_header(s, true)
    }
}
