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

use crate::luajit::cdata::CTypes;
use crate::luajit::table::Tables;
use crate::modules::buffer;
use crate::modules::serializer::config::{self as cfg_opts, OPTIONS};
pub(crate) use crate::modules::serializer::Config;
use crate::raw::error::ErrorKind;
use crate::raw::{api, lua_fn, LResult, Raise, Stack};

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
    /// Tables read in place, when the probe checked LuaJIT's layout (the
    /// encoder's fast path, `encode::raw`).
    pub tables: Option<Tables>,
    /// `msgpack.NULL` when it is a cdata (`ffi.cast('void *', 0)`, as in
    /// Tarantool), else `LUA_NOREF` (a light userdata NULL).
    pub null: c_int,
    /// The scalar C types the encoder reads (LuaJIT's cdata).
    pub ctypes: Option<CTypes>,
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

/// The state userdata a module function sees as upvalue 1.
fn state_ptr(s: &Stack) -> *mut State {
    let p = s.to_userdata(Stack::upvalue(1)).cast::<State>();
    assert!(!p.is_null(), "a msgpack function without its state");
    p
}

/// The state a module function sees as upvalue 1, by value.
fn state(s: &Stack) -> State {
    // SAFETY: every function of this module is a closure over the state
    // userdata (`open` makes them all), which holds a `State`.
    unsafe { state_ptr(s).read() }
}

/// Makes `cfg` the options of the module whose function runs on `s`.
fn set_config(s: &Stack, cfg: Config) {
    // SAFETY: as in [`state`]; no reference into the userdata is live (the
    // state is only read by value).
    unsafe { (*state_ptr(s)).cfg = cfg };
}

/// Calls `f(x)` for the encoder: the function and its argument are on the
/// stack; errors go to the caller's `lua_pcall`. Not under `protect`: it
/// owns nothing, and a Lua error passes through it.
///
/// # Safety
///
/// Called by `lua_pcall` with a function and its argument on the stack.
unsafe extern "C-unwind" fn call_trampoline(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by lua_pcall with (f, x).
    unsafe {
        ffi::lua_call(l, ffi::lua_gettop(l) - 1, 1);
    }
    1
}

/// Pushes the `msgpack` module table (at setup: this runs Lua code under
/// `lua_pcall`).
pub(crate) fn open(s: &mut Stack) {
    let ctx = buffer::init(s);
    let layout = crate::luajit::layout();
    let mut st = State {
        cfg: Config::default(),
        call: ffi::LUA_NOREF,
        next: ffi::LUA_NOREF,
        tostring: ffi::LUA_NOREF,
        serialize_key: ffi::LUA_NOREF,
        array_mt: ffi::LUA_NOREF,
        map_mt: ffi::LUA_NOREF,
        buffer: ctx,
        tables: layout.tables,
        null: ffi::LUA_NOREF,
        ctypes: layout.ctypes,
    };
    s.push_cfunction(crate::raw::wide_cfn!(call_trampoline));
    st.call = s.make_ref();
    st.next = global_ref(s, c"next");
    st.tostring = global_ref(s, c"tostring");
    s.push_cstr(c"__serialize");
    st.serialize_key = s.make_ref();
    st.null = crate::luajit::cdata::null_ref(s);
    for (kind, slot) in [(c"seq", &mut st.array_mt), (c"map", &mut st.map_mt)] {
        let t = s.new_table(0, 2);
        s.push_cstr(kind);
        s.set_field(t, c"__serialize");
        s.push_cfunction(decoded_newindex);
        s.set_field(t, c"__newindex");
        *slot = s.make_ref();
    }
    s.push_userdata(st);
    let st_idx = s.top();

    let module = s.new_table(0, 8);
    for (name, f) in [
        (c"encode", mp_encode),
        (c"decode", mp_decode),
        (c"decode_unchecked", mp_decode_unchecked),
    ] {
        s.push_value(st_idx);
        s.push_closure(f, 1);
        s.set_field(module, name);
    }
    if st.null == ffi::LUA_NOREF {
        s.push_light(std::ptr::null_mut());
    } else {
        s.push_ref(st.null);
    }
    s.set_field(module, c"NULL");
    s.push_ref(st.array_mt);
    s.set_field(module, c"array_mt");
    s.push_ref(st.map_mt);
    s.set_field(module, c"map_mt");
    // cfg: a table of the current values, callable to change them.
    let cfg = s.new_table(0, OPTIONS.len() as c_int);
    cfg_opts::write_fields(s, cfg, &st.cfg);
    let mt = s.new_table(0, 1);
    s.push_value(st_idx);
    s.push_closure(mp_cfg, 1);
    s.set_field(mt, c"__call");
    s.set_metatable(cfg);
    s.set_field(module, c"cfg");
    s.remove(st_idx);
}

/// A registry ref of the global `name` (read raw), or `LUA_NOREF`.
fn global_ref(s: &mut Stack, name: &CStr) -> c_int {
    s.push_globals();
    s.rawget_field(-1, name);
    s.remove(-2);
    if s.type_of(-1) != ffi::LUA_TFUNCTION {
        s.pop(1);
        return ffi::LUA_NOREF;
    }
    s.make_ref()
}

