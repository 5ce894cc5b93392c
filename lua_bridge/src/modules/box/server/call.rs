//! CALL, CALL_16 and EVAL: each on a request fiber (a pooled stack and a
//! pooled Lua thread; one that served an earlier request waits for the
//! next in the cord's pool of request fibers, as Tarantool's tx
//! `fiber_pool` keeps them), its handler C function fetched by its cached
//! registry ref (the one `LuaRuntime::call`/`eval` use: the `_G` path
//! lookup of `box_lua_find` and the EVAL chunk cache), its arguments
//! decoded from the request in place onto the Lua stack, its results
//! encoded into one reply (Tarantool's `box_process_lua` of
//! `src/box/lua/call.c`).
//!
//! A pooled fiber keeps its id and its Lua thread from one request to the
//! next (as master's pool fibers do); what a request can set on it is
//! reset before the next: its `fiber.storage` (master's `on_stop`), its
//! name (back to `iproto`), its own max slice, its thread's environment
//! and debug hook. A fiber that was cancelled or made joinable, or on
//! which `box.error` kept a last error, ends with its request instead.

use std::ffi::c_int;
use std::rc::Rc;

use luafiber_fiber::{Builder, FiberId};
use luafiber_iproto::encode::{self, ErrorInfo};
use luafiber_iproto::mp::Reader;
use luafiber_iproto::{errcode, kind, Array};
use luafiber_runtime::ibuf::Ibuf;
use mlua::ffi;

use super::conn::{request_started, Conn};
use super::{ServerState, SCHEMA};
use crate::cord;
use crate::fiber::handlers::{handler_ref, is_plain_name, Handler};
use crate::fiber::{
    request_call, spawn_request_in, spawn_worker_in, worker_end, worker_serves_again, worker_woken,
    Start, Unfilled,
};
use crate::modules::msgpack::port::{self, Options};
use crate::raw::context::Part;
use crate::raw::{memory, Raise, Stack};

/// A request served by a fiber: what its reply needs, and what
/// `box.session` reads while it runs.
pub(crate) struct Running {
    /// Its connection.
    pub conn: Rc<Conn>,
    /// Its sync.
    pub sync: u64,
    /// Its type (CALL, CALL_16, EVAL).
    pub kind: u32,
}

/// A request fiber waiting in the cord's pool for its next request.
pub(super) struct Worker {
    id: FiberId,
    /// Its index in the cord's fibers.
    idx: usize,
    /// Its Lua thread, idle while it waits.
    l: *mut ffi::lua_State,
}

/// Request fibers kept waiting in the pool, at most; one that ends a
/// request with the pool full ends.
const IDLE_MAX: usize = 256;

/// The name of a request fiber.
const NAME: &[u8] = b"iproto";

/// Starts the fiber of a CALL, CALL_16 (`name` a function's path) or EVAL
/// (`name` the expression) with `args`; a fiber that cannot start is an
/// error reply.
pub(super) fn start(conn: &Rc<Conn>, sync: u64, kind: u32, name: &[u8], args: Array<'_>) {
    let handler = if kind == kind::EVAL {
        Handler::Eval
    } else {
        Handler::Call
    };
    let running = Running {
        conn: conn.clone(),
        sync,
        kind,
    };
    match serve(running, handler, name, args) {
        Ok(()) => {}
        Err(Refused::Body(e)) => {
            let msg = e.to_string();
            conn.send_error(sync, &ErrorInfo::client(e.code(), msg.as_bytes()));
        }
        Err(Refused::Other(msg)) => {
            conn.send_error(sync, &ErrorInfo::client(errcode::PROC_LUA, msg.as_bytes()));
        }
    }
}

