//! [`CallHandle`] and [`LuaHandle`]: fibers that run a handler, and how a
//! Rust caller waits for their results.

use std::ffi::c_int;
use std::marker::PhantomData;

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use luafiber_runtime::FiberError;

use super::{value, Error, Value};
use crate::cord::{self, Ended, ErrorUse};
use crate::fiber::handlers::{handler_fn, handler_ref, Handler};
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::error::{self, ErrorKind};
use crate::raw::{Outside, Raise, Stack};

/// How a call gets its handler C function: the bench knob of `call_by` and
/// `eval_by` (`--cfg luafiber_bench`, see `benches/`).
#[cfg(luafiber_bench)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Handlers {
    /// `lua_rawgeti` of the handler's registry ref (Tarantool since
    /// e88c0d21ab).
    #[default]
    CachedRef,
    /// `lua_pushcfunction(handler)` on every call (a new `GCfunc` per call on
    /// LuaJIT; Lua 5.4 pushes a light C function, which allocates nothing).
    PushPerCall,
}

/// A Lua fiber started by [`LuaRuntime::spawn_call`](crate::LuaRuntime::spawn_call) or
/// [`LuaRuntime::spawn_lua`](crate::LuaRuntime::spawn_lua), joinable for its results.
///
/// Dropping the handle without joining detaches the fiber: it runs on, and
/// an error it ends with is written to stderr like any detached fiber's.
#[must_use = "dropping a CallHandle detaches the fiber and loses its results"]
#[derive(Debug)]
pub struct CallHandle {
    pub(super) id: Option<FiberId>,
    pub(super) _not_send: PhantomData<*const ()>,
}

impl CallHandle {
    /// The fiber's id (as `fiber.id()` gives it in Lua).
    pub fn id(&self) -> FiberId {
        self.id
            .expect("a CallHandle holds its fiber until joined or detached")
    }

    /// Waits for the fiber to end and returns the values its function
    /// returned, converted as [`Value`] describes (functions, userdata and
    /// threads arrive as [`Value::Nil`]).
    ///
    /// Inside a fiber (Lua or Rust), only the calling fiber waits. Outside
    /// any fiber, this runs the scheduler until the fiber has ended (other
    /// fibers run meanwhile; those still runnable stay so); if nothing can
    /// run before it ends, the fiber is cancelled and an error returned.
    ///
    /// # Errors
    ///
    /// A [`FiberError`] with the fiber's id: [`ErrorKind::LuaError`]
    /// (`luafiber_runtime::ErrorKind`) with the message and traceback when
    /// the function raised, or when a result cannot be converted (tables
    /// nested deeper than 64); [`ErrorKind::Cancelled`] when it ended
    /// with Tarantool's `FiberIsCancelled` error, or was cancelled because
    /// nothing else could run, or by the drop of this thread's
    /// [`LuaRuntime`](crate::LuaRuntime) (see its "Drop").
    ///
    /// [`ErrorKind::LuaError`]: luafiber_runtime::ErrorKind::LuaError
    /// [`ErrorKind::Cancelled`]: luafiber_runtime::ErrorKind::Cancelled
    pub fn join(mut self) -> Result<Vec<Value>, FiberError> {
        let id = self.id.take().expect("a CallHandle is joined once");
        wait(id)
    }

    /// Lets the fiber run on unjoined (its results are dropped) and returns
    /// its id.
    pub fn detach(mut self) -> FiberId {
        let id = self.id();
        detach(self.id.take());
        id
    }
}

impl Drop for CallHandle {
    fn drop(&mut self) {
        detach(self.id.take());
    }
}

/// Makes a spawned joinable fiber detached, or frees it if it has ended.
fn detach(id: Option<FiberId>) {
    let Some(id) = id else { return };
    if !cord::is_installed() {
        return;
    }
    if fiber::status(id) == Some(Status::Dead) {
        // Joined and dropped: its Lua data is freed.
        drop(Ended::joined(id, None));
    } else {
        let _ = fiber::set_joinable(id, false);
    }
}

/// The cord's main thread, as a stack handle for Rust code outside any
/// frame ([`Stack::outside`]).
///
/// # Errors
///
/// [`Error::NoRuntime`] when this thread has no runtime.
pub(super) fn main_stack<'a>() -> Result<Outside<'a>, Error> {
    let main = cord::try_with(|c| c.main).ok_or(Error::NoRuntime)?;
    // SAFETY: no Lua code runs on the main thread while Rust code does (it
    // never yields), and whatever else uses its stack meanwhile (mlua)
    // leaves it as it was; the handle is a local of the caller, dropped
    // where it was made.
    Ok(unsafe { Stack::outside(main) })
}

