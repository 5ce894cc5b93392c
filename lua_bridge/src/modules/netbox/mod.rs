//! The Lua `net.box` module: Tarantool's client of IPROTO (2.6's
//! `src/box/lua/net_box.lua` with master's connect options, on master's
//! split: the transport in C, the face in Lua).
//!
//! - the bytes (greeting, chap-sha1, request frames, responses decoded in
//!   place) are the `luafiber-iproto` crate's, the one the IPROTO server
//!   uses: one implementation of the protocol for both sides;
//! - [`request`]: a request in flight; Lua-free;
//! - [`transport`]: the socket, the writer, the reader that dispatches
//!   responses by sync, the connection state; Lua-free;
//! - [`connect`]: `net.box.lib`'s connection steps (connect, greeting,
//!   reader, writer, state, AUTH);
//! - [`calls`]: `net.box.lib`'s `perform`, the request path of every
//!   method, and the function table;
//! - [`decode`]: answers into Lua values (a push's message, a result,
//!   the `buffer` copy);
//! - [`future`]: futures and the `pairs()` iterator;
//! - [`watch`]: `net.box.lib`'s ID, WATCH/UNWATCH, the next sync;
//! - `watch.lua`: `conn:watch`, `conn:watch_once`, the watchers and
//!   the EVENTs they get;
//! - `net_box.lua`: the module's face: `connect`, the connection object
//!   and its state machine, triggers, spaces and indexes;
//! - `self.lua`: `net.box.self`, calls into this instance.
//!
//! `require('net.box')` loads it (`package.preload`), once per cord.
//! See `docs/lua/net.box.md` for the API and the differences from
//! Tarantool.

pub(crate) mod calls;
mod connect;
mod decode;
pub(crate) mod future;
mod request;
mod transport;
mod watch;

use crate::raw::{lua_fn, Raise};

/// `net_box.lua`, run once per cord by the loader.
const CHUNK: &str = include_str!("net_box.lua");

/// `self.lua`: `net.box.self`, made by `net_box.lua` through
/// `lib.make_self`.
const SELF: &str = include_str!("self.lua");

/// `watch.lua`: the watchers, made by `net_box.lua` through
/// `lib.make_watch`.
const WATCH: &str = include_str!("watch.lua");

lua_fn! {
    /// The `net.box` module's loader (`package.preload['net.box']`): makes
    /// the kinds of transports and futures and `net.box.lib`, and runs
    /// `net_box.lua` over them, which gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        calls::init(s);
        future::init(s);
        let lib = s.new_table(0, calls::LIB.len() as i32 + 2);
        s.set_funcs(lib, calls::LIB);
        s.load(SELF, c"=net.box.self").map_err(|()| Raise::Top)?;
        s.set_field(lib, c"make_self");
        s.load(WATCH, c"=net.box.watch").map_err(|()| Raise::Top)?;
        s.set_field(lib, c"make_watch");
        s.load(CHUNK, c"=net.box").map_err(|()| Raise::Top)?;
        s.push_value(lib);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
