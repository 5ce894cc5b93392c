//! The embedding surface for Rust hosts: one [`Builder`], one [`Runtime`],
//! one [`Handle`] and one [`Error`], for one cord or many, with Lua or
//! without (re-exported at the top of the `luafiber` crate).
//!
//! ```
//! # use luafiber_lua::host as luafiber;
//! use luafiber::{Builder, ErrorKind};
//!
//! let rt = Builder::new()
//!     .cords(2)
//!     .load_module("app", "return { add = function(a, b) return a + b end }")
//!     .build()
//!     .unwrap();
//! let h = rt.handle(); // Clone + Send + Sync
//! let sum: i64 = h.call("app.add", (1, 2)).unwrap();
//! assert_eq!(sum, 3);
//! let err = h.call::<i64>("app.add", (1, "x")).unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Lua);
//! ```
//!
//! How values cross: a tuple is the arguments (`()` none), any other
//! `serde::Serialize` value one argument; results are a tuple, `()`, or
//! any other `DeserializeOwned` type (the first value). They travel as
//! MessagePack (`rmp-serde` on the Rust side: the `serde` ecosystem's
//! MessagePack format, maintained with `rmp`, which the `msgpack` module
//! uses; the `msgpack` module's decoder on the cord), so Lua values map as
//! Tarantool's `msgpack` maps them: nil and `box.NULL`, integers to 64
//! bits, binary strings (`serde_bytes`), arrays, maps (structs as maps).
//! The table: `docs/embedding.md`, "Values".
//!
//! - `builder.rs`: the settings and the init steps of each cord;
//! - `runtime.rs`: the cords, owned; registering functions after the start;
//! - `handle.rs`: typed calls, blocking or as futures ([`Call`]);
//! - `local.rs`: calls on a cord of the polling thread ([`LocalCall`]);
//! - `direct.rs`: a local CALL's direct path: the fiber runs the function
//!   itself, its answer straight to the future when it ends at once;
//! - `wait.rs`: a direct call that went on waiting: its entry in the cord's
//!   table, its results held on its fiber's stack for the future's read;
//! - `cord_lua.rs`: a cord's Lua state while it starts, typed Rust
//!   functions Lua calls, sync or async;
//! - `args.rs`: typed values to and from MessagePack arrays;
//! - `lua_serde.rs`: typed values straight onto and off a Lua stack, as
//!   the MessagePack path maps them (a local CALL's arguments and results);
//! - `error.rs`: [`Error`] and [`ErrorKind`], and how the older error types
//!   map to them;
//! - `text.rs`: the message of a table raised without `__tostring`.
//!
//! It is built on the machinery of [`LuaCords`](crate::LuaCords) (the
//! cords, the serve function, the reply slots) and
//! [`block_on_future`](luafiber_runtime::block_on_future) (a Lua fiber that
//! awaits a Rust future).

mod args;
mod builder;
mod cord_lua;
pub(crate) mod direct;
mod error;
mod handle;
mod local;
mod lua_serde;
mod runtime;
mod text;
pub(crate) mod wait;

pub use builder::Builder;
pub use cord_lua::CordLua;
pub use error::{Error, ErrorKind};
pub use handle::{Call, Handle};
pub use local::{drive_local, LocalCall};
pub use runtime::Runtime;
