//! The Lua `json` module: Tarantool's `json` (`third_party/lua-cjson`,
//! over `src/lua/serializer.c`).
//!
//! - `json.encode(value [, opts])`: the JSON text of `value`; `opts` are
//!   options for this call only (gh-4761), over the serializer's own.
//! - `json.decode(text [, opts])`: the value `text` holds.
//! - `json.NULL` (and `json.null`, as in cjson): the same NULL as
//!   `msgpack.NULL`; `json.array_mt`, `json.map_mt`: the same metatables as
//!   msgpack's, set on decoded tables (`decode_save_metatables`).
//! - `json.cfg{...}`: the serializer options ([`Config`], shared with
//!   msgpack), plus `encode_key_order` (a list of keys a map's entries come
//!   in first); `json.cfg.NAME` reads one.
//! - `json.new()`: a new serializer with its own options.
//!
//! A value is encoded as `msgpack` encodes it ([`serializer`](crate::modules::serializer)): the same
//! `__serialize` hints and functions, the same array-or-map rule, the same
//! scalar cdata. Numbers print as Tarantool prints them: integral values in
//! the 64-bit range as integers, others with `%.14g`
//! (`encode_number_precision`), NaN and infinities as `nan`, `inf`,
//! `-inf` (when `encode_invalid_numbers`). Strings are escaped as
//! Tarantool does (`"`, `\`, control characters and DEL; `/` is not).
//! Encoding writes into a cord buffer, so in steady state it allocates only
//! the result string.
//!
//! Decoding is cjson's grammar and messages, so errors read as Tarantool's
//! ("Expected value but found invalid token on line 1 at character 1 here
//! ' >> a'"): no JSON crate reports tokens, lines and the context that way,
//! and none accepts `nan`/`inf`; so both directions are written here, on
//! the bridge's [`Stack`].
//!
//! Differences from Tarantool:
//!
//! - Errors are error objects (`IllegalParams` for encoding and options,
//!   `DecodeError` for malformed text) whose `tostring` is Tarantool's
//!   message, not strings.
//! - On Lua 5.4 integers decode to integers (floats past 2^63 - 1); on
//!   LuaJIT, as in Tarantool, those beyond 10^14 - 1 to `int64_t` or
//!   `uint64_t` cdata.
//! - Options are checked as `msgpack.cfg` checks them (a wrong type
//!   raises); decimal, uuid, datetime and error values do not exist here.
//! - Nesting is also bounded by the fiber's machine stack (an error, never
//!   a crash), and a chain of more than 64 `__serialize` functions raises.

mod decode;
mod encode;

use std::ffi::{c_int, CStr};

use mlua::ffi;

#[cfg(feature = "luajit")]
use crate::luajit::cdata;
use crate::modules::serializer::config::{self as cfg_opts, OPTIONS};
use crate::modules::serializer::Config;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// What every serializer of the state shares: refs made once at open.
#[derive(Clone, Copy)]
pub(crate) struct Shared {
    /// The base library's `next` (a traversal after Lua code ran).
    next: c_int,
    /// The base library's `tostring` (`encode_use_tostring`).
    tostring: c_int,
    /// `function(o) return o.__serialize end`, for userdata and cdata,
    /// whose `__serialize` Tarantool looks up through `__index`.
    index: c_int,
    array_mt: c_int,
    map_mt: c_int,
    /// `msgpack.NULL`: a registry ref, or `LUA_NOREF` for a light userdata
    /// NULL.
    null: c_int,
    /// The scalar C types (LuaJIT).
    #[cfg(feature = "luajit")]
    ctypes: Option<cdata::CTypes>,
    /// The C type id of ctype objects (LuaJIT's `CTID_CTYPEID`); cdata of
    /// higher ids may have a `__serialize` (gh-1226).
    #[cfg(feature = "luajit")]
    ctypeid: u16,
    /// `ffi.typeof('int64_t')` and `ffi.typeof('uint64_t')` (LuaJIT), or
    /// `LUA_NOREF`: what decoded integers beyond 10^14 - 1 become.
    #[cfg(feature = "luajit")]
    int64: c_int,
    #[cfg(feature = "luajit")]
    uint64: c_int,
}

impl Shared {
    fn push_null(&self, s: &mut Stack) {
        if self.null == ffi::LUA_NOREF {
            s.push_light(std::ptr::null_mut());
        } else {
            s.push_ref(self.null);
        }
    }
}

/// A serializer's state: the userdata every function of one `json` table
/// (the module or one `json.new()`) has as upvalue 1. Upvalue 2 is a
/// private table holding `encode_key_order` (a list of strings).
#[derive(Clone, Copy)]
struct State {
    cfg: Config,
    shared: Shared,
}

/// The private table's field of the key order.
const KEY_ORDER: &CStr = c"encode_key_order";

/// The chunk that gives the shared functions.
const SETUP: &str = "return next, tostring, function(o) return o.__serialize end";

