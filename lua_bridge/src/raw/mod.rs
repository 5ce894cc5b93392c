//! The bottom layer of the bridge: the raw Lua C API (`mlua::ffi`) and
//! nothing of the bridge above it. Every other folder builds on this one;
//! this one imports only itself.
//!
//! - [`frame`]: the frame every Lua-callable C function body runs in
//!   ([`lua_fn!`](crate::raw::lua_fn)), [`Raise`] and [`LResult`];
//! - [`stack`]: [`Stack`], the safe handle on a C function's stack that
//!   the frame makes;
//! - [`error`]: Tarantool-style error objects, with their own metatable;
//! - [`heap`]: the pool of small blocks in front of the Lua heap's
//!   allocator;
//! - [`memory`]: the Lua memory limit (the bridge's allocator);
//! - [`report`]: what Lua reports but cannot raise (errors in `__gc`,
//!   Lua 5.4's warnings), written to stderr;
//! - [`args`]: arguments the modules read alike (timeouts);
//! - [`udata`]: [`Kind`], userdata holding a Rust value, checked by its
//!   metatable;
//! - [`context`]: the cord context, where every layer keeps its per-cord
//!   state ([`context::Part`]), reached through one thread-local pointer;
//! - [`api`]: small `unsafe` helpers over `mlua::ffi` for code that runs
//!   outside a frame (setup on the main state, raw C functions that let Lua
//!   errors through).
//!
//! # Rules
//!
//! The unsafe code of the whole bridge cites these as "raw rule N" (rules 1
//! and 2 are the project's hard rules on Lua errors and Rust panics; each
//! was seen to crash when broken):
//!
//! 1. No Rust panic crosses a Lua frame: a C function body runs under
//!    `catch_unwind`, and a panic becomes a Lua error ([`frame`]).
//! 2. No Lua error crosses a Rust frame that owns something: a body returns
//!    [`Raise`] instead of raising, and the frame calls `lua_error` only
//!    after the body and everything it owned are dropped. So a body calls
//!    only C API functions that cannot raise: raw gets and sets (no
//!    metamethod runs), pushes, `lua_pcall`. ([`Stack`] offers only those.)
//! 3. Inside a body an allocation never fails on the memory limit
//!    ([`memory`]): a Lua "not enough memory" error raised there would cross
//!    the body's Rust frames (raw rule 2). Nor does one made by Rust code
//!    outside any body and any protected call ([`Stack::outside`]), where
//!    no `lua_pcall` would catch the error, nor one a fiber's own code
//!    makes around its Lua call (`fiber::entry`, its message handler). Lua
//!    code that Rust code calls runs under the limit again
//!    ([`memory::with_limit`]).
//! 4. A C function starts with `LUA_MINSTACK` (20) free stack slots; more
//!    need `lua_checkstack` first. [`Stack`] counts the slots it may use.
//! 5. An index is valid when it is `1..=top` (positive indices past the top
//!    read as none), `-top..=-1`, or a pseudo-index (the registry, an
//!    upvalue of the running C closure). [`Stack`] checks every index it
//!    is given.
//! 6. A value stays alive (and a string's bytes stay put) while it is on
//!    the stack, or reachable from the registry; a pointer into one is
//!    valid no longer than that.

pub mod api;
pub mod args;
pub mod context;
pub mod error;
pub mod frame;
pub mod heap;
pub mod memory;
pub mod report;
pub mod stack;
pub mod udata;

pub(crate) use frame::{lua_fn, wide_cfn};
pub use frame::{LResult, Raise};
pub use stack::{Outside, Stack};
pub use udata::Kind;

/// `lua_gc` option `LUA_GCISRUNNING` of LuaJIT's `lua.h` (not in mlua's
/// bindings).
#[cfg(feature = "luajit")]
pub const LUA_GCISRUNNING: std::ffi::c_int = 9;

/// A module table's entry: a name and its C function.
pub type Reg = (&'static std::ffi::CStr, mlua::ffi::lua_CFunction);
