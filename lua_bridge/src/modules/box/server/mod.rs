//! The IPROTO server (Tarantool's `src/box/iproto.cc` and the request
//! path of `src/box/lua/call.c`), `box.session`, and the users and grants
//! of `box.schema.user`/`role`/`func`.
//!
//! - [`listen`]: the listening socket `box.cfg{listen}` makes and its
//!   accept loop; Lua-free;
//! - [`conn`]: a connection's reader and writer fibers; PING, AUTH and
//!   SELECT answered by the reader; Lua-free;
//! - [`call`]: CALL, CALL_16 and EVAL on fresh Lua fibers;
//! - [`users`]: users, roles, functions, grants, the access checks;
//!   Lua-free;
//! - [`watch`]: the keys of `box.broadcast` and the sessions watching
//!   them (WATCH, UNWATCH, WATCH_ONCE, EVENT);
//! - this file: the per-cord state and the C functions of
//!   `box.internal` that `box.lua` builds `box.cfg{listen}`,
//!   `box.session` and `box.schema` on.
//!
//! The protocol's bytes are the `luafiber-iproto` crate's.

mod call;
mod conn;
mod listen;
mod names;
mod schema;
mod shutdown;
pub(crate) mod users;
mod watch;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use luafiber_fiber::FiberId;
use luafiber_iproto::encode;
use luafiber_iproto::kind;
use luafiber_runtime::ibuf::Ibuf;
use mlua::ffi;

use crate::modules::msgpack::port::{self, Options};
use crate::raw::context::Part;
use crate::raw::{error, lua_fn, LResult, Raise, Reg, Stack};
use call::Running;
use schema::{
    func_create, func_drop, func_exists, priv_grant, role_grant, user_create, user_drop,
    user_exists, user_info, user_passwd,
};
use users::{Object, Users};

/// Limits of every connection (`box.cfg`'s `net_msg_max`, `readahead`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Requests running at once per connection; past it the reader stops
    /// reading that socket until replies go out (Tarantool's default 768).
    pub net_msg_max: u32,
    /// Bytes read at once (Tarantool's default 16320).
    pub readahead: usize,
    /// The largest packet taken (bigger: the connection is closed).
    pub max_packet: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            net_msg_max: 768,
            readahead: 16320,
            max_packet: luafiber_iproto::PACKET_SIZE_MAX,
        }
    }
}

/// The schema version every response carries: constant, as clients
/// re-fetch the schema when it changes (`SCHEMA_VERSION` of the protocol
/// crate).
pub(crate) const SCHEMA: u32 = luafiber_iproto::SCHEMA_VERSION as u32;

/// Reply buffers kept for reuse, at most.
const SPARE_BUFFERS: usize = 64;

/// Per-cord state of the server (a part of the cord context).
#[derive(Default)]
pub(crate) struct ServerState {
    /// The listening socket, while `listen` is set.
    listening: RefCell<Option<listen::Listening>>,
    /// Users, roles, functions, grants.
    pub(crate) users: RefCell<Users>,
    /// The connections served, by session id (until their reader ends).
    conns: RefCell<HashMap<u64, std::rc::Rc<conn::Conn>>>,
    /// The requests running, by their fiber's index in the cord's fibers
    /// (with the fiber's id, so a slot a fiber left behind is never read
    /// as another's).
    running: RefCell<Vec<Option<(FiberId, Running)>>>,
    /// The request fibers waiting for a request (`call::Worker`), the one
    /// that waited least last.
    idle: RefCell<Vec<call::Worker>>,
    /// Bumped by every change of `users` (connections cache their
    /// user's privileges on the universe by it).
    pub(super) users_gen: Cell<u64>,
    /// The last session id given.
    next_session: Cell<u64>,
    /// Reply buffers for reuse.
    spares: RefCell<Vec<Ibuf>>,
    /// The Lua strings of recent function names and expressions.
    names: Cell<names::Names>,
    /// The instance's UUID (made on first use).
    uuid: RefCell<String>,
    /// Connection limits.
    limits: Cell<Limits>,
    /// How many session triggers each kind has: connect, disconnect,
    /// auth (set by `box.session.on_*`).
    triggers: Cell<[u32; 3]>,
    /// The keys of `box.broadcast` and their watchers.
    events: RefCell<watch::Events>,
}

