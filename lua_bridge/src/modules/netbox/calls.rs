//! The C functions of `net.box.lib`: `perform`, the request path every
//! `conn:call`, `conn:eval`, space and index method goes through: options,
//! state check, encode into the send buffer, wait, decode (Tarantool's
//! `perform_request`, `perform_async_request`, `dispatch_response_iproto`
//! and the method encoders and decoders); the transport object's kind. The
//! connection steps are [`super::connect`]'s.

use std::cell::Cell;
use std::ffi::c_int;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_iproto::encode::{self, Mark};
use luafiber_iproto::mp::{write_map, write_raw, write_uint};
use luafiber_iproto::{key, kind, Array};
use luafiber_runtime::ibuf::{Ibuf, ReserveError};
use mlua::ffi;

use super::connect;
use super::decode::{copy_to_buffer, push_len, push_message, push_result};
use super::future::{self, Fut};
pub(super) use super::request::{push_failure, raise_failure, timed_out};
use super::request::{Decode, Failure, Request};
use super::transport::{State, Transport, ER_NO_CONNECTION, ER_PROC_LUA};
use crate::luajit::entry;
use crate::modules::buffer::{self, LuaIbuf};
use crate::modules::msgpack::port::{self, Options};
use crate::raw::context::Part;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{args, lua_fn, Kind, LResult, Raise, Stack};

/// Per-cord state of `net.box` (a part of the cord context): the kind of
/// transport objects (the future kind is in [`future`]).
#[derive(Default)]
pub(crate) struct Transports(Cell<Kind<Rc<Transport>>>);

/// The transport kind of this cord.
#[inline]
pub(super) fn transports() -> Kind<Rc<Transport>> {
    Transports::with(|k| k.0.get())
}

/// Makes the transport kind (once per cord, when the module opens).
pub(super) fn init(s: &mut Stack) {
    let kind = Kind::new(
        s,
        c"net.box.transport",
        &[],
        &[(c"__gc", connect::transport_gc)],
    );
    Transports::with(|k| k.0.set(kind));
}

/// The transport of argument `idx` (1-based) of the running C function
/// (read in place where LuaJIT's layout is known, `entry::arg_of`).
#[inline]
pub(super) fn transport(s: &mut Stack, idx: c_int) -> LResult<Rc<Transport>> {
    entry::arg_of(s, idx, transports())
        .ok_or_else(|| Raise::illegal("net.box: a transport expected"))
}

/// Tells the stack handle that the fiber may have slept.
#[inline]
pub(super) fn after_switch(s: &mut Stack) {
    // SAFETY: a switch runs other fibers on their own Lua threads; nothing
    // wrote to this one but through the C API.
    unsafe { s.sync() };
}

/// Waits on `req`'s cond until woken or `deadline`; `false` when the
/// deadline passed. A cancel raises `FiberIsCancelled`.
pub(super) fn wait_request(
    s: &mut Stack,
    req: &Request,
    deadline: Option<Instant>,
) -> LResult<bool> {
    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    if left == Some(Duration::ZERO) {
        return Ok(false);
    }
    crate::fiber::check_switch(s, "net.box")?;
    let r = req.cond.wait(left);
    after_switch(s);
    r.map_err(error::from_fiber)
}

/// The deadline of a timeout in seconds (`None`: none).
pub(super) fn deadline_of(t: Option<f64>) -> Option<Instant> {
    t.and_then(args::seconds)
        .and_then(|d| Instant::now().checked_add(d))
}

/// The options of one request (Tarantool's `_request` opts).
#[derive(Default)]
pub(super) struct Opts {
    pub timeout: Option<f64>,
    pub is_async: bool,
    /// The index of the `buffer` ibuf on the stack.
    pub buffer: Option<Rc<LuaIbuf>>,
    pub skip_header: bool,
    /// Results as `msgpack.object`s (master's `return_raw`).
    pub return_raw: bool,
    /// Stack indices of `on_push` and `on_push_ctx`.
    pub on_push: Option<(c_int, c_int)>,
}

