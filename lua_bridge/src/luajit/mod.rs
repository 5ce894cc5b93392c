//! LuaJIT's internals: the object layout the bridge reads in place, and the
//! fast paths built on it.
//!
//! - [`obj`]: LuaJIT's tagged values and object heads (GC64);
//! - [`entry`]: the blocking C functions' entry read and written in place;
//! - [`cdata`]: scalar cdata payloads (msgpack).

#[cfg(feature = "luajit")]
pub(crate) mod cdata;
pub(crate) mod entry;
#[cfg(feature = "luajit")]
pub(crate) mod obj;