impl ServerState {
    /// `users` for a change (which the access caches see).
    fn users_mut(&self) -> std::cell::RefMut<'_, Users> {
        self.users_gen.set(self.users_gen.get() + 1);
        self.users.borrow_mut()
    }

    /// A cleared reply buffer.
    fn take_buffer(&self) -> Ibuf {
        self.spares.borrow_mut().pop().unwrap_or_default()
    }

    /// Gives a reply buffer back.
    fn put_buffer(&self, mut buf: Ibuf) {
        buf.reset();
        let mut spares = self.spares.borrow_mut();
        if spares.len() < SPARE_BUFFERS && buf.capacity() <= 1 << 20 {
            spares.push(buf);
        }
    }

    /// The instance's UUID.
    fn uuid(&self) -> String {
        let mut u = self.uuid.borrow_mut();
        if u.is_empty() {
            *u = uuid::Uuid::new_v4().to_string();
        }
        u.clone()
    }
}

/// The C functions of `box.internal` this module adds.
pub(crate) const INTERNAL: &[Reg] = &[
    (c"cfg_listen", cfg_listen),
    (c"cfg_net", cfg_net),
    (c"listen_addr", listen_addr),
    (c"session_id", session_id),
    (c"session_user", session_user),
    (c"session_uid", session_uid),
    (c"session_peer", session_peer),
    (c"session_sync", session_sync),
    (c"session_type", session_type),
    (c"session_push", session_push),
    (c"user_create", user_create),
    (c"user_passwd", user_passwd),
    (c"user_drop", user_drop),
    (c"user_exists", user_exists),
    (c"user_info", user_info),
    (c"priv_grant", priv_grant),
    (c"role_grant", role_grant),
    (c"func_create", func_create),
    (c"func_drop", func_drop),
    (c"func_exists", func_exists),
    (c"server_stats", server_stats),
    (c"session_trigger_count", session_trigger_count),
    (c"raise_coded", raise_coded_fn),
    (c"password_hash", password_hash),
    (c"server_drain", shutdown::server_drain),
    (c"watch_set", watch::watch_set),
    (c"watch_get", watch::watch_get),
];

/// Raises a `ClientError` with `code` and `msg`.
fn raise_coded(s: &mut Stack, code: u32, msg: &str) -> Raise {
    if s.ensure(4).is_err() {
        return Raise::illegal(msg.to_string());
    }
    let ty: &[u8] = if code == 42 {
        b"AccessDeniedError"
    } else {
        b"ClientError"
    };
    error::push_coded(s, ty, code, msg.as_bytes());
    Raise::Top
}

/// The string argument `i` of `what`.
fn str_arg(s: &Stack, i: i32, what: &str) -> LResult<String> {
    s.to_str(i)
        .filter(|_| s.type_of(i) == ffi::LUA_TSTRING)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| Raise::illegal(format!("{what}: argument {i} must be a string")))
}

/// The request the running fiber serves, as `f` sees it.
fn with_running<R>(f: impl FnOnce(Option<&Running>) -> R) -> R {
    let me = luafiber_fiber::current();
    let idx = my_index();
    ServerState::with(|st| {
        let running = st.running.borrow();
        let r = match (me, idx) {
            (Some(me), Some(i)) => running
                .get(i)
                .and_then(Option::as_ref)
                .filter(|(id, _)| *id == me)
                .map(|(_, r)| r),
            _ => None,
        };
        f(r)
    })
}

/// The running fiber's index in the cord's fibers, if it is a Lua fiber.
fn my_index() -> Option<usize> {
    luafiber_fiber::current_ext().and_then(|e| e.checked_sub(1))
}

