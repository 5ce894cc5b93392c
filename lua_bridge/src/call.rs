//! Calling Lua from Rust on fresh fibers, the way Tarantool serves iproto
//! CALL and EVAL (`src/box/lua/call.c`).
//!
//! Each call runs on a new Lua fiber whose function is one of three handler
//! C functions, made once when the runtime is set up and fetched by registry
//! ref for every call (no `lua_pushcfunction` per call, so no `GCfunc` is
//! allocated per call on LuaJIT):
//!
//! - the CALL handler, stack `[name, args...]`: finds the function the
//!   dotted name `a.b.c` (or `a.b:c`, a method call) names, starting at the
//!   globals, and calls it with the arguments;
//! - the EVAL handler, stack `[source, args...]`: compiles `source` as a
//!   chunk (compiled chunks are kept by source in a registry table) and calls
//!   it with `...` = the arguments;
//! - the module handler, stack `[name, chunk]`: runs `chunk(name)` and stores
//!   its first result (or `true`) in `package.loaded[name]` and the global
//!   `name`.
//!
//! The handlers are raw C functions, not `lua_fn!` bodies: they run Lua code
//! (lookups that may run `__index`, the called function) whose errors must
//! unwind through them, so they own no Rust value and never call into Rust
//! code that could panic. Their errors reach the fiber's `lua_pcall` and its
//! message handler, which records the traceback.

use std::cell::Cell;
use std::ffi::{c_int, CString};
use std::marker::PhantomData;

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use mlua::ffi;

use crate::cfunc::Raise;
use crate::cord::{self, Refs};
use crate::spawn::{self, Start};
use crate::{lua, value, Error, LuaRuntime, Value};

/// Most compiled EVAL chunks kept; past it the cache starts over empty.
const EVAL_CACHE_MAX: usize = 1024;

/// Registry key `spawn_lua` passes an mlua function through.
const SPAWN_LUA_SLOT: &str = "__luafiber_spawn_lua";

thread_local! {
    /// Chunks in the EVAL cache now.
    static EVAL_CACHED: Cell<usize> = const { Cell::new(0) };
}

/// Makes the handlers and the EVAL cache; called once per cord.
///
/// # Safety
///
/// `l` is the idle main state of a new cord.
pub(crate) unsafe fn init(l: *mut ffi::lua_State, refs: &mut Refs) {
    EVAL_CACHED.with(|c| c.set(0));
    // SAFETY: caller's contract; each push is consumed by luaL_ref.
    unsafe {
        ffi::lua_pushcfunction(l, crate::wide_cfn!(call_handler));
        refs.call_handler = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_pushcfunction(l, crate::wide_cfn!(eval_handler));
        refs.eval_handler = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_pushcfunction(l, crate::wide_cfn!(module_handler));
        refs.module_handler = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_createtable(l, 0, 0);
        refs.eval_cache = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
    }
}

/// Raises the string `parts` concatenated.
///
/// # Safety
///
/// `l` is the calling state of a raw handler; no Rust value owning memory
/// is live in the caller.
unsafe fn raise(l: *mut ffi::lua_State, parts: &[&[u8]]) -> ! {
    // SAFETY: caller's contract; lua_error does not return.
    unsafe {
        for p in parts {
            ffi::lua_pushlstring(l, p.as_ptr().cast(), p.len());
        }
        ffi::lua_concat(l, parts.len() as c_int);
        ffi::lua_error(l)
    }
}

