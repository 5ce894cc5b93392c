//! The Lua `msgpack` module: Tarantool's `msgpack` (`src/lua/msgpack.c`),
//! with the wire format written by the `rmp` crate.
//!
//! - `msgpack.encode(value [, ibuf])`: the MsgPack string of `value`; with an
//!   ibuf object, appends the bytes at its `wpos` and returns their count.
//! - `msgpack.decode(s [, pos])`: the value at byte `pos` (default 1) of `s`
//!   and the position just after it. `msgpack.decode(ptr, size)`: the value
//!   at a pointer into an ibuf and the pointer just after it.
//! - `msgpack.decode_unchecked(s [, pos])` / `(ptr [, size])`: the same
//!   (input is always checked here; see below).
//! - `msgpack.NULL` (MsgPack nil), `msgpack.array_mt`, `msgpack.map_mt`
//!   (set on decoded tables, so they encode back as the same kind; assigning
//!   a new key drops them), `msgpack.cfg{...}` and its fields.
//!
//! Encoding follows Tarantool's `luaL_tofield` byte for byte: integral
//! numbers in the `int64`/`uint64` range take the shortest integer form,
//! other numbers `float64`; strings are `str`; a table is an array when its
//! keys are `1..n` (holes allowed unless the array is "excessively sparse":
//! `n > count * encode_sparse_ratio` and `n > encode_sparse_safe`), else a
//! map; a metatable's `__serialize` (`'seq'`, `'sequence'`, `'array'`,
//! `'map'`, `'mapping'`, or a function whose result is encoded instead)
//! overrides that. Encoding goes through a cord buffer
//! ([`luafiber_runtime::ibuf::with_cord_scratch`]: take, encode, push the
//! result, put), so in steady state it allocates only the result string.
//!
//! On LuaJIT a table is read in place through LuaJIT's object layout
//! (`encode::raw`: the array part and the hash nodes, no C API call per key
//! or value), a layout checked against a probe table when the module opens.
//! Whatever that path does not cover (a `__serialize` function, userdata,
//! cdata it does not know, keys past the array part of an array, every
//! error) it hands to the
//! C API path before anything ran, so the bytes and errors are the same.
//!
//! A `__serialize` function (and `tostring`, for `encode_use_tostring`) is
//! called by `lua_pcall` of a trampoline C function fetched by registry ref:
//! no C function is pushed per table.
//!
//! Differences from Tarantool:
//!
//! - On Lua 5.4 `msgpack.NULL` (and a decoded nil) is a light userdata NULL,
//!   so `msgpack.NULL == nil` is false there. On LuaJIT it is Tarantool's
//!   `ffi.cast('void *', 0)`, and scalar cdata (`1LL`, `1ULL`, the other
//!   integer types, `float`, `double`, `bool`, a NULL pointer) encode as in
//!   Tarantool (`cdata`).
//! - Errors are error objects (`err.type`, `err.message`; `tostring(err)`
//!   is Tarantool's message), not strings: `string.find(err, ...)` needs
//!   `tostring(err)`.
//! - A chain of more than 64 `__serialize` functions, each returning a value
//!   with the next, raises; `decode(s, pos)` wants an integer `pos`;
//!   `msgpack.cfg` refuses values of the wrong type or range.
//! - Integers beyond 2^53 decode to Lua numbers (integers on Lua 5.4 up to
//!   2^63-1), not `int64`/`uint64` cdata; MsgPack extensions (decimal, uuid,
//!   datetime, error) are refused.
//! - Decoding always checks its input: bad input raises a `DecodeError`, and
//!   nesting is limited by `cfg.decode_max_depth` (Tarantool applies that
//!   option to JSON only); `decode_unchecked` is `decode` under another name.
//!   Encoding nests at most [`MAX_NESTING`] levels whatever the config, and
//!   no deeper than the fiber's stack holds with 64 KiB to spare (an
//!   `IllegalParams` error past that; about 660 levels of `__serialize`
//!   functions on a 512 KiB stack, more for plain tables).
//! - `msgpack.new()`, `ibuf_decode` and the header helpers are not provided.

mod decode;
mod encode;
#[cfg(test)]
mod tests;

use std::ffi::{c_int, CStr};

use luafiber_runtime::ibuf;
use mlua::ffi;

#[cfg(feature = "luajit")]
use crate::luajit::cdata;
use crate::modules::buffer;
use crate::modules::serializer::config::{self as cfg_opts, OPTIONS};
pub(crate) use crate::modules::serializer::Config;
use crate::raw::api;
use crate::raw::error::ErrorKind;
use crate::raw::Stack;
use crate::raw::{lua_fn, LResult, Raise};