/// Records that fiber `id`, at `idx` in the cord's fibers, serves `r`.
fn running_start(idx: usize, id: FiberId, r: Running) {
    ServerState::with(|st| {
        let mut running = st.running.borrow_mut();
        if running.len() <= idx {
            running.resize_with(idx + 1, || None);
        }
        running[idx] = Some((id, r));
    });
}

/// The running fiber's request has ended (its reply is being made).
fn running_end() {
    if let Some(idx) = my_index() {
        drop(running_take(idx));
    }
}

/// Takes the request of the fiber at `idx` in the cord's fibers (the
/// caller drops it outside any borrow: it may hold the last reference to
/// a connection).
fn running_take(idx: usize) -> Option<(FiberId, Running)> {
    ServerState::with(|st| st.running.borrow_mut().get_mut(idx).and_then(Option::take))
}

/// Whether fiber `id`, at `idx` in the cord's fibers, has a request.
fn has_request(idx: usize, id: FiberId) -> bool {
    ServerState::with(|st| {
        st.running
            .borrow()
            .get(idx)
            .is_some_and(|r| r.as_ref().is_some_and(|(i, _)| *i == id))
    })
}

lua_fn! {
    /// `box.internal.cfg_listen(value)`: starts listening on `value` (a
    /// URI string or a port number, or master's table form with exactly
    /// one URI: `{uri}` or `{uri = uri}`), moves to another address, or
    /// stops (nil, `box.NULL`, `{}`, anything else); what `box.cfg{listen}`
    /// calls. Raises when the address cannot be bound or the table holds
    /// several URIs (the old one is kept).
    fn cfg_listen(s: &mut Stack) {
        let text = listen_uri(s, 1, 0).map_err(|m| raise_coded(s, 0, &m))?;
        let same = ServerState::with(|st| {
            st.listening.borrow().as_ref().map(|l| l.uri.clone()) == text
        });
        if same {
            return Ok(0);
        }
        let new = match text.as_deref() {
            Some(t) => Some(listen::Listening::start(t).map_err(|m| raise_coded(s, 0, &m))?),
            None => None,
        };
        let old = ServerState::with(|st| st.listening.replace(new));
        drop(old);
        Ok(0)
    }
}

/// The one URI `box.cfg{listen}`'s value at `idx` names: a string, a
/// number (a port), or a table (master's multi-listen form) holding one
/// of them, as `{uri}` or `{uri = uri}` (possibly nested once more, as
/// `{{uri = uri}}`); `None` for nil, `{}` and anything else.
///
/// # Errors
///
/// A message for several URIs (luafiber listens on one address) or a
/// table whose URI is neither a string nor a number.
fn listen_uri(s: &mut Stack, idx: std::ffi::c_int, depth: u32) -> Result<Option<String>, String> {
    let bad = || {
        "Incorrect value for option 'listen': expected a URI string or number, or a table with one URI".to_string()
    };
    match s.type_of(idx) {
        ffi::LUA_TSTRING => Ok(s
            .to_str(idx)
            .map(|b| String::from_utf8_lossy(b).into_owned())),
        ffi::LUA_TNUMBER => Ok(s.to_integer(idx).map(|n| n.to_string())),
        ffi::LUA_TTABLE if depth < 2 => {
            let t = s.abs(idx);
            let top = s.top();
            let r = if s.rawget_field(t, c"uri") != ffi::LUA_TNIL {
                match s.type_of(-1) {
                    ffi::LUA_TSTRING | ffi::LUA_TNUMBER => listen_uri(s, -1, depth + 1),
                    _ => Err(bad()),
                }
            } else if s.rawgeti(t, 2) != ffi::LUA_TNIL {
                Err("listen: several URIs are not supported by luafiber".to_string())
            } else if s.rawgeti(t, 1) == ffi::LUA_TNIL {
                Ok(None)
            } else {
                match listen_uri(s, -1, depth + 1) {
                    Ok(None) => Err(bad()),
                    r => r,
                }
            };
            s.settop(top);
            r
        }
        ffi::LUA_TTABLE => Err(bad()),
        _ => Ok(None),
    }
}