/// Pushes the `json` module table (by its `package.preload` loader: this
/// runs Lua code under `lua_pcall`), once `msgpack` is in `package.loaded`
/// (opened at setup).
pub(crate) fn open(s: &mut Stack) {
    // Room for the setup chunks' results too (`lua_pcall` does not check).
    if s.ensure(8).is_err() {
        panic!("no Lua stack for the json module");
    }
    let top = s.top();
    let mut refs = [ffi::LUA_NOREF; 3];
    if s.load(SETUP, c"=json").is_ok() && s.pcall(0, 3).is_ok() {
        for r in refs.iter_mut().rev() {
            *r = s.make_ref();
        }
    }
    s.settop(top);
    let mut shared = Shared {
        next: refs[0],
        tostring: refs[1],
        index: refs[2],
        array_mt: ffi::LUA_NOREF,
        map_mt: ffi::LUA_NOREF,
        null: ffi::LUA_NOREF,
        #[cfg(feature = "luajit")]
        ctypes: None,
        #[cfg(feature = "luajit")]
        ctypeid: u16::MAX,
        #[cfg(feature = "luajit")]
        int64: ffi::LUA_NOREF,
        #[cfg(feature = "luajit")]
        uint64: ffi::LUA_NOREF,
    };
    // msgpack's metatables and NULL, so that both modules agree.
    s.push_globals();
    if s.rawget_field(-1, c"package") == ffi::LUA_TTABLE
        && s.rawget_field(-1, c"loaded") == ffi::LUA_TTABLE
        && s.rawget_field(-1, c"msgpack") == ffi::LUA_TTABLE
    {
        for (name, slot) in [
            (c"array_mt", &mut shared.array_mt),
            (c"map_mt", &mut shared.map_mt),
            (c"NULL", &mut shared.null),
        ] {
            if s.rawget_field(-1, name) == ffi::LUA_TLIGHTUSERDATA {
                s.pop(1);
            } else {
                *slot = s.make_ref();
            }
        }
    }
    s.settop(top);
    #[cfg(feature = "luajit")]
    {
        shared.ctypes = crate::luajit::layout().ctypes;
        let types = "local ffi = require('ffi')\n\
                     return ffi.typeof('int'), ffi.typeof('int64_t'), ffi.typeof('uint64_t')";
        if s.load(types, c"=json").is_ok() && s.pcall(0, 3).is_ok() {
            if let Some(id) = cdata::ctype_id_at(s, -3) {
                shared.ctypeid = id;
                shared.uint64 = s.make_ref();
                shared.int64 = s.make_ref();
            }
        }
        s.settop(top);
    }
    push_serializer(s, &shared);
    shared.push_null(s);
    s.set_field(-2, c"null");
}

/// Pushes a serializer table (the module's, or one `json.new()` makes)
/// with the default options.
fn push_serializer(s: &mut Stack, shared: &Shared) {
    let m = s.new_table(0, 8);
    s.push_userdata(State {
        cfg: Config::default(),
        shared: *shared,
    });
    let st = s.top();
    s.new_table(0, 1);
    let private = s.top();
    let funcs: &[(&CStr, ffi::lua_CFunction)] = &[
        (c"encode", json_encode),
        (c"decode", json_decode),
        (c"new", json_new),
    ];
    for (name, f) in funcs {
        s.push_value(st);
        s.push_value(private);
        s.push_closure(*f, 2);
        s.set_field(m, name);
    }
    // cfg: a table of the current values, callable to change them.
    let cfg = s.new_table(0, OPTIONS.len() as c_int + 1);
    cfg_opts::write_fields(s, cfg, &Config::default());
    s.new_table(0, 1);
    s.push_value(st);
    s.push_value(private);
    s.push_closure(json_cfg, 2);
    s.set_field(-2, c"__call");
    s.set_metatable(cfg);
    s.set_field(m, c"cfg");
    shared.push_null(s);
    s.set_field(m, c"NULL");
    for (name, r) in [(c"array_mt", shared.array_mt), (c"map_mt", shared.map_mt)] {
        if r != ffi::LUA_NOREF {
            s.push_ref(r);
            s.set_field(m, name);
        }
    }
    s.settop(m);
}

/// The state of the running serializer function (upvalue 1), by value.
fn state(s: &Stack) -> State {
    let p = s.to_userdata(Stack::upvalue(1)).cast::<State>();
    assert!(!p.is_null(), "json: a module function without its state");
    // SAFETY: every function of this module is a closure over a `State`
    // userdata (`push_serializer`), alive while the closure is; read by
    // value, so Lua code run later never aliases a borrow.
    unsafe { p.read() }
}

/// Writes `cfg` into the running serializer's state (upvalue 1).
fn set_state_cfg(s: &Stack, cfg: Config) {
    let p = s.to_userdata(Stack::upvalue(1)).cast::<State>();
    assert!(!p.is_null(), "json: a module function without its state");
    // SAFETY: as in `state`; no borrow of it is alive.
    unsafe { (*p).cfg = cfg };
}

