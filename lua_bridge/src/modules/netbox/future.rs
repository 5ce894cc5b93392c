//! Futures: what `conn:call(..., {is_async = true})` returns (Tarantool's
//! request object with `request_index` of 2.6's `net_box.lua`), and the
//! iterator of `future:pairs()`.
//!
//! A future is a userdata holding the request and its transport. Its
//! `pairs([timeout])` returns `next, future, 0`: `next` is one C function
//! made when the module opens and fetched by its registry ref, the state
//! is the future itself (the timeout is kept in the request), so a
//! `pairs()` call allocates nothing, and each step only the message it
//! returns (the founding net.box patch fetched `next` by a cached ref with
//! a `{future, timeout}` table; this one has no table either).
//!
//! Differences from Tarantool: a future takes no user fields (2.10's
//! futures do), and `on_push_ctx` is not readable (the pushes are kept as
//! bytes and decoded by `pairs()`).

use std::cell::Cell;
use std::ffi::c_int;
use std::rc::Rc;
use std::time::Instant;

use mlua::ffi;

use super::calls::{push_failure, timed_out, wait_request};
use super::decode::{push_message, push_result};
use super::request::{Failure, Request};
use super::transport::{Transport, ER_NO_CONNECTION, ER_PROC_LUA};
use crate::luajit::entry;
use crate::modules::buffer::LuaIbuf;
use crate::modules::msgpack::port;
use crate::raw::context::{Part, RegRef};
use crate::raw::{args, lua_fn, Kind, LResult, Raise, Stack};

/// What a future userdata holds.
#[derive(Clone)]
pub(crate) struct Fut {
    pub t: Rc<Transport>,
    pub req: Rc<Request>,
    pub buffer: Option<Rc<LuaIbuf>>,
    pub skip_header: bool,
    /// `return_raw`: results as `msgpack.object`s.
    pub return_raw: bool,
}

/// Per-cord state of `net.box`'s futures (a part of the cord context):
/// their kind and the registry ref of the `pairs()` step function.
#[derive(Default)]
pub(crate) struct Futures {
    kind: Cell<Kind<Fut>>,
    next: RegRef,
}

/// The future kind of this cord.
#[inline]
fn futures() -> Kind<Fut> {
    Futures::with(|f| f.kind.get())
}

/// Makes the future kind and the step function's ref (once per cord).
pub(super) fn init(s: &mut Stack) {
    let kind = Kind::new(
        s,
        c"net.box.future",
        &[
            (c"is_ready", is_ready),
            (c"result", result),
            (c"wait_result", wait_result),
            (c"discard", discard),
            (c"pairs", pairs),
        ],
        &[(c"__gc", future_gc)],
    );
    s.push_cfunction(next);
    let next_ref = s.make_ref();
    Futures::with(|f| {
        f.kind.set(kind);
        f.next.set(next_ref);
    });
}

/// Pushes a new future.
pub(super) fn push(s: &mut Stack, f: Fut) {
    futures().push(s, f);
}

/// The future of argument 1 (read in place where LuaJIT's layout is
/// known, `entry::arg_of`); `usage` for anything else.
#[inline]
fn this(s: &mut Stack, usage: &str) -> LResult<Fut> {
    entry::arg_of(s, 1, futures()).ok_or_else(|| Raise::Message(usage.into()))
}

/// A timeout argument at `idx`: `None` for none; `usage` for a negative
/// or non-number one.
fn timeout_arg(s: &Stack, idx: c_int, usage: &str) -> LResult<Option<f64>> {
    if s.is_none_or_nil(idx) {
        return Ok(None);
    }
    match s.to_number(idx) {
        Some(t) if t >= 0.0 && s.type_of(idx) == ffi::LUA_TNUMBER => Ok(Some(t)),
        _ => Err(Raise::Message(usage.into())),
    }
}

/// Pushes `result()`'s values: the result, or nil and the error.
fn push_outcome(s: &mut Stack, f: &Fut) -> LResult {
    s.ensure(4)?;
    let done = f.req.done.borrow();
    match done.as_ref() {
        Some(Ok(body)) => {
            let how = (f.buffer.as_deref(), f.skip_header, f.return_raw);
            let n = push_result(s, body, f.req.decode, false, how)?;
            if n == 0 {
                s.push_nil();
            }
            Ok(1)
        }
        Some(Err(e)) => {
            s.push_nil();
            push_failure(s, e);
            Ok(2)
        }
        None => {
            s.push_nil();
            let e = match f.t.is_connected() {
                true => Failure::Local(ER_PROC_LUA, "Response is not ready".into()),
                false => Failure::Local(ER_NO_CONNECTION, "Connection is not established".into()),
            };
            push_failure(s, &e);
            Ok(2)
        }
    }
}

