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

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::sync::Arc;

use luafiber_fiber::Builder;
use mlua::ffi;
use slab::Slab;

use super::Init;
use crate::cord;
use crate::embed::handlers::{handler_ref, Handler};
use crate::embed::{Error, LuaRuntime, RuntimeBuilder};
use crate::fiber::{self as lua_fiber, Start};
use crate::modules::msgpack::port;
use crate::modules::threads::export_call_ref;
use crate::modules::threads::request::{FailKind, Failure, Kind, Request, Slot};
use crate::raw::{api, lua_fn, Raise, Stack};

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
    args: Arc<[u8]>,
    reply: Slot,
    fname: &'static str,
}

thread_local! {
    /// This cord's Lua runtime, for the cord's whole life.
    static RUNTIME: RefCell<Option<LuaRuntime>> = const { RefCell::new(None) };
    /// Registry ref of the serve function.
    static SERVE: Cell<c_int> = const { Cell::new(ffi::LUA_NOREF) };
    /// The calls started here and not answered yet, by id. Borrowed only
    /// for an insert, a read or a removal (never across Lua code).
    static PENDING: RefCell<Slab<Pending>> = RefCell::new(Slab::new());
}

/// Sets the calling cord up: builds its Lua runtime with `lua`, makes the
/// serve function, then runs `init` (cord index `index`).
///
/// # Errors
///
/// When the runtime cannot be built or an init step fails.
pub(super) fn start(lua: RuntimeBuilder, init: &[Init], index: usize) -> Result<(), Error> {
    let rt = lua.build()?;
    let main = rt.lua().state();
    // SAFETY: `main` is the new runtime's idle main state, outside any
    // `lua_fn` body; the chunk runs under lua_pcall and leaves one value.
    unsafe {
        let top = ffi::lua_gettop(main);
        if ffi::luaL_loadbuffer(
            main,
            SERVE_LUA.as_ptr().cast(),
            SERVE_LUA.len(),
            c"=serve".as_ptr(),
        ) != 0
        {
            ffi::lua_settop(main, top);
            return Err(Error::Load("the serve function did not load".into()));
        }
        ffi::lua_pushcfunction(main, cords_reply);
        ffi::lua_pushcfunction(main, cords_unpack);
        ffi::lua_getglobal(main, c"pcall".as_ptr());
        if ffi::lua_pcall(main, 3, 1, 0) != 0 {
            let msg = api::describe(main, -1);
            ffi::lua_settop(main, top);
            return Err(Error::Runtime(msg));
        }
        SERVE.with(|s| s.set(ffi::luaL_ref(main, ffi::LUA_REGISTRYINDEX)));
    }
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
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    drop(pending);
    let rt = RUNTIME.with(|r| r.borrow_mut().take());
    drop(rt);
}

/// Runs `req` on this cord (in the job's fiber): starts the detached Lua
/// fiber that answers it.
pub(super) fn serve(req: Request) {
    let Request {
        kind,
        what,
        args,
        reply,
        fname,
    } = req;
    let Some(main) = cord::try_with(|c| c.main) else {
        return; // the slot's drop answers
    };
    let (handler, name) = match kind {
        Kind::Call => (handler_ref(Handler::Call), "call"),
        Kind::Eval => (handler_ref(Handler::Eval), "eval"),
        Kind::Export => (export_call_ref(), "call"),
    };
    let id = PENDING.with(|p| p.borrow_mut().insert(Pending { args, reply, fname }));
    // SAFETY: `main` is the cord's main thread, which runs no Lua code
    // while Rust code does; what is pushed is moved to the new fiber or
    // popped before this returns.
    let started = unsafe {
        if ffi::lua_checkstack(main, 8) == 0 {
            Err(Raise::illegal("stack overflow"))
        } else {
            let top = ffi::lua_gettop(main);
            api::push_registry_ref(main, SERVE.with(Cell::get));
            ffi::lua_pushinteger(main, id as ffi::lua_Integer);
            api::push_registry_ref(main, handler);
            api::push_bytes(main, &what);
            let r = lua_fiber::spawn(main, top + 1, Start::Now, Builder::new().name(name), false);
            ffi::lua_settop(main, top);
            r.map(drop)
        }
    };
    if let Err(e) = started {
        let message = match e {
            Raise::Error(_, m) => format!("{fname}: {m}"),
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
    PENDING.with(|p| p.borrow_mut().try_remove(id))
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
        let Some(args) = PENDING.with(|p| p.borrow().get(id).map(|p| p.args.clone())) else {
            return Ok(0);
        };
        s.settop(0);
        let l = s.as_ptr();
        // SAFETY: a lua_fn body's state; `args` is ours while it decodes.
        let n = unsafe { port::push_array(l, &args, "decode")? };
        // SAFETY: the decoder pushed `n` values through the C API.
        unsafe { s.sync() };
        Ok(n)
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
        let l = s.as_ptr();
        let outcome = if s.to_bool(2) {
            let top = s.top();
            // SAFETY: a lua_fn body's state; 3..=top are the results.
            unsafe { port::encode_array(l, 3, top, p.fname, "result") }.map_err(|e| Failure {
                kind: FailKind::Refused,
                message: match e {
                    Raise::Error(_, m) => m,
                    Raise::Top => format!("{}: a result could not be encoded", p.fname),
                },
                value: None,
            })
        } else {
            s.settop(3);
            // SAFETY: a lua_fn body's state; the error is at 3, the top.
            let (message, value) = unsafe { (api::describe(l, 3), port::encode_one(l, 3).ok()) };
            Err(Failure {
                kind: FailKind::Lua,
                message,
                value,
            })
        };
        // SAFETY: the encoders leave the stack as they found it.
        unsafe { s.sync() };
        p.reply.fill(outcome);
        Ok(0)
    }
}
