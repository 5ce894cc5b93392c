//! The Lua `experimental.threads` module: Tarantool master's application
//! threads (`src/box/lua/app_threads.lua`), on cords.
//!
//! - `threads.cfg({groups = {{name = 'workers', size = 2}, ...}})` starts
//!   the groups: each thread a cord with its own scheduler, event loop and
//!   Lua state, set up as the main thread's was (a luafiber addition: in
//!   Tarantool the config's `threads.groups` or `box.cfg.app_threads` do
//!   this). The main thread is group `tx`, thread 1. Once per process, from
//!   the main thread; `luafiber --threads NAME=SIZE` calls it before the
//!   script.
//! - `threads.export(name, fn)`: a function `threads.call` can run on this
//!   thread.
//! - `threads.call(group, name, args, opts)`, `threads.eval(group, expr,
//!   args, opts)`: runs an exported function (or a Lua chunk, `...` = the
//!   arguments) on the group's threads and returns an array of per-thread
//!   results, each an array of the returned values; a thread's error is
//!   raised again (the last one, when several failed). `opts.target`:
//!   `'all'` (default) every thread of the group in id order, `'any'`
//!   whichever is free first (the group's injector: a thread busy in a long
//!   computation does not get the call), or a thread id `N`.
//!   `opts.timeout` (seconds; a luafiber addition) bounds the wait.
//! - `threads.info()`: `{thread_id = N, group_name = NAME, groups = {{name
//!   = 'tx', size = 1}, ...}}`.
//!
//! Arguments and results cross as MessagePack ([`msgpack::port`]); a
//! value that cannot (a function, a Lua thread, a userdata or pointer
//! cdata with no `__serialize`) raises "cannot be sent to another cord".
//! A call blocks only its fiber: the fiber parks and its cord's event loop
//! gets the answers through its inbox. The checks and their messages are
//! master's (`IllegalParams`; `ClientError`s `NO_SUCH_THREAD_GROUP`,
//! `NO_SUCH_THREAD`, `NO_SUCH_FUNCTION`, `FUNCTION_EXISTS` with their codes
//! and fields).
//!
//! Differences from Tarantool:
//!
//! - `threads.cfg` is the way to start groups (no `box`, no config); a
//!   `tx` call from another group's thread is refused (the main thread
//!   takes no requests); `opts.timeout` is added.
//! - `'any'` is the group's injector, not a random thread.
//! - A thread's error that is not an error object comes back as a
//!   `LuajitError` with its message; on `tx` (run in the calling fiber, as
//!   master's stub does) as a `PROC_LUA` `ClientError`.
//!
//! [`msgpack::port`]: crate::modules::msgpack::port

pub(crate) mod groups;
pub(crate) mod request;

use std::ffi::c_int;

use luafiber_runtime::FiberError;
use mlua::ffi;

use crate::fiber::check_switch;
use crate::modules::msgpack::port;
use crate::modules::serializer::{self, Config, Shape};
use crate::raw::args::opt_timeout;
use crate::raw::context::{Part, RegRef};
use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Raise, Reg, Stack};
use request::{Body, FailKind, Gather, Kind, Request};

/// The Lua half of the module.
const THREADS_LUA: &str = include_str!("threads.lua");

/// Per-cord state of the module (a part of the cord context): registry
/// ref of the function a cord runs for `threads.call` (finds the exported
/// function), made when the module opens.
#[derive(Default)]
pub(crate) struct ExportCall(RegRef);

/// The registry ref of the function a cord runs for a [`Kind::Export`]
/// request: `(name, args...)` → the exported function's results, or a
/// `NO_SUCH_FUNCTION` error.
pub(crate) fn export_call_ref() -> c_int {
    ExportCall::try_with(|e| e.0.get()).unwrap_or(ffi::LUA_NOREF)
}

