//! The Lua modules, as Tarantool offers them: `fiber` (with channels and
//! conds), `clock`, `buffer`, `msgpack` (and `msgpackffi` over it), `json`,
//! `log`, and `socket` and `errno` (loaded by their first `require`). Each
//! is a folder or file of its own, opened into `package.loaded` by
//! [`register`]; `serializer` holds what `msgpack` and `json` share.

pub(crate) mod buffer;
pub(crate) mod clock;
pub(crate) mod errno;
pub(crate) mod fiber;
pub(crate) mod json;
pub mod log;
pub(crate) mod msgpack;
pub(crate) mod msgpackffi;
pub(crate) mod serializer;
pub(crate) mod socket;
pub(crate) mod threads;

use crate::raw::Stack;

/// Makes the modules' metatables and registry refs, once per state.
pub(crate) fn init(s: &mut Stack) {
    fiber::init(s);
}

/// Puts the modules into `package.loaded` (at setup: this runs Lua code
/// under `lua_pcall`).
pub(crate) fn register(s: &mut Stack) {
    let top = s.top();
    s.push_globals();
    s.rawget_field(-1, c"package");
    s.rawget_field(-1, c"loaded");
    let loaded = s.top();
    if s.type_of(loaded) != mlua::ffi::LUA_TTABLE {
        s.settop(top);
        return;
    }
    type Open = (&'static std::ffi::CStr, fn(&mut Stack));
    let opens: [Open; 7] = [
        (c"fiber", fiber::open),
        (c"clock", clock::open),
        (c"buffer", buffer::open),
        (c"msgpack", msgpack::open),
        (c"json", json::open),
        (c"log", log::open),
        (c"experimental.threads", threads::open),
    ];
    for (name, open) in opens {
        open(s);
        s.set_field(loaded, name);
    }
    // Loaded by the first `require`.
    s.rawget_field(-2, c"preload");
    if s.type_of(-1) == mlua::ffi::LUA_TTABLE {
        s.push_cfunction(socket::open);
        s.set_field(-2, c"socket");
        s.push_cfunction(errno::open);
        s.set_field(-2, c"errno");
    }
    s.rawget_field(loaded, c"msgpack");
    let msgpack = s.top();
    msgpackffi::open_with(s, msgpack);
    s.set_field(loaded, c"msgpackffi");
    s.settop(top);
    crate::fiber::guard::wrap_collectgarbage(s);
}
