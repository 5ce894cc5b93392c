//! The Lua `msgpack` module: Tarantool master's `msgpack`
//! (`src/lua/msgpack.c`, `src/lua/serializer.c`), with the wire format
//! written by the `rmp` crate.
//!
//! - `msgpack.encode(value [, ibuf])`: the MsgPack string of `value`; with an
//!   ibuf object, appends the bytes at its `wpos` and returns their count.
//! - `msgpack.decode(s [, pos])`: the value at byte `pos` (default 1) of `s`
//!   and the position just after it. `msgpack.decode(ptr, size)`: the value
//!   at a `char *`/`const char *` cdata (or an ibuf's light userdata
//!   pointer) and the pointer just after it, of the argument's type.
//! - `msgpack.decode_unchecked(s [, pos])` / `(ptr)`, `ibuf_decode(rpos)`,
//!   `decode_array_header(ptr, size)`, `decode_map_header(ptr, size)`
//!   ([`decode_fns`]); `object`, `object_from_raw`, `is_object` and the
//!   objects' iterators ([`object`]); `new()`: a module table of the same
//!   functions over a state of its own (its own `cfg`).
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
//! overrides that; a `msgpack.object` is its bytes; a value of the
//! library's value types (`decimal`, `uuid`) is its MsgPack extension. Encoding goes through a
//! cord buffer ([`luafiber_runtime::ibuf::with_cord_scratch`]: take, encode,
//! push the result, put), so in steady state it allocates only the result
//! string.
//!
//! On LuaJIT a table is read in place through LuaJIT's object layout
//! (`encode::raw`: the array part and the hash nodes, no C API call per key
//! or value), a layout checked against a probe table when the module opens.
//! Whatever that path does not cover (a `__serialize` function, userdata,
//! cdata it does not know, keys past the array part of an array, every
//! error) it hands to the
//! C API path before anything ran, so the bytes and errors are the same.
//! The decoder writes in place too ([`crate::luajit::fill`]): metatables of
//! the tables it makes, array elements, scalar pushes.
//!
//! A `__serialize` function (and `tostring`, for `encode_use_tostring`) is
//! called by `lua_pcall` of a trampoline C function fetched by registry ref:
//! no C function is pushed per table.
//!
//! Errors are Tarantool's: where it raises a string (`luaL_error`), so does
//! this module; bad MsgPack found by a check is a `ClientError` error
//! object ("Invalid MsgPack - truncated input").
//!
//! Differences from Tarantool:
//!
//! - On Lua 5.4 `msgpack.NULL` (and a decoded nil) is a light userdata NULL,
//!   so `msgpack.NULL == nil` is false there; integers decode to Lua
//!   integers (a MsgPack uint past 2^63 - 1 to a float); pointers are the
//!   light userdata of an ibuf. On LuaJIT `NULL` is Tarantool's
//!   `ffi.cast('void *', 0)`, scalar cdata (`1LL`, `1ULL`, the other
//!   integer types, `float`, `double`, `bool`, a NULL pointer) encode as in
//!   Tarantool, and integers past ±(10^14 - 1) decode to 64-bit cdata.
//! - A chain of more than 64 `__serialize` functions, each returning a value
//!   with the next, raises; `msgpack.cfg` refuses values of the wrong type
//!   or range.
//! - The MsgPack extensions of `decimal` (1) and `uuid` (2) encode and
//!   decode as master's ([`crate::modules::ext`]; a body they refuse is
//!   "Invalid MsgPack - invalid extension", with no chained cause); the
//!   others (error, tuple, ...) raise "Unsupported MsgPack extension type:
//!   N"; bin decodes to a string (master: a varbinary object); check
//!   errors carry no `offset` or `trunc_count`.
//! - The decoder bounds every read even for `decode_unchecked`, and a
//!   pointer's value is copied out before it is decoded. Decoding nests as
//!   deep as the Lua stack holds. Encoding nests at most [`MAX_NESTING`]
//!   levels whatever the config, and no deeper than the fiber's stack holds
//!   with 64 KiB to spare (an `IllegalParams` error past that; about 660
//!   levels of `__serialize` functions on a 512 KiB stack, more for plain
//!   tables).
//! - An ibuf object is a userdata, not a `struct ibuf`: the type is
//!   declared to the FFI (so casts work), but a cast pointer does not reach
//!   the buffer's fields.