/// Pushes a copy of the list at `idx` with its string and number entries
/// as strings (Tarantool's `luaL_serializer_parse_encode_key_order`: other
/// entries are skipped); nil for an empty list.
fn push_key_order(s: &mut Stack, idx: c_int) -> LResult<()> {
    let idx = s.abs(idx);
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return Err(Raise::illegal("json: encode_key_order must be a table"));
    }
    let list = s.new_table(4, 0);
    let mut n = 0;
    for i in 1.. {
        match s.rawgeti(idx, i) {
            ffi::LUA_TNIL => {
                s.pop(1);
                break;
            }
            ffi::LUA_TSTRING => {}
            ffi::LUA_TNUMBER => {
                let v = s.to_number(-1).unwrap_or_default();
                s.pop(1);
                s.push_bytes(&encode::format_number(v, 14));
            }
            _ => {
                s.pop(1);
                continue;
            }
        }
        n += 1;
        s.rawseti(list, n);
    }
    if n == 0 {
        s.pop(1);
        s.push_nil();
    }
    Ok(())
}

/// The keys of the list at `idx` (made by [`push_key_order`]), if any.
fn key_order(s: &mut Stack, idx: c_int) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return keys;
    }
    let idx = s.abs(idx);
    for i in 1.. {
        if s.rawgeti(idx, i) != ffi::LUA_TSTRING {
            s.pop(1);
            break;
        }
        keys.push(s.to_str(-1).unwrap_or_default().to_vec());
        s.pop(1);
    }
    keys
}

/// The options of a call with (value, opts) at 1 and 2: the serializer's,
/// with those of `opts` over them; and the key order.
fn call_options(s: &mut Stack, who: &str) -> LResult<(State, Vec<Vec<u8>>)> {
    let mut st = state(s);
    let private = Stack::upvalue(2);
    let order_at = match s.type_of(2) {
        ffi::LUA_TNONE | ffi::LUA_TNIL => None,
        ffi::LUA_TTABLE => {
            cfg_opts::parse(s, 2, &mut st.cfg, who)?;
            if s.rawget_field(2, KEY_ORDER) == ffi::LUA_TNIL {
                s.pop(1);
                None
            } else {
                push_key_order(s, -1)?;
                s.remove(-2);
                Some(s.top())
            }
        }
        _ => return Err(Raise::illegal(format!("{who}: options must be a table"))),
    };
    let order = match order_at {
        Some(at) => {
            let keys = key_order(s, at);
            s.pop(1);
            keys
        }
        None => {
            s.rawget_field(private, KEY_ORDER);
            let keys = key_order(s, -1);
            s.pop(1);
            keys
        }
    };
    Ok((st, order))
}

/// Checks the argument count of `encode`/`decode`: 1 or 2, as cjson.
fn check_args(s: &Stack, name: &str) -> LResult<()> {
    if s.top() == 1 || s.top() == 2 {
        return Ok(());
    }
    Err(Raise::illegal(format!(
        "bad argument #1 to '{name}' (expected 1 or 2 arguments)"
    )))
}

lua_fn! {
    /// `json.encode(value [, opts])`.
    fn json_encode(s: &mut Stack) {
        check_args(s, "encode")?;
        let (st, order) = call_options(s, "json.encode")?;
        s.settop(1);
        encode::encode(s, &st.cfg, &st.shared, &order)?;
        Ok(1)
    }
}

lua_fn! {
    /// `json.decode(text [, opts])`.
    fn json_decode(s: &mut Stack) {
        check_args(s, "decode")?;
        let (st, _) = call_options(s, "json.decode")?;
        s.settop(1);
        decode::decode(s, &st.cfg, &st.shared)?;
        Ok(1)
    }
}

lua_fn! {
    /// `json.new()`: a serializer with its own options (the defaults).
    fn json_new(s: &mut Stack) {
        let st = state(s);
        push_serializer(s, &st.shared);
        Ok(1)
    }
}

lua_fn! {
    /// `json.cfg{option = value, ...}` (called on the cfg table): changes
    /// the serializer's options and the table's fields.
    fn json_cfg(s: &mut Stack) {
        if s.type_of(2) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("Usage: json.cfg({option = value, ...})"));
        }
        let mut cfg = state(s).cfg;
        cfg_opts::parse(s, 2, &mut cfg, "json.cfg")?;
        if s.rawget_field(2, KEY_ORDER) == ffi::LUA_TNIL {
            s.pop(1);
        } else {
            push_key_order(s, -1)?;
            s.push_value(-1);
            s.set_field(Stack::upvalue(2), KEY_ORDER);
            if s.type_of(1) == ffi::LUA_TTABLE {
                push_key_order(s, -1)?;
                s.set_field(1, KEY_ORDER);
            }
            s.pop(2);
        }
        set_state_cfg(s, cfg);
        if s.type_of(1) == ffi::LUA_TTABLE {
            cfg_opts::write_fields(s, 1, &cfg);
        }
        Ok(0)
    }
}