/// Hands the request to a request fiber waiting in the pool, or to a new
/// one, and runs it at once until it yields or ends, as Tarantool's tx
/// `fiber_pool_cb` calls a pool fiber (`fiber_call`): a request that does
/// not yield has written its reply when this returns, and the next one
/// finds the same fiber on top of the pool, its stack and Lua thread still
/// in the CPU's caches. The caller (the reader) goes on when it yields.
fn serve(
    mut running: Running,
    handler: Handler,
    name: &[u8],
    args: Array<'_>,
) -> Result<(), Refused> {
    let Some(main) = cord::try_with(|c| c.main) else {
        return Err(other("no Lua runtime"));
    };
    // SAFETY: the reader is a Rust fiber: nothing else runs on the main
    // thread while this code does (no switch until the fiber is made), and
    // it leaves the stack as it found it (it only anchors a new thread).
    let s = &mut unsafe { Stack::outside(main) };
    while let Some(w) = ServerState::with(|st| st.idle.borrow_mut().pop()) {
        // SAFETY: a fiber in the pool waits outside any Lua call, its
        // thread idle at `[msgh]`; nothing else uses it until it runs (a
        // cancelled one is alive until it runs: it leaves the pool then).
        let t = &mut unsafe { Stack::from_state(w.l) };
        if let Err(e) = fill(t, main, handler, name, args) {
            // Back in the pool, still waiting.
            t.settop(1);
            ServerState::with(|st| st.idle.borrow_mut().push(w));
            return Err(e);
        }
        request_started(&running.conn);
        super::running_start(w.idx, w.id, running);
        // At once; else (it runs the loop's batch under this reader, state
        // rule 6 of the fiber crate) when the batch comes to it.
        if matches!(luafiber_fiber::resume_now(w.id), Ok(true))
            || matches!(luafiber_fiber::wakeup_uncancelled(w.id), Ok(true))
        {
            return Ok(());
        }
        // Cancelled while it waited: it leaves the pool when it runs.
        t.settop(1);
        match super::running_take(w.idx) {
            Some((_, r)) => {
                r.conn.request_done();
                running = r;
            }
            None => return Err(other("the request fiber was lost")),
        }
    }
    let (id, idx, _) = spawn_worker_in(
        s,
        |t| fill(t, main, handler, name, args),
        Builder::new().name_bytes(NAME),
        worker,
    )
    .map_err(refused)?;
    request_started(&running.conn);
    super::running_start(idx, id, running);
    Ok(())
}

/// Pushes `handler`, `name` and `args` onto a request fiber's thread `t`
/// (above its message handler). On an error what it pushed may be left.
fn fill(
    t: &mut Stack,
    main: *mut ffi::lua_State,
    handler: Handler,
    name: &[u8],
    args: Array<'_>,
) -> Result<(), Refused> {
    // SAFETY: `main` is the cord's state, of this thread.
    let used = unsafe { memory::used(main) };
    if t.ensure(8).is_err() {
        return Err(other("not enough memory"));
    }
    let top = t.top();
    // Taken out while it pushes: an allocation may run a finalizer.
    let mut names = ServerState::with(|st| st.names.take());
    let cached = names.find(name);
    // A plain global name goes with no handler: the fiber looks it up
    // right before its call (`resolve_global`).
    let plain = matches!(handler, Handler::Call)
        && cached.map_or_else(|| is_plain_name(name), |(_, plain)| plain);
    if !plain {
        t.push_ref(handler_ref(handler));
    }
    match cached {
        Some((r, _)) => t.push_ref(r),
        None => names.push_new(t, name),
    }
    ServerState::with(|st| st.names.set(names));
    // The decode checks arguments the protocol layer left unchecked: it
    // takes them all, or they are malformed (or Lua cannot hold them).
    match port::push_items(t, args.items_raw(), args.len(), Options::Cfg) {
        Ok(used) if used == args.items_raw().len() => {}
        Ok(_) => {
            t.settop(top);
            args.check().map_err(Refused::Body)?;
            return Err(other("bytes after the arguments"));
        }
        Err(e) => {
            t.settop(top);
            args.check().map_err(Refused::Body)?;
            return Err(other(raise_text(e)));
        }
    }
    // SAFETY: as above.
    if unsafe { memory::grew_past_limit(main, used) } {
        return Err(other("not enough memory"));
    }
    Ok(())
}

