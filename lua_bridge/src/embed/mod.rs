//! The Rust API of the bridge: [`LuaRuntime`] and its builder, scripts,
//! call/eval of Lua functions on fresh fibers and their handles, and Rust
//! functions Lua calls that may block their fiber.
//!
//! - [`builder`]: the settings that set up a cord's Lua state
//!   ([`RuntimeBuilder`]);
//! - [`script`]: the script runner (`run_main`, `run_chunk`);
//! - [`handlers`], [`handle`] and [`call`]: CALL and EVAL, as Tarantool
//!   serves them;
//! - [`value`]: what Rust sees of Lua values ([`Value`]);
//! - [`rust_fn`]: Rust functions Lua calls ([`LuaRuntime::register_fn`]);
//! - [`interrupt`]: Ctrl-C for running Lua code (a console's);
//! - [`cords`]: Lua on several cords ([`LuaCords`]), and the thread groups
//!   of `experimental.threads`.

mod builder;
mod call;
mod cords;
mod handle;
mod handlers;
pub mod interrupt;
mod rust_fn;
mod script;
mod value;

use std::fmt;

use luafiber_fiber as fiber;
use mlua::Lua;

pub use builder::RuntimeBuilder;
pub use cords::{CallError, CallErrorKind, CordCall, CordsBuilder, LuaCords};
pub use handle::{CallHandle, Handlers, LuaHandle};
pub use value::Value;

/// Why a runtime could not start or a script could not run.
#[derive(Debug)]
pub enum Error {
    /// This thread already has a `LuaRuntime` (one Lua state per cord).
    AlreadyRunning,
    /// Fibers already exist on this thread, so its stack settings are fixed.
    FibersExist,
    /// mlua failed (creating the state, setting the memory limit).
    Lua(mlua::Error),
    /// A script or chunk failed to load: the message.
    Load(String),
    /// A chunk or a called function raised an error: the message and
    /// traceback.
    Runtime(String),
    /// This thread has no `LuaRuntime` (a [`LuaHandle`] outlived it).
    NoRuntime,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AlreadyRunning => f.write_str("this thread already runs a LuaRuntime"),
            Error::FibersExist => f.write_str("fibers already exist on this thread"),
            Error::Lua(e) => write!(f, "{e}"),
            Error::Load(m) | Error::Runtime(m) => f.write_str(m),
            Error::NoRuntime => f.write_str("this thread has no LuaRuntime"),
        }
    }
}

impl std::error::Error for Error {}

/// A cord's Lua runtime: the Lua state, its modules and the scheduler of the
/// calling thread. Not `Send`: fibers never leave their thread.
pub struct LuaRuntime {
    lua: Lua,
}

impl LuaRuntime {
    /// A runtime with the default settings (see [`RuntimeBuilder`]).
    ///
    /// # Errors
    ///
    /// As [`RuntimeBuilder::build`].
    pub fn new() -> Result<LuaRuntime, Error> {
        RuntimeBuilder::default().build()
    }

    /// Settings for a new runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The mlua handle, for setup work that does not yield (globals, loading
    /// code, conversions). Code run through it runs outside any fiber.
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Runs the scheduler until no fiber is ready or sleeping.
    ///
    /// # Panics
    ///
    /// Panics when called from inside a fiber.
    pub fn run(&self) {
        fiber::run();
    }
}

impl Drop for LuaRuntime {
    fn drop(&mut self) {
        crate::luajit::entry::uninstall();
        rust_fn::clear();
        crate::cord::uninstall();
    }
}
