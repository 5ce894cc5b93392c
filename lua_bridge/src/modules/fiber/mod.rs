//! The Lua `fiber` module: Tarantool's `src/lua/fiber.c`,
//! `fiber_channel.c` and `fiber_cond.c` over luafiber fibers.
//!
//! Every function is a raw `lua_CFunction` (`lua_fn!`), so a switch happens
//! only here, on the fiber's own stack.
//!
//! - [`object`]: fiber objects, `fiber.storage`;
//! - [`life`]: the module's functions over fibers;
//! - [`slice`](mod@slice): fiber slices (`set_max_slice`, `check_slice`, ...);
//! - [`top`]: `fiber.top()` and its accounting;
//! - [`ex`]: luafiber's own `fiber.new_ex` and `fiber.create_ex` (options
//!   first: the stack size and the name);
//! - [`channel`] and [`cond`]: `fiber.channel()` and `fiber.cond()`, whose
//!   values in flight live in [`slots`];
//! - [`wrappers`]: on LuaJIT, the hot channel and cond methods as Lua
//!   functions over FFI calls (`wrappers.lua`).

mod channel;
mod cond;
mod ex;
mod life;
mod object;
mod slice;
mod slots;
#[cfg(test)]
mod tests;
mod top;
mod wrappers;

// The module's parts of the cord context.
pub(crate) use channel::ChannelKind;
pub(crate) use cond::CondKind;
pub(crate) use object::FiberObjects;
pub(crate) use slots::ValueSlots;
pub(crate) use top::TopState;

use std::ffi::c_int;

use crate::raw::{Reg, Stack};
use life::*;

const MODULE: &[Reg] = &[
    (c"create", fiber_create),
    (c"new", fiber_new),
    (c"create_ex", ex::fiber_create_ex),
    (c"new_ex", ex::fiber_new_ex),
    (c"yield", fiber_yield),
    (c"sleep", fiber_sleep),
    (c"self", fiber_self),
    (c"id", fiber_id),
    (c"find", fiber_find),
    (c"status", fiber_status),
    (c"name", fiber_name),
    (c"cancel", fiber_cancel),
    (c"kill", fiber_cancel),
    (c"testcancel", fiber_testcancel),
    (c"wakeup", fiber_wakeup),
    (c"set_joinable", fiber_set_joinable),
    (c"join", fiber_join),
    (c"info", fiber_info),
    (c"time", fiber_time),
    (c"time64", fiber_time64),
    (c"clock", fiber_clock),
    (c"clock64", fiber_clock64),
    (c"channel", channel::channel_new),
    (c"set_max_slice", slice::fiber_set_max_slice),
    (c"set_slice", slice::fiber_set_slice),
    (c"extend_slice", slice::fiber_extend_slice),
    (c"check_slice", slice::fiber_check_slice),
    (c"top", top::fiber_top),
    (c"top_enable", top::fiber_top_enable),
    (c"top_disable", top::fiber_top_disable),
    (c"cond", cond::cond_new),
];

const METHODS: &[Reg] = &[
    (c"id", fiber_id),
    (c"name", fiber_name),
    (c"status", fiber_status),
    (c"cancel", fiber_cancel),
    (c"kill", fiber_cancel),
    (c"testcancel", fiber_testcancel),
    (c"wakeup", fiber_wakeup),
    (c"set_joinable", fiber_set_joinable),
    (c"join", fiber_join),
    (c"info", fiber_info),
    (c"csw", fiber_csw),
    (c"set_max_slice", slice::fiber_set_max_slice),
];

/// Makes the metatables of fiber objects, channels and conds.
pub(crate) fn init(s: &mut Stack) {
    object::init_metatable(s, METHODS);
    slots::init(s);
    let (ch, cd) = (channel::init(s), cond::init(s));
    wrappers::init(s, ch, cd);
}

/// Pushes the `fiber` module table.
pub(crate) fn open(s: &mut Stack) {
    let t = s.new_table(0, MODULE.len() as c_int);
    s.set_funcs(t, MODULE);
    crate::modules::clock::ffi_loop_clocks(s);
    let mt = s.new_table(0, 1);
    s.push_cfunction(object::module_index);
    s.set_field(mt, c"__index");
    s.set_metatable(t);
}