/// Most nesting levels the encoder enters, whatever `encode_max_depth` says:
/// the encoder recurses on the fiber's machine stack.
pub const MAX_NESTING: u32 = 1000;

/// The module's per-state data: a userdata that every module function has
/// as upvalue 1. Read by value at each call, so Lua code that runs during an
/// encode (and may call `msgpack.cfg`) never aliases a Rust borrow.
#[derive(Clone, Copy)]
pub(crate) struct State {
    pub cfg: Config,
    /// The trampoline `call(f, x) -> f(x)`.
    pub call: c_int,
    /// The base library's `next` (protected traversal after Lua code ran).
    pub next: c_int,
    /// The base library's `tostring`.
    pub tostring: c_int,
    /// The string `"__serialize"`.
    pub serialize_key: c_int,
    pub array_mt: c_int,
    pub map_mt: c_int,
    pub buffer: buffer::Ctx,
    /// The layout of LuaJIT's tables, when the encoder's fast path checked
    /// it (`encode::raw`).
    #[cfg(feature = "luajit")]
    pub raw: Option<encode::raw::Layout>,
    /// `msgpack.NULL` when it is a cdata (`ffi.cast('void *', 0)`, as in
    /// Tarantool), else `LUA_NOREF` (a light userdata NULL).
    pub null: c_int,
    /// The scalar C types the encoder reads (`cdata`).
    #[cfg(feature = "luajit")]
    pub ctypes: Option<cdata::CTypes>,
}

impl State {
    /// Pushes `msgpack.NULL`.
    ///
    /// # Safety
    ///
    /// `l` is a thread of the module's state with room for a value.
    pub(crate) unsafe fn push_null(&self, l: *mut ffi::lua_State) {
        // SAFETY: caller's contract.
        unsafe {
            if self.null == ffi::LUA_NOREF {
                ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
            } else {
                api::push_registry_ref(l, self.null);
            }
        }
    }
}

/// The state a module function sees as upvalue 1.
unsafe fn state(l: *mut ffi::lua_State) -> *mut State {
    // SAFETY: every function of this module is a closure over the state
    // userdata (set up in `open`).
    unsafe { ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)).cast() }
}

/// Calls `f(x)` for the encoder: the function and its argument are on the
/// stack; errors go to the caller's `lua_pcall`. Not under `protect`: it
/// owns nothing, and a Lua error passes through it.
unsafe extern "C-unwind" fn call_trampoline(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by lua_pcall with (f, x).
    unsafe {
        ffi::lua_call(l, ffi::lua_gettop(l) - 1, 1);
    }
    1
}

/// Pushes the `msgpack` module table.
///
/// # Safety
///
/// `l` is a valid state with room for 8 values, not inside a `lua_fn` body
/// (setup runs Lua code under `lua_pcall`).
pub(crate) unsafe fn open(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract; every push is balanced.
    unsafe {
        let ctx = buffer::init(l);
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<State>()).cast::<State>();
        let st_idx = ffi::lua_gettop(l);
        let mut st = State {
            cfg: Config::default(),
            call: ffi::LUA_NOREF,
            next: ffi::LUA_NOREF,
            tostring: ffi::LUA_NOREF,
            serialize_key: ffi::LUA_NOREF,
            array_mt: ffi::LUA_NOREF,
            map_mt: ffi::LUA_NOREF,
            buffer: ctx,
            #[cfg(feature = "luajit")]
            raw: None,
            null: ffi::LUA_NOREF,
            #[cfg(feature = "luajit")]
            ctypes: None,
        };
        p.write(st);
        ffi::lua_pushcfunction(l, crate::raw::wide_cfn!(call_trampoline));
        st.call = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        st.next = global_ref(l, c"next");
        st.tostring = global_ref(l, c"tostring");
        ffi::lua_pushstring(l, c"__serialize".as_ptr());
        st.serialize_key = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        #[cfg(feature = "luajit")]
        {
            st.raw = encode::raw::probe(l, st.serialize_key);
            (st.null, st.ctypes) = cdata::probe(l);
            if st.ctypes.is_some() && !encode::raw::cdata_ok(l, st.null) {
                st.raw = None;
            }
        }
        for (kind, slot) in [(c"seq", &mut st.array_mt), (c"map", &mut st.map_mt)] {
            ffi::lua_createtable(l, 0, 2);
            ffi::lua_pushstring(l, kind.as_ptr());
            ffi::lua_setfield(l, -2, c"__serialize".as_ptr());
            ffi::lua_pushcfunction(l, decoded_newindex);
            ffi::lua_setfield(l, -2, c"__newindex".as_ptr());
            *slot = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        }
        p.write(st);

        ffi::lua_createtable(l, 0, 8);
        let funcs: &[(&CStr, ffi::lua_CFunction)] = &[
            (c"encode", mp_encode),
            (c"decode", mp_decode),
            (c"decode_unchecked", mp_decode_unchecked),
        ];
        for (name, f) in funcs {
            ffi::lua_pushvalue(l, st_idx);
            ffi::lua_pushcclosure(l, *f, 1);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        st.push_null(l);
        ffi::lua_setfield(l, -2, c"NULL".as_ptr());
        api::push_registry_ref(l, st.array_mt);
        ffi::lua_setfield(l, -2, c"array_mt".as_ptr());
        api::push_registry_ref(l, st.map_mt);
        ffi::lua_setfield(l, -2, c"map_mt".as_ptr());
        // cfg: a table of the current values, callable to change them.
        ffi::lua_createtable(l, 0, OPTIONS.len() as c_int);
        cfg_opts::write_fields(&mut Stack::from_state(l), -1, &st.cfg);
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushvalue(l, st_idx);
        ffi::lua_pushcclosure(l, mp_cfg, 1);
        ffi::lua_setfield(l, -2, c"__call".as_ptr());
        ffi::lua_setmetatable(l, -2);
        ffi::lua_setfield(l, -2, c"cfg".as_ptr());
        ffi::lua_remove(l, st_idx);
    }
}

