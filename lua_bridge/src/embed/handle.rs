//! [`CallHandle`] and [`LuaHandle`]: fibers that run a handler, and how a
//! Rust caller waits for their results.

use std::ffi::c_int;
use std::marker::PhantomData;

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use mlua::ffi;

use super::handlers::{handler_ref, Handler};
use super::{value, Error, Value};
use crate::cord::{self, ErrorUse};
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::{api, Raise};

/// How a call gets its handler C function. Only benches pick anything but
/// [`Handlers::CachedRef`].
#[doc(hidden)]
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

/// A Lua fiber started by [`LuaRuntime::spawn_call`] or
/// [`LuaRuntime::spawn_lua`], joinable for its results.
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
    /// [`Error::Runtime`] with the message and traceback when the function
    /// raised (a cancelled fiber raised "fiber is cancelled"), or when a
    /// result cannot be converted (tables nested deeper than 64);
    /// [`Error::NoRuntime`] when this thread's [`LuaRuntime`] was dropped
    /// (which ended the fiber: see [`LuaRuntime`]'s "Drop").
    pub fn join(mut self) -> Result<Vec<Value>, Error> {
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
        if let Ok(ext) = fiber::join(id, None) {
            // SAFETY: the fiber has ended, so its thread is idle.
            unsafe { release(ext) };
        }
    } else {
        let _ = fiber::set_joinable(id, false);
    }
}

/// Frees the Lua data of an ended, joined fiber.
///
/// # Safety
///
/// `ext` is the joined fiber's embedder word.
unsafe fn release(ext: usize) {
    if ext == 0 {
        return;
    }
    let (lf, main) = cord::with(|c| (c.fibers.remove(ext - 1), c.main));
    // SAFETY: caller's contract: nothing runs on the fiber's thread.
    unsafe {
        api::unref(main, lf.udata);
        cord::recycle_thread(lf.thread);
    }
}

/// Starts a fiber running `handler` with the values `push_args` pushes as
/// its arguments.
pub(super) fn start(
    handler: Handler,
    how: Handlers,
    joinable: bool,
    extra: usize,
    push_args: impl FnOnce(*mut ffi::lua_State),
) -> Result<FiberId, Error> {
    let main = cord::try_with(|c| c.main).ok_or(Error::NoRuntime)?;
    let in_fiber = fiber::current().is_some();
    // SAFETY: `main` is the cord's main thread; no Lua code runs on it while
    // Rust code does (it never yields), and everything pushed here is moved
    // to the new fiber or popped before this returns.
    unsafe {
        if ffi::lua_checkstack(main, extra as c_int + 8) == 0 {
            return Err(Error::Runtime("too many arguments".into()));
        }
        let top = ffi::lua_gettop(main);
        match how {
            Handlers::CachedRef => api::push_registry_ref(main, handler_ref(handler)),
            Handlers::PushPerCall => {
                ffi::lua_pushcfunction(main, super::handlers::handler_fn(handler))
            }
        }
        push_args(main);
        let name = match handler {
            Handler::Call => "call",
            Handler::Eval => "eval",
            Handler::Module => "module",
        };
        // Inside a fiber the new one runs at once, as a call would; outside,
        // it is queued for the scheduler loop.
        let start = if in_fiber { Start::Now } else { Start::Ready };
        let r = lua_fiber::spawn(
            main,
            top + 1,
            start,
            Builder::new().name(name).joinable(joinable),
            ErrorUse::Rust,
        );
        ffi::lua_settop(main, top);
        r.map_err(raise_to_error)
    }
}

/// An error a bridge function asked to raise, as an [`Error::Runtime`].
pub(super) fn raise_to_error(r: Raise) -> Error {
    match r {
        Raise::Error(_, msg) => Error::Runtime(msg),
        Raise::Top => Error::Runtime("error".into()),
    }
}

/// Pushes `args` (room was checked by the caller).
pub(super) fn push_values(args: &[Value]) -> impl FnOnce(*mut ffi::lua_State) + '_ {
    move |l| {
        for a in args {
            // SAFETY: `l` is the main state, with room checked in `start`
            // (each push needs at most 3 slots, then leaves 1).
            unsafe {
                if ffi::lua_checkstack(l, 4) != 0 {
                    value::push(l, a);
                } else {
                    ffi::lua_pushnil(l);
                }
            }
        }
    }
}

