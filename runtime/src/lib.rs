//! The cord layer of luafiber, with no Lua: clocks and per-cord buffers over
//! the fibers of [`luafiber_fiber`] (re-exported as [`fiber`]).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod clock;
pub mod ibuf;

pub use luafiber_fiber as fiber;