/// Reads the options table at `idx` (nothing for nil). Pushes `on_push`
/// and `on_push_ctx` when given (their indices are in the result).
///
/// One raw walk of the table (`lua_next`) finds the options it has: a
/// request's options table is small (`{is_async = true}`), and a lookup
/// by name would intern each option's name per request. What the walk
/// reads is what raw gets of those names would give.
fn read_opts(s: &mut Stack, idx: c_int) -> LResult<Opts> {
    let mut o = Opts::default();
    match s.type_of(idx) {
        ffi::LUA_TNIL | ffi::LUA_TNONE => return Ok(o),
        ffi::LUA_TTABLE => {}
        _ => return Err(Raise::illegal("net.box: options must be a table")),
    }
    let idx = s.abs(idx);
    s.ensure(4)?;
    let (mut has_buffer, mut has_push, mut has_ctx) = (false, false, false);
    s.push_nil();
    // SAFETY: the key on top is nil, then the one `next` pushed; nothing is
    // assigned to the table during the walk.
    while unsafe { s.next(idx) } {
        // Only string keys name options (`to_str` converts no number, so
        // the key stays what `next` gave).
        match s.to_str(-2) {
            Some(b"timeout") => o.timeout = s.to_number(-1),
            Some(b"is_async") => o.is_async = s.to_bool(-1),
            Some(b"skip_header") => o.skip_header = s.to_bool(-1),
            Some(b"return_raw") => o.return_raw = s.to_bool(-1),
            Some(b"buffer") => has_buffer = true,
            Some(b"on_push") => has_push = true,
            Some(b"on_push_ctx") => has_ctx = true,
            _ => {}
        }
        s.pop(1);
    }
    if has_buffer {
        s.rawget_field(idx, c"buffer");
        let ctx = port::buffer_ctx()?;
        o.buffer = Some(
            buffer::to_ibuf(s, &ctx, -1)
                .ok_or_else(|| Raise::illegal("net.box: buffer must be an ibuf"))?,
        );
        s.pop(1);
    }
    if o.is_async && (has_push || has_ctx) {
        return Err(Raise::Message(
            "To handle pushes in an async request use future:pairs()".into(),
        ));
    }
    if has_push {
        s.rawget_field(idx, c"on_push");
        s.rawget_field(idx, c"on_push_ctx");
        let top = s.top();
        o.on_push = Some((top - 1, top));
    }
    Ok(o)
}

/// The error of a send buffer that cannot grow.
pub(super) fn no_room(_: ReserveError) -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// Writes one-byte keys, each with its unsigned value.
fn uint_fields(out: &mut Ibuf, fields: &[(u8, u64)]) -> Result<(), ReserveError> {
    for &(k, v) in fields {
        write_uint(out, k.into())?;
        write_uint(out, v)?;
    }
    Ok(())
}

/// Begins request `ty` with `sync` in `out` and encodes its body from the
/// arguments at `first..` (the layouts of `luafiber_iproto::encode`, with
/// the Lua values encoded in place); [`encode::finish_request`] ends it.
fn encode_request(
    s: &mut Stack,
    ty: u32,
    sync: u64,
    first: c_int,
    out: &mut Ibuf,
) -> LResult<Mark> {
    let uint = |s: &Stack, i: c_int| s.to_integer(i).unwrap_or(0).max(0) as u64;
    let mark = match ty {
        kind::CALL | kind::CALL_16 => {
            let name = s.to_str(first).unwrap_or(b"");
            encode::begin_call(out, ty, sync, name).map_err(no_room)?
        }
        kind::EVAL => {
            let expr = s.to_str(first).unwrap_or(b"");
            encode::begin_eval(out, sync, expr).map_err(no_room)?
        }
        kind::PING
        | kind::SELECT
        | kind::INSERT
        | kind::REPLACE
        | kind::UPDATE
        | kind::DELETE
        | kind::UPSERT
        | kind::WATCH_ONCE => encode::begin_request(out, ty, sync).map_err(no_room)?,
        _ => {
            return Err(Raise::illegal(format!(
                "net.box: unknown request type {ty}"
            )))
        }
    };
    match ty {
        kind::CALL | kind::CALL_16 | kind::EVAL => value_or_empty(s, first + 1, out)?,
        kind::PING => write_map(out, 0).map_err(no_room)?,
        kind::WATCH_ONCE => {
            let k = s.to_str(first).unwrap_or(b"");
            write_map(out, 1).map_err(no_room)?;
            write_uint(out, key::EVENT_KEY.into()).map_err(no_room)?;
            luafiber_iproto::mp::write_str(out, k).map_err(no_room)?;
        }
        kind::SELECT => {
            write_map(out, 6).map_err(no_room)?;
            let fields = [
                (key::SPACE_ID, uint(s, first)),
                (key::INDEX_ID, uint(s, first + 1)),
                (key::ITERATOR, uint(s, first + 2)),
                (key::OFFSET, uint(s, first + 3)),
                (key::LIMIT, uint(s, first + 4)),
            ];
            uint_fields(out, &fields).map_err(no_room)?;
            write_uint(out, key::KEY.into()).map_err(no_room)?;
            value_or_empty(s, first + 5, out)?;
        }
        kind::INSERT | kind::REPLACE => {
            write_map(out, 2).map_err(no_room)?;
            uint_fields(out, &[(key::SPACE_ID, uint(s, first))]).map_err(no_room)?;
            write_uint(out, key::TUPLE.into()).map_err(no_room)?;
            value_or_empty(s, first + 1, out)?;
        }
        kind::UPDATE => {
            write_map(out, 5).map_err(no_room)?;
            let fields = [
                (key::SPACE_ID, uint(s, first)),
                (key::INDEX_ID, uint(s, first + 1)),
                (key::INDEX_BASE, 1),
            ];
            uint_fields(out, &fields).map_err(no_room)?;
            write_uint(out, key::KEY.into()).map_err(no_room)?;
            value_or_empty(s, first + 2, out)?;
            write_uint(out, key::TUPLE.into()).map_err(no_room)?;
            value_or_empty(s, first + 3, out)?;
        }
        kind::DELETE => {
            write_map(out, 3).map_err(no_room)?;
            let fields = [
                (key::SPACE_ID, uint(s, first)),
                (key::INDEX_ID, uint(s, first + 1)),
            ];
            uint_fields(out, &fields).map_err(no_room)?;
            write_uint(out, key::KEY.into()).map_err(no_room)?;
            value_or_empty(s, first + 2, out)?;
        }
        _ => {
            // UPSERT
            write_map(out, 4).map_err(no_room)?;
            let fields = [(key::SPACE_ID, uint(s, first)), (key::INDEX_BASE, 1)];
            uint_fields(out, &fields).map_err(no_room)?;
            write_uint(out, key::TUPLE.into()).map_err(no_room)?;
            value_or_empty(s, first + 1, out)?;
            write_uint(out, key::OPS.into()).map_err(no_room)?;
            value_or_empty(s, first + 2, out)?;
        }
    }
    Ok(mark)
}

