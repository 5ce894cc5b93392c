//! MessagePack between cords: Lua values on a stack as one MsgPack array
//! and back (Tarantool's `port_lua` and `port_msgpack`), written and read by
//! this module's own encoder and decoder, so a value crosses to another
//! cord's Lua state with the bytes `msgpack.encode` gives.
//!
//! Between cords the port uses the default options ([`Options::Default`]),
//! not what `msgpack.cfg` set on the sending cord: the bytes mean the same
//! on every cord. IPROTO's requests and replies (the server's, `net.box`'s)
//! follow `msgpack.cfg` ([`Options::Cfg`]), as Tarantool's follow
//! `luaL_msgpack_default`, which its `msgpack.cfg` changes. A value MsgPack has no form for
//! (a function, a Lua thread, a userdata or a pointer cdata with no
//! `__serialize`) is refused with "cannot be sent to another cord", naming
//! the API function and the value's place.

use std::cell::Cell;
use std::ffi::c_int;

use luafiber_runtime::ibuf::{self, Ibuf};
use mlua::ffi;

use super::decode::{reader, Decoder};
use super::encode::Encoder;
use super::{Config, State};
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{LResult, Raise, Stack};

/// Most values one array may bring onto a Lua stack.
const MAX_VALUES: u32 = 1_000_000;

/// Which options an encode or a decode of the port follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Options {
    /// Tarantool's defaults, whatever `msgpack.cfg` says: values between
    /// cords, the embedding's conversions.
    Default,
    /// What `msgpack.cfg` set on this cord: IPROTO's requests and replies
    /// (Tarantool's `port_lua_dump` and `net.box` use
    /// `luaL_msgpack_default`, which its `msgpack.cfg` changes).
    Cfg,
}

/// Per-cord state of the port (a part of the cord context), set when the
/// module opens.
#[derive(Default)]
pub(crate) struct PortState {
    /// The module's state with the default options.
    default: Cell<Option<State>>,
    /// The module's state with the options `msgpack.cfg` set
    /// ([`cfg_changed`] keeps them).
    cfg: Cell<Option<State>>,
}

/// Keeps the `msgpack` module's state for the port (called once per Lua
/// state, by `open`).
pub(super) fn init(st: State) {
    PortState::with(|p| {
        let st = State {
            cfg: Config::default(),
            ..st
        };
        p.default.set(Some(st));
        p.cfg.set(Some(st));
    });
}

/// `msgpack.cfg` (of the module itself, not of a `msgpack.new()`
/// serializer) made `cfg` the options: kept for [`Options::Cfg`].
pub(super) fn cfg_changed(cfg: Config) {
    PortState::try_with(|p| {
        if let Some(st) = p.cfg.get() {
            p.cfg.set(Some(State { cfg, ..st }));
        }
    });
}

fn state() -> LResult<State> {
    state_for(Options::Default)
}

/// The port's state with the options `o` names.
#[inline]
fn state_for(o: Options) -> LResult<State> {
    PortState::try_with(|p| match o {
        Options::Default => p.default.get(),
        Options::Cfg => p.cfg.get(),
    })
    .flatten()
    .ok_or_else(|| Raise::illegal("msgpack: the module is not open on this cord"))
}

/// The MsgPack array of the values from `first` to the top of `s` (none
/// when `first` is above the top); the stack is as it was after. `fname`
/// names the API function and `noun` the values ("argument", "result") in
/// the error for a value that cannot cross: `threads.call: argument 2 (a
/// function) cannot be sent to another cord`.
///
/// # Errors
///
/// That one, or the encoder's (a `__serialize` function that raised: its
/// message; nesting too deep; out of memory).
pub(crate) fn encode_array(
    s: &mut Stack,
    first: c_int,
    fname: &str,
    noun: &str,
) -> LResult<Vec<u8>> {
    encode_array_with(s, first, fname, noun, <[u8]>::to_vec)
}

/// [`encode_array`] handing the array to `f` in the cord's scratch buffer
/// (no copy of its own), and giving what `f` gives.
///
/// # Errors
///
/// As [`encode_array`].
pub(crate) fn encode_array_with<T>(
    s: &mut Stack,
    first: c_int,
    fname: &str,
    noun: &str,
    f: impl FnOnce(&[u8]) -> T,
) -> LResult<T> {
    let st = state()?;
    let last = s.top();
    let n = (last - first + 1).max(0);
    s.ensure(4)?;
    s.push_ref(st.serialize_key);
    let key = last + 1;
    let r = ibuf::with_cord_scratch(|out| -> LResult<T> {
        rmp::encode::write_array_len(out, n as u32).map_err(|_| oom())?;
        for i in 0..n {
            let idx = first + i;
            encode_into(s, &st, out, idx, key)
                .map_err(|e| cannot_cross(s, idx, e, fname, noun, i + 1))?;
        }
        Ok(f(out.data()))
    });
    s.settop(last);
    r
}