/// The body of a request fiber: serves its request, then waits in the pool
/// for the next, until it is cancelled, made joinable, keeps state a next
/// request would see, or finds the pool full.
fn worker(idx: usize, l: *mut ffi::lua_State) {
    let me = luafiber_fiber::current().expect("a request fiber runs as current");
    loop {
        // SAFETY: the fiber's own thread, which it alone uses while it
        // runs (the pool fills it only while the fiber waits there); the
        // handle lives until the fiber waits again.
        let s = &mut unsafe { Stack::from_state(l) };
        let ok = request_call(idx, s);
        if let Some((_, r)) = super::running_take(idx) {
            finish(&r.conn, r.sync, r.kind, ok, s);
        }
        if !worker_serves_again(idx, me, s, NAME, true) {
            break;
        }
        let pooled = ServerState::with(|st| {
            let mut idle = st.idle.borrow_mut();
            let room = idle.len() < IDLE_MAX;
            if room {
                idle.push(Worker { id: me, idx, l });
            }
            room
        });
        if !pooled {
            break;
        }
        // Woken with a request, or cancelled; any other wakeup
        // (`fiber.wakeup` of its id) leaves it waiting.
        loop {
            if luafiber_fiber::block_cancellable(None).is_err() {
                ServerState::with(|st| st.idle.borrow_mut().retain(|w| w.id != me));
                worker_end(idx);
                return;
            }
            if super::has_request(idx, me) {
                worker_woken(idx);
                break;
            }
        }
    }
    worker_end(idx);
}

/// Why a request's fiber did not start.
enum Refused {
    /// The arguments are malformed (what the protocol layer left for the
    /// decode to check): the error `decode_request` gives such a body.
    Body(luafiber_iproto::Error),
    /// No fiber, no memory, arguments Lua cannot hold: `ER_PROC_LUA`.
    Other(String),
}

/// Why a request fiber was not made.
fn refused(e: Unfilled<Refused>) -> Refused {
    match e {
        Unfilled::Fill(r) => r,
        Unfilled::Spawn(e) => other(raise_text(e)),
    }
}

/// [`Refused::Other`] with `m`.
fn other(m: impl Into<String>) -> Refused {
    Refused::Other(m.into())
}

/// Runs the session triggers of `kind` (`connect`, `disconnect`, `auth`)
/// for `conn` on a fresh fiber in its session: the Lua function
/// `box.internal.session_triggers(kind, ...)` with the MessagePack items
/// `extra` (`auth`: the user name and whether it succeeded), then
/// `done(None)`, or when a trigger failed `done(Some(reply))`: its error
/// as an IPROTO error reply with sync 0 (master's `tx_reply_error` of a
/// failed connect), which the caller may send or drop.
pub(super) fn run_triggers(
    conn: &Rc<Conn>,
    kind: &str,
    extra: &[u8],
    n_extra: u32,
    done: impl FnOnce(Option<Vec<u8>>) + 'static,
) -> Result<(), String> {
    let mut raw = Vec::with_capacity(8 + kind.len() + extra.len());
    let _ = rmp::encode::write_array_len(&mut raw, 1 + n_extra);
    let _ = rmp::encode::write_str(&mut raw, kind);
    raw.extend_from_slice(extra);
    let args = Array::new(&raw).ok_or("bad trigger arguments")?;
    let peer = conn.peer.clone();
    let kind = kind.to_string();
    let on_end = move |ok: bool, t: &mut Stack| {
        if ok {
            return done(None);
        }
        let msg = t.describe_tostring(-1);
        tracing::warn!(target: "iproto", "{peer}: a session on_{kind} trigger failed: {msg}");
        let mut out = Ibuf::new();
        encode_lua_error(t, 0, &mut out);
        done(Some(out.data().to_vec()));
    };
    spawn(
        conn,
        0,
        Handler::Call,
        b"box.internal.session_triggers",
        args,
        on_end,
    )
    .map_err(|e| match e {
        Refused::Body(e) => e.to_string(),
        Refused::Other(m) => m,
    })
}

