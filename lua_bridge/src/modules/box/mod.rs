//! The Lua `box` table: the part of Tarantool's `box` that is not storage
//! (`src/box/lua/*.lua`, `*.c`), and the IPROTO server that `box.cfg{listen}`
//! starts.
//!
//! `box` is a global from the start, as in Tarantool, and
//! `package.loaded.box`. Its parts:
//!
//! - `box.lua`: the table and `box.internal`, where the Rust parts put the
//!   C functions the Lua face calls;
//! - the Rust parts, each installed by `open` into `box.internal` (or
//!   straight into `box`) before `box.lua` runs;
//! - the Lua parts of box that are not the server (`PARTS`, run after
//!   `box.lua` with `box` and `box.internal`): `error.lua` (`box.error`,
//!   `box.NULL`), `misc.lua` (`box.info`, `box.once`, `box.ctl`,
//!   `box.schema`'s storage stubs, transactions), `watcher.lua`
//!   (`box.broadcast`, `box.watch`, `box.watch_once`), `iproto.lua`
//!   (`box.iproto`'s constants), `cfg_guard.lua` (last: it
//!   hides what needs `box.cfg{}` until it is called, and loads `cfg.lua`,
//!   master's `load_cfg.lua` without storage, at the first `box.cfg` call);
//! - `tarantool.lua`: `require('tarantool')` and the global `_TARANTOOL`.
//!
//! See `docs/lua/box.md` for the API and the differences from Tarantool.

mod errfields;
pub(crate) mod server;

use std::ffi::CStr;

use luafiber_iproto::errcode;

use crate::raw::{error, lua_fn, Raise, Reg, Stack};

/// `box.lua`, run once per cord at setup.
const CHUNK: &str = include_str!("box.lua");

/// The Lua parts run after `box.lua`, in order, each called with `box`
/// and `box.internal` (`cfg.lua` last: it hides the members that need
/// `box.cfg{}`, so a part added later goes before it).
const PARTS: &[(&str, &CStr)] = &[
    (include_str!("error.lua"), c"=box/error.lua"),
    (include_str!("misc.lua"), c"=box/misc.lua"),
    (include_str!("watcher.lua"), c"=box/watcher.lua"),
    (include_str!("iproto.lua"), c"=box/iproto.lua"),
    (include_str!("cfg_guard.lua"), c"=box/cfg_guard.lua"),
];

/// `cfg.lua`, compiled at the first `box.cfg` call
/// (`box.internal.load_chunk('cfg')`).
const CFG: &str = include_str!("cfg.lua");

/// `units.lua`, loaded by `cfg.lua` (`box.internal.load_chunk('units')`).
const UNITS: &str = include_str!("units.lua");

/// `require('tarantool')`'s chunk (called with `box.internal`).
const TARANTOOL: &str = include_str!("tarantool.lua");

/// The C functions of `box.internal` (the Rust parts add theirs here).
const INTERNAL: &[Reg] = &[
    (c"errcodes", box_errcodes),
    (c"errcode", box_errcode),
    (c"errfields", box_errfields),
    (c"error_mt", box_error_mt),
    (c"getpid", box_getpid),
    (c"fiber_keyed", box_fiber_keyed),
    (c"schema_version", box_schema_version),
    (c"build", box_build),
    (c"load_chunk", box_load_chunk),
];

/// Makes the global `box` and `package.loaded.box` (at setup, under
/// `lua_pcall`), then `package.loaded.tarantool` and `_TARANTOOL`.
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
    s.settop(boxt);
    // `tarantool`: loaded at setup, as `_TARANTOOL` is a global from the
    // start (the chunk sets it).
    if s.load(TARANTOOL, c"=tarantool").is_ok() {
        s.rawget_field(boxt, c"internal");
        if s.pcall(1, 1).is_ok() {
            s.push_globals();
            s.rawget_field(-1, c"package");
            s.rawget_field(-1, c"loaded");
            if s.type_of(-1) == mlua::ffi::LUA_TTABLE {
                s.push_value(-4);
                s.set_field(-2, c"tarantool");
            }
        }
    }
    s.settop(top);
}

