//! The Lua `msgpackffi` module: Tarantool's `src/lua/msgpackffi.lua` API
//! (`encode`, `decode`, `decode_unchecked`, `on_encode`, `NULL`,
//! `array_mt`, `map_mt`) over the `msgpack` module's encoder and decoder,
//! in `msgpackffi.lua` beside this file.
//!
//! Differences from Tarantool's (besides those of `msgpack`):
//!
//! - It is the same C encoder and decoder as `msgpack`'s, not a second one
//!   in Lua over the FFI; it keeps options of its own (a `msgpack.new()`
//!   serializer with Tarantool's defaults), except `encode_max_depth` and
//!   `encode_deep_as_nil`, read from `msgpack.cfg` at each call as
//!   Tarantool's does. So a table's shape follows msgpack's rules (sparse
//!   arrays included) where Tarantool's msgpackffi has simpler ones.
//! - `on_encode(ctype, fn)` callbacks apply to a cdata given to `encode`
//!   itself, not to one nested in a table; `internal` is empty.
//! - On Lua 5.4 (no FFI) it takes strings only, and light userdata
//!   pointers as `msgpack.decode_unchecked` does.

use crate::raw::Stack;

/// Pushes the `msgpackffi` module table, made from the `msgpack` module
/// table at `msgpack` (by its `package.preload` loader: this runs Lua code
/// under `lua_pcall`).
/// Pushes nil when the chunk fails.
pub(crate) fn open_with(s: &mut Stack, msgpack: std::ffi::c_int) {
    const CHUNK: &str = include_str!("msgpackffi.lua");
    let top = s.top();
    if s.load(CHUNK, c"=msgpackffi").is_ok() {
        s.push_value(msgpack);
        if s.pcall(1, 1).is_ok() {
            return;
        }
    }
    s.settop(top);
    s.push_nil();
}