/// Starts a fiber running `handler` with `name` and `args`, in `conn`'s
/// session with `sync`; `done` runs at its end.
fn spawn(
    conn: &Rc<Conn>,
    sync: u64,
    handler: Handler,
    name: &[u8],
    args: Array<'_>,
    done: impl FnOnce(bool, &mut Stack) + 'static,
) -> Result<(), Refused> {
    let Some(main) = cord::try_with(|c| c.main) else {
        return Err(other("no Lua runtime"));
    };
    // SAFETY: as in `serve`.
    let s = &mut unsafe { Stack::outside(main) };
    let wrapped = move |ok: bool, t: &mut Stack| {
        super::running_end();
        done(ok, t);
    };
    let (id, idx) = spawn_request_in(
        s,
        |t| fill(t, main, handler, name, args),
        Start::Ready,
        Builder::new().name_bytes(NAME),
        wrapped,
    )
    .map_err(refused)?;
    super::running_start(
        idx,
        id,
        Running {
            conn: conn.clone(),
            sync,
            kind: kind::CALL,
        },
    );
    Ok(())
}

fn raise_text(r: Raise) -> String {
    match r {
        Raise::Error(_, m) | Raise::Message(m) => m,
        Raise::Top => "error".into(),
    }
}

/// The end of a request's fiber: its results (`[msgh, results...]`) or
/// its error (`[msgh, error]`) become its reply.
fn finish(conn: &Rc<Conn>, sync: u64, kind: u32, ok: bool, t: &mut Stack) {
    conn.request_done();
    if conn.is_closed() {
        conn.dropped.set(conn.dropped.get() + 1);
        tracing::warn!(
            target: "iproto",
            "{}: the reply to request {sync} is dropped: the connection is closed",
            conn.peer
        );
        return;
    }
    // The usual reply, values that encode with no Lua code run (no
    // switch), straight into the connection's output; else encoded aside
    // and appended.
    if ok && kind != kind::CALL_16 {
        let n = t.top() - 1;
        if conn
            .try_send_with(|out| reply_in_place(t, 2, n, kind::OK, sync, out))
            .is_ok()
        {
            return;
        }
    }
    let mut out = ServerState::with(|st| st.take_buffer());
    if ok {
        if let Err(e) = encode_results(t, kind, sync, &mut out) {
            out.reset();
            let msg = raise_text(e);
            // A value MessagePack cannot hold ("unsupported Lua type
            // 'function'") is raised by Lua's encoder in Tarantool: a
            // LuajitError.
            let mut info = ErrorInfo::client(errcode::PROC_LUA, msg.as_bytes());
            info.type_name = "LuajitError";
            let _ = encode::encode_error(&mut out, sync, SCHEMA, &info);
        }
    } else {
        encode_lua_error(t, sync, &mut out);
    }
    conn.send(out.data());
    ServerState::with(|st| st.put_buffer(out));
}

/// Encodes the values from 2 to the top of `t` as the DATA of an OK reply:
/// flattened for CALL and EVAL, each wrapped as a tuple for CALL_16.
fn encode_results(t: &mut Stack, kind: u32, sync: u64, out: &mut Ibuf) -> Result<(), Raise> {
    let n = t.top() - 1;
    let oom = |_| Raise::illegal("not enough memory");
    let mark = encode::begin_data_reply(out).map_err(oom)?;
    let count = if kind == kind::CALL_16 {
        encode_call_16(t, n, out)?
    } else {
        for i in 0..n {
            port::encode_value(t, 2 + i, out, Options::Cfg)?;
        }
        n as u32
    };
    encode::finish_data_reply(out, mark, kind::OK, sync, SCHEMA, count);
    Ok(())
}

/// A reply of status `code` (a CALL's or EVAL's results, [`kind::OK`],
/// or a push, [`kind::CHUNK`]) whose DATA is the `n` values of `t` from
/// `first` on, when they all encode in place
/// ([`port::encode_value_in_place`]: no Lua code runs, so `out` may be
/// the connection's output); `Err` (what was written then dropped by the
/// caller) for one that does not, or any error.
pub(super) fn reply_in_place(
    t: &Stack,
    first: c_int,
    n: c_int,
    code: u32,
    sync: u64,
    out: &mut Ibuf,
) -> Result<(), ()> {
    let mark = encode::begin_data_reply(out).map_err(drop)?;
    for i in 0..n {
        match port::encode_value_in_place(t, first + i, out, Options::Cfg) {
            Some(Ok(())) => {}
            _ => return Err(()),
        }
    }
    encode::finish_data_reply(out, mark, code, sync, SCHEMA, n as u32);
    Ok(())
}

