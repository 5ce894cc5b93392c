//! The report of fibers blocked forever: what the script runner prints
//! when the main fiber can never be woken (no fiber is ready, sleeping or
//! waiting on I/O), instead of ending the process as if the script had
//! finished.

use std::ffi::c_int;
use std::fmt::Write;

use luafiber_fiber::{self as fiber, FiberId, Status};
use mlua::ffi;

use crate::cord;
use crate::raw::Stack;

/// Every fiber blocked on this thread, by id: each with its id and name,
/// and for a Lua fiber the Lua traceback of where it waits (its innermost
/// call, the C function that blocked, names what it waits on: `get` of a
/// channel, `wait` of a cond, `join`, ...). `main` is marked as the main
/// fiber. `s` is the cord's main thread, idle (outside any fiber).
pub(crate) fn report(s: &mut Stack, main: FiberId) -> String {
    let mut ids = fiber::all();
    ids.sort();
    let mut out = String::from(
        "the main fiber can never be woken: no fiber is ready, sleeping or waiting on I/O; \
         blocked fibers:",
    );
    for id in ids {
        // A fiber in `io::watch` waits for a signal (the CLI's shutdown
        // watcher), not for the others.
        if fiber::status(id) != Some(Status::Suspended) || luafiber_runtime::io::is_watching(id) {
            continue;
        }
        let ext = fiber::ext(id).ok().filter(|&e| e > 0);
        // A request fiber waiting in the IPROTO server's pool waits for
        // no one.
        if ext.is_some_and(|e| {
            cord::try_with(|c| c.fibers.get(e - 1).is_some_and(|lf| lf.pooled)) == Some(true)
        }) {
            continue;
        }
        let name = fiber::name(id).unwrap_or_default();
        let name = fiber::DisplayName(&name);
        let main = if id == main { ", the main fiber" } else { "" };
        let _ = write!(out, "\n  fiber {id} ({name}){main}");
        let thread = ext
            .and_then(|e| cord::try_with(|c| c.fibers.get(e - 1).map(|lf| lf.thread_ptr())))
            .flatten();
        let Some(thread) = thread else {
            out.push_str(": a Rust fiber");
            continue;
        };
        match traceback(s, thread) {
            Some(tb) => {
                for line in tb.lines() {
                    let _ = write!(out, "\n    {line}");
                }
            }
            None => out.push_str(": (no traceback: out of memory)"),
        }
    }
    out
}

/// The Lua traceback of the suspended thread `thread` (a live fiber's),
/// or `None` when it cannot be made (out of memory).
fn traceback(s: &mut Stack, thread: *mut ffi::lua_State) -> Option<String> {
    let top = s.top();
    s.ensure(2).ok()?;
    s.push_cfunction(crate::raw::wide_cfn!(traceback_of));
    s.push_light(thread.cast());
    // luaL_traceback runs under the pcall, so its out-of-memory error is
    // caught there.
    let tb = match s.pcall(1, 1) {
        Ok(()) => s
            .to_str(-1)
            .map(|b| String::from_utf8_lossy(b).into_owned()),
        Err(()) => None,
    };
    s.settop(top);
    tb
}

/// `traceback_of(thread)`: the traceback of a suspended thread, given as a
/// light userdata. Not under `protect`: `luaL_traceback` may raise (out of
/// memory), and no Rust value is live when it does.
///
/// # Safety
///
/// Called by [`traceback`] through `lua_pcall`, with a light userdata at 1
/// that is a suspended thread of the same state, alive (a live fiber's
/// thread, anchored by its Lua data) and not running.
unsafe extern "C-unwind" fn traceback_of(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the contract above; luaL_traceback only reads the thread's
    // call stack and pushes the text on `l`.
    unsafe {
        let t = ffi::lua_touserdata(l, 1).cast::<ffi::lua_State>();
        ffi::luaL_traceback(l, t, std::ptr::null(), 0);
        1
    }
}