/// A registry ref of the global `name` (read raw), or `LUA_NOREF`.
unsafe fn global_ref(l: *mut ffi::lua_State, name: &CStr) -> c_int {
    // SAFETY: caller's contract (room for 2 values); raw reads only.
    unsafe {
        ffi::lua_pushglobaltable(l);
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_rawget(l, -2);
        ffi::lua_remove(l, -2);
        if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
            ffi::lua_pop(l, 1);
            return ffi::LUA_NOREF;
        }
        ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)
    }
}

lua_fn! {
    /// `msgpack.cfg{option = value, ...}`: changes the options (unknown
    /// names are ignored, as in Tarantool; a known one with a value of the
    /// wrong type raises).
    fn mp_cfg(s: &mut Stack) {
        if s.type_of(2) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("Usage: msgpack.cfg({option = value, ...})"));
        }
        // SAFETY: a module closure (upvalue 1 is the state); read by value.
        let st = unsafe { state(s.as_ptr()) };
        // SAFETY: as above.
        let mut cfg = unsafe { (*st).cfg };
        cfg_opts::parse(s, 2, &mut cfg, "msgpack.cfg")?;
        // SAFETY: as above; no Lua code ran since the read.
        unsafe { (*st).cfg = cfg };
        if s.type_of(1) == ffi::LUA_TTABLE {
            s.settop(1);
            cfg_opts::write_fields(s, 1, &cfg);
        }
        Ok(0)
    }
}

lua_fn! {
    /// `__newindex` of `array_mt`/`map_mt`: a decoded table that gets a new
    /// key loses its kind hint (Tarantool: `setmetatable(t, nil)` +
    /// `rawset`).
    fn decoded_newindex(l) {
        // SAFETY: called by Lua with (table, key, value).
        unsafe {
            match ffi::lua_type(l, 2) {
                ffi::LUA_TNIL => return Err(Raise::illegal("table index is nil")),
                ffi::LUA_TNUMBER if ffi::lua_tonumber(l, 2).is_nan() => {
                    return Err(Raise::illegal("table index is NaN"));
                }
                _ => {}
            }
            if ffi::lua_type(l, 1) == ffi::LUA_TTABLE {
                ffi::lua_settop(l, 3);
                ffi::lua_pushnil(l);
                ffi::lua_setmetatable(l, 1);
                ffi::lua_rawset(l, 1);
            }
        }
        Ok(0)
    }
}

lua_fn! {
    /// `msgpack.encode(value [, ibuf])`.
    fn mp_encode(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let st = *state(l);
            let top = ffi::lua_gettop(l);
            if top < 1 {
                return Err(Raise::illegal("msgpack.encode: a Lua object expected"));
            }
            let target = if top >= 2 && ffi::lua_type(l, 2) != ffi::LUA_TNIL {
                let t = buffer::to_ibuf(l, &st.buffer, 2);
                Some(t.ok_or_else(|| Raise::illegal("msgpack.encode: argument 2 must be of type 'struct ibuf'"))?)
            } else {
                None
            };
            // The key sits above the arguments (no `lua_settop`: the encoder
            // is told where the top is).
            api::push_registry_ref(l, st.serialize_key);
            let key = top + 1;
            let result = ibuf::with_cord_scratch(|out| -> LResult<c_int> {
                encode::Encoder::new(l, &st, out, key).encode(1, key)?;
                match target {
                    None => api::push_bytes(l, out.data()),
                    Some(t) => {
                        let n = out.used();
                        buffer::with_ibuf(t, |b| b.extend_from_slice(out.data()))?
                            .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
                        ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                    }
                }
                Ok(1)
            });
            result.map_err(|e| settle(l, key, e))
        }
    }
}

