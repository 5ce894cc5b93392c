//! luafiber: a cooperative fiber runtime for Lua, with Tarantool's Lua API.
//!
//! Each fiber is a stackful coroutine with its own machine stack running Lua
//! on its own Lua thread, so Lua code can yield anywhere. This crate gathers
//! the layers: [`fiber`] (stacks, scheduler; no Lua), [`runtime`] (cords,
//! clocks; no Lua) and the Lua bridge ([`LuaRuntime`]).

pub use luafiber_fiber as fiber;
pub use luafiber_lua::capi;
pub use luafiber_lua::interrupt;
pub use luafiber_lua::log;
#[cfg(luafiber_bench)]
pub use luafiber_lua::NewThread;
pub use luafiber_lua::{
    mlua, CallError, CallErrorKind, CallHandle, CordCall, CordsBuilder, Error, FnError, LuaCords,
    LuaHandle, LuaRuntime, RuntimeBuilder, ThreadPoolConfig, Value, STACK_CLASH_PROTECTION,
};
pub use luafiber_runtime as runtime;
pub use luafiber_runtime::{
    current, sleep, spawn, spawn_now, task, testcancel, yield_now, Channel, Cond, FiberError,
    FiberId, GetError, JoinHandle, PutError, Runtime,
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
