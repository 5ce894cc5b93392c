//! LuaJIT's internals: the object layout the bridge reads in place, and the
//! fast paths built on it; and the C stack check LuaJIT lacks.
//!
//! - [`obj`]: LuaJIT's tagged values and object heads (GC64);
//! - [`entry`]: the blocking C functions' entry read and written in place;
//! - [`cdata`]: scalar cdata payloads (msgpack);
//! - [`cstack`]: "C stack overflow" for calls into Lua from C with too
//!   little machine stack left (wrappers of `lua_call` and `lua_pcall`).

#[cfg(feature = "luajit")]
pub(crate) mod cdata;
#[cfg(feature = "luajit")]
pub mod cstack;
pub(crate) mod entry;
#[cfg(feature = "luajit")]
pub(crate) mod obj;