lua_fn! {
    /// `box.internal.cfg_net(net_msg_max, readahead)`: the limits of
    /// connections made from now on (nil keeps a value).
    fn cfg_net(s: &mut Stack) {
        let max = s.to_integer(1);
        let ra = s.to_integer(2);
        ServerState::with(|st| {
            let mut l = st.limits.get();
            if let Some(m) = max.filter(|&m| m > 0) {
                l.net_msg_max = u32::try_from(m).unwrap_or(u32::MAX);
            }
            if let Some(r) = ra.filter(|&r| r > 0) {
                l.readahead = usize::try_from(r).unwrap_or(16320).min(1 << 30);
            }
            st.limits.set(l);
        });
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.listen_addr()`: the address listened on (`host:port`
    /// with the port chosen for port 0, `unix/:PATH`), or nil.
    fn listen_addr(s: &mut Stack) {
        let a = ServerState::with(|st| st.listening.borrow().as_ref().map(|l| l.addr.clone()));
        match a {
            Some(a) => s.push_str(&a),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.session.id()`: the session of the request the fiber serves; 1
    /// (the instance's own session) elsewhere.
    fn session_id(s: &mut Stack) {
        let id = with_running(|r| r.map_or(1, |r| r.conn.session));
        s.push_int(id as i64);
        Ok(1)
    }
}

/// The user id of the running fiber's session (admin outside requests).
fn current_uid() -> u32 {
    with_running(|r| r.map_or(users::ADMIN, |r| r.conn.user.get()))
}

lua_fn! {
    /// `box.session.user()`: the session's user name.
    fn session_user(s: &mut Stack) {
        let uid = current_uid();
        let name = ServerState::with(|st| st.users.borrow().name_of(uid).to_string());
        s.push_str(&name);
        Ok(1)
    }
}

lua_fn! {
    /// `box.session.uid()`: the session's user id.
    fn session_uid(s: &mut Stack) {
        s.push_int(i64::from(current_uid()));
        Ok(1)
    }
}

lua_fn! {
    /// `box.session.peer()`: the peer's address, or nil outside a request.
    fn session_peer(s: &mut Stack) {
        let p = with_running(|r| r.map(|r| r.conn.peer.clone()));
        match p {
            Some(p) => s.push_str(&p),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.session.sync()`: the sync of the request the fiber serves, or
    /// 0.
    fn session_sync(s: &mut Stack) {
        let sync = with_running(|r| r.map_or(0, |r| r.sync));
        s.push_int(sync as i64);
        Ok(1)
    }
}

lua_fn! {
    /// `box.session.type()`: `binary` in a request, else `background`.
    fn session_type(s: &mut Stack) {
        let binary = with_running(|r| r.is_some());
        s.push_str(if binary { "binary" } else { "background" });
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.session_push(value)` (`box.session.push`): sends
    /// `value` to the peer of the request the fiber serves as a CHUNK with
    /// that request's sync; returns true (queued; the peer gets it with
    /// the replies of this loop iteration). As master's `lbox_session_push`
    /// (`luaT_push_nil_and_error`): nil and a `ClientError` outside a
    /// request (code 5, "Session 'background' does not support push()")
    /// and once the peer has gone (code 86, "Session is closed"); box.lua
    /// makes it the fiber's `box.error.last()`.
    fn session_push(s: &mut Stack) {
        // One argument: its type cannot be none.
        if s.top() != 1 {
            return Err(Raise::illegal("Usage: box.session.push(data)"));
        }
        let target = with_running(|r| r.map(|r| (r.conn.clone(), r.sync)));
        let failed: Option<(u32, &str)> = match &target {
            None => Some((5, "Session 'background' does not support push()")),
            Some((conn, _)) if conn.is_closed() => Some((86, "Session is closed")),
            Some(_) => None,
        };
        if let Some((code, msg)) = failed {
            s.ensure(5)?;
            s.push_nil();
            error::push_coded(s, b"ClientError", code, msg.as_bytes());
            return Ok(2);
        }
        let Some((conn, sync)) = target else {
            return Ok(0);
        };
        // A value whose encoding runs no Lua code (a scalar, a plain
        // table): straight into the connection's output.
        let in_place =
            conn.try_send_with(|out| call::reply_in_place(s, 1, 1, kind::CHUNK, sync, out));
        if in_place.is_err() {
            // A `__serialize` may yield: encoded aside, then appended.
            let mut out = ServerState::with(|st| st.take_buffer());
            let r = (|| -> LResult<()> {
                let mark = encode::begin_data_reply(&mut out)
                    .map_err(|_| Raise::illegal("not enough memory"))?;
                port::encode_value(s, 1, &mut out, Options::Cfg)?;
                encode::finish_data_reply(&mut out, mark, kind::CHUNK, sync, SCHEMA, 1);
                Ok(())
            })();
            if r.is_ok() {
                conn.send(out.data());
            }
            ServerState::with(|st| st.put_buffer(out));
            r?;
        }
        s.push_bool(true);
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.server_stats()`: `{requests = N}`, the requests
    /// running now (tests check that nothing is left behind).
    fn server_stats(s: &mut Stack) {
        let n = ServerState::with(|st| st.running.borrow().iter().flatten().count());
        s.ensure(4)?;
        let t = s.new_table(0, 1);
        s.push_int(n as i64);
        s.set_field(t, c"requests");
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.raise_coded(code, message)`: raises a `ClientError`
    /// (`AccessDeniedError` for 42) with that code and message.
    fn raise_coded_fn(s: &mut Stack) {
        let code = s.to_integer(1).unwrap_or(0) as u32;
        let msg = s.to_str(2).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        Err(raise_coded(s, code, &msg))
    }
}

lua_fn! {
    /// `box.internal.password_hash(password)`: base64 of
    /// `sha1(sha1(password))`, what Tarantool's `_user` keeps
    /// (`box.schema.user.password`).
    fn password_hash(s: &mut Stack) {
        use base64::Engine;
        let pw = s.to_str(1).map(<[u8]>::to_vec).unwrap_or_default();
        let h = luafiber_iproto::auth::password_hash2(&pw);
        s.push_str(&base64::engine::general_purpose::STANDARD.encode(h));
        Ok(1)
    }
}

/// The session trigger kinds, in the order of `ServerState::triggers`.
pub(super) const TRIGGER_CONNECT: usize = 0;
/// `on_disconnect`.
pub(super) const TRIGGER_DISCONNECT: usize = 1;
/// `on_auth`.
pub(super) const TRIGGER_AUTH: usize = 2;

/// Whether there are session triggers of `kind`.
pub(super) fn has_triggers(kind: usize) -> bool {
    ServerState::with(|st| st.triggers.get()[kind] > 0)
}

lua_fn! {
    /// `box.internal.session_trigger_count(kind, n)`: how many triggers
    /// of `kind` (`connect`, `disconnect`, `auth`) there are now, so the
    /// server runs them only when there are some.
    fn session_trigger_count(s: &mut Stack) {
        let i = match s.to_str(1) {
            Some(b"connect") => TRIGGER_CONNECT,
            Some(b"disconnect") => TRIGGER_DISCONNECT,
            Some(b"auth") => TRIGGER_AUTH,
            _ => return Err(Raise::illegal("unknown trigger kind")),
        };
        let n = u32::try_from(s.to_integer(2).unwrap_or(0)).unwrap_or(0);
        ServerState::with(|st| {
            let mut t = st.triggers.get();
            t[i] = n;
            st.triggers.set(t);
        });
        Ok(0)
    }
}
