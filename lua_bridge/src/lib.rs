//! Lua on luafiber fibers: each fiber runs Lua on its own Lua thread and its
//! own machine stack, so Lua code may yield anywhere (inside `pcall`,
//! metamethods, `table.sort` comparators, `string.gsub` callbacks).
//!
//! [`LuaRuntime`] owns the cord's Lua state (one per OS thread), sets up the
//! registry refs every hot path uses, and installs Tarantool's Lua modules:
//! `fiber`, `clock`, `buffer` and `msgpack`. [`LuaRuntime::run_main`] is
//! what the `luafiber` binary runs.
//!
//! ```
//! let rt = luafiber_lua::LuaRuntime::new().unwrap();
//! rt.run_chunk(r#"
//!     local fiber = require('fiber')
//!     local f = fiber.new(function(x) fiber.sleep(0.001); return x * 2 end, 21)
//!     f:set_joinable(true)
//!     local ok, v = f:join()
//!     assert(ok and v == 42)
//! "#, "example").unwrap();
//! ```
//!
//! # Embedding
//!
//! A Rust host uses [`host`] (re-exported at the top of the `luafiber`
//! crate): one `Builder`, `Runtime`, `Handle` and `Error` for one cord or
//! many, typed calls, futures. What follows is the single-thread layer it
//! is built on.
//!
//! A Rust program calls Lua the way Tarantool serves iproto CALL and EVAL:
//! [`LuaRuntime::call`] runs a global function (by dotted name) and
//! [`LuaRuntime::eval`] a chunk, each on a fresh fiber, and returns the
//! results as [`Value`]s; their handler C functions are made once and
//! fetched by registry ref for every call. [`LuaRuntime::spawn_call`] and
//! [`LuaRuntime::spawn_lua`] start such a fiber without waiting
//! ([`CallHandle::join`] gives the results). [`LuaRuntime::load_module`]
//! loads a module the calls can name.
//!
//! Rust functions that Lua calls and that may block their fiber (sleep,
//! wait on a channel) are registered with [`LuaRuntime::register_fn`], not
//! as mlua callbacks (an mlua callback must not switch fibers):
//!
//! ```
//! use std::time::Duration;
//! use luafiber_lua::{LuaRuntime, Value};
//!
//! let rt = LuaRuntime::new().unwrap();
//! rt.register_fn("wait_ms", |args| {
//!     let ms = args.first().and_then(Value::as_i64).ok_or("expected milliseconds")?;
//!     // Blocks only the calling Lua fiber.
//!     luafiber_fiber::sleep(Duration::from_millis(ms as u64))?;
//!     Ok(vec![Value::from(ms)])
//! }).unwrap();
//! rt.load_module("svc", r#"
//!     local log = {}
//!     return { log = log, handle = function(id)
//!         table.insert(log, 'start')
//!         local ms = wait_ms(20)
//!         table.insert(log, 'end')
//!         return id, ms
//!     end }
//! "#).unwrap();
//!
//! // One call: runs the scheduler until its fiber ends.
//! assert_eq!(rt.call("svc.handle", vec![7.into()]).unwrap(),
//!            [Value::Integer(7), Value::Integer(20)]);
//!
//! // 100 calls at once: they wait together, all started before any ended.
//! let calls: Vec<_> = (0..100).map(|i| rt.spawn_call("svc.handle", vec![i.into()]).unwrap()).collect();
//! rt.run();
//! for (i, c) in calls.into_iter().enumerate() {
//!     assert_eq!(c.join().unwrap()[0], Value::Integer(i as i64));
//! }
//! let log: Vec<String> = rt.lua().load("return svc.log").eval().unwrap();
//! assert!(log[2..102].iter().all(|e| e == "start"), "{log:?}");
//!
//! // Errors carry the fiber id, the Lua message and traceback.
//! let err = rt.eval("error('no such user')", vec![]).unwrap_err();
//! assert!(err.to_string().contains("no such user"));
//! ```
//!
//! Inside a Rust fiber, or inside a registered function, [`LuaHandle`]
//! makes the same calls; they block only the calling fiber.
//!
//! # Layers
//!
//! Each folder builds only on those listed before it:
//!
//! - `raw/`: the raw Lua C API and nothing of the bridge: the C function
//!   frame and its `Stack` handle, error objects, the memory
//!   limit;
//! - `luajit/`: LuaJIT's object layout, read in place by the fast paths;
//! - `cord/`: the cord's Lua state, its per-fiber data, the Lua thread pool;
//! - `fiber/`: Lua fibers' life: spawn, entry, join, error reports, the
//!   guard on every switch;
//! - `slice/`: fiber slices and their watchdog (the cord keeps each
//!   fiber's own max slice);
//! - `modules/`: the Lua modules (`fiber`, `clock`, `buffer`, `msgpack`,
//!   `json`, `log`; `serializer` is what `msgpack` and `json` share);
//! - `embed/`: the Rust API: [`host`] (the embedding surface), [`LuaRuntime`],
//!   scripts, call/eval, handles, [`LuaRuntime::register_fn`];
//! - [`capi`]: Tarantool's C module API (`module.h`) for the C modules
//!   `require` loads, over the cord, the fibers and the modules' clocks.

pub mod capi;
mod cord;
mod embed;
mod fiber;
mod luajit;
mod modules;
mod raw;
mod slice;

#[cfg(luafiber_bench)]
pub use cord::NewThread;
pub use cord::ThreadPoolConfig;
pub use embed::host;
pub use embed::interrupt;
#[cfg(luafiber_bench)]
pub use embed::Handlers;
pub use embed::{
    CallError, CallErrorKind, CallHandle, CordCall, CordsBuilder, Error, FnError, LuaCords,
    LuaHandle, LuaRuntime, RuntimeBuilder, Value,
};
pub use mlua;
/// The `log` module's Rust side: where lines go ([`log::sink`]), their
/// format ([`log::line`]) and the `tracing` layer that writes them
/// ([`log::TarantoolLayer`]).
pub use modules::log;

/// Whether the vendored Lua engine was built with
/// `-fstack-clash-protection`, as far as the build can tell (the C flags
/// the `cc` crate read in this crate's build, the same as the engine's).
///
/// With it, a C frame larger than a page (LuaJIT's `gsub` keeps 8.8 KiB)
/// probes each page it spans, so a fiber overflow always lands in the
/// stack guard; without it, a frame larger than the 64 KiB guard could jump
/// over it into another mapping. This repository's `.cargo/config.toml`
/// sets it; a program that depends on luafiber gets it only from its own
/// configuration (`CFLAGS = "-fstack-clash-protection"` under `[env]` in
/// its `.cargo/config.toml`, or in the environment of `cargo build`).
/// [`RuntimeBuilder::build`] logs a `tracing` warning once when it is off.
pub const STACK_CLASH_PROTECTION: bool = {
    let v = env!("LUAFIBER_STACK_CLASH_PROTECTION").as_bytes();
    v.len() == 1 && v[0] == b'1'
};
