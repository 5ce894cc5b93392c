//! The Rust API of the bridge: [`LuaRuntime`] and its builder, scripts,
//! call/eval of Lua functions on fresh fibers and their handles, and Rust
//! functions Lua calls that may block their fiber.
//!
//! - [`builder`]: the settings that set up a cord's Lua state
//!   ([`RuntimeBuilder`]);
//! - [`script`]: the script runner (`run_main`, `run_chunk`);
//! - `handlers`, [`handle`] and [`call`]: CALL and EVAL, as Tarantool
//!   serves them;
//! - [`value`]: what Rust sees of Lua values ([`Value`]);
//! - [`rust_fn`]: Rust functions Lua calls ([`LuaRuntime::register_fn`]);
//! - [`interrupt`]: Ctrl-C for running Lua code (a console's);
//! - [`cords`]: Lua on several cords ([`LuaCords`]), and the thread groups
//!   of `experimental.threads`.

mod builder;
mod call;
mod context;
mod cords;
mod handle;
pub mod host;
pub mod interrupt;
pub(crate) mod rust_fn;
mod script;
mod value;

use std::fmt;
use std::mem::ManuallyDrop;

use luafiber_fiber as fiber;
use luafiber_runtime::FiberError;
use mlua::Lua;

pub use builder::RuntimeBuilder;
pub use cords::{CallError, CallErrorKind, CordCall, CordsBuilder, LuaCords};
#[cfg(luafiber_bench)]
pub use handle::Handlers;
pub use handle::{CallHandle, LuaHandle};
pub use rust_fn::FnError;
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
    /// A script's chunk raised an error (the message and traceback), or no
    /// fiber could be made for a call (the reason).
    Runtime(String),
    /// A call's fiber failed ([`LuaRuntime::call`], [`LuaRuntime::eval`],
    /// [`LuaRuntime::load_module`]): its id and why (a Lua error with the
    /// message and traceback, or a cancel).
    Fiber(FiberError),
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
            Error::Fiber(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Lua(e) => Some(e),
            Error::Fiber(e) => Some(e),
            _ => None,
        }
    }
}

impl From<FiberError> for Error {
    fn from(e: FiberError) -> Error {
        Error::Fiber(e)
    }
}

/// A cord's Lua runtime: the Lua state, its modules and the scheduler of the
/// calling thread. Not `Send`: fibers never leave their thread.
///
/// # Drop
///
/// Dropping the runtime ends its Lua fibers before it closes the Lua state
/// (docs/design.md's shutdown rule): every one is cancelled, the fibers run
/// until none of them is ready (Rust fibers run too, as in any run; inside
/// a fiber, the dropping fiber yields instead), in at most 100 rounds of
/// cancel-and-run (a fiber that catches its cancel and yields again gets
/// one turn a round), and those still blocked where a cancel does not end
/// the wait (a join, a Rust function that blocks again) or still running
/// after the rounds are abandoned: never resumed, their stacks leaked,
/// since unwinding them would cross Lua frames. The abandoned fibers (id,
/// name, running or blocked) are reported as one `tracing` warning. A
/// cancelled fiber's error is not reported, and the script's main fiber
/// ends without ending the process.
/// Rust fibers stay; a [`LuaHandle`] call they make later fails with
/// [`Error::NoRuntime`].
///
/// Dropped inside one of its own Lua fibers (or a fiber one of them
/// called), the runtime cannot end them: its state then stays with the
/// thread, as if it had not been dropped (its fibers run on, cancelled;
/// [`LuaHandle`]s keep working; the thread can make no other runtime).
pub struct LuaRuntime {
    /// Closed by the drop, unless a Lua fiber still runs (see "Drop").
    lua: ManuallyDrop<Lua>,
    /// The cord context, dropped after the state closed (context rule 3),
    /// or left installed with it.
    cx: ManuallyDrop<context::Owned>,
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

    /// A handle on the stack of the state mlua runs on (the main thread,
    /// idle while Rust code runs), for Rust code outside any frame
    /// ([`Stack::outside`](crate::raw::Stack::outside)).
    pub(crate) fn main_stack(&self) -> crate::raw::Outside<'_> {
        // SAFETY: no Lua code runs on it while this Rust code does, and
        // whatever else uses its stack meanwhile (mlua) leaves it as it was;
        // the handle is a local of the caller, dropped where it was made.
        unsafe { crate::raw::Stack::outside(self.lua.state()) }
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
        crate::slice::watchdog::disarm();
        // From here Rust code works on the state outside any protected
        // call: its allocations must not fail (raw rule 3).
        let _exempt = crate::raw::memory::Exempt::enter();
        let Some(abandoned) = crate::fiber::shutdown::end_lua_fibers() else {
            // A Lua fiber is on the thread's stack: the state, kept by the
            // cord as well, must outlive it.
            return;
        };
        if !abandoned.is_empty() {
            let list: Vec<String> = abandoned.iter().map(ToString::to_string).collect();
            tracing::warn!(
                abandoned = abandoned.len(),
                "the Lua runtime was dropped with fibers that its cancel did not end, \
                 abandoned (never run again): {}",
                list.join("; ")
            );
        }
        crate::fiber::guard::uninstall();
        crate::luajit::uninstall();
        rust_fn::clear();
        drop(crate::cord::uninstall());
        // SAFETY: the main state, idle; its close (the collection, the
        // finalizers) must not fail half-way on the limit.
        unsafe { crate::raw::memory::lift(self.lua.state()) };
        // SAFETY: `lua` is not used after this; no Lua fiber is left
        // (every one ended or was abandoned), so nothing runs on the state
        // after it closes. Its finalizers run with the context installed.
        unsafe { ManuallyDrop::drop(&mut self.lua) };
        // SAFETY: not used after this; the state has closed (context rule
        // 3). Every part of the cord's state goes with it.
        unsafe { ManuallyDrop::drop(&mut self.cx) };
    }
}