/// MessagePack markers.
const FIXARRAY_1: u8 = 0x91;

/// Whether the encoded value `v` is an array.
fn is_array(v: &[u8]) -> bool {
    matches!(v.first(), Some(0x90..=0x9f | 0xdc | 0xdd))
}

/// Tarantool 1.6's wrapping of CALL results (`luamp_encode_call_16`):
/// several results each become a tuple (an array stays, a scalar `x`
/// becomes `[x]`); one result that is an array of arrays is the tuples,
/// an array whose first item is a scalar is one tuple, `{}` is one empty
/// tuple, a scalar or a map `x` is `[x]`. Returns the tuple count.
fn encode_call_16(t: &mut Stack, n: c_int, out: &mut Ibuf) -> Result<u32, Raise> {
    let oom = |_| Raise::illegal("not enough memory");
    if n == 0 {
        return Ok(0);
    }
    let mut one = ServerState::with(|st| st.take_buffer());
    let r = (|| {
        if n > 1 {
            for i in 0..n {
                one.reset();
                port::encode_value(t, 2 + i, &mut one, Options::Cfg)?;
                if !is_array(one.data()) {
                    out.extend_from_slice(&[FIXARRAY_1]).map_err(oom)?;
                }
                out.extend_from_slice(one.data()).map_err(oom)?;
            }
            return Ok(n as u32);
        }
        port::encode_value(t, 2, &mut one, Options::Cfg)?;
        let root = one.data();
        if !is_array(root) {
            out.extend_from_slice(&[FIXARRAY_1]).map_err(oom)?;
            out.extend_from_slice(root).map_err(oom)?;
            return Ok(1);
        }
        let mut r = Reader::new(root);
        let len = r.array().unwrap_or(0);
        if len == 0 {
            out.extend_from_slice(root).map_err(oom)?;
            return Ok(1);
        }
        let items: Vec<&[u8]> = (0..len).filter_map(|_| r.value()).collect();
        if !is_array(items[0]) {
            out.extend_from_slice(root).map_err(oom)?;
            return Ok(1);
        }
        for item in items {
            if !is_array(item) {
                out.extend_from_slice(&[FIXARRAY_1]).map_err(oom)?;
            }
            out.extend_from_slice(item).map_err(oom)?;
        }
        Ok(len)
    })();
    ServerState::with(|st| st.put_buffer(one));
    r
}

/// Error types a peer builds as they are (`error_build_xc` of 2.6's
/// `mp_error.cc`); any other is sent as a `CustomError`.
const KNOWN_TYPES: [&str; 13] = [
    "ClientError",
    "LuajitError",
    "IllegalParams",
    "OutOfMemory",
    "TimedOut",
    "FiberIsCancelled",
    "ChannelIsClosed",
    "SystemError",
    "SocketError",
    "CollationError",
    "SwimError",
    "CryptoError",
    "XlogError",
];

/// The most errors of a `prev` chain an error reply carries.
const CHAIN_MAX: usize = 16;

/// One error of a reply's stack, read from a Lua value.
struct OwnedError {
    code: u32,
    type_name: String,
    message: String,
    file: String,
    line: u32,
    /// `{custom_type = ...}` of a type Tarantool does not have.
    custom: Option<Vec<u8>>,
}

