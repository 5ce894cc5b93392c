//! A cord that serves [`Request`]s: its own [`LuaRuntime`], set up by the
//! same init steps as its siblings, and the way each request runs there.
//!
//! A request is a job started on a fiber of the cord (from the injector or
//! the cord's inbox). [`serve`] parks its arguments in the cord's table of
//! pending calls and starts a Lua fiber running the cord's serve function,
//! fetched by registry ref (made once per cord, as the CALL and EVAL
//! handlers are): `reply(id, pcall(handler, what, unpack_args(id)))`.
//! `unpack_args` decodes the MessagePack arguments onto the fiber's stack,
//! the handler (CALL, EVAL, or the threads module's exported-function call,
//! each by its cached ref) runs the code, and `reply` encodes the results
//! (or the error) and fills the caller's slot. The Lua fiber is detached:
//! the job's fiber ends when the call first yields or returns.
//!
//! Nothing is set up per call but the fiber (pooled stack, pooled Lua
//! thread) and the MessagePack bytes.

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::Arc;

use luafiber_fiber::Builder;
use slab::Slab;

use super::names::CallNames;
use super::Init;
use crate::cord::ErrorUse;
use crate::embed::handle::{main_stack, raise_to_error};
use crate::embed::{Error, LuaRuntime, RuntimeBuilder};
use crate::fiber::handlers::{handler_ref, Handler};
use crate::fiber::{self as lua_fiber, Start};
use crate::modules::msgpack::port;
use crate::modules::threads::export_call_ref;
use crate::modules::threads::request::{Body, FailKind, Failure, Gather, Kind, Request, Slot};
use crate::raw::context::{Part, RegRef};
use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Raise, Stack};

/// The serve function, made once per cord from this chunk and the two C
/// functions it is given.
const SERVE_LUA: &str = r#"
local reply, unpack_args, pcall = ...
local function run(handler, what, id)
    return handler(what, unpack_args(id))
end
return function(id, handler, what)
    return reply(id, pcall(run, handler, what, id))
end
"#;

/// A call that has started on this cord and not answered yet.
struct Pending {
    body: Body,
    reply: Slot,
    fname: &'static str,
}

thread_local! {
    /// This cord's Lua runtime, for the cord's whole life: the owner of the
    /// cord context, not a part of it.
    static RUNTIME: RefCell<Option<LuaRuntime>> = const { RefCell::new(None) };
}

/// Per-cord state of a serving cord (a part of the cord context).
#[derive(Default)]
pub(crate) struct Serving {
    /// Registry ref of the serve function.
    serve: RegRef,
    /// The calls started here and not answered yet, by id. Borrowed only
    /// for an insert, a read or a removal (never across Lua code).
    pending: RefCell<Slab<Pending>>,
    /// The host's local calls that went on waiting on this cord
    /// (`host/local.rs`): whose task to wake when the cord needs a drive.
    pub(crate) waiting: RefCell<Vec<Arc<Gather>>>,
    /// The function names of the host's direct local calls
    /// (`host/direct.rs`). Taken out while it pushes (an allocation may
    /// run a finalizer).
    pub(crate) names: RefCell<CallNames>,
    /// The direct local calls that went on waiting (`host/wait.rs`), by
    /// the index of their fiber in the cord's fibers. Borrowed only for a
    /// look, a write or a removal.
    pub(crate) direct: RefCell<Vec<Option<crate::embed::host::wait::Waiting>>>,
    /// The fibers of direct local calls waiting for their next call
    /// (`host/direct.rs`). Borrowed only for a push, a pop or a removal.
    pub(crate) idle: RefCell<Vec<crate::embed::host::direct::Worker>>,
}

