//! MessagePack between cords: Lua values on a stack as one MsgPack array
//! and back (Tarantool's `port_lua` and `port_msgpack`), written and read by
//! this module's own encoder and decoder, so a value crosses to another
//! cord's Lua state with the bytes `msgpack.encode` gives.
//!
//! The port uses the default options (Tarantool's
//! `luaL_msgpack_default`), not what `msgpack.cfg` set on the sending cord:
//! the bytes mean the same on every cord. A value MsgPack has no form for
//! (a function, a Lua thread, a userdata or a pointer cdata with no
//! `__serialize`) is refused with "cannot be sent to another cord", naming
//! the API function and the value's place.

use std::cell::Cell;
use std::ffi::c_int;

use luafiber_runtime::ibuf::{self, Ibuf};
use mlua::ffi;

use super::decode::{extent, Decoder};
use super::encode::Encoder;
use super::{Config, State};
use crate::raw::error::ErrorKind;
use crate::raw::{api, LResult, Raise};

thread_local! {
    /// This cord's module state with the default options (set when the
    /// module opens).
    static PORT: Cell<Option<State>> = const { Cell::new(None) };
}

/// Keeps the module's state for the port (called once per Lua state, by
/// `open`).
pub(super) fn init(st: State) {
    PORT.with(|p| {
        p.set(Some(State {
            cfg: Config::default(),
            ..st
        }))
    });
}

fn state() -> LResult<State> {
    PORT.with(Cell::get)
        .ok_or_else(|| Raise::illegal("msgpack: the module is not open on this cord"))
}

/// The MsgPack array of the values at `first..=last` of `l` (none when
/// `last < first`). `fname` names the API function and `noun` the values
/// ("argument", "result") in the error for a value that cannot cross:
/// `threads.call: argument 2 (a function) cannot be sent to another cord`.
///
/// # Safety
///
/// `l` is the calling state of a `lua_fn` body; `first..=last` are valid
/// absolute indices and `last` is the top (or `first - 1` with `last` the
/// top for no values).
pub(crate) unsafe fn encode_array(
    l: *mut ffi::lua_State,
    first: c_int,
    last: c_int,
    fname: &str,
    noun: &str,
) -> LResult<Vec<u8>> {
    let st = state()?;
    let n = (last - first + 1).max(0);
    // SAFETY: caller's contract; the key goes above `last` and is popped.
    unsafe {
        if ffi::lua_checkstack(l, 4) == 0 {
            return Err(Raise::illegal(format!("{fname}: stack overflow")));
        }
        api::push_registry_ref(l, st.serialize_key);
        let key = last + 1;
        let r = ibuf::with_cord_scratch(|out| -> LResult<Vec<u8>> {
            rmp::encode::write_array_len(out, n as u32).map_err(|_| oom())?;
            for i in 0..n {
                let idx = first + i;
                encode_into(l, &st, out, idx, key)
                    .map_err(|e| cannot_cross(l, idx, e, fname, noun, i + 1))?;
            }
            Ok(out.data().to_vec())
        });
        ffi::lua_settop(l, last);
        r
    }
}

/// The MsgPack form of the one value at `idx` (an error value, say).
///
/// # Safety
///
/// As [`encode_array`], with `idx` the top.
pub(crate) unsafe fn encode_one(l: *mut ffi::lua_State, idx: c_int) -> LResult<Vec<u8>> {
    let st = state()?;
    // SAFETY: caller's contract; the key goes above `idx` and is popped.
    unsafe {
        if ffi::lua_checkstack(l, 4) == 0 {
            return Err(Raise::illegal("stack overflow"));
        }
        api::push_registry_ref(l, st.serialize_key);
        let r = ibuf::with_cord_scratch(|out| {
            encode_into(l, &st, out, idx, idx + 1).map(|()| out.data().to_vec())
        });
        ffi::lua_settop(l, idx);
        r
    }
}

/// Appends the value at `idx` to `out`; `key` holds `"__serialize"` and is
/// the top.
unsafe fn encode_into(
    l: *mut ffi::lua_State,
    st: &State,
    out: &mut Ibuf,
    idx: c_int,
    key: c_int,
) -> LResult<()> {
    // SAFETY: caller's contract (a lua_fn body's state, `idx <= key` = top).
    let r = unsafe { Encoder::new(l, st, out, key).encode(idx, key) };
    // A failed encode may leave values above the key.
    // SAFETY: as above.
    unsafe { ffi::lua_settop(l, key) };
    r
}

fn oom() -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// The encoder's "unsupported Lua type" for value `nth` (at `idx`) as the
/// port's error; other errors as they are.
unsafe fn cannot_cross(
    l: *mut ffi::lua_State,
    idx: c_int,
    e: Raise,
    fname: &str,
    noun: &str,
    nth: c_int,
) -> Raise {
    let Raise::Error(ErrorKind::IllegalParams, msg) = &e else {
        return e;
    };
    let Some(inner) = msg
        .strip_prefix("unsupported Lua type '")
        .and_then(|m| m.strip_suffix('\''))
    else {
        return e;
    };
    // SAFETY: `idx` is valid (caller).
    let outer = unsafe { ffi::lua_type(l, idx) };
    let what = if outer == ffi::LUA_TTABLE {
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
/// A `DecodeError` when `data` is not one well-formed array (its messages
/// name `msgpack.{name}`), or the Lua stack cannot take the elements.
///
/// # Safety
///
/// `l` is the calling state of a `lua_fn` body; `data` stays unchanged
/// while this runs.
pub(crate) unsafe fn push_array(l: *mut ffi::lua_State, data: &[u8], name: &str) -> LResult<c_int> {
    let st = state()?;
    let mut rest = data;
    let n = rmp::decode::read_array_len(&mut rest).map_err(|_| not_array(name))?;
    let mut pos = data.len() - rest.len();
    // SAFETY: caller's contract; each element is one value pushed.
    unsafe {
        if n > 1_000_000 || ffi::lua_checkstack(l, n as c_int + 4) == 0 {
            return Err(Raise::illegal(format!("{name}: too many values")));
        }
        for _ in 0..n {
            pos += Decoder::new(l, &st, &st.cfg, name).decode(&data[pos..])?;
        }
    }
    Ok(n as c_int)
}

/// Pushes the one MsgPack value `data` holds (an array becomes a table).
///
/// # Errors
///
/// As [`push_array`].
///
/// # Safety
///
/// As [`push_array`].
pub(crate) unsafe fn push_one(l: *mut ffi::lua_State, data: &[u8], name: &str) -> LResult<()> {
    let st = state()?;
    // SAFETY: caller's contract.
    unsafe { Decoder::new(l, &st, &st.cfg, name).decode(data) }.map(drop)
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
    let used = extent(data, "decode").map_err(|e| match e {
        Raise::Error(_, m) => m,
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