/// The CALL handler: `[name, args...]` → the results of the named function.
///
/// A name is split at `.` and `:`; each part indexes the value before it
/// (metamethods run), starting at the globals. A `:` before the last part
/// makes a method call (the object is passed first). A part that cannot be
/// looked up or a last value that is nil raises "Procedure 'NAME' is not
/// defined" (Tarantool's `ER_NO_SUCH_PROC`).
unsafe extern "C-unwind" fn call_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with the name at 1. No Rust value owning memory
    // is live here, so Lua errors may unwind through this frame; `name`
    // borrows the string at index 1, which stays there until it is replaced.
    unsafe {
        let nargs = ffi::lua_gettop(l) - 1;
        let Some(name) = lua::to_str(l, 1) else {
            raise(l, &[b"call: the function name must be a string"]);
        };
        if ffi::lua_checkstack(l, 4) == 0 {
            raise(l, &[b"call: stack overflow"]);
        }
        ffi::lua_pushglobaltable(l);
        let mut start = 0;
        let mut method = false;
        loop {
            let end = name[start..]
                .iter()
                .position(|&b| b == b'.' || b == b':')
                .map_or(name.len(), |p| start + p);
            let t = ffi::lua_type(l, -1);
            if (t != ffi::LUA_TTABLE && t != ffi::LUA_TUSERDATA) || end == start {
                raise(l, &[b"Procedure '", name, b"' is not defined"]);
            }
            let part = &name[start..end];
            ffi::lua_pushlstring(l, part.as_ptr().cast(), part.len());
            ffi::lua_gettable(l, -2);
            if end == name.len() {
                break;
            }
            if name[end] == b':' {
                // `obj:method`: the rest must be one part.
                let rest = &name[end + 1..];
                if rest.is_empty() || rest.iter().any(|&b| b == b'.' || b == b':') {
                    raise(l, &[b"Procedure '", name, b"' is not defined"]);
                }
                method = true;
            }
            ffi::lua_remove(l, -2);
            start = end + 1;
            if method {
                // [name, args..., obj]
                let t = ffi::lua_type(l, -1);
                if t != ffi::LUA_TTABLE && t != ffi::LUA_TUSERDATA {
                    raise(l, &[b"Procedure '", name, b"' is not defined"]);
                }
                ffi::lua_pushvalue(l, -1);
                ffi::lua_pushlstring(l, name[start..].as_ptr().cast(), name.len() - start);
                ffi::lua_gettable(l, -2);
                ffi::lua_remove(l, -2);
                // [name, args..., obj, fn]
                break;
            }
        }
        if ffi::lua_type(l, -1) <= ffi::LUA_TNIL {
            raise(l, &[b"Procedure '", name, b"' is not defined"]);
        }
        // From here `name` is no longer used: its string may go.
        ffi::lua_replace(l, 1);
        if method {
            // [fn, args..., obj] -> [fn, obj, args...]
            ffi::lua_insert(l, 2);
            ffi::lua_call(l, nargs + 1, ffi::LUA_MULTRET);
        } else {
            // [fn, args..., parent]
            ffi::lua_pop(l, 1);
            ffi::lua_call(l, nargs, ffi::LUA_MULTRET);
        }
        ffi::lua_gettop(l)
    }
}

/// The EVAL handler: `[source, args...]` → the results of the chunk
/// `source` called with `...` = args. A chunk that does not compile raises
/// the compiler's message.
unsafe extern "C-unwind" fn eval_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with the source at 1. No Rust value owning
    // memory is live here, so Lua errors may unwind through this frame.
    unsafe {
        let nargs = ffi::lua_gettop(l) - 1;
        if ffi::lua_type(l, 1) != ffi::LUA_TSTRING {
            raise(l, &[b"eval: the expression must be a string"]);
        }
        if ffi::lua_checkstack(l, 4) == 0 {
            raise(l, &[b"eval: stack overflow"]);
        }
        let cache = cord::refs().eval_cache;
        lua::push_registry_ref(l, cache);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_rawget(l, -2);
        if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
            ffi::lua_pop(l, 1);
            let mut len = 0;
            let src = ffi::lua_tolstring(l, 1, &mut len);
            if ffi::luaL_loadbuffer(l, src, len, c"=eval".as_ptr()) != 0 {
                ffi::lua_error(l);
            }
            // [source, args..., cache, fn]
            let n = EVAL_CACHED.with(Cell::get);
            if n >= EVAL_CACHE_MAX {
                ffi::lua_createtable(l, 0, 0);
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, ffi::LUA_REGISTRYINDEX, cache as ffi::lua_Integer);
                ffi::lua_replace(l, -3);
                EVAL_CACHED.with(|c| c.set(0));
            }
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, -2);
            ffi::lua_rawset(l, -4);
            EVAL_CACHED.with(|c| c.set(c.get() + 1));
        }
        // [source, args..., cache, fn]
        ffi::lua_replace(l, 1);
        ffi::lua_pop(l, 1);
        ffi::lua_call(l, nargs, ffi::LUA_MULTRET);
        ffi::lua_gettop(l)
    }
}