/// Sets the calling cord up: builds its Lua runtime with `lua`, runs
/// `place(index)`, makes the serve function, then runs `init` (cord index
/// `index`).
///
/// # Errors
///
/// When the runtime cannot be built or an init step fails.
pub(crate) fn start(
    lua: RuntimeBuilder,
    init: &[Init],
    index: usize,
    place: &dyn Fn(usize),
) -> Result<(), Error> {
    let rt = lua.build()?;
    place(index);
    let s = &mut main_stack()?;
    s.ensure(4).map_err(raise_to_error)?;
    let top = s.top();
    if s.load(SERVE_LUA, c"=serve").is_err() {
        let msg = s.describe(-1);
        s.settop(top);
        return Err(Error::Load(format!("the serve function: {msg}")));
    }
    s.push_cfunction(cords_reply);
    s.push_cfunction(cords_unpack);
    s.push_globals();
    s.rawget_field(-1, c"pcall");
    s.remove(-2);
    if s.pcall(3, 1).is_err() {
        let msg = s.describe(-1);
        s.settop(top);
        return Err(Error::Runtime(format!("the serve function: {msg}")));
    }
    Serving::with(|r| r.serve.set(s.make_ref()));
    s.settop(top);
    for step in init {
        match step {
            Init::Module(name, code) => rt.load_module(name, code)?,
            Init::Eval(code) => drop(rt.eval(code, Vec::new())?),
            Init::Fn(f) => f(&rt, index)?,
        }
    }
    RUNTIME.with(|r| *r.borrow_mut() = Some(rt));
    Ok(())
}

/// The cord stops: calls not answered get a failure, then the Lua runtime
/// goes.
pub(super) fn stop() {
    drop_pending();
    let rt = RUNTIME.with(|r| r.borrow_mut().take());
    drop(rt);
}

/// Stops a host's local cord as [`stop`] stops a cord: its calls not
/// answered get a failure, then `rt` goes.
pub(crate) fn stop_local(rt: LuaRuntime) {
    drop_pending();
    drop(rt);
}

/// Drops the slots of the calls not answered (each answers with a
/// failure), and the entries of the direct calls that wait (their futures
/// are woken to find them gone).
fn drop_pending() {
    let pending = Serving::try_with(|p| {
        (
            std::mem::take(&mut *p.pending.borrow_mut()),
            std::mem::take(&mut *p.direct.borrow_mut()),
        )
    });
    if let Some((pending, direct)) = pending {
        drop(pending);
        crate::embed::host::wait::stopped(direct);
    }
}

/// Takes the runtime [`start`] left on this thread, for an owner of its
/// own (a host's local cord, which must outlive the thread's other state).
pub(crate) fn take_runtime() -> Option<LuaRuntime> {
    RUNTIME.with(|r| r.borrow_mut().take())
}

/// Runs `f` with this serving cord's Lua runtime (`None` on any other
/// thread, or while the cord starts or stops).
pub(crate) fn with_runtime<R>(f: impl FnOnce(&LuaRuntime) -> R) -> Option<R> {
    RUNTIME.with(|r| r.borrow().as_ref().map(f))
}