lua_fn! {
    /// Makes `box`: `box.internal` with the Rust parts' C functions, then
    /// runs `box.lua` over it, which returns the table, then [`PARTS`].
    fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        let internal = s.new_table(0, (INTERNAL.len() + server::INTERNAL.len()) as i32);
        s.set_funcs(internal, INTERNAL);
        s.set_funcs(internal, server::INTERNAL);
        s.load(CHUNK, c"=box").map_err(|()| Raise::Top)?;
        s.push_value(internal);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        let boxt = s.top();
        for (chunk, name) in PARTS {
            s.load(chunk, name).map_err(|()| Raise::Top)?;
            s.push_value(boxt);
            s.push_value(internal);
            s.pcall(2, 0).map_err(|()| Raise::Top)?;
        }
        s.settop(boxt);
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.errcodes()`: a new table of every error code by name
    /// (`NO_SUCH_USER = 45`, ...), the fields of `box.error`.
    fn box_errcodes(s: &mut Stack) {
        s.settop(0);
        let t = s.new_table(0, errcode::ERRCODES.len() as i32);
        for (name, code, _) in errcode::ERRCODES {
            s.push_int(i64::from(*code));
            let name = std::ffi::CString::new(*name).map_err(|_| Raise::illegal("errcodes"))?;
            s.set_field(t, &name);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.errcode(code)`: the code's message format and its
    /// name (without `ER_`), or `"Unknown error"` and nil for a code
    /// Tarantool does not have (master's `errcode_record_unknown`).
    fn box_errcode(s: &mut Stack) {
        let row = s
            .to_number(1)
            .filter(|c| *c >= 0.0 && *c <= f64::from(u32::MAX))
            .and_then(|c| errcode::find(c as u32));
        match row {
            Some((name, _, fmt)) => {
                s.push_str(fmt);
                s.push_str(name);
            }
            None => {
                s.push_cstr(c"Unknown error");
                s.push_nil();
            }
        }
        Ok(2)
    }
}

lua_fn! {
    /// `box.internal.errfields(code)`: the payload field names of `code`
    /// (`errfields.rs`) as a sequence, `''` for a place that stores
    /// nothing; an empty table for a code without fields.
    fn box_errfields(s: &mut Stack) {
        let code = s.to_number(1).unwrap_or(-1.0);
        let names = errfields::ERRFIELDS
            .iter()
            .find(|(c, _)| f64::from(*c) == code)
            .map_or(&[][..], |(_, names)| *names);
        s.settop(0);
        let t = s.new_table(names.len() as i32, 0);
        for (i, name) in names.iter().enumerate() {
            s.push_str(name);
            s.rawseti(t, i as i64 + 1);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.error_mt()`: the metatable of the error objects every
    /// module raises (`raw::error`), which `box.error` gives its objects.
    fn box_error_mt(s: &mut Stack) {
        s.settop(0);
        error::push(s, error::ErrorKind::ClientError, "");
        if !s.get_metatable(-1) {
            return Err(Raise::illegal("box.internal.error_mt: no metatable"));
        }
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.getpid()`: the process id (`box.info.pid`).
    fn box_getpid(s: &mut Stack) {
        s.push_int(i64::from(std::process::id()));
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.fiber_keyed()`: says that Lua code keyed state by the
    /// running fiber's thread and id (`box.error`'s last error), so a pooled
    /// request fiber of the IPROTO server ends with its request instead of
    /// serving another that would see it (`LuaFiber::keyed`). A no-op
    /// outside a Lua fiber.
    fn box_fiber_keyed(s: &mut Stack) {
        let _ = s;
        if let Some(idx) = luafiber_fiber::current_ext().and_then(|e| e.checked_sub(1)) {
            crate::cord::with(|c| {
                if let Some(lf) = c.fibers.get_mut(idx) {
                    lf.keyed = true;
                }
            });
        }
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.schema_version()`: the schema version, constant as
    /// the server's (every IPROTO header carries it; luafiber has no
    /// schema to change). `box.info.schema_version` reads it; vshard
    /// 0.1.42 falls back to this function when that field is nil.
    fn box_schema_version(s: &mut Stack) {
        s.push_int(luafiber_iproto::SCHEMA_VERSION as i64);
        Ok(1)
    }
}

lua_fn! {
    /// `box.internal.build()`: `target` (`OS-ARCH-PROFILE`, as
    /// Tarantool's `BUILD_INFO`), luafiber's version, the engine's name.
    fn box_build(s: &mut Stack) {
        let profile = if cfg!(debug_assertions) { "Debug" } else { "Release" };
        let os = match std::env::consts::OS {
            "linux" => "Linux",
            "macos" => "Darwin",
            "freebsd" => "FreeBSD",
            other => other,
        };
        s.push_str(&format!("{os}-{}-{profile}", std::env::consts::ARCH));
        s.push_str(env!("CARGO_PKG_VERSION"));
        s.push_str(if cfg!(feature = "luajit") { "LuaJIT" } else { "Lua 5.4" });
        Ok(3)
    }
}

lua_fn! {
    /// `box.internal.load_chunk(name)`: compiles box's Lua part `name`
    /// (`'cfg'`, `'units'`), loaded on first use, and returns it as a function.
    fn box_load_chunk(s: &mut Stack) {
        let (chunk, name) = match s.to_str(1) {
            Some(b"cfg") => (CFG, c"=box/cfg.lua"),
            Some(b"units") => (UNITS, c"=box/units.lua"),
            _ => return Err(Raise::illegal("box.internal.load_chunk: no such chunk")),
        };
        s.settop(0);
        s.load(chunk, name).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