/// The module handler: `[name, chunk]` → `chunk(name)`'s first result (or
/// `true`), also stored in `package.loaded[name]` and the global `name`.
unsafe extern "C-unwind" fn module_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with `[name, chunk]`. No Rust value owning
    // memory is live here, so Lua errors may unwind through this frame.
    unsafe {
        ffi::lua_settop(l, 2);
        ffi::lua_pushvalue(l, 2);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_call(l, 1, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            ffi::lua_pushboolean(l, 1);
        }
        // [name, chunk, module]
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, 3);
            ffi::lua_rawset(l, -3);
        }
        ffi::lua_pop(l, 1);
        ffi::lua_pushglobaltable(l);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushvalue(l, 3);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        1
    }
}

/// Which handler a call runs.
#[derive(Clone, Copy)]
enum Handler {
    Call,
    Eval,
    Module,
}

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
    id: Option<FiberId>,
    _not_send: PhantomData<*const ()>,
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
    /// result cannot be converted (tables nested deeper than 64).
    ///
    /// # Panics
    ///
    /// Panics when this thread's [`LuaRuntime`] has been dropped.
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
        cord::unref(main, lf.udata);
        cord::recycle_thread(lf.thread);
    }
}

/// Starts a fiber running `handler` with the values `push_args` pushes as
/// its arguments.
fn start(
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
        let f: ffi::lua_CFunction = match handler {
            Handler::Call => crate::wide_cfn!(call_handler),
            Handler::Eval => crate::wide_cfn!(eval_handler),
            Handler::Module => crate::wide_cfn!(module_handler),
        };
        match how {
            Handlers::CachedRef => {
                let refs = cord::refs();
                let r = match handler {
                    Handler::Call => refs.call_handler,
                    Handler::Eval => refs.eval_handler,
                    Handler::Module => refs.module_handler,
                };
                lua::push_registry_ref(main, r);
            }
            Handlers::PushPerCall => ffi::lua_pushcfunction(main, f),
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
        let r = spawn::spawn(
            main,
            top + 1,
            start,
            Builder::new().name(name).joinable(joinable),
            false,
        );
        ffi::lua_settop(main, top);
        r.map_err(raise_to_error)
    }
}

/// An error a bridge function asked to raise, as an [`Error::Runtime`].
fn raise_to_error(r: Raise) -> Error {
    match r {
        Raise::Error(_, msg) => Error::Runtime(msg),
        Raise::Top => Error::Runtime("error".into()),
    }
}

/// Pushes `args` (room was checked by the caller).
fn push_values(args: &[Value]) -> impl FnOnce(*mut ffi::lua_State) + '_ {
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
fn wait(id: FiberId) -> Result<Vec<Value>, Error> {
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
            let msg = spawn::describe(t, -1);
            // A traceback that shows only the handler says nothing more.
            let tb = lf
                .traceback
                .filter(|tb| !tb.ends_with("stack traceback:\n\t[C]: in ?"));
            Err(Error::Runtime(tb.unwrap_or(msg)))
        }
    };
    // SAFETY: the fiber has ended.
    unsafe {
        cord::unref(t, lf.udata);
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
    _not_send: PhantomData<*const ()>,
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
            unsafe { lua::push_str(l, name) };
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
            unsafe { lua::push_str(l, code) };
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
            unsafe { lua::push_str(l, name) };
            push_values(&args)(l);
        })?;
        Ok(CallHandle {
            id: Some(id),
            _not_send: PhantomData,
        })
    }
}

impl LuaRuntime {
    /// A `'static` handle on this runtime, for Rust fibers and registered
    /// functions.
    pub fn handle(&self) -> LuaHandle {
        LuaHandle {
            _not_send: PhantomData,
        }
    }