/// The error of a call whose name and arguments took the Lua heap past
/// its memory limit: the call does not run.
pub(super) fn out_of_memory() -> Error {
    Error::Runtime("not enough memory".into())
}

/// Starts a fiber running `handler` (pushed per call when
/// `push_per_call`, a bench's choice; else fetched by its ref) with the
/// values `push_args` pushes as its arguments, `extra` of them.
pub(super) fn start(
    handler: Handler,
    push_per_call: bool,
    joinable: bool,
    extra: usize,
    push_args: impl FnOnce(&mut Stack) -> Result<(), Error>,
) -> Result<FiberId, Error> {
    let s = &mut main_stack()?;
    if s.ensure(extra as c_int + 8).is_err() {
        return Err(Error::Runtime("too many arguments".into()));
    }
    let top = s.top();
    if push_per_call {
        s.push_cfunction(handler_fn(handler));
    } else {
        s.push_ref(handler_ref(handler));
    }
    if let Err(e) = push_args(s) {
        s.settop(top);
        return Err(e);
    }
    if s.over_limit() {
        s.settop(top);
        return Err(out_of_memory());
    }
    let name = match handler {
        Handler::Call => "call",
        Handler::Eval => "eval",
        Handler::Module => "module",
    };
    // Inside a fiber the new one runs at once, as a call would; outside, it
    // is queued for the scheduler loop.
    let start = if fiber::current().is_some() {
        Start::Now
    } else {
        Start::Ready
    };
    let r = lua_fiber::spawn(
        s,
        top + 1,
        start,
        Builder::new().name(name).joinable(joinable),
        ErrorUse::Rust,
    );
    s.settop(top);
    r.map_err(raise_to_error)
}

/// An error a bridge function asked to raise, as an [`Error::Runtime`].
pub(super) fn raise_to_error(r: Raise) -> Error {
    match r {
        Raise::Error(_, msg) | Raise::Message(msg) => Error::Runtime(msg),
        Raise::Top => Error::Runtime("error".into()),
    }
}

/// Pushes `args`, the arguments of a call, and drops them (a value nested
/// too deep for a recursive drop too: [`value::drop_flat`]).
///
/// # Errors
///
/// [`Error::Runtime`] naming the argument that cannot be pushed (tables
/// nested deeper than 64, no room on the Lua stack); what was pushed
/// stays, for the caller to pop.
pub(super) fn push_values(s: &mut Stack, args: Vec<Value>) -> Result<(), Error> {
    let r = args.iter().enumerate().try_for_each(|(i, a)| {
        value::push(s, a)
            .map_err(|e| Error::Runtime(format!("argument {}: {}", i + 1, raise_to_error(e))))
    });
    value::drop_flat(args);
    r
}

/// Waits for the joinable fiber `id` to end; returns its results.
pub(super) fn wait(id: FiberId) -> Result<Vec<Value>, FiberError> {
    if fiber::current().is_none() {
        let ended = || matches!(fiber::status(id), Some(Status::Dead) | None);
        fiber::run_until(ended);
        if !ended() {
            // Nothing can run before it ends: it would wait forever.
            let _ = fiber::cancel(id);
            fiber::run_until(ended);
            if !ended() {
                let _ = fiber::set_joinable(id, false);
            } else {
                drop(Ended::joined(id, None));
            }
            return Err(FiberError::cancelled(id));
        }
    }
    let mut ended = match Ended::joined(id, None) {
        Ok(Some(ended)) => ended,
        // The runtime was dropped, which cancelled the fiber and ended or
        // abandoned it.
        Err(fiber::Error::Dead(_)) if !cord::is_installed() => {
            return Err(FiberError::cancelled(id))
        }
        // The function made its fiber non-joinable (its results are gone),
        // or it has no Lua data.
        Ok(None) | Err(fiber::Error::Dead(_)) => return Ok(Vec::new()),
        Err(fiber::Error::Cancelled) => return Err(FiberError::cancelled(id)),
        Err(e) => return Err(FiberError::lua_error(id, e.to_string())),
    };
    let ok = ended.rc() == Some(0);
    let tb = ended.take_traceback();
    // `[msgh, results...]` or `[msgh, error]` (fiber/mod.rs).
    let t = &mut ended.stack();
    if ok {
        if t.ensure(4).is_err() {
            return Err(FiberError::lua_error(id, "too many results"));
        }
        return (2..=t.top())
            .map(|i| value::read(t, i, 0))
            .collect::<Result<_, _>>()
            .map_err(|r| FiberError::lua_error(id, raise_to_error(r).to_string()));
    }
    if error::is_error_of(t, -1, ErrorKind::FiberIsCancelled) {
        return Err(FiberError::cancelled(id));
    }
    let msg = t.describe(-1);
    // A traceback that shows only the handler says nothing more.
    let tb = tb.filter(|tb| !tb.ends_with("stack traceback:\n\t[C]: in ?"));
    Err(FiberError::lua_error(id, tb.unwrap_or(msg)))
}

