//! The Lua modules, as Tarantool offers them: `fiber` (with channels and
//! conds), `clock`, `buffer`, `msgpack` (and `msgpackffi` over it), `json`,
//! `log`, `socket`, `errno`, `uri`, `uuid`, `decimal`, `datetime`, `fio`, `net.box`,
//! `crypto`, `digest`, `strict`, `utf8`, `csv`, `pickle`, `yaml`, `popen`, `http.client`,
//! the global `tonumber64` and the global `box`. Each is a folder or file of its own, put
//! into `package.loaded` or `package.preload` by [`register`];
//! `serializer` holds what `msgpack` and `json` share.

/// `box` (a Rust keyword, hence the name).
#[path = "box/mod.rs"]
pub(crate) mod box_;
pub(crate) mod buffer;
pub(crate) mod clock;
pub(crate) mod crypto;
pub(crate) mod csv;
pub(crate) mod ctype;
pub(crate) mod datetime;
pub(crate) mod decimal;
pub(crate) mod digest;
pub(crate) mod errno;
pub(crate) mod ext;
pub(crate) mod ffi_decl;
pub(crate) mod fiber;
pub(crate) mod fio;
pub(crate) mod httpc;
pub(crate) mod json;
pub mod log;
pub(crate) mod msgpack;
pub(crate) mod msgpackffi;
pub(crate) mod netbox;
pub(crate) mod pickle;
pub(crate) mod popen;
pub(crate) mod serializer;
pub(crate) mod socket;
pub(crate) mod strict;
pub(crate) mod string;
pub(crate) mod table;
pub(crate) mod threads;
pub(crate) mod tonumber64;
pub(crate) mod uri;
pub(crate) mod utf8;
pub(crate) mod uuid;
pub(crate) mod yaml;

use crate::raw::{lua_fn, Raise, Stack};

/// Makes the modules' metatables and registry refs, once per state.
pub(crate) fn init(s: &mut Stack) {
    fiber::init(s);
    // The value types of the modules loaded by `require` belong to the
    // state they were made in.
    uuid::SLOT.reset();
    decimal::SLOT.reset();
    datetime::reset();
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
    let opens: [Open; 5] = [
        (c"fiber", fiber::open),
        (c"clock", clock::open),
        (c"buffer", buffer::open),
        (c"msgpack", msgpack::open),
        (c"experimental.threads", threads::open),
    ];
    for (name, open) in opens {
        open(s);
        s.set_field(loaded, name);
    }
    // `utf8` is global from the start, as in Tarantool (and Lua 5.4).
    utf8::open(s);
    s.push_value(-1);
    s.set_field(loaded, c"utf8");
    s.push_globals();
    s.insert(-2);
    s.set_field(-2, c"utf8");
    s.pop(1);
    ffi_decl::declare(s);
    // Loaded by the first `require`: a script that never asks for them
    // keeps their functions and chunks (about 20 KiB) out of its Lua heap,
    // which every collection cycle walks.
    s.rawget_field(-2, c"preload");
    if s.type_of(-1) == mlua::ffi::LUA_TTABLE {
        s.push_cfunction(socket::open);
        s.set_field(-2, c"socket");
        s.push_cfunction(errno::open);
        s.set_field(-2, c"errno");
        s.push_cfunction(uri::open);
        s.set_field(-2, c"uri");
        s.push_cfunction(uuid::open);
        s.set_field(-2, c"uuid");
        s.push_cfunction(decimal::open);
        s.set_field(-2, c"decimal");
        s.push_cfunction(datetime::open);
        s.set_field(-2, c"datetime");
        s.push_cfunction(fio::open);
        s.set_field(-2, c"fio");
        s.push_cfunction(netbox::open);
        s.set_field(-2, c"net.box");
        s.push_cfunction(crypto::open);
        s.set_field(-2, c"crypto");
        s.push_cfunction(digest::open);
        s.set_field(-2, c"digest");
        s.push_cfunction(strict::open);
        s.set_field(-2, c"strict");
        s.push_cfunction(csv::open);
        s.set_field(-2, c"csv");
        s.push_cfunction(pickle::open);
        s.set_field(-2, c"pickle");
        s.push_cfunction(yaml::open);
        s.set_field(-2, c"yaml");
        s.push_cfunction(popen::open);
        s.set_field(-2, c"popen");
        s.push_cfunction(httpc::open);
        s.set_field(-2, c"http.client");
        for name in [c"json", c"log", c"msgpackffi"] {
            s.push_cfunction(open_preloaded);
            s.set_field(-2, name);
        }
    }
    s.settop(top);
    table::extend(s);
    string::extend(s);
    tonumber64::register(s);
    crate::fiber::guard::wrap_collectgarbage(s);
    // After the preloads: box's Lua parts require log, json, uuid.
    box_::register(s);
}

lua_fn! {
    /// The loader of `json`, `log` and `msgpackffi` in `package.preload`:
    /// `require(name)` calls it with the module's name and keeps the table
    /// it returns in `package.loaded`, as for the modules opened at setup.
    fn open_preloaded(s: &mut Stack) {
        let name = s.to_str(1).map(<[u8]>::to_vec);
        s.settop(0);
        s.ensure(16)?;
        match name.as_deref() {
            Some(b"json") => json::open(s),
            Some(b"log") => log::open(s),
            Some(b"msgpackffi") => {
                s.push_globals();
                s.rawget_field(-1, c"package");
                s.rawget_field(-1, c"loaded");
                s.rawget_field(-1, c"msgpack");
                let msgpack = s.top();
                msgpackffi::open_with(s, msgpack);
            }
            _ => return Err(Raise::illegal("open_preloaded: not a module of the bridge")),
        }
        Ok(1)
    }
}