mod decode;
mod decode_fns;
mod encode;
mod object;
pub(crate) mod port;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_api;

// The module's parts of the cord context (and `StateKind`, below).
#[cfg(feature = "luajit")]
pub(crate) use decode::short_strings::ShortStrings;
pub(crate) use decode::DecodeFrames;
pub(crate) use object::ObjectKinds;

use std::ffi::{c_int, CStr};

use luafiber_runtime::ibuf;
use mlua::ffi;

use crate::luajit::cdata::CTypes;
use crate::luajit::fill::Fill;
use crate::luajit::obj::{GcTab, Word};
use crate::luajit::pointer::Cdata;
use crate::luajit::table::Tables;
use crate::modules::buffer;
use crate::modules::serializer::config::{self as cfg_opts, OPTIONS};
pub(crate) use crate::modules::serializer::Config;
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};

/// Most nesting levels the encoder enters, whatever `encode_max_depth` says:
/// the encoder recurses on the fiber's machine stack.
pub const MAX_NESTING: u32 = 1000;

/// The module's per-state data: a userdata that every module function has
/// as upvalue 1. Read by value at each call, so Lua code that runs during an
/// encode (and may call `msgpack.cfg`) never aliases a Rust borrow.
#[derive(Clone, Copy)]
pub(crate) struct State {
    pub cfg: Config,
    /// The state of the `msgpack` module itself (not of a `msgpack.new()`
    /// serializer): its `cfg` is what IPROTO follows (`port::cfg_changed`).
    pub main: bool,
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
    /// What is fixed for the Lua state's life and only some calls read,
    /// kept once per Lua state (leaked: a few words), so the per-call copy
    /// of the state stays small.
    pub x: &'static Extra,
}

/// The part of [`State`] that is the same for every serializer of a Lua
/// state and fixed for its life.
pub(crate) struct Extra {
    /// The pointer and 64-bit integer cdata the decoder reads and makes.
    pub cdata: Option<Cdata>,
    /// `int64_t` / `uint64_t` constructors (`LUA_NOREF` without the FFI).
    pub new_i64: c_int,
    pub new_u64: c_int,
    /// The decoder's in-place writes (LuaJIT, probed).
    pub fill: Option<Fill>,
    /// With [`Extra::fill`]: the word of `msgpack.NULL` (anchored by its
    /// ref) and the two metatables' tables (anchored by theirs).
    pub null_word: Option<Word>,
    pub array_mt_ptr: *const GcTab,
    pub map_mt_ptr: *const GcTab,
}

impl State {
    /// Pushes `msgpack.NULL`.
    pub(crate) fn push_null_on(&self, s: &mut Stack) {
        if self.null == ffi::LUA_NOREF {
            s.push_light(std::ptr::null_mut());
        } else {
            s.push_ref(self.null);
        }
    }
}

/// Per-cord state of the module (a part of the cord context): the kind of
/// state userdata, for the objects that keep a ref of theirs
/// (`msgpack.object`).
#[derive(Default)]
pub(crate) struct StateKind(std::cell::Cell<Kind<State>>);