/// Runs `req` on this cord (in the job's fiber, or in the caller's fiber
/// for a call from this cord): starts the detached Lua fiber that answers
/// it.
pub(crate) fn serve(req: Request) {
    let Request {
        kind,
        body,
        reply,
        fname,
    } = req;
    let Ok(s) = &mut main_stack() else {
        return; // the slot's drop answers
    };
    let (handler, name) = match kind {
        Kind::Call => (handler_ref(Handler::Call), "call"),
        Kind::Eval => (handler_ref(Handler::Eval), "eval"),
        Kind::Export => (export_call_ref(), "call"),
    };
    // A caller that gave up (a dropped future) before the call started:
    // it does not start (the slot's drop answers, to nobody).
    let gather = reply.gather().cloned();
    if gather.as_ref().is_some_and(|g| g.is_abandoned()) {
        return;
    }
    let what = body.clone();
    let id = Serving::with(|p| {
        p.pending
            .borrow_mut()
            .insert(Pending { body, reply, fname })
    });
    let started = s.ensure(8).and_then(|()| {
        let top = s.top();
        s.push_ref(Serving::with(|p| p.serve.get()));
        s.push_int(id as i64);
        s.push_ref(handler);
        s.push_bytes(what.what());
        // A detached fiber: an error of its own (not the call's, which the
        // serve function catches) is reported as any detached fiber's.
        let r = lua_fiber::spawn(
            s,
            top + 1,
            Start::Now,
            Builder::new().name(name),
            ErrorUse::Lua,
        );
        s.settop(top);
        r
    });
    if let (Ok(fid), Some(g)) = (&started, gather) {
        // Known to the caller from here, who may cancel it; a caller that
        // gave up while it started gets it cancelled now.
        if !g.started(luafiber_runtime::cord::current().unwrap_or(0), *fid) {
            let _ = luafiber_fiber::cancel(*fid);
        }
    }
    if let Err(e) = started {
        let message = match e {
            Raise::Error(_, m) | Raise::Message(m) => format!("{fname}: {m}"),
            Raise::Top => format!("{fname}: the call could not start"),
        };
        if let Some(p) = take(id) {
            p.reply.fill(Err(Failure {
                kind: FailKind::Dropped,
                message,
                value: None,
            }));
        }
    }
}

/// Takes the pending call `id` out of the table.
fn take(id: usize) -> Option<Pending> {
    Serving::try_with(|p| p.pending.borrow_mut().try_remove(id)).flatten()
}

/// The pending call's id at index 1.
fn id_at(s: &Stack) -> usize {
    s.to_integer(1)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(usize::MAX)
}

lua_fn! {
    /// `unpack_args(id)`: the arguments of pending call `id`, decoded.
    fn cords_unpack(s: &mut Stack) {
        let id = id_at(s);
        let Some(body) = Serving::with(|p| p.pending.borrow().get(id).map(|p| p.body.clone())) else {
            return Ok(0);
        };
        s.settop(0);
        port::push_array(s, body.args(), "decode")
    }
}

lua_fn! {
    /// `reply(id, ok, ...)`: answers pending call `id` with what `pcall`
    /// gave: the results as a MessagePack array, or the error (its message
    /// and its value as MessagePack). A result that cannot cross answers
    /// with that error instead. Raises nothing.
    fn cords_reply(s: &mut Stack) {
        let Some(p) = take(id_at(s)) else {
            return Ok(0);
        };
        let outcome = if s.to_bool(2) {
            port::encode_array(s, 3, p.fname, "result").map_err(|e| Failure {
                kind: FailKind::Refused,
                message: match e {
                    Raise::Error(_, m) | Raise::Message(m) => m,
                    Raise::Top => format!("{}: a result could not be encoded", p.fname),
                },
                value: None,
            })
        } else {
            s.settop(3);
            Err(failure_at(s, 3))
        };
        p.reply.fill(outcome);
        Ok(0)
    }
}

/// The failure of a call whose error value is the top of `s`, at `idx`
/// (a fiber's `pcall` gave it): its message as `tostring` gives it, its
/// kind (a `FiberIsCancelled` error is a cancel, or a drop while the cord
/// stops), and the value as MessagePack (an error object with its fields).
/// The stack may hold another value at `idx` after.
pub(crate) fn failure_at(s: &mut Stack, idx: c_int) -> Failure {
    // As `tostring` gives it: an error value with `__tostring` (or a cdata
    // such as `7LL`) crosses as its text, not `table: 0x...`.
    let message = s.describe_tostring(idx);
    let kind = if !error::is_error_of(s, idx, ErrorKind::FiberIsCancelled) {
        FailKind::Lua
    } else if luafiber_runtime::cord::is_stopping() {
        FailKind::Dropped
    } else {
        FailKind::Cancelled
    };
    // An error object crosses with its fields (its `__serialize` would
    // give the message only).
    if error::is_error(s, idx) && error::push_plain(s, idx).is_ok() {
        s.replace(idx);
    }
    let value = port::encode_one(s, idx).ok();
    Failure {
        kind,
        message,
        value,
    }
}
