//! [`LuaRuntime::register_fn`]: Rust functions Lua calls that may block
//! their fiber.
//!
//! `mlua` callbacks must not switch fibers (mlua keeps one "current state"
//! per Lua instance, restored in LIFO order), so blocking Rust functions are
//! registered here instead: a raw C closure converts the arguments to
//! [`Value`]s, calls the Rust function (which may `sleep`, wait on a channel,
//! ...), and pushes its results. Conversion runs no metamethod and raises
//! nothing.

use std::cell::RefCell;
use std::ffi::{c_int, CString};
use std::rc::Rc;

use mlua::ffi;

use super::value::{self, Value};
use super::{Error, LuaRuntime};
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, Raise};

/// A registered blocking function: arguments in, results or an error
/// message out.
pub(crate) type RustFn = Rc<dyn Fn(Vec<Value>) -> Result<Vec<Value>, String>>;

thread_local! {
    /// The functions registered on this thread's runtime, with their names.
    static RUST_FNS: RefCell<Vec<(RustFn, String)>> = const { RefCell::new(Vec::new()) };
}

/// Forgets the functions of this thread's runtime (it is going).
pub(super) fn clear() {
    RUST_FNS.with(|f| f.borrow_mut().clear());
}

impl LuaRuntime {
    /// Makes the Rust function `f` the Lua global `name`. Unlike an `mlua`
    /// callback, `f` may block its fiber (`fiber::sleep`, waiting on a channel,
    /// ...): only the calling fiber waits. Arguments and results convert
    /// through [`Value`] (functions, userdata and threads arrive as `Nil`);
    /// an `Err(msg)` is raised in Lua as an `IllegalParams` error object
    /// whose message is `"name: msg"`. Inside a fiber, a call from a `__gc`
    /// finalizer or under an mlua callback raises instead of calling `f`.
    ///
    /// `f` is kept for the runtime's whole life; registering `name` again
    /// replaces the global (the old function stays allocated). A panic in
    /// `f` is caught and raised in Lua as a `RustPanic` error object.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when `name` contains a NUL byte.
    pub fn register_fn(
        &self,
        name: &str,
        f: impl Fn(Vec<Value>) -> Result<Vec<Value>, String> + 'static,
    ) -> Result<(), Error> {
        let cname = CString::new(name).map_err(|_| Error::Load(format!("bad name {name:?}")))?;
        let idx = RUST_FNS.with(|fns| {
            let mut fns = fns.borrow_mut();
            fns.push((Rc::new(f), name.to_owned()));
            fns.len() - 1
        });
        let l = self.lua.state();
        // SAFETY: `l` is the idle main state; the closure is set up once.
        unsafe {
            ffi::lua_pushinteger(l, idx as ffi::lua_Integer);
            ffi::lua_pushcclosure(l, call_rust_fn, 1);
            ffi::lua_setglobal(l, cname.as_ptr());
        }
        Ok(())
    }
}

lua_fn! {
    /// The C closure behind every registered function (upvalue 1: its index
    /// in the cord's function list).
    fn call_rust_fn(l) {
        // SAFETY: called by Lua with the arguments on `l`.
        unsafe {
            let idx = ffi::lua_tointeger(l, ffi::lua_upvalueindex(1)) as usize;
            let (f, name) = RUST_FNS.with(|fns| fns.borrow()[idx].clone());
            if luafiber_fiber::current().is_some() {
                crate::fiber::check_switch(l, &name)?;
            }
            let n = ffi::lua_gettop(l);
            if ffi::lua_checkstack(l, 8) == 0 {
                return Err(Raise::illegal("stack overflow"));
            }
            let mut args = Vec::with_capacity(n as usize);
            for i in 1..=n {
                args.push(value::read(l, i, 0)?);
            }
            let results = f(args).map_err(|msg| {
                // A fiber error passed through as its message keeps its kind.
                let kind = match msg.as_str() {
                    "fiber is cancelled" if luafiber_fiber::testcancel().is_err() => {
                        ErrorKind::FiberIsCancelled
                    }
                    "timed out" => ErrorKind::TimedOut,
                    _ => ErrorKind::IllegalParams,
                };
                Raise::Error(kind, format!("{name}: {msg}"))
            })?;
            if ffi::lua_checkstack(l, results.len() as c_int + 3) == 0 {
                return Err(Raise::illegal(format!("{name}: too many results")));
            }
            for v in &results {
                value::push(l, v);
            }
            Ok(results.len() as c_int)
        }
    }
}