/// The kind of state userdata.
fn state_kind() -> Kind<State> {
    StateKind::with(|k| k.0.get())
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
    let main = unsafe {
        (*state_ptr(s)).cfg = cfg;
        (*state_ptr(s)).main
    };
    if main {
        port::cfg_changed(cfg);
    }
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

/// Makes the module state of `s`'s Lua state (at setup: this runs Lua
/// code under `lua_pcall`).
fn make_state(s: &mut Stack) -> State {
    let ctx = buffer::init(s);
    let layout = crate::luajit::layout();
    let cdata = crate::luajit::pointer::learn(s);
    let mut x = Extra {
        cdata,
        new_i64: cdata.map_or(ffi::LUA_NOREF, |c| c.new_i64),
        new_u64: cdata.map_or(ffi::LUA_NOREF, |c| c.new_u64),
        fill: Fill::new(layout.entry, layout.tables),
        null_word: None,
        array_mt_ptr: std::ptr::null(),
        map_mt_ptr: std::ptr::null(),
    };
    object::init(s);
    StateKind::with(|k| k.0.set(Kind::new_empty(s, 0)));
    declare_ibuf(s);
    s.push_cfunction(crate::raw::wide_cfn!(call_trampoline));
    let call = s.make_ref();
    let next = global_ref(s, c"next");
    let tostring = global_ref(s, c"tostring");
    s.push_cstr(c"__serialize");
    let serialize_key = s.make_ref();
    let null = crate::luajit::cdata::null_ref(s);
    let mut mts = [ffi::LUA_NOREF; 2];
    for (i, (kind, ptr)) in [(c"seq", &mut x.array_mt_ptr), (c"map", &mut x.map_mt_ptr)]
        .into_iter()
        .enumerate()
    {
        let t = s.new_table(0, 2);
        s.push_cstr(kind);
        s.set_field(t, c"__serialize");
        s.push_cfunction(decoded_newindex);
        s.set_field(t, c"__newindex");
        *ptr = s.to_pointer(t).cast();
        mts[i] = s.make_ref();
    }
    if let Some(fill) = x.fill {
        if null == ffi::LUA_NOREF {
            s.push_light(std::ptr::null_mut());
        } else {
            s.push_ref(null);
        }
        // Anchored by its registry ref (or no GC object: a light userdata).
        x.null_word = fill.top_word_of(s);
        s.pop(1);
    }
    let st = State {
        cfg: Config::default(),
        main: true,
        call,
        next,
        tostring,
        serialize_key,
        array_mt: mts[0],
        map_mt: mts[1],
        buffer: ctx,
        tables: layout.tables,
        null,
        ctypes: layout.ctypes,
        x: Box::leak(Box::new(x)),
    };
    st
}

/// Declares Tarantool's `struct ibuf` to the FFI (when it is there and the
/// type is not declared yet), so `ffi.cast('struct ibuf *', buf)` works.
fn declare_ibuf(s: &mut Stack) {
    const CHUNK: &str = r#"
        local ok, ffi = pcall(require, 'ffi')
        if not ok or type(ffi) ~= 'table' or not ffi.cdef then return end
        if pcall(ffi.typeof, 'struct ibuf') then return end
        pcall(ffi.cdef, [[struct ibuf { void *slabc; char *buf; char *rpos;
            char *wpos; char *epos; size_t start_capacity; };]])
    "#;
    let top = s.top();
    if cfg!(feature = "luajit") && s.load(CHUNK, c"=msgpack.ibuf").is_ok() {
        let _ = s.pcall(0, 0);
    }
    s.settop(top);
}

/// Pushes the `msgpack` module table (at setup: this runs Lua code under
/// `lua_pcall`).
pub(crate) fn open(s: &mut Stack) {
    let st = make_state(s);
    port::init(st);
    push_module(s, st);
}

/// Pushes a module table whose functions share a new state userdata
/// holding `st` (`msgpack` itself, and each `msgpack.new()`: Tarantool's
/// `luaL_newserializer`).
fn push_module(s: &mut Stack, st: State) {
    state_kind().push(s, st);
    let st_idx = s.top();
    let module = s.new_table(0, 16);
    for (name, f) in [
        (c"encode", mp_encode as ffi::lua_CFunction),
        (c"decode", decode_fns::mp_decode),
        (c"decode_unchecked", decode_fns::mp_decode_unchecked),
        (c"ibuf_decode", decode_fns::mp_ibuf_decode),
        (c"decode_array_header", decode_fns::mp_decode_array_header),
        (c"decode_map_header", decode_fns::mp_decode_map_header),
        (c"object", object::mp_object),
        (c"object_from_raw", object::mp_object_from_raw),
        (c"is_object", object::mp_is_object),
        (c"new", mp_new),
    ] {
        s.push_value(st_idx);
        s.push_closure(f, 1);
        s.set_field(module, name);
    }
    st.push_null_on(s);
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

lua_fn! {
    /// `msgpack.new()`: a new serializer with the default options of its
    /// own (Tarantool's `lua_msgpack_new`).
    fn mp_new(s: &mut Stack) {
        let st = State {
            cfg: Config::default(),
            main: false,
            ..state(s)
        };
        push_module(s, st);
        Ok(1)
    }
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
            return Err(Raise::Message("msgpack.encode: a Lua object expected".into()));
        }
        let target = if top >= 2 && s.type_of(2) != ffi::LUA_TNIL {
            let t = buffer::to_ibuf(s, &st.buffer, 2);
            Some(t.ok_or_else(|| {
                Raise::Message("msgpack.encode: argument 2 must be of type 'struct ibuf'".into())
            })?)
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