/// A handle on this thread's [`LuaRuntime`](crate::LuaRuntime) that is `'static` and `Clone`,
/// so Rust fibers and functions registered with
/// [`LuaRuntime::register_fn`](crate::LuaRuntime::register_fn) can call Lua. Not `Send`: a runtime never
/// leaves its thread.
///
/// ```
/// use luafiber_lua::{LuaHandle, LuaRuntime, Value};
///
/// let rt = LuaRuntime::new().unwrap();
/// rt.eval("function double(x) return 2 * x end", vec![]).unwrap();
/// rt.register_fn("double_in_rust", |args| {
///     // A registered function runs on the calling Lua fiber: this call
///     // blocks only that fiber.
///     let h = LuaHandle::current().expect("a runtime on this thread");
///     Ok(h.call("double", args)?)
/// }).unwrap();
/// assert_eq!(rt.eval("return double_in_rust(...)", vec![Value::from(21)]).unwrap(),
///            [Value::Integer(42)]);
/// ```
#[derive(Clone, Debug)]
pub struct LuaHandle {
    pub(super) _not_send: PhantomData<*const ()>,
}

impl LuaHandle {
    /// The handle of this thread's runtime, or `None` when the thread has
    /// none.
    pub fn current() -> Option<LuaHandle> {
        cord::is_installed().then_some(LuaHandle {
            _not_send: PhantomData,
        })
    }

    /// As [`LuaRuntime::call`](crate::LuaRuntime::call).
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::call`](crate::LuaRuntime::call);
    /// [`Error::NoRuntime`] when the runtime has been dropped.
    pub fn call(&self, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        call(false, name, args)
    }

    /// [`LuaHandle::call`] with the handler got as `how` says (benches).
    #[cfg(luafiber_bench)]
    pub fn call_by(
        &self,
        how: Handlers,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        call(how == Handlers::PushPerCall, name, args)
    }

    /// As [`LuaRuntime::eval`](crate::LuaRuntime::eval).
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::eval`](crate::LuaRuntime::eval);
    /// [`Error::NoRuntime`] when the runtime has been dropped.
    pub fn eval(&self, code: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        eval(false, code, args)
    }

    /// [`LuaHandle::eval`] with the handler got as `how` says (benches).
    #[cfg(luafiber_bench)]
    pub fn eval_by(
        &self,
        how: Handlers,
        code: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        eval(how == Handlers::PushPerCall, code, args)
    }

    /// As [`LuaRuntime::spawn_call`](crate::LuaRuntime::spawn_call).
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::spawn_call`](crate::LuaRuntime::spawn_call); [`Error::NoRuntime`] when the runtime
    /// has been dropped.
    pub fn spawn_call(&self, name: &str, args: Vec<Value>) -> Result<CallHandle, Error> {
        let id = start(Handler::Call, false, true, args.len(), |s| {
            s.push_str(name);
            push_values(s, args)
        })?;
        Ok(CallHandle {
            id: Some(id),
            _not_send: PhantomData,
        })
    }
}

/// A CALL of `name` on a new fiber, waited for.
fn call(push_per_call: bool, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
    let id = start(Handler::Call, push_per_call, true, args.len(), |s| {
        s.push_str(name);
        push_values(s, args)
    })?;
    wait_call(id)
}

/// [`wait`] for a call a [`LuaHandle`] made: [`Error::NoRuntime`] when the
/// runtime was dropped meanwhile (which ended the call's fiber).
pub(super) fn wait_call(id: FiberId) -> Result<Vec<Value>, Error> {
    wait(id).map_err(|e| {
        if cord::is_installed() {
            Error::Fiber(e)
        } else {
            Error::NoRuntime
        }
    })
}

/// An EVAL of `code` on a new fiber, waited for.
fn eval(push_per_call: bool, code: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
    let id = start(Handler::Eval, push_per_call, true, args.len(), |s| {
        s.push_str(code);
        push_values(s, args)
    })?;
    wait_call(id)
}