    /// Calls the global function `name` with `args` on a fresh Lua fiber
    /// and returns its results, as Tarantool serves an iproto CALL.
    ///
    /// `name` is a dotted path from the globals (`"f"`, `"mod.sub.f"`); a
    /// last part after `:` makes a method call (`"obj:m"` calls
    /// `obj.m(obj, ...)`). Lookups run `__index` metamethods. Arguments and
    /// results convert as [`Value`] describes.
    ///
    /// Outside any fiber, this runs the scheduler until the call's fiber has
    /// ended (other fibers run meanwhile, as in [`LuaRuntime::run`]); inside
    /// a fiber, the call's fiber runs at once and only the calling fiber
    /// waits for it.
    ///
    /// ```
    /// use luafiber_lua::{LuaRuntime, Value};
    ///
    /// let rt = LuaRuntime::new().unwrap();
    /// rt.load_module("calc", r#"
    ///     local fiber = require('fiber')
    ///     return { add = function(a, b) fiber.sleep(0.001); return a + b end }
    /// "#).unwrap();
    /// let r = rt.call("calc.add", vec![Value::from(40), Value::from(2)]).unwrap();
    /// assert_eq!(r, [Value::Integer(42)]);
    /// let err = rt.call("calc.nope", vec![]).unwrap_err();
    /// assert!(err.to_string().contains("Procedure 'calc.nope' is not defined"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] with the message and traceback when the function
    /// raises, or "Procedure 'NAME' is not defined" when `name` names no
    /// value; also when a result cannot be converted (tables nested deeper
    /// than 64), or when, outside any fiber, the call's fiber blocks with
    /// nothing left to run (it is then cancelled).
    pub fn call(&self, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.handle().call(name, args)
    }

    /// [`LuaRuntime::call`] with the handler got as `how` says (benches).
    #[doc(hidden)]
    pub fn call_by(
        &self,
        how: Handlers,
        name: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        self.handle().call_by(how, name, args)
    }

