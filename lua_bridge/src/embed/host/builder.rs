//! [`Builder`]: the settings of a [`Runtime`]: how many cords, their Lua
//! states' settings (or no Lua), and the init steps each cord runs as it
//! starts.

use std::future::Future;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::cord_lua::await_in_fiber;
use super::local::Spec;
use super::{CordLua, Error, ErrorKind, Handle, Runtime};
use crate::embed::{LuaRuntime, RuntimeBuilder};

/// An init step, run on each cord as it starts.
#[derive(Clone)]
enum Step {
    Module(String, String),
    Exec(String),
    Fn(Arc<StepFn>),
}

/// Init code run on each cord with its Lua state and index.
type StepFn = dyn Fn(&CordLua<'_>, usize) -> Result<(), Error> + Send + Sync;

/// Settings of a [`Runtime`], tokio's `Builder` style: `Builder::new()`,
/// setters that take and return it, then [`build`](Builder::build).
///
/// ```
/// # use luafiber_lua::host as luafiber;
/// use luafiber::Builder;
///
/// let rt = Builder::new()
///     .cords(2)                       // OS threads, each with its own Lua state
///     .memory_limit(64 << 20)         // per state
///     .load_module("app", "return { add = function(a, b) return a + b end }")
///     .on_cord_start(|lua, _cord| {
///         lua.register_fn("double", |x: i64| Ok(x * 2))
///     })
///     .build()
///     .unwrap();
/// let h = rt.handle();
/// assert_eq!(h.call::<i64>("app.add", (1, 2)).unwrap(), 3);
/// assert_eq!(h.eval::<i64>("return double(...)", 21).unwrap(), 42);
/// ```
#[derive(Clone)]
pub struct Builder {
    lua: Option<RuntimeBuilder>,
    cords: usize,
    thread_name: Option<String>,
    steps: Vec<Step>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// One cord with a Lua state of Tarantool's defaults (512 KiB fiber
    /// stacks, no memory limit).
    pub fn new() -> Builder {
        Builder {
            lua: Some(RuntimeBuilder::default()),
            cords: 1,
            thread_name: None,
            steps: Vec::new(),
        }
    }

    /// How many cords (OS threads, each with its own scheduler, event loop
    /// and Lua state): default 1. Calls go to whichever is free first, or
    /// to the one named ([`Handle::call_on`]).
    pub fn cords(mut self, n: usize) -> Builder {
        self.cords = n;
        self
    }

    /// With Lua (`true`, the default) or without (`false`): a runtime of
    /// Rust fibers only ([`Handle::spawn`]), whose calls fail with
    /// [`ErrorKind::Refused`]. A program that never uses Lua can depend on
    /// `luafiber-runtime` alone.
    pub fn lua(mut self, on: bool) -> Builder {
        self.lua = match (on, self.lua.take()) {
            (true, lua) => Some(lua.unwrap_or_default()),
            (false, _) => None,
        };
        self
    }

    /// Caps each Lua state's heap, in bytes: an allocation past it is a Lua
    /// error ("not enough memory") for the code that asked, never an abort.
    /// It counts what the runtime allocates at start (about 100 KB).
    pub fn memory_limit(self, bytes: usize) -> Builder {
        self.with_lua(|l| l.memory_limit(bytes))
    }

    /// Usable stack size of each fiber, in bytes (default 512 KiB; at least
    /// 16 KiB; rounded up to pages).
    pub fn stack_size(self, bytes: usize) -> Builder {
        self.with_lua(|l| l.stack_size(bytes))
    }

    /// Most fiber stacks kept for reuse per cord (default 16384).
    pub fn stack_pool(self, max: usize) -> Builder {
        self.with_lua(|l| l.stack_pool(max))
    }

    /// Most finished Lua threads kept for reuse per cord (default 4096).
    pub fn thread_pool(self, max: usize) -> Builder {
        self.with_lua(|l| l.thread_pool(max))
    }

    /// The cords' thread names: `prefix` and the cord's index
    /// (`luafiber-0`, ...). Default `luafiber`.
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Builder {
        self.thread_name = Some(prefix.into());
        self
    }

    /// Loads the Lua module `name` from `code` on each cord (the chunk's
    /// result is what `require(name)` gives, and the global `name`).
    pub fn load_module(mut self, name: &str, code: &str) -> Builder {
        self.steps.push(Step::Module(name.into(), code.into()));
        self
    }

    /// Runs the Lua chunk `code` on each cord: globals, `require`s.
    pub fn exec(mut self, code: &str) -> Builder {
        self.steps.push(Step::Exec(code.into()));
        self
    }

    /// Runs `f` on each cord as it starts, with its Lua state and the
    /// cord's index (`0..n`): register Rust functions there
    /// ([`CordLua::register_fn`], [`CordLua::register_async_fn`]), which
    /// need not be `Send`. Steps run in the order they were given.
    pub fn on_cord_start(
        mut self,
        f: impl Fn(&CordLua<'_>, usize) -> Result<(), Error> + Send + Sync + 'static,
    ) -> Builder {
        self.steps.push(Step::Fn(Arc::new(f)));
        self
    }

    /// Registers the Rust function `f` as the Lua global `name` on every
    /// cord, as [`CordLua::register_fn`] does.
    pub fn register_fn<A, R, F>(self, name: &str, f: F) -> Builder
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Result<R, Error> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        let name = name.to_owned();
        self.on_cord_start(move |lua, _| {
            let f = f.clone();
            lua.register_fn(&name, move |a: A| f(a))
        })
    }

    /// Registers the Rust async function `f` as the Lua global `name` on
    /// every cord, as [`CordLua::register_async_fn`] does: a Lua call
    /// parks its fiber until the future is ready.
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// use luafiber::Builder;
    ///
    /// let rt = Builder::new()
    ///     .register_async_fn("add_later", |(a, b): (i64, i64)| async move { Ok(a + b) })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(rt.handle().eval::<i64>("return add_later(1, 2)", ()).unwrap(), 3);
    /// ```
    pub fn register_async_fn<A, R, F, Fut>(self, name: &str, f: F) -> Builder
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + 'static,
    {
        self.register_fn(name, move |a: A| await_in_fiber(f(a)))
    }

    /// Starts the cords, runs the init steps on each, and returns when
    /// every cord serves.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Build`] when a thread cannot start, the memory limit is
    /// below what a state needs at start, or an init step fails (its
    /// message names the cord); the cords started are shut down.
    ///
    /// # Panics
    ///
    /// When `cords` is 0.
    pub fn build(self) -> Result<Runtime, Error> {
        let name = self.thread_name.unwrap_or_else(|| "luafiber".into());
        let build_err = |e: &dyn std::fmt::Display| Error::new(ErrorKind::Build, e.to_string());
        let Some(lua) = self.lua else {
            let rt = luafiber_runtime::Runtime::builder()
                .cords(self.cords)
                .thread_name(name)
                .build()
                .map_err(|e| build_err(&e))?;
            return Ok(Runtime::plain(rt));
        };
        let mut cords = lua.cords(self.cords).thread_name(name);
        for step in self.steps {
            cords = match step {
                Step::Module(name, code) => cords.load_module(&name, &code),
                Step::Exec(code) => cords.eval(&code),
                Step::Fn(f) => cords.on_cord_start(move |rt: &LuaRuntime, i| {
                    f(&CordLua { rt }, i).map_err(|e| crate::embed::Error::Runtime(e.to_string()))
                }),
            };
        }
        let (lua, init) = cords.parts();
        let local = Spec::new(lua, init, self.cords);
        let cords = cords.build().map_err(|e| build_err(&e))?;
        Ok(Runtime::lua(cords, local))
    }

    fn with_lua(mut self, f: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder) -> Builder {
        self.lua = self.lua.map(f);
        self
    }
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("cords", &self.cords)
            .field("lua", &self.lua.is_some())
            .field("init_steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

#[allow(dead_code)]
fn _handle_is_send_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Handle>();
}
