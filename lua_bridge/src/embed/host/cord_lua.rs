//! [`CordLua`]: one cord's Lua state while it starts, and the typed Rust
//! functions Lua calls ([`CordLua::register_fn`],
//! [`CordLua::register_async_fn`]).

use std::future::Future;
use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use std::ffi::c_int;

use super::{args, lua_serde, Error, ErrorKind};
use crate::embed::rust_fn::{call_msgpack_fn, MsgpackFn};
use crate::embed::{FnError, LuaRuntime};
use crate::modules::msgpack::port;
use crate::raw::{LResult, Stack};

/// A cord's Lua state, as [`Builder::on_cord_start`](super::Builder::on_cord_start)
/// gives it while the cord starts (before it takes calls): register Rust
/// functions, load modules, run setup code. Not `Send`: it stays on its
/// cord.
pub struct CordLua<'a> {
    pub(super) rt: &'a LuaRuntime,
}

impl CordLua<'_> {
    /// The `mlua` handle, for setup work that does not yield (globals,
    /// conversions). Code run through it runs outside any fiber.
    pub fn mlua(&self) -> &mlua::Lua {
        self.rt.lua()
    }

    /// Loads the Lua module `name` from `code` (its chunk's result is
    /// what `require(name)` gives, and the global `name`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Lua`] when the code does not compile or raises.
    pub fn load_module(&self, name: &str, code: &str) -> Result<(), Error> {
        Ok(self.rt.load_module(name, code)?)
    }

    /// Runs the Lua chunk `code` on a fiber and waits for it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Lua`] when the code does not compile or raises.
    pub fn exec(&self, code: &str) -> Result<(), Error> {
        self.rt
            .eval(code, Vec::new())
            .map(drop)
            .map_err(Error::from)
    }

    /// Makes the Rust function `f` the Lua global `name`. Its arguments
    /// arrive as `A` (a tuple for several: `|(a, b): (i64, i64)|`; any
    /// other `DeserializeOwned` type gets the first argument), its result
    /// goes back as Lua values (a tuple is several, `()` none). `f` runs
    /// on the calling Lua fiber and may block it (a `luafiber::sleep`, a
    /// channel): only that fiber waits.
    ///
    /// An `Err` is raised in Lua as an error object (Tarantool's `box.error`
    /// shape) whose message is `"name: message"`: of type
    /// `FiberIsCancelled` for [`ErrorKind::Cancelled`], `TimedOut` for
    /// [`ErrorKind::TimedOut`], `IllegalParams` for the rest (and for
    /// arguments that do not make an `A`). A panic is raised as a
    /// `RustPanic` error object.
    ///
    /// The arguments are read off the Lua stack into `A`, and the result
    /// pushed onto it, with no MessagePack in between, as a local call's
    /// are (the same values as the MessagePack mapping gives; a value that
    /// does not go straight across goes through MessagePack).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Lua`] when `name` has a NUL byte.
    pub fn register_fn<A, R, F>(&self, name: &str, f: F) -> Result<(), Error>
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Result<R, Error> + 'static,
    {
        let f = Rc::new(f);
        let g = f.clone();
        // The MessagePack path: what a call falls back to when a value
        // does not go straight across, for that path's very result or
        // error.
        let raw: Rc<MsgpackFn> = Rc::new(move |bytes: &[u8]| -> Result<Vec<u8>, FnError> {
            let a: A = args::decode(bytes).map_err(illegal)?;
            let r = g(a)?;
            args::encode(&r).map_err(illegal)
        });
        let typed = move |s: &mut Stack, name: &str| -> LResult<c_int> {
            let top = s.top();
            // SAFETY: the stack of the closure's call on this cord's
            // state, the arguments from 1 to the top; no Lua code runs
            // while it reads.
            let Ok(a) = (unsafe { lua_serde::read_results_on::<A>(s, 1, top) }) else {
                return call_msgpack_fn(s, &*raw, name);
            };
            let r = f(a).map_err(|e| FnError::from(e).raise(name))?;
            // Above the arguments (Lua takes the top `n` values as the
            // results), in the room the call made: no `lua_settop`.
            // SAFETY: as above.
            match unsafe { lua_serde::push_args_onto(s, &r) } {
                Ok(n) => Ok(n),
                Err(_) => {
                    let bytes = args::encode(&r).map_err(|e| illegal(e).raise(name))?;
                    port::push_array(s, &bytes, "decode")
                }
            }
        };
        Ok(self.rt.register_typed_fn(name, Box::new(typed))?)
    }

    /// Makes the Rust async function `f` the Lua global `name`: Lua calls
    /// it as any function, and the calling Lua fiber (only it) is parked
    /// until the future is ready; the future's `Waker` wakes the fiber
    /// from any thread (a tokio task, a timer, another cord). Arguments,
    /// results and errors as [`register_fn`](CordLua::register_fn).
    /// A cancel of the fiber drops the future and raises
    /// `FiberIsCancelled` in Lua.
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// use luafiber::Builder;
    ///
    /// let rt = Builder::new()
    ///     .on_cord_start(|lua, _cord| {
    ///         lua.register_async_fn("fetch", |id: i64| async move {
    ///             // Any future: a tokio query, a channel receive...
    ///             std::future::ready(()).await;
    ///             Ok(format!("user {id}"))
    ///         })
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let s: String = rt.handle().eval("return fetch(...)", (7,)).unwrap();
    /// assert_eq!(s, "user 7");
    /// ```
    ///
    /// # Errors
    ///
    /// As [`register_fn`](CordLua::register_fn).
    pub fn register_async_fn<A, R, F, Fut>(&self, name: &str, f: F) -> Result<(), Error>
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Fut + 'static,
        Fut: Future<Output = Result<R, Error>> + 'static,
    {
        self.register_fn(name, move |a: A| await_in_fiber(f(a)))
    }
}

impl std::fmt::Debug for CordLua<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CordLua").finish_non_exhaustive()
    }
}

/// Runs `fut` on the calling fiber, parking only it while it is pending.
pub(super) fn await_in_fiber<R>(fut: impl Future<Output = Result<R, Error>>) -> Result<R, Error> {
    luafiber_runtime::block_on_future(fut).map_err(|e| {
        if e.is_cancelled() {
            Error::new(ErrorKind::Cancelled, "fiber is cancelled")
        } else {
            Error::from(e)
        }
    })?
}

fn illegal(e: Error) -> FnError {
    FnError::Illegal(e.message().to_owned())
}