/// Waits for the joinable fiber `id` to end; returns its results.
pub(super) fn wait(id: FiberId) -> Result<Vec<Value>, Error> {
    if fiber::current().is_none() {
        let ended = || matches!(fiber::status(id), Some(Status::Dead) | None);
        fiber::run_until(ended);
        if !ended() {
            // Nothing can run before it ends: it would wait forever.
            let _ = fiber::cancel(id);
            fiber::run_until(ended);
            if !ended() {
                let _ = fiber::set_joinable(id, false);
                return Err(Error::Runtime(format!(
                    "fiber {id} is blocked and nothing else can run"
                )));
            }
            if let Ok(ext) = fiber::join(id, None) {
                // SAFETY: the fiber has ended.
                unsafe { release(ext) };
            }
            return Err(Error::Runtime(format!(
                "fiber {id} blocked with nothing else to run, and was cancelled"
            )));
        }
    }
    let ext = match fiber::join(id, None) {
        Ok(ext) => ext,
        // The runtime was dropped, which ended the fiber.
        Err(fiber::Error::Dead(_)) if !cord::is_installed() => return Err(Error::NoRuntime),
        // The function made its fiber non-joinable: its results are gone.
        Err(fiber::Error::Dead(_)) => return Ok(Vec::new()),
        Err(e) => return Err(Error::Runtime(e.to_string())),
    };
    if ext == 0 {
        return Ok(Vec::new());
    }
    let lf = cord::with(|c| c.fibers.remove(ext - 1));
    let t = lf.thread.l;
    // SAFETY: the fiber has ended, so its thread is idle, laid out as
    // `[msgh, results...]` or `[msgh, error]` (spawn.rs).
    let result = unsafe {
        if lf.rc == Some(0) {
            let top = ffi::lua_gettop(t);
            if ffi::lua_checkstack(t, 4) == 0 {
                Err(Error::Runtime("too many results".into()))
            } else {
                (2..=top)
                    .map(|i| value::read(t, i, 0).map_err(raise_to_error))
                    .collect()
            }
        } else {
            let msg = api::describe(t, -1);
            // A traceback that shows only the handler says nothing more.
            let tb = lf
                .traceback
                .filter(|tb| !tb.ends_with("stack traceback:\n\t[C]: in ?"));
            Err(Error::Runtime(tb.unwrap_or(msg)))
        }
    };
    // SAFETY: the fiber has ended.
    unsafe {
        api::unref(t, lf.udata);
        cord::recycle_thread(lf.thread);
    }
    result
}

/// A handle on this thread's [`LuaRuntime`] that is `'static` and `Clone`,
/// so Rust fibers and functions registered with
/// [`LuaRuntime::register_fn`] can call Lua. Not `Send`: a runtime never
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
///     h.call("double", args).map_err(|e| e.to_string())
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

    /// As [`LuaRuntime::call`].
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::call`]; [`Error::NoRuntime`] when the runtime has
    /// been dropped.
    pub fn call(&self, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.call_by(Handlers::CachedRef, name, args)
    }

    /// [`LuaHandle::call`] with the handler got as `how` says (benches).
    #[doc(hidden)]
    pub fn call_by(
        &self,
        how: Handlers,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        let id = start(Handler::Call, how, true, args.len(), |l| {
            // SAFETY: `l` is the main state with room checked by `start`.
            unsafe { api::push_str(l, name) };
            push_values(&args)(l);
        })?;
        wait(id)
    }

    /// As [`LuaRuntime::eval`].
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::eval`]; [`Error::NoRuntime`] when the runtime has
    /// been dropped.
    pub fn eval(&self, code: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.eval_by(Handlers::CachedRef, code, args)
    }

    /// [`LuaHandle::eval`] with the handler got as `how` says (benches).
    #[doc(hidden)]
    pub fn eval_by(
        &self,
        how: Handlers,
        code: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        let id = start(Handler::Eval, how, true, args.len(), |l| {
            // SAFETY: `l` is the main state with room checked by `start`.
            unsafe { api::push_str(l, code) };
            push_values(&args)(l);
        })?;
        wait(id)
    }

    /// As [`LuaRuntime::spawn_call`].
    ///
    /// # Errors
    ///
    /// As [`LuaRuntime::spawn_call`]; [`Error::NoRuntime`] when the runtime
    /// has been dropped.
    pub fn spawn_call(&self, name: &str, args: Vec<Value>) -> Result<CallHandle, Error> {
        let id = start(Handler::Call, Handlers::CachedRef, true, args.len(), |l| {
            // SAFETY: `l` is the main state with room checked by `start`.
            unsafe { api::push_str(l, name) };
            push_values(&args)(l);
        })?;
        Ok(CallHandle {
            id: Some(id),
            _not_send: PhantomData,
        })
    }
}
