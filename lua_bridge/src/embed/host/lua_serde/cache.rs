//! The values of the `msgpack` module that pushing and reading need, kept
//! per Lua state in one table of its registry (under the address of a
//! static of this file, so no per-cord state is needed): the decoder's
//! array and map metatables and its nil, and the string `"__serialize"`.
//! Each is fetched with one raw index, not made or hashed per call.

use std::ffi::{c_int, c_void};

use mlua::ffi;

use crate::modules::msgpack::port::{self, Options};
use crate::raw::{LResult, Stack};

/// The table's index in the cache: `msgpack.array_mt`.
pub(super) const ARRAY_MT: c_int = 1;
/// `msgpack.map_mt`.
pub(super) const MAP_MT: c_int = 2;
/// `msgpack.NULL`, the decoder's nil.
pub(super) const NULL: c_int = 3;
/// The string `"__serialize"`.
pub(super) const SERIALIZE: c_int = 4;

/// The registry key: this static's address, a light userdata.
static KEY: u8 = 0;

fn key() -> *mut c_void {
    std::ptr::addr_of!(KEY).cast_mut().cast()
}

/// Pushes the cache table of `s`'s Lua state, made the first time from
/// what the decoder makes of `[{}, nil]` (so its metatables and nil are
/// the decoder's own).
///
/// # Errors
///
/// When the stack has no room, or the `msgpack` module is not open on
/// the cord; the stack is then as it was.
pub(super) fn push(s: &mut Stack) -> LResult<()> {
    s.ensure(6)?;
    let top = s.top();
    s.push_light(key());
    s.rawget(ffi::LUA_REGISTRYINDEX);
    if s.type_of(-1) == ffi::LUA_TTABLE {
        return Ok(());
    }
    s.settop(top);
    if let Err(e) = port::decode_value(s, &[0x92, 0x80, 0xc0], Options::Default) {
        s.settop(top);
        return Err(e);
    }
    let t = s.top();
    let cache = s.new_table(4, 0);
    if !s.get_metatable(t) {
        s.push_nil();
    }
    s.rawseti(cache, ARRAY_MT.into());
    s.rawgeti(t, 1);
    if !s.get_metatable(-1) {
        s.push_nil();
    }
    s.remove(-2);
    s.rawseti(cache, MAP_MT.into());
    s.rawgeti(t, 2);
    s.rawseti(cache, NULL.into());
    s.push_cstr(c"__serialize");
    s.rawseti(cache, SERIALIZE.into());
    s.remove(t);
    s.push_light(key());
    s.push_value(-2);
    // A light userdata key is neither nil nor NaN.
    s.rawset(ffi::LUA_REGISTRYINDEX)?;
    Ok(())
}