/// Clears what a failed encode or decode left on the stack above `base`
/// (possibly a deep nest of tables, leaving no room to raise), keeping the
/// error value for [`Raise::Top`].
unsafe fn settle(l: *mut ffi::lua_State, base: c_int, e: Raise) -> Raise {
    // SAFETY: the calling state of a `lua_fn` body (caller); for
    // `Raise::Top` the error value is on top, above `base`.
    unsafe {
        if let Raise::Top = e {
            if ffi::lua_gettop(l) > base + 1 {
                ffi::lua_replace(l, base + 1);
            }
            ffi::lua_settop(l, base + 1);
        } else {
            ffi::lua_settop(l, base);
        }
    }
    e
}

/// The shared body of `decode` and `decode_unchecked`.
unsafe fn decode_entry(l: *mut ffi::lua_State, name: &str, size_required: bool) -> LResult<c_int> {
    // SAFETY: a module closure's state (caller).
    unsafe {
        ffi::lua_settop(l, 2);
        decode_args(l, name, size_required).map_err(|e| settle(l, 2, e))
    }
}

/// [`decode_entry`] on exactly two arguments.
unsafe fn decode_args(l: *mut ffi::lua_State, name: &str, size_required: bool) -> LResult<c_int> {
    // SAFETY: a module closure's state (caller).
    unsafe {
        let st = *state(l);
        let cfg = &st.cfg;
        if ffi::lua_type(l, 1) == ffi::LUA_TSTRING {
            let s = api::to_str(l, 1).unwrap_or_default();
            let pos = match ffi::lua_type(l, 2) {
                ffi::LUA_TNIL => 1.0,
                _ => api::to_number(l, 2).ok_or_else(|| {
                    Raise::illegal(format!("msgpack.{name}: offset must be a number"))
                })?,
            };
            if !(pos >= 1.0 && pos <= s.len() as f64 && pos.fract() == 0.0) {
                return Err(Raise::illegal(format!(
                    "msgpack.{name}: offset is out of bounds"
                )));
            }
            let start = pos as usize - 1;
            // The string stays at index 1 while the decoder reads it.
            let used = decode::Decoder::new(l, &st, cfg, name).decode(&s[start..])?;
            ffi::lua_pushnumber(l, (start + used + 1) as f64);
            return Ok(2);
        }
        let Some(addr) = buffer::to_pointer(l, &st.buffer, 1)? else {
            return Err(Raise::illegal(format!(
                "msgpack.{name}: a Lua string or 'char *' expected"
            )));
        };
        let size = match api::to_number(l, 2) {
            Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= usize::MAX as f64 => Some(n as usize),
            None if !size_required && ffi::lua_type(l, 2) == ffi::LUA_TNIL => None,
            _ => return Err(Raise::illegal(format!("Usage: msgpack.{name}(ptr, size)"))),
        };
        let avail = buffer::readable(addr, size).ok_or_else(|| {
            Raise::illegal(format!(
                "msgpack.{name}: the pointer is not inside a live ibuf"
            ))
        })?;
        let len = size.unwrap_or(avail);
        // SAFETY: `readable` checked that `len` bytes from `addr` are in a
        // live ibuf's memory, and nothing has run since.
        let src = std::slice::from_raw_parts(addr as *const u8, len);
        let used = decode::extent(src, name)?;
        // Copy the value out: Lua code run by the collector while the
        // decoder allocates could free or move the ibuf.
        ibuf::with_cord_scratch(|copy| -> LResult<()> {
            copy.extend_from_slice(&src[..used])
                .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
            decode::Decoder::new(l, &st, cfg, name).decode(copy.data())?;
            Ok(())
        })?;
        buffer::push_pointer(l, &st.buffer, (addr + used) as *const u8)?;
        Ok(2)
    }
}

lua_fn! {
    /// `msgpack.decode(s [, pos])` / `msgpack.decode(ptr, size)`.
    fn mp_decode(l) {
        // SAFETY: a module closure called by Lua.
        unsafe { decode_entry(l, "decode", true) }
    }
}

lua_fn! {
    /// `msgpack.decode_unchecked(s [, pos])` / `(ptr [, size])`.
    fn mp_decode_unchecked(l) {
        // SAFETY: a module closure called by Lua.
        unsafe { decode_entry(l, "decode_unchecked", false) }
    }
}