lua_fn! {
    /// `C.new_error(fields)`: an error object (the modules' metatable) with
    /// the fields of `fields` (`type`, `message`, `name`, ...).
    fn th_new_error(s: &mut Stack) {
        if s.type_of(1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("new_error: a table expected"));
        }
        s.settop(1);
        s.ensure(6)?;
        error::push(s, ErrorKind::IllegalParams, "");
        // The place is where the Lua half says (or none).
        for field in [c"file", c"line"] {
            s.push_nil();
            s.set_field(2, field);
        }
        s.push_nil();
        while s.next_checked(1)? {
            s.push_value(-2);
            s.insert(-2);
            s.rawset(2)?;
        }
        Ok(1)
    }
}

lua_fn! {
    /// `C.size(name)`: the size of group `name`, or nil.
    fn th_size(s: &mut Stack) {
        let size = match s.to_str(1) {
            Some(b"tx") => Some(1),
            Some(name) => groups::find(name).map(|e| e.size),
            None => None,
        };
        match size {
            Some(n) => s.push_int(n as i64),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `C.arg_count(args)`: how many values the arguments table `args`
    /// holds, as `msgpack.encode(args)` counts them (Tarantool sends the
    /// table as one MsgPack array): the largest integer key, holes
    /// included, so `{1, nil, 3}` is 3 values (`unpack(args)` would stop
    /// at the hole). An excessively sparse table (a map for `msgpack`)
    /// raises `fname: arguments must be an array`.
    fn th_arg_count(s: &mut Stack) {
        let fname = String::from_utf8_lossy(s.to_str(2).unwrap_or_default()).into_owned();
        if s.type_of(1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal(format!("{fname}: arguments must be an array")));
        }
        s.ensure(4)?;
        match serializer::inspect(s, 1, &Config::default()) {
            Ok(Shape::Array(n)) => s.push_int(n as i64),
            _ => return Err(Raise::illegal(format!("{fname}: arguments must be an array"))),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `C.place()`: this thread's group name and id in it.
    fn th_place(s: &mut Stack) {
        let (name, id) = groups::place();
        s.push_str(&name);
        s.push_int(id as i64);
        Ok(2)
    }
}

lua_fn! {
    /// `C.groups()`: `{{name = NAME, size = N}, ...}`, the configured
    /// groups in order (`tx` not included).
    fn th_groups(s: &mut Stack) {
        let all = groups::all();
        let t = s.new_table(all.len() as c_int, 0);
        for (i, e) in all.iter().enumerate() {
            let g = s.new_table(0, 2);
            s.push_str(&e.name);
            s.set_field(g, c"name");
            s.push_int(e.size as i64);
            s.set_field(g, c"size");
            s.rawseti(t, i as i64 + 1);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `C.cfg({{name, size}, ...})`: starts the groups (checked by the Lua
    /// half); nil, or what went wrong.
    fn th_cfg(s: &mut Stack) {
        let mut specs = Vec::new();
        if s.type_of(1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("threads.cfg: a table of groups expected"));
        }
        s.settop(1);
        let mut i = 1;
        while s.rawgeti(1, i) == ffi::LUA_TTABLE {
            s.rawgeti(-1, 1);
            s.rawgeti(-2, 2);
            let name = s.to_str(-2).map(|b| String::from_utf8_lossy(b).into_owned());
            let size = s.to_integer(-1).filter(|&n| n > 0);
            s.pop(3);
            match (name, size) {
                (Some(name), Some(size)) => specs.push((name, size as usize)),
                _ => return Err(Raise::illegal("threads.cfg: a bad group")),
            }
            i += 1;
        }
        s.pop(1);
        match groups::configure(specs) {
            Ok(()) => s.push_nil(),
            Err(e) => s.push_str(&e),
        }
        Ok(1)
    }
}

/// A failed wait as the error the caller raises.
fn wait_error(e: FiberError, fname: &str) -> Raise {
    if e.is_timeout() {
        Raise::Error(ErrorKind::TimedOut, format!("{fname}: timed out"))
    } else {
        Raise::Error(ErrorKind::FiberIsCancelled, "fiber is cancelled".into())
    }
}

lua_fn! {
    /// `C.dispatch(fname, kind, group, what, target, timeout, args...)`:
    /// sends the call (`kind` `'call'`) or eval to the group's threads
    /// (`target`: 0 all, -1 any, else a thread id; checked by the Lua half)
    /// and waits (only this fiber) for every answer. Returns `true,
    /// results` (one array of returned values per thread), or `false,
    /// message, error value, kind` for the last failure.
    fn th_dispatch(s: &mut Stack) {
        let fname = match s.to_str(1) {
            Some(b"threads.call") => "threads.call",
            _ => "threads.eval",
        };
        let kind = if s.to_str(2) == Some(b"call") { Kind::Export } else { Kind::Eval };
        let entry = groups::find(s.to_str(3).unwrap_or_default())
            .ok_or_else(|| Raise::illegal(format!("{fname}: no such thread group")))?;
        let target = s.to_integer(5).unwrap_or(0);
        let timeout = opt_timeout(s, 6, &format!("{fname}: timeout must be a number greater than or equal to 0"))?;
        check_switch(s, fname)?;
        let args = port::encode_array(s, 7, fname, "argument")?;
        let body = Body::new(s.to_str(4).unwrap_or_default(), &args);
        let targets: Vec<Option<usize>> = match target {
            0 => (0..entry.size).map(Some).collect(),
            -1 => vec![None],
            n => vec![Some(n as usize - 1)],
        };
        let (gather, slots) = Gather::new(targets.len());
        for (target, reply) in targets.into_iter().zip(slots) {
            let req = Request { kind, body: body.clone(), reply, fname };
            entry.group.send(target, req);
        }
        let outcomes = gather.wait(timeout).map_err(|e| wait_error(e, fname))?;
        s.settop(0);
        s.ensure(8)?;
        if let Some(f) = outcomes.iter().rev().find_map(|o| o.as_ref().err()) {
            s.push_bool(false);
            s.push_str(&f.message);
            match &f.value {
                Some(v) => port::push_one(s, v)?,
                None => s.push_nil(),
            }
            s.push_str(match f.kind {
                FailKind::Lua => "lua",
                FailKind::Refused => "refused",
                FailKind::Dropped => "dropped",
                FailKind::Cancelled => "cancelled",
            });
            return Ok(4);
        }
        s.push_bool(true);
        let t = s.new_table(outcomes.len() as c_int, 0);
        for (i, o) in outcomes.iter().enumerate() {
            if let Ok(bytes) = o {
                port::push_one(s, bytes)?;
                s.rawseti(t, i as i64 + 1);
            }
        }
        Ok(2)
    }
}

/// Pushes the `experimental.threads` module table, and keeps the ref of the
/// function cords run for `threads.call` (at setup: this runs Lua code
/// under `lua_pcall`).
pub(crate) fn open(s: &mut Stack) {
    const FUNCS: &[Reg] = &[
        (c"new_error", th_new_error),
        (c"size", th_size),
        (c"place", th_place),
        (c"arg_count", th_arg_count),
        (c"groups", th_groups),
        (c"cfg", th_cfg),
        (c"dispatch", th_dispatch),
    ];
    let top = s.top();
    // The chunk runs under lua_pcall and leaves two values: the module and
    // the export call.
    let ok = s.load(THREADS_LUA, c"=experimental.threads").is_ok() && {
        let t = s.new_table(0, FUNCS.len() as c_int);
        s.set_funcs(t, FUNCS);
        s.pcall(1, 2).is_ok()
    };
    if !ok {
        eprintln!("luafiber: the threads module: {}", s.describe(-1));
        s.settop(top);
        s.new_table(0, 0);
        return;
    }
    ExportCall::with(|e| e.0.set(s.make_ref()));
}