lua_fn! {
    /// `future:is_ready()`.
    fn is_ready(s: &mut Stack) {
        let f = this(s, "Usage: future:is_ready()")?;
        s.push_bool(f.req.is_ready());
        Ok(1)
    }
}

lua_fn! {
    /// `future:result()`: the result (for CALL and EVAL, the table of
    /// returns), or nil and the error ("Response is not ready" while it is
    /// not).
    fn result(s: &mut Stack) {
        let f = this(s, "Usage: future:result()")?;
        push_outcome(s, &f)
    }
}

lua_fn! {
    /// `future:wait_result([timeout])`: waits for the answer, then as
    /// `result()`; nil and a `TimedOut` error when the timeout runs out
    /// first (the request stays in flight).
    fn wait_result(s: &mut Stack) {
        const USAGE: &str = "Usage: future:wait_result(timeout)";
        let f = this(s, USAGE)?;
        let timeout = timeout_arg(s, 2, USAGE)?;
        let deadline = timeout.and_then(args::seconds).and_then(|d| Instant::now().checked_add(d));
        while !f.req.is_ready() {
            if !wait_request(s, &f.req, deadline)? {
                s.ensure(3)?;
                s.push_nil();
                push_failure(s, &timed_out());
                return Ok(2);
            }
        }
        push_outcome(s, &f)
    }
}

lua_fn! {
    /// `future:discard()`: the answer will be dropped when it comes; the
    /// future fails with "Response is discarded".
    fn discard(s: &mut Stack) {
        let f = this(s, "Usage: future:discard()")?;
        if !f.req.is_ready() {
            f.t.forget(f.req.sync.get());
            f.req.complete(Err(Failure::Local(ER_PROC_LUA, "Response is discarded".into())));
        }
        Ok(0)
    }
}

lua_fn! {
    /// `future:pairs([timeout])`: `next, future, 0`; see the module doc.
    fn pairs(s: &mut Stack) {
        const USAGE: &str = "Usage: future:pairs(timeout)";
        let f = this(s, USAGE)?;
        let timeout = timeout_arg(s, 2, USAGE)?;
        f.req.pairs_timeout.set(timeout.unwrap_or(f64::INFINITY));
        s.ensure(3)?;
        s.push_ref(Futures::with(|f| f.next.get()));
        s.push_value(1);
        s.push_int(0);
        Ok(3)
    }
}

lua_fn! {
    /// The step of `future:pairs()`: `(i, push_i)` for each push, then
    /// `(n + 1, result)`, then nothing; `(NULL, err)` on an error or when
    /// the per-step timeout runs out (Tarantool's
    /// `request_iterator_next`).
    fn next(s: &mut Stack) {
        let f = this(s, "Usage: future:pairs(timeout)")?;
        if s.type_of(2) != ffi::LUA_TNUMBER {
            return Ok(0);
        }
        let i = s.to_integer(2).unwrap_or(0) + 1;
        let timeout = f.req.pairs_timeout.get();
        let deadline = match timeout.is_finite() {
            true => args::seconds(timeout).and_then(|d| Instant::now().checked_add(d)),
            false => None,
        };
        loop {
            let n = f.req.pushes.borrow().len() as i64;
            if i <= n {
                s.ensure(3)?;
                s.push_int(i);
                // No switch while decoding (a `__gc` it may run touches
                // no other request's pushes mutably), so the borrow ends
                // before any.
                let pushes = f.req.pushes.borrow();
                push_message(s, pushes.get((i - 1) as usize).unwrap_or_default())?;
                return Ok(2);
            }
            if f.req.is_ready() {
                if i > n + 1 {
                    return Ok(0);
                }
                s.settop(2);
                s.ensure(4)?;
                s.push_int(i);
                let got = push_outcome(s, &f)?;
                if got == 2 {
                    // nil, err -> NULL, err
                    s.remove(-3);
                    s.remove(-2);
                    port::push_null(s)?;
                    s.insert(-2);
                }
                return Ok(2);
            }
            if !wait_request(s, &f.req, deadline)? && !f.req.is_ready() && f.req.pushes.borrow().len() as i64 == n {
                s.ensure(3)?;
                port::push_null(s)?;
                push_failure(s, &timed_out());
                return Ok(2);
            }
        }
    }
}

lua_fn! {
    /// `__gc` of a future: drops its handles.
    fn future_gc(s: &mut Stack) {
        drop(futures().take(s, 1));
        Ok(0)
    }
}