/// The MsgPack form of the one value at `idx` (an error value, say); the
/// stack is as it was after.
///
/// # Errors
///
/// As [`encode_array`], without the naming.
pub(crate) fn encode_one(s: &mut Stack, idx: c_int) -> LResult<Vec<u8>> {
    let st = state()?;
    let idx = s.abs(idx);
    let top = s.top();
    s.ensure(4)?;
    s.push_ref(st.serialize_key);
    let r = ibuf::with_cord_scratch(|out| {
        encode_into(s, &st, out, idx, top + 1).map(|()| out.data().to_vec())
    });
    s.settop(top);
    r
}

/// Appends the value at `idx` to `out`; `key` holds `"__serialize"` and is
/// the top, as it is again after. An error value a `__serialize` function
/// raised becomes its message.
fn encode_into(s: &mut Stack, st: &State, out: &mut Ibuf, idx: c_int, key: c_int) -> LResult<()> {
    let r = Encoder::new(st, out, key).encode(s, idx);
    let r = match r {
        Err(Raise::Top) => Err(Raise::illegal(s.describe(-1))),
        r => r,
    };
    // A failed encode may leave values above the key.
    s.settop(key);
    r
}

fn oom() -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// The encoder's "unsupported Lua type" for value `nth` (at `idx`) as the
/// port's error; other errors as they are.
fn cannot_cross(s: &Stack, idx: c_int, e: Raise, fname: &str, noun: &str, nth: c_int) -> Raise {
    let Raise::Error(ErrorKind::IllegalParams, msg) = &e else {
        return e;
    };
    let Some(inner) = msg
        .strip_prefix("unsupported Lua type '")
        .and_then(|m| m.strip_suffix('\''))
    else {
        return e;
    };
    let what = if s.type_of(idx) == ffi::LUA_TTABLE {
        format!("a table holding a {inner}")
    } else {
        format!("a {inner}")
    };
    Raise::illegal(format!(
        "{fname}: {noun} {nth} ({what}) cannot be sent to another cord"
    ))
}

/// Pushes the elements of the MsgPack array `data` (what [`encode_array`]
/// made) and returns their count.
///
/// # Errors
///
/// The decoder's error when `data` is not one well-formed array (an
/// `Invalid MsgPack` error; one naming `msgpack.{name}` when it is no
/// array), or when the Lua stack cannot take the elements; the stack may
/// then hold some of them.
pub(crate) fn push_array(s: &mut Stack, data: &[u8], name: &str) -> LResult<c_int> {
    let st = state()?;
    let mut rest = data;
    let n = rmp::decode::read_array_len(&mut rest).map_err(|_| not_array(name))?;
    let pos = data.len() - rest.len();
    if n > MAX_VALUES || s.ensure(n as c_int + 4).is_err() {
        return Err(Raise::illegal(format!("{name}: too many values")));
    }
    Decoder::new(&st).decode_items(s, &data[pos..], n)?;
    Ok(n as c_int)
}

/// Pushes the `n` MsgPack values `items` holds one after another (the
/// items of an array whose header was read already: a request's
/// arguments, which the protocol layer may have left unchecked) and
/// returns the bytes they took: fewer than `items` has when something
/// follows them.
///
/// # Errors
///
/// As [`push_array`].
pub(crate) fn push_items(s: &mut Stack, items: &[u8], n: u32, o: Options) -> LResult<usize> {
    let st = state_for(o)?;
    if n > MAX_VALUES || s.ensure(n as c_int + 4).is_err() {
        return Err(Raise::illegal("too many values"));
    }
    Decoder::new(&st).decode_items(s, items, n)
}

/// Pushes the one MsgPack value `data` holds (an array becomes a table).
///
/// # Errors
///
/// As [`push_array`].
pub(crate) fn push_one(s: &mut Stack, data: &[u8]) -> LResult<()> {
    let st = state()?;
    Decoder::new(&st).decode(s, data).map(drop)
}

