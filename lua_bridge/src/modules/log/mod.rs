//! The Lua `log` module: Tarantool's `log` (`src/lua/log.lua`, lines as
//! `src/lib/core/say.c` writes them).
//!
//! - `log.error/warn/info/verbose/debug(fmt, ...)`: a line at that level;
//!   with arguments `fmt` is a `string.format` format (a table argument
//!   without `__tostring` is JSON-encoded first); a lone table is logged as
//!   JSON (in the JSON format its fields become the line's).
//! - `log.cfg{log=, level=, format='plain'|'json', nonblock=, modules=}`,
//!   `log.cfg.NAME`; `log.level(l)`, `log.log_format(f)`, `log.new(name)`
//!   (a logger whose lines name the module), `log.pid()`, `log.rotate()`.
//!
//! Each line goes through `tracing` (target `lua::log`, at `ERROR` for fatal,
//! syserror, error and crit, `WARN`, `INFO`, `DEBUG` for verbose and debug:
//! never `TRACE`, so a subscriber that takes every Lua line need not
//! enable `TRACE`, which the scheduler tests on its hot paths), with
//! fields `tarantool_level`, `fiber_id`, `fiber_name`,
//! `module`, `file`, `line`, `json` and the message, so a Rust program that
//! embeds luafiber sees Lua's lines in its own subscriber.
//! [`TarantoolLayer`] writes events as Tarantool's lines (the `luafiber`
//! binary installs it); with no subscriber at all, the lines are written
//! straight to the destination, as Tarantool would.
//!
//! Differences from Tarantool:
//!
//! - Lines have the full format from the start (Tarantool writes only the
//!   message until `box.cfg` or `log.cfg` is called).
//! - No pipe or syslog logger (`log = '|cmd'`, `'syslog:...'` raise), no
//!   `nonblock`; the level that `log.cfg` sets gates Lua's lines before
//!   `tracing`, whose own filter (`LUAFIBER_LOG` in the binary) comes
//!   after ([`TarantoolLayer`] also drops the runtime's own lines above
//!   that level). `LUAFIBER_LOG` set to one level name (Tarantool's or tracing's)
//!   is also the initial `log.cfg.level`.
//! - Errors are error objects (`tostring(err)` is Tarantool's message).

mod layer;
pub mod line;
pub mod sink;

use std::ffi::c_int;

pub use layer::TarantoolLayer;
use mlua::ffi;
use tracing::Level;

use crate::modules::errno;
use crate::raw::{lua_fn, Raise, Reg, Stack};

/// The `tracing` target of Lua's log lines. Not `lua`: `EnvFilter`
/// matches targets by prefix, and `lua` is one of every `luafiber_*`
/// module's.
pub const TARGET: &str = "lua::log";

/// The Lua half of the module.
const LOG_LUA: &str = include_str!("log.lua");

/// Tarantool's level of a level name (Tarantool's or `tracing`'s).
fn level_by_name(name: &str) -> Option<u8> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "fatal" => 0,
        "syserror" => 1,
        "error" => 2,
        "crit" => 3,
        "warn" => 4,
        "info" => 5,
        "verbose" => 6,
        "debug" | "trace" => 7,
        _ => return None,
    })
}

/// Emits one Lua log line: through `tracing`, or straight to the
/// destination when no subscriber is installed.
pub fn emit(level: u8, module: Option<&str>, file: &str, line: u32, msg: &str, json: bool) {
    let current = luafiber_fiber::with_running(|id, name| (id, name.to_vec()));
    let fiber_id = current.as_ref().map_or(0, |c| c.0);
    let name: &[u8] = current.as_ref().map_or(&[], |c| &c.1);
    let unset = tracing::dispatcher::get_default(|d| d.is::<tracing::subscriber::NoSubscriber>());
    if unset {
        let thread = std::thread::current();
        let rec = line::Record {
            level,
            cord: thread.name().unwrap_or("main"),
            fiber: current.as_ref().map(|_| (fiber_id, name)),
            module,
            file: Some((file, line)),
            message: msg.as_bytes(),
            json_message: json,
        };
        sink::write(&line::format_line(&rec, sink::format()));
        return;
    }
    let module = module.unwrap_or("");
    // A field is text: bytes that are not UTF-8 as `\xNN`.
    let name = luafiber_fiber::DisplayName(name).to_string();
    macro_rules! event {
        ($lvl:expr) => {
            tracing::event!(
                target: "lua::log",
                $lvl,
                tarantool_level = u64::from(level),
                fiber_id,
                fiber_name = name.as_str(),
                module,
                file,
                line = u64::from(line),
                json,
                "{}",
                msg
            )
        };
    }
    match level {
        0..=3 => event!(Level::ERROR),
        4 => event!(Level::WARN),
        5 => event!(Level::INFO),
        _ => event!(Level::DEBUG),
    }
}

