//! luafiber: a cooperative fiber runtime for Lua, with Tarantool's Lua API,
//! embeddable in Rust programs.
//!
//! Each fiber is a stackful coroutine with its own machine stack running Lua
//! on its own Lua thread, so Lua code can yield anywhere. A Rust host makes
//! one [`Runtime`] with a [`Builder`] (one cord or several: OS threads, each
//! with its own scheduler, event loop and Lua state), and calls Lua through
//! its [`Handle`] from any thread, typed, blocking or awaited from any
//! executor; every failure is one [`Error`] with an [`ErrorKind`].
//!
//! ```
//! # fn main() -> Result<(), luafiber::Error> {
//! let rt = luafiber::Builder::new()
//!     .cords(2)
//!     .load_module("app", "return { add = function(a, b) return a + b end }")
//!     .build()?;
//! let h = rt.handle(); // Clone + Send + Sync
//! let sum: i64 = h.call("app.add", (1, 2))?;
//! assert_eq!(sum, 3);
//! # Ok(()) }
//! ```
//!
//! The layers: [`fiber`] (stacks, scheduler; no Lua), [`runtime`] (cords,
//! clocks, channels, sockets; no Lua: a program without Lua can depend on
//! `luafiber-runtime` alone) and the Lua bridge. The guide:
//! `docs/embedding.md`.

pub use luafiber_fiber as fiber;
pub use luafiber_lua::capi;
pub use luafiber_lua::host::{
    drive_local, Builder, Call, CordLua, Error, ErrorKind, Handle, LocalCall, Runtime,
};
pub use luafiber_lua::interrupt;
pub use luafiber_lua::log;
pub use luafiber_lua::mlua;
#[cfg(luafiber_bench)]
pub use luafiber_lua::NewThread;
pub use luafiber_lua::STACK_CLASH_PROTECTION;
pub use luafiber_runtime as runtime;
pub use luafiber_runtime::cord::Channel;
pub use luafiber_runtime::{sleep, spawn};

// The older surface, kept working for one release; not shown in the docs.
// `LuaRuntime` (one Lua state on the calling thread), `LuaCords` (raw
// MessagePack calls on several cords) and their errors are now
// `Builder`/`Runtime`/`Handle`/`Error`; the Lua-free single-thread runtime
// and the fiber primitives are in `luafiber::runtime`.
#[doc(hidden)]
pub use luafiber_lua::Error as LuaRuntimeError;
#[doc(hidden)]
pub use luafiber_lua::{
    CallError, CallErrorKind, CallHandle, CordCall, CordsBuilder, FnError, LuaCords, LuaHandle,
    LuaRuntime, RuntimeBuilder, ThreadPoolConfig, Value,
};
#[doc(hidden)]
pub use luafiber_runtime::Channel as FiberChannel;
#[doc(hidden)]
pub use luafiber_runtime::Runtime as LocalRuntime;
#[doc(hidden)]
pub use luafiber_runtime::{
    current, spawn_now, task, testcancel, yield_now, Cond, FiberError, FiberId, GetError,
    JoinHandle, PutError,
};

pub mod paths;

/// `luafiber --version`: the crate version and the Lua engine.
#[cfg(not(feature = "lua54"))]
pub const VERSION_STRING: &str = concat!(env!("CARGO_PKG_VERSION"), " (LuaJIT 2.1)");
/// `luafiber --version`: the crate version and the Lua engine.
#[cfg(feature = "lua54")]
pub const VERSION_STRING: &str = concat!(env!("CARGO_PKG_VERSION"), " (Lua 5.4)");

/// Flushes Rust's stdout and C's stdio buffers (Lua's `print` writes
/// through C's `stdout`).
pub fn flush_stdio() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: fflush(NULL) flushes every C stream; no preconditions.
    unsafe { libc::fflush(std::ptr::null_mut()) };
}

/// The README's Rust examples, run as doctests so that they stay complete
/// and correct.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The embedding guide's Rust examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingDoctests;