/// Checks that `data` is exactly one MsgPack array (what a call's arguments
/// must be), on any thread: no Lua state is needed.
///
/// # Errors
///
/// What is wrong with it.
pub(crate) fn check_array(data: &[u8]) -> Result<(), String> {
    let mut rest = data;
    rmp::decode::read_array_len(&mut rest)
        .map_err(|_| "the arguments must be a MessagePack array".to_string())?;
    let used = reader::check(data).map_err(|e| match e.raise() {
        Raise::Error(_, m) | Raise::Message(m) => m,
        Raise::Top => "invalid MessagePack".into(),
    })?;
    if used != data.len() {
        return Err(format!(
            "{} bytes after the arguments' array",
            data.len() - used
        ));
    }
    Ok(())
}

fn not_array(name: &str) -> Raise {
    Raise::Error(
        ErrorKind::DecodeError,
        format!("msgpack.{name}: invalid MsgPack: an array expected"),
    )
}

/// Appends the MsgPack form of the value at `idx` to `out` with the
/// options `o` names; the stack is as it was after.
///
/// # Errors
///
/// The encoder's (an unsupported type, a `__serialize` function that
/// raised: its message; nesting too deep).
#[inline]
pub(crate) fn encode_value(s: &mut Stack, idx: c_int, out: &mut Ibuf, o: Options) -> LResult<()> {
    let st = state_for(o)?;
    let idx = s.abs(idx);
    // A scalar or a plain table: no `"__serialize"` key on the stack.
    if let Some(r) = Encoder::new(&st, out, 0).in_place(s, idx) {
        return r;
    }
    let top = s.top();
    s.ensure(4)?;
    s.push_ref(st.serialize_key);
    let r = encode_into(s, &st, out, idx, top + 1);
    s.settop(top);
    r
}

/// [`encode_value`] when that runs no Lua code and pushes nothing (a
/// scalar, or on LuaJIT a table without `__serialize` functions or values
/// the in-place walk leaves to the C API): `None`, with nothing written,
/// for the rest. Safe to call with a borrow held across it.
#[inline]
pub(crate) fn encode_value_in_place(
    s: &Stack,
    idx: c_int,
    out: &mut Ibuf,
    o: Options,
) -> Option<LResult<()>> {
    let st = state_for(o).ok()?;
    Encoder::new(&st, out, 0).in_place(s, s.abs(idx))
}

/// Pushes the MsgPack value at the start of `data` with the options `o`
/// names; returns the bytes it took.
///
/// # Errors
///
/// As [`push_one`].
#[inline]
pub(crate) fn decode_value(s: &mut Stack, data: &[u8], o: Options) -> LResult<usize> {
    let st = state_for(o)?;
    Decoder::new(&st).decode(s, data)
}

/// The `buffer` module's context (to reach ibuf objects).
///
/// # Errors
///
/// When the module is not open on this cord.
pub(crate) fn buffer_ctx() -> LResult<crate::modules::buffer::Ctx> {
    Ok(state()?.buffer)
}

/// Pushes `msgpack.NULL`.
///
/// # Errors
///
/// When the module is not open on this cord.
pub(crate) fn push_null(s: &mut Stack) -> LResult<()> {
    let st = state()?;
    if st.null == ffi::LUA_NOREF {
        s.push_light(std::ptr::null_mut());
    } else {
        s.push_ref(st.null);
    }
    Ok(())
}

/// Pushes `msgpack.object_from_raw(bytes)` (net.box's `return_raw`),
/// through `require`: the object needs the module's serializer state,
/// which its functions hold.
///
/// # Errors
///
/// What `require` or `object_from_raw` raised (bytes that are not one
/// MsgPack value), on the top of the stack ([`Raise::Top`]).
pub(crate) fn push_object_from_raw(s: &mut Stack, bytes: &[u8]) -> LResult<()> {
    s.ensure(6)?;
    let top = s.top();
    s.push_globals();
    s.rawget_field(-1, c"require");
    s.push_cstr(c"msgpack");
    if s.pcall(1, 1).is_err() {
        s.remove(top + 1);
        return Err(Raise::Top);
    }
    s.rawget_field(-1, c"object_from_raw");
    s.push_bytes(bytes);
    if s.pcall(1, 1).is_err() {
        s.replace(top + 1);
        s.settop(top + 1);
        return Err(Raise::Top);
    }
    s.replace(top + 1);
    s.settop(top + 1);
    Ok(())
}