/// An optional string argument.
fn opt_str(s: &Stack, idx: c_int) -> Option<String> {
    s.to_str(idx)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

lua_fn! {
    /// `C.say(level, module, file, line, message, kind)`.
    fn log_say(s: &mut Stack) {
        let level = s.to_integer(1).unwrap_or(5).clamp(0, 7) as u8;
        let module = opt_str(s, 2);
        let file = opt_str(s, 3).unwrap_or_else(|| "eval".into());
        let line = s.to_integer(4).unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32;
        let msg = s.to_str(5).map(String::from_utf8_lossy).unwrap_or_default();
        let json = s.to_str(6) == Some(b"json");
        emit(level, module.as_deref(), &file, line, &msg, json);
        Ok(0)
    }
}

lua_fn! {
    /// `C.check(log, format, nonblock)`: nil, or what is wrong.
    fn log_check(s: &mut Stack) {
        let log = opt_str(s, 1);
        let format = opt_str(s, 2).unwrap_or_else(|| "plain".into());
        let nonblock = (s.type_of(3) == ffi::LUA_TBOOLEAN).then(|| s.to_bool(3));
        match sink::check(log.as_deref(), &format, nonblock) {
            Some(e) => s.push_str(&e),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `C.apply(log, format)`: makes them the destination and format.
    fn log_apply(s: &mut Stack) {
        let log = opt_str(s, 1);
        let format = opt_str(s, 2).unwrap_or_else(|| "plain".into());
        sink::apply(log.as_deref(), &format).map_err(Raise::illegal)?;
        Ok(0)
    }
}

lua_fn! {
    /// `log.rotate()`: reopens the log file.
    fn log_rotate(s: &mut Stack) {
        let _ = s;
        if sink::rotate().map_err(|e| Raise::illegal(format!("log.rotate: {}", errno::io_text(&e))))? {
            emit(5, None, "log", 0, "log file has been reopened", false);
        }
        Ok(0)
    }
}

lua_fn! {
    /// `log.pid()`: the process id.
    fn log_pid(s: &mut Stack) {
        s.push_int(i64::from(std::process::id()));
        Ok(1)
    }
}

lua_fn! {
    /// `C.set_level(n)`: the level `log.cfg` set (a number, 0-7), which
    /// gates the lines of luafiber's own Rust code too ([`sink::set_level`]).
    fn log_set_level(s: &mut Stack) {
        let level = s.to_integer(1).unwrap_or(5).clamp(0, 7) as u8;
        sink::set_level(level);
        Ok(0)
    }
}

lua_fn! {
    /// `C.is_error(v)`: whether `v` is an error object (a `box.error`:
    /// master's are cdata, which `log` writes with `tostring`).
    fn log_is_error(s: &mut Stack) {
        let yes = crate::raw::error::is_error(s, 1);
        s.push_bool(yes);
        Ok(1)
    }
}

lua_fn! {
    /// `C.raise(message)`: raises an `IllegalParams` error object.
    fn log_raise(s: &mut Stack) {
        let msg = opt_str(s, 1).unwrap_or_default();
        Err(Raise::illegal(msg))
    }
}

/// Pushes the `log` module table.
///
/// By its `package.preload` loader (this runs Lua code under `lua_pcall`;
/// the chunk requires `json`).
pub(crate) fn open(s: &mut Stack) {
    const FUNCS: &[Reg] = &[
        (c"say", log_say),
        (c"check", log_check),
        (c"apply", log_apply),
        (c"rotate", log_rotate),
        (c"pid", log_pid),
        (c"raise", log_raise),
        (c"is_error", log_is_error),
        (c"set_level", log_set_level),
    ];
    let top = s.top();
    // The chunk runs under lua_pcall and leaves one value (the module, or
    // a table in its place).
    let ok = s.load(LOG_LUA, c"=log").is_ok() && {
        let t = s.new_table(0, FUNCS.len() as c_int + 1);
        s.set_funcs(t, FUNCS);
        let initial = std::env::var("LUAFIBER_LOG")
            .ok()
            .and_then(|v| level_by_name(&v));
        if let Some(level) = initial {
            s.push_int(i64::from(level));
            s.set_field(t, c"initial_level");
        }
        s.pcall(1, 1).is_ok()
    };
    if !ok {
        eprintln!("luafiber: the log module: {}", s.describe(-1));
        s.settop(top);
        s.new_table(0, 0);
    }
}
