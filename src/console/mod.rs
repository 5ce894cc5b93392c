//! The interactive console, as Tarantool's (`src/box/lua/console.lua`,
//! local mode): `luafiber` with no script on a terminal, or `-i`.
//!
//! - Each chunk runs in a fiber of its own, so `fiber.sleep` works at the
//!   prompt, and other fibers run while it does and while the user types:
//!   lines are read by `rustyline` on a thread of its own ([`reader`]) and
//!   handed to the cord through its event loop (`CordWaker`,
//!   `wait_woken`).
//! - A line is tried as `return LINE` first; a chunk that is incomplete
//!   (a syntax error at `<eof>`) is continued on the next line.
//! - Results print as Tarantool prints them: a YAML document (`---`,
//!   `- value`, `...`), errors as `- error: message` (`yaml.lua`).
//! - Ctrl-C at the prompt drops the chunk; while a chunk runs it interrupts
//!   it ([`signal`]): a hook raises "interrupted!" in running Lua code, and
//!   a chunk parked in a wait is cancelled. Ctrl-D ends the process.
//! - History in `~/.luafiber_history`.

mod reader;
mod signal;

use std::cell::Cell;
use std::sync::mpsc::TryRecvError;

use luafiber::runtime::io;
use luafiber::{interrupt, LuaRuntime, Value};
use reader::{Reply, Request};

const CONSOLE_LUA: &str = include_str!("console.lua");
const YAML_LUA: &str = include_str!("yaml.lua");

/// The names of the console's Rust functions while the chunk picks them up.
const FNS: [&str; 4] = ["read", "history", "wait", "wake"];

/// The Lua chunk that runs the console: takes the registered functions out
/// of the globals and runs `console.lua` with them and the formatter.
pub fn chunk() -> String {
    let mut code = String::from("local C = {}\n");
    for f in FNS {
        code.push_str(&format!(
            "C.{f} = __luafiber_console_{f}; __luafiber_console_{f} = nil\n"
        ));
    }
    code.push_str("C.yaml = (function(...)\n");
    code.push_str(YAML_LUA);
    code.push_str("\nend)()\nreturn (function(...)\n");
    code.push_str(CONSOLE_LUA);
    code.push_str("\nend)(C)\n");
    code
}

/// The chunk that starts the console after the main fiber (the `-e`
/// chunks and the script) is done: `-i` with a script.
pub fn after_main_chunk() -> String {
    format!(
        "local fiber = require('fiber')\nlocal main = fiber.self()\nmain:set_joinable(true)\n\
         fiber.new(function(...)\nmain:join()\nfiber.self():name('interactive')\n{}\nend)",
        chunk()
    )
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(b)) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// Registers the console's Rust functions and starts the line reader; the
/// Lua side is [`chunk`].
///
/// # Errors
///
/// When the cord's event loop or the terminal cannot be set up.
pub fn install(rt: &LuaRuntime) -> Result<(), String> {
    let waker = io::waker().map_err(|e| format!("console: {e}"))?;
    let (tx, rx) = reader::start(waker.clone()).map_err(|e| format!("console: {e}"))?;
    rt.install_interrupt();
    signal::install(waker.clone());
    let reading = Cell::new(false);
    let requests = tx.clone();
    rt.register_fn("__luafiber_console_read", move |args| {
        if !reading.replace(true) {
            requests
                .send(Request::Read(text(args.first())))
                .map_err(|_| "console: the line reader is gone".to_string())?;
        }
        loop {
            match rx.try_recv() {
                Ok(reply) => {
                    reading.set(false);
                    interrupt::take_pending();
                    return Ok(vec![match reply {
                        Reply::Line(l) => Value::String(l.into_bytes()),
                        Reply::Interrupted => Value::Boolean(false),
                        Reply::Eof => Value::Nil,
                    }]);
                }
                Err(TryRecvError::Disconnected) => return Ok(vec![Value::Nil]),
                Err(TryRecvError::Empty) => {
                    io::wait_woken(None).map_err(|e| e.to_string())?;
                }
            }
        }
    })
    .map_err(|e| e.to_string())?;
    rt.register_fn("__luafiber_console_history", move |args| {
        let _ = tx.send(Request::History(text(args.first())));
        Ok(vec![])
    })
    .map_err(|e| e.to_string())?;
    rt.register_fn("__luafiber_console_wait", |_| {
        let mut pending = interrupt::take_pending();
        if !pending {
            io::wait_woken(None).map_err(|e| e.to_string())?;
            pending = interrupt::take_pending();
        }
        let what = if pending { "interrupt" } else { "wake" };
        Ok(vec![Value::String(what.into())])
    })
    .map_err(|e| e.to_string())?;
    rt.register_fn("__luafiber_console_wake", move |_| {
        waker.wake();
        Ok(vec![])
    })
    .map_err(|e| e.to_string())?;
    Ok(())
}
