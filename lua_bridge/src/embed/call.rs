//! [`LuaRuntime::call`], [`LuaRuntime::eval`] and the other ways to run
//! Lua from Rust on fresh fibers.

use std::ffi::{c_int, CString};
use std::marker::PhantomData;

use luafiber_fiber::{self as fiber, Builder};
use mlua::ffi;

#[cfg(luafiber_bench)]
use super::handle::Handlers;
use super::handle::{
    main_stack, out_of_memory, push_values, raise_to_error, start, wait, CallHandle, LuaHandle,
};
use super::{Error, LuaRuntime, Value};
use crate::cord::ErrorUse;
use crate::fiber::handlers::Handler;
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::Stack;

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
    /// [`Error::Fiber`] with the call's [`FiberError`]: a Lua error with the
    /// message and traceback when the function raises, or "Procedure 'NAME'
    /// is not defined" when `name` names no value, or when a result cannot
    /// be converted (tables nested deeper than 64); cancelled when it ended
    /// with `FiberIsCancelled`, or when, outside any fiber, it blocked with
    /// nothing left to run. [`Error::Runtime`] when no fiber can be made.
    ///
    /// [`FiberError`]: luafiber_runtime::FiberError
    pub fn call(&self, name: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.handle().call(name, args)
    }

    /// [`LuaRuntime::call`] with the handler got as `how` says (benches).
    #[cfg(luafiber_bench)]
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
    /// As [`LuaRuntime::call`]; a chunk that does not compile is a Lua
    /// error with the compiler's message.
    pub fn eval(&self, code: &str, args: Vec<Value>) -> Result<Vec<Value>, Error> {
        self.handle().eval(code, args)
    }

    /// [`LuaRuntime::eval`] with the handler got as `how` says (benches).
    #[cfg(luafiber_bench)]
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
    /// rt.eval(r#"
    ///     LOG = {}
    ///     function slow(x)
    ///         table.insert(LOG, 'start')
    ///         require('fiber').sleep(0.01)
    ///         table.insert(LOG, 'end')
    ///         return x
    ///     end
    /// "#, vec![]).unwrap();
    /// let calls: Vec<_> = (0..100).map(|i| rt.spawn_call("slow", vec![Value::from(i)]).unwrap()).collect();
    /// rt.run();
    /// for (i, c) in calls.into_iter().enumerate() {
    ///     assert_eq!(c.join().unwrap(), [Value::Integer(i as i64)]);
    /// }
    /// // They overlap: every call started before the first one ended.
    /// let log: Vec<String> = rt.lua().globals().get("LOG").unwrap();
    /// assert!(log[..100].iter().all(|e| e == "start"));
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
        let s = &mut main_stack()?;
        let top = s.top();
        if s.ensure(args.len() as c_int + 8).is_err() {
            return Err(Error::Runtime("too many arguments".into()));
        }
        s.rawget_field(ffi::LUA_REGISTRYINDEX, c"__luafiber_spawn_lua");
        s.push_cstr(c"__luafiber_spawn_lua");
        s.push_nil();
        let _ = s.rawset(ffi::LUA_REGISTRYINDEX);
        if let Err(e) = push_values(s, args) {
            s.settop(top);
            return Err(e);
        }
        if s.over_limit() {
            s.settop(top);
            return Err(out_of_memory());
        }
        let start = if fiber::current().is_some() {
            Start::Now
        } else {
            Start::Ready
        };
        let r = lua_fiber::spawn(
            s,
            top + 1,
            start,
            Builder::new().joinable(true),
            ErrorUse::Rust,
        );
        s.settop(top);
        Ok(CallHandle {
            id: Some(r.map_err(raise_to_error)?),
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
    /// [`Error::Load`] when the code does not compile; [`Error::Fiber`]
    /// when the chunk raises (message and traceback).
    pub fn load_module(&self, name: &str, code: &str) -> Result<(), Error> {
        let chunk_name = CString::new(format!("={name}")).unwrap_or_default();
        self.load_module_with(name, |s| s.load(code, &chunk_name))
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
        self.load_module_with(name, |s| s.load_file(Some(&cpath)))
    }

    fn load_module_with(
        &self,
        name: &str,
        load: impl FnOnce(&mut Stack) -> Result<(), ()>,
    ) -> Result<(), Error> {
        let s = &mut main_stack()?;
        if s.ensure(4).is_err() {
            return Err(Error::Runtime("stack overflow".into()));
        }
        if load(s).is_err() {
            let msg = s.describe(-1);
            s.pop(1);
            return Err(Error::Load(msg));
        }
        // Kept in a registry ref until the fiber has it.
        let chunk = s.make_ref();
        let id = start(Handler::Module, false, true, 2, |s| {
            s.push_str(name);
            s.push_ref(chunk);
            s.unref(chunk);
            Ok(())
        })?;
        wait(id)?;
        Ok(())
    }
}
