//! [`LuaRuntime::call`], [`LuaRuntime::eval`] and the other ways to run
//! Lua from Rust on fresh fibers.

use std::ffi::{c_int, CString};
use std::marker::PhantomData;

use luafiber_fiber::{self as fiber, Builder};
use mlua::ffi;

use super::handle::{push_values, raise_to_error, start, wait, CallHandle, Handlers, LuaHandle};
use super::handlers::Handler;
use super::{Error, LuaRuntime, Value};
use crate::cord::{self, ErrorUse};
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::api;

/// Registry key `spawn_lua` passes an mlua function through.
const SPAWN_LUA_SLOT: &str = "__luafiber_spawn_lua";

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
    /// [`Error::Lua`] when `f` belongs to another Lua state (one of another
    /// `mlua::Lua`, or of a dropped one); [`Error::Runtime`] when no fiber
    /// can be made.
    pub fn spawn_lua(&self, f: mlua::Function, args: Vec<Value>) -> Result<CallHandle, Error> {
        // mlua panics on a value of another state rather than failing.
        if *f.weak_lua() != self.lua.weak() {
            return Err(Error::Lua(mlua::Error::runtime(
                "spawn_lua: the function belongs to another Lua state",
            )));
        }
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
            let r = lua_fiber::spawn(
                main,
                top + 1,
                if in_fiber { Start::Now } else { Start::Ready },
                Builder::new().joinable(true),
                ErrorUse::Rust,
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
                let msg = api::describe(main, -1);
                ffi::lua_pop(main, 1);
                return Err(Error::Load(msg));
            }
            ffi::luaL_ref(main, ffi::LUA_REGISTRYINDEX)
        };
        let id = start(Handler::Module, Handlers::CachedRef, true, 2, |l| {
            // SAFETY: `l` is the main state with room checked by `start`.
            unsafe {
                api::push_str(l, name);
                api::push_registry_ref(l, chunk);
                api::unref(l, chunk);
            }
        });
        id.and_then(wait).map(drop)
    }
}