impl OwnedError {
    /// The error at `idx`: a box error object keeps its code, type,
    /// message, file and line; any other value is `ER_PROC_LUA` with its
    /// text as the message (type `LuajitError`).
    fn read(t: &mut Stack, idx: c_int) -> OwnedError {
        let mut e = OwnedError {
            code: errcode::PROC_LUA,
            type_name: String::from("LuajitError"),
            message: String::new(),
            file: String::new(),
            line: 0,
            custom: None,
        };
        if t.ensure(4).is_ok() && t.type_of(idx) == ffi::LUA_TTABLE {
            let field = |t: &mut Stack, k: &std::ffi::CStr| -> Option<String> {
                t.rawget_field(idx, k);
                let v = t
                    .to_str(-1)
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                t.pop(1);
                v
            };
            t.rawget_field(idx, c"code");
            let c = t.to_integer(-1);
            t.pop(1);
            if let Some(c) = c.filter(|&c| c > 0) {
                e.code = u32::try_from(c).unwrap_or(errcode::PROC_LUA);
            }
            if let Some(ty) = field(t, c"type") {
                e.type_name = ty;
            }
            if let Some(f) = field(t, c"file") {
                e.file = f;
            }
            t.rawget_field(idx, c"line");
            e.line = t
                .to_integer(-1)
                .and_then(|l| u32::try_from(l).ok())
                .unwrap_or(0);
            t.pop(1);
            e.message = t.describe_tostring(idx);
        } else {
            e.message = t.describe_tostring(idx);
            // The CALL handler's "not defined" (a string) is ER_NO_SUCH_PROC.
            if t.type_of(idx) == ffi::LUA_TSTRING
                && e.message.starts_with("Procedure '")
                && e.message.ends_with("' is not defined")
            {
                e.code = errcode::NO_SUCH_PROC;
                e.type_name = "ClientError".into();
            }
        }
        // A type Tarantool does not have is a CustomError with its
        // `custom_type` (2.6's net.box refuses one without it, and an
        // AccessDeniedError without its fields: both drop the connection).
        if e.type_name == "AccessDeniedError" {
            e.type_name = "ClientError".into();
        } else if !KNOWN_TYPES.contains(&e.type_name.as_str()) {
            let mut f = Vec::with_capacity(16 + e.type_name.len());
            let _ = rmp::encode::write_map_len(&mut f, 1);
            let _ = rmp::encode::write_str(&mut f, "custom_type");
            let _ = rmp::encode::write_str(&mut f, &e.type_name);
            e.custom = Some(f);
            e.type_name = "CustomError".into();
        }
        e
    }

    fn info<'a>(&'a self, cause: Option<&'a ErrorInfo<'a>>) -> ErrorInfo<'a> {
        ErrorInfo {
            code: self.code,
            type_name: &self.type_name,
            message: self.message.as_bytes(),
            file: &self.file,
            line: self.line,
            errno: 0,
            fields: self.custom.as_deref(),
            cause,
        }
    }
}

/// Encodes the error at the top of `t` as an error reply, with the errors
/// of its `prev` chain as the stack's causes (at most [`CHAIN_MAX`]), as
/// master's `iproto_reply_error` sends the diag's chain.
fn encode_lua_error(t: &mut Stack, sync: u64, out: &mut Ibuf) {
    let idx = t.top();
    let mut chain = vec![OwnedError::read(t, idx)];
    if t.type_of(idx) == ffi::LUA_TTABLE {
        let base = t.top();
        let mut at = idx;
        while chain.len() < CHAIN_MAX && t.ensure(2).is_ok() {
            t.rawget_field(at, c"prev");
            if t.type_of(-1) != ffi::LUA_TTABLE {
                break;
            }
            at = t.top();
            chain.push(OwnedError::read(t, at));
        }
        t.settop(base);
    }
    encode_chain(&chain, chain.len() - 1, None, sync, out);
}

/// Encodes `chain[..=i]` with `cause` (the errors after `i`) under the
/// last: recursion from the deepest cause, so each links to the next.
fn encode_chain(
    chain: &[OwnedError],
    i: usize,
    cause: Option<&ErrorInfo<'_>>,
    sync: u64,
    out: &mut Ibuf,
) {
    let info = chain[i].info(cause);
    if i == 0 {
        let _ = encode::encode_error(out, sync, SCHEMA, &info);
    } else {
        encode_chain(chain, i - 1, Some(&info), sync, out);
    }
}