/// Encodes the value at `idx`, or an empty array for nil.
#[inline]
fn value_or_empty(s: &mut Stack, idx: c_int, out: &mut Ibuf) -> LResult<()> {
    if s.is_none_or_nil(idx) {
        return write_raw(out, Array::EMPTY.raw()).map_err(no_room);
    }
    port::encode_value(s, idx, out, Options::Cfg)
}

/// Waits until the transport is active (or in `fetch_schema` and the
/// request may go then), failed for good, or the deadline passed; the
/// error to raise when requests cannot go.
fn check_state(
    s: &mut Stack,
    t: &Transport,
    sync_call: bool,
    deadline: Option<Instant>,
) -> LResult<Result<(), Failure>> {
    loop {
        let st = t.state();
        let may_go = st == State::Active
            || (st == State::FetchSchema && (!sync_call || deadline_passed(deadline)));
        if may_go && t.is_connected() {
            return Ok(Ok(()));
        }
        if !sync_call || st.is_final() || deadline_passed(deadline) {
            let (code, msg) = t
                .error
                .borrow()
                .clone()
                .unwrap_or_else(|| (ER_NO_CONNECTION, "Connection is not established".into()));
            if st == State::Closed {
                return Ok(Err(Failure::Local(
                    ER_NO_CONNECTION,
                    "Connection closed".into(),
                )));
            }
            if deadline_passed(deadline) && !st.is_final() && t.error.borrow().is_none() {
                return Ok(Err(timed_out()));
            }
            return Ok(Err(Failure::Local(code, msg)));
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        crate::fiber::check_switch(s, "net.box")?;
        let r = t.state_cond.wait(left);
        after_switch(s);
        r.map_err(error::from_fiber)?;
    }
}

fn deadline_passed(d: Option<Instant>) -> bool {
    d.is_some_and(|d| Instant::now() >= d)
}

lua_fn! {
    /// `lib.perform(t, type, decode, opts, ...)`: one request of IPROTO
    /// type `type` with the arguments after `opts`; its answer decoded as
    /// `decode` says ([`Decode`] as a number), or a future for
    /// `opts.is_async`. Raises the request's error object.
    pub(super) fn perform(s: &mut Stack) {
        let t = transport(s, 1)?;
        let ty = s.to_integer(2).unwrap_or(0) as u32;
        let decode = decode_arg(s.to_integer(3).unwrap_or(0));
        let nargs = s.top();
        let o = read_opts(s, 4)?;
        let deadline = deadline_of(o.timeout);
        if let Err(f) = check_state(s, &t, !o.is_async, deadline)? {
            return raise_failure(s, &f);
        }
        let sync = t.next_sync();
        {
            let mut out = t.send.borrow_mut();
            let was_empty = out.is_empty();
            let at = out.used();
            let encoded = if ty == INJECT {
                // the bytes as they are (master's netbox_encode_inject)
                let bytes = s.to_str(5).unwrap_or(b"");
                out.extend_from_slice(bytes).map_err(no_room)
            } else {
                encode_request(s, ty, sync, 5, &mut out)
                    .map(|mark| encode::finish_request(&mut out, mark))
            };
            if let Err(e) = encoded {
                out.truncate(at);
                return Err(e);
            }
            drop(out);
            t.sent(was_empty);
        }
        let req = Rc::new(Request::new(sync, decode));
        t.register(req.clone());
        if o.is_async {
            s.ensure(2)?;
            let (buffer, skip_header, return_raw) = (o.buffer, o.skip_header, o.return_raw);
            future::push(s, Fut { t, req, buffer, skip_header, return_raw });
            return Ok(1);
        }
        // Synchronous: wait, running on_push for each push.
        let mut seen = 0;
        loop {
            if let Some((f, ctx)) = o.on_push {
                loop {
                    let body = {
                        let pushes = req.pushes.borrow();
                        match pushes.get(seen) {
                            Some(b) => b.to_vec(),
                            None => break,
                        }
                    };
                    seen += 1;
                    s.ensure(4)?;
                    s.push_value(f);
                    s.push_value(ctx);
                    match &o.buffer {
                        Some(b) => push_len(s, copy_to_buffer(b, &body, o.skip_header)?),
                        None => push_message(s, &body)?,
                    }
                    if s.pcall(2, 0).is_err() {
                        t.forget(sync);
                        return Err(Raise::Top);
                    }
                }
            }
            if req.is_ready() {
                break;
            }
            if !wait_request(s, &req, deadline)? {
                t.forget(sync);
                return raise_failure(s, &timed_out());
            }
        }
        s.settop(nargs);
        let done = req.done.borrow_mut().take();
        match done {
            Some(Ok(body)) => {
                let how = (o.buffer.as_deref(), o.skip_header, o.return_raw);
                push_result(s, &body, decode, true, how)
            }
            Some(Err(f)) => raise_failure(s, &f),
            None => unreachable!("ready"),
        }
    }
}

/// The request type `perform` takes for `INJECT`: the argument's bytes go
/// out as they are, and the answer with the request's sync (the one
/// `lib.next_sync` told) completes it.
const INJECT: u32 = u32::MAX;

/// The [`Decode`] numbered `n` (the order of `net_box.lua`'s `DECODE`).
fn decode_arg(n: i64) -> Decode {
    match n {
        0 => Decode::Ping,
        1 => Decode::Multi,
        2 => Decode::Table,
        3 => Decode::First,
        _ => Decode::Nothing,
    }
}

lua_fn! {
    /// `lib.seen_schema_version(t)`: the schema version of the last
    /// responses.
    fn seen_schema_version(s: &mut Stack) {
        let t = transport(s, 1)?;
        s.push_number(t.seen_schema_version() as f64);
        Ok(1)
    }
}

lua_fn! {
    /// `lib.in_flight(t)`: the requests in flight (for tests: a timed-out
    /// or discarded request leaves none behind).
    fn in_flight(s: &mut Stack) {
        let t = transport(s, 1)?;
        s.push_int(t.in_flight() as i64);
        Ok(1)
    }
}

lua_fn! {
    /// `lib.error(code, message)`: an error object of type `ClientError`
    /// (Tarantool's `box.error.new{code = ..., reason = ...}`).
    fn new_error(s: &mut Stack) {
        let code = s.to_integer(1).unwrap_or(ER_PROC_LUA.into()) as u32;
        let msg = s.to_str(2).map(<[u8]>::to_vec).unwrap_or_default();
        s.ensure(4)?;
        error::push_coded(s, b"ClientError", code, &msg);
        Ok(1)
    }
}

/// The functions of `net.box.lib`.
pub(super) const LIB: &[crate::raw::Reg] = &[
    (c"new_transport", connect::new_transport),
    (c"connect", connect::connect),
    (c"set_state", connect::set_state),
    (c"run", connect::run),
    (c"writer", connect::writer),
    (c"close", connect::close),
    (c"auth", connect::auth),
    (c"id", super::watch::id),
    (c"watch", super::watch::watch),
    (c"next_sync", super::watch::next_sync),
    (c"set_schema_version", connect::set_schema_version),
    (c"perform", perform),
    (c"in_flight", in_flight),
    (c"seen_schema_version", seen_schema_version),
    (c"error", new_error),
];