lua_fn! {
    /// `msgpack.cfg{option = value, ...}`: changes the options (unknown
    /// names are ignored, as in Tarantool; a known one with a value of the
    /// wrong type raises).
    fn mp_cfg(s: &mut Stack) {
        if s.type_of(2) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("Usage: msgpack.cfg({option = value, ...})"));
        }
        let mut cfg = state(s).cfg;
        cfg_opts::parse(s, 2, &mut cfg, "msgpack.cfg")?;
        set_config(s, cfg);
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
    fn decoded_newindex(s: &mut Stack) {
        match s.type_of(2) {
            ffi::LUA_TNIL => return Err(Raise::illegal("table index is nil")),
            ffi::LUA_TNUMBER if s.to_number(2).is_some_and(f64::is_nan) => {
                return Err(Raise::illegal("table index is NaN"));
            }
            _ => {}
        }
        if s.type_of(1) == ffi::LUA_TTABLE {
            s.settop(3);
            s.push_nil();
            s.set_metatable(1);
            s.rawset(1)?;
        }
        Ok(0)
    }
}

lua_fn! {
    /// `msgpack.encode(value [, ibuf])`.
    fn mp_encode(s: &mut Stack) {
        let st = state(s);
        let top = s.top();
        if top < 1 {
            return Err(Raise::illegal("msgpack.encode: a Lua object expected"));
        }
        let target = if top >= 2 && s.type_of(2) != ffi::LUA_TNIL {
            let t = buffer::to_ibuf(s, &st.buffer, 2);
            Some(t.ok_or_else(|| Raise::illegal("msgpack.encode: argument 2 must be of type 'struct ibuf'"))?)
        } else {
            None
        };
        // The key sits above the arguments (no `settop`: the encoder is told
        // where the top is).
        s.push_ref(st.serialize_key);
        let key = top + 1;
        let result = ibuf::with_cord_scratch(|out| -> LResult<c_int> {
            encode::Encoder::new(&st, out, key).encode(s, 1)?;
            match &target {
                None => s.push_bytes(out.data()),
                Some(t) => {
                    let n = out.used();
                    buffer::with_ibuf(t, |b| b.extend_from_slice(out.data()))?
                        .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
                    s.push_int(n as i64);
                }
            }
            Ok(1)
        });
        result.map_err(|e| settle(s, key, e))
    }
}

/// Clears what a failed encode or decode left on the stack above `base`
/// (possibly a deep nest of tables, leaving no room to raise), keeping the
/// error value for [`Raise::Top`].
fn settle(s: &mut Stack, base: c_int, e: Raise) -> Raise {
    if let Raise::Top = e {
        if s.top() > base + 1 {
            s.replace(base + 1);
        }
        s.settop(base + 1);
    } else {
        s.settop(base);
    }
    e
}

/// The shared body of `decode` and `decode_unchecked`.
fn decode_entry(s: &mut Stack, name: &str, size_required: bool) -> LResult<c_int> {
    s.settop(2);
    decode_args(s, name, size_required).map_err(|e| settle(s, 2, e))
}

/// [`decode_entry`] on exactly two arguments.
fn decode_args(s: &mut Stack, name: &str, size_required: bool) -> LResult<c_int> {
    let st = state(s);
    let cfg = &st.cfg;
    if s.type_of(1) == ffi::LUA_TSTRING {
        let pos = match s.type_of(2) {
            ffi::LUA_TNIL => 1.0,
            _ => s.to_number(2).ok_or_else(|| {
                Raise::illegal(format!("msgpack.{name}: offset must be a number"))
            })?,
        };
        let used = decode::Decoder::new(&st, cfg, name).decode_arg1(s, pos)?;
        s.push_number(pos + used as f64);
        return Ok(2);
    }
    let Some(addr) = buffer::to_pointer(s, &st.buffer, 1)? else {
        return Err(Raise::illegal(format!(
            "msgpack.{name}: a Lua string or 'char *' expected"
        )));
    };
    let size = match s.to_number(2) {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= usize::MAX as f64 => Some(n as usize),
        None if !size_required && s.type_of(2) == ffi::LUA_TNIL => None,
        _ => return Err(Raise::illegal(format!("Usage: msgpack.{name}(ptr, size)"))),
    };
    let avail = buffer::readable(addr, size).ok_or_else(|| {
        Raise::illegal(format!(
            "msgpack.{name}: the pointer is not inside a live ibuf"
        ))
    })?;
    let len = size.unwrap_or(avail);
    // SAFETY: `readable` checked that `len` bytes from `addr` are in a live
    // ibuf's memory, and nothing has run since.
    let src = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
    let used = decode::extent(src, name)?;
    // Copy the value out: Lua code run by the collector while the decoder
    // allocates could free or move the ibuf.
    ibuf::with_cord_scratch(|copy| -> LResult<()> {
        copy.extend_from_slice(&src[..used])
            .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
        decode::Decoder::new(&st, cfg, name).decode(s, copy.data())?;
        Ok(())
    })?;
    buffer::push_pointer(s, &st.buffer, (addr + used) as *const u8)?;
    Ok(2)
}

lua_fn! {
    /// `msgpack.decode(s [, pos])` / `msgpack.decode(ptr, size)`.
    fn mp_decode(s: &mut Stack) {
        decode_entry(s, "decode", true)
    }
}

lua_fn! {
    /// `msgpack.decode_unchecked(s [, pos])` / `(ptr [, size])`.
    fn mp_decode_unchecked(s: &mut Stack) {
        decode_entry(s, "decode_unchecked", false)
    }
}
