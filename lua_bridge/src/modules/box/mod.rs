//! The Lua `box` table: the part of Tarantool's `box` that is not storage
//! (`src/box/lua/*.lua`, `*.c`), and the IPROTO server that `box.cfg{listen}`
//! starts.
//!
//! `box` is a global from the start, as in Tarantool, and
//! `package.loaded.box`. Its parts:
//!
//! - `box.lua`: the table and `box.internal`, where the Rust parts put the
//!   C functions the Lua face calls;
//! - the Rust parts, each installed by [`open`] into `box.internal` (or
//!   straight into `box`) before `box.lua` runs.
//!
//! See `docs/lua/box.md` for the API and the differences from Tarantool.

pub(crate) mod server;

use crate::raw::{lua_fn, Raise, Reg, Stack};

/// `box.lua`, run once per cord at setup.
const CHUNK: &str = include_str!("box.lua");

/// The C functions of `box.internal` (the Rust parts add theirs here).
const INTERNAL: &[Reg] = &[];

/// Makes the global `box` and `package.loaded.box` (at setup, under
/// `lua_pcall`).
pub(crate) fn register(s: &mut Stack) {
    let top = s.top();
    s.push_cfunction(open);
    if s.pcall(0, 1).is_err() {
        // A state that cannot make `box` (out of memory at setup) goes on
        // without it; `box` is then nil, which every use reports.
        s.settop(top);
        return;
    }
    let boxt = s.top();
    s.push_globals();
    s.push_value(boxt);
    s.set_field(-2, c"box");
    s.rawget_field(-1, c"package");
    s.rawget_field(-1, c"loaded");
    if s.type_of(-1) == mlua::ffi::LUA_TTABLE {
        s.push_value(boxt);
        s.set_field(-2, c"box");
    }
    s.settop(top);
}

lua_fn! {
    /// Makes `box`: `box.internal` with the Rust parts' C functions, then
    /// runs `box.lua` over it, which returns the table.
    fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        let internal = s.new_table(0, (INTERNAL.len() + server::INTERNAL.len()) as i32);
        s.set_funcs(internal, INTERNAL);
        s.set_funcs(internal, server::INTERNAL);
        s.load(CHUNK, c"=box").map_err(|()| Raise::Top)?;
        s.push_value(internal);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