    /// Runs the Lua chunk `code` with `...` = `args` on a fresh Lua fiber
    /// and returns its results, as Tarantool serves an iproto EVAL: the
    /// code is a chunk, so it returns values with `return`. Compiled chunks
    /// are kept by source (up to 1024), so evaluating the same code again
    /// does not compile it again. Waits as [`LuaRuntime::call`] does.
    ///
    /// ```
    /// use luafiber_lua::{LuaRuntime, Value};
    ///
    /// let rt = LuaRuntime::new().unwrap();
    /// let r = rt.eval("local a, b = ... return a .. b, #a", vec!["ab".into(), "c".into()]).unwrap();
    /// assert_eq!(r, [Value::from("abc"), Value::Integer(2)]);
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] when the code does not compile (the compiler's
    /// message) or raises (message and traceback), and as
    /// [`LuaRuntime::call`].
    pub fn eval(&self, code: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.handle().eval(code, args)
    }

    /// [`LuaRuntime::eval`] with the handler got as `how` says (benches).
    #[doc(hidden)]
    pub fn eval_by(
        &self,
        how: Handlers,
        code: &str,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, Error> {
        self.handle().eval_by(how, code, args)
    }

    /// Starts [`LuaRuntime::call`]'s fiber without waiting for it: outside
    /// any fiber it is queued and runs when the scheduler does
    /// ([`LuaRuntime::run`], or a join); inside a fiber it runs at once
    /// until its first yield. [`CallHandle::join`] gives its results.
    ///
    /// ```
    /// use luafiber_lua::{LuaRuntime, Value};
    ///
    /// let rt = LuaRuntime::new().unwrap();
    /// rt.eval("function slow(x) require('fiber').sleep(0.01) return x end", vec![]).unwrap();
    /// let t = std::time::Instant::now();
    /// let calls: Vec<_> = (0..100).map(|i| rt.spawn_call("slow", vec![Value::from(i)]).unwrap()).collect();
    /// rt.run();
    /// for (i, c) in calls.into_iter().enumerate() {
    ///     assert_eq!(c.join().unwrap(), [Value::Integer(i as i64)]);
    /// }
    /// assert!(t.elapsed() < std::time::Duration::from_millis(500)); // they overlap
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] when no fiber can be made (stacks, memory).
    /// Errors of the call itself come from [`CallHandle::join`].
    pub fn spawn_call(&self, name: &str, args: Vec<Value>) -> Result<CallHandle, Error> {
        self.handle().spawn_call(name, args)
    }

    /// Starts a fiber running the mlua function `f` with `args`, without
    /// waiting for it (as [`LuaRuntime::spawn_call`]). `f` may be any Lua
    /// function of this runtime's state, e.g. one got from
    /// `rt.lua().load(...).eval()`; it may yield.
    ///
    /// Call this from Rust code, not from inside an mlua callback.
    ///
    /// # Errors
    ///
    /// [`Error::Lua`] when `f` belongs to another Lua state;
    /// [`Error::Runtime`] when no fiber can be made.
    pub fn spawn_lua(&self, f: mlua::Function, args: Vec<Value>) -> Result<CallHandle, Error> {
        self.lua
            .set_named_registry_value(SPAWN_LUA_SLOT, f)
            .map_err(Error::Lua)?;
        let main = cord::with(|c| c.main);
        let top;
        // SAFETY: `main` is the idle main state; the function is left on top
        // and consumed by `start` below (or popped on error).
        unsafe {
            top = ffi::lua_gettop(main);
            if ffi::lua_checkstack(main, args.len() as c_int + 8) == 0 {
                return Err(Error::Runtime("too many arguments".into()));
            }
            ffi::lua_getfield(
                main,
                ffi::LUA_REGISTRYINDEX,
                c"__luafiber_spawn_lua".as_ptr(),
            );
            ffi::lua_pushnil(main);
            ffi::lua_setfield(
                main,
                ffi::LUA_REGISTRYINDEX,
                c"__luafiber_spawn_lua".as_ptr(),
            );
        }
        let in_fiber = fiber::current().is_some();
        // SAFETY: the function is at `top + 1`; the arguments go above it and
        // are moved to the new fiber; whatever is left is popped.
        let r = unsafe {
            push_values(&args)(main);
            let r = spawn::spawn(
                main,
                top + 1,
                if in_fiber { Start::Now } else { Start::Ready },
                Builder::new().joinable(true),
                false,
            );
            ffi::lua_settop(main, top);
            r.map_err(raise_to_error)?
        };
        Ok(CallHandle {
            id: Some(r),
            _not_send: PhantomData,
        })
    }

    /// Loads the Lua module `name` from source `code`: runs the chunk on a
    /// fresh fiber (it may yield) with `...` = `name`, as `require` would,
    /// and stores its first result (or `true` when it returns nothing) in
    /// `package.loaded[name]` and the global `name`, so
    /// [`LuaRuntime::call`] finds its functions as `"name.f"`. Waits as
    /// [`LuaRuntime::call`] does.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the code does not compile; [`Error::Runtime`]
    /// when the chunk raises (message and traceback).
    pub fn load_module(&self, name: &str, code: &str) -> Result<(), Error> {
        let chunk_name = CString::new(format!("={name}")).unwrap_or_default();
        self.load_module_with(name, |l| {
            // SAFETY: `l` is the main state with room for one value.
            unsafe {
                ffi::luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), chunk_name.as_ptr())
            }
        })
    }

    /// [`LuaRuntime::load_module`] with the code read from the file at
    /// `path` (errors and tracebacks name the file).
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the file cannot be read or compiled, else as
    /// [`LuaRuntime::load_module`].
    pub fn load_module_file(&self, name: &str, path: &str) -> Result<(), Error> {
        let cpath = CString::new(path).map_err(|_| Error::Load(format!("bad path {path:?}")))?;
        self.load_module_with(name, |l| {
            // SAFETY: `l` is the main state with room for one value.
            unsafe { ffi::luaL_loadfile(l, cpath.as_ptr()) }
        })
    }

    fn load_module_with(
        &self,
        name: &str,
        load: impl FnOnce(*mut ffi::lua_State) -> c_int,
    ) -> Result<(), Error> {
        let main = cord::with(|c| c.main);
        // SAFETY: `main` is the idle main state; the chunk is popped at once
        // (kept in a registry ref until the fiber has it).
        let chunk = unsafe {
            if ffi::lua_checkstack(main, 4) == 0 {
                return Err(Error::Runtime("stack overflow".into()));
            }
            if load(main) != 0 {
                let msg = spawn::describe(main, -1);
                ffi::lua_pop(main, 1);
                return Err(Error::Load(msg));
            }
            ffi::luaL_ref(main, ffi::LUA_REGISTRYINDEX)
        };
        let id = start(Handler::Module, Handlers::CachedRef, true, 2, |l| {
            // SAFETY: `l` is the main state with room checked by `start`.
            unsafe {
                lua::push_str(l, name);
                lua::push_registry_ref(l, chunk);
                cord::unref(l, chunk);
            }
        });
        id.and_then(wait).map(drop)
    }
}
