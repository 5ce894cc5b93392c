//! The report of fibers blocked forever: what the script runner prints
//! when the main fiber can never be woken (no fiber is ready, sleeping or
//! waiting on I/O), instead of ending the process as if the script had
//! finished.

use std::ffi::c_int;
use std::fmt::Write;

use luafiber_fiber::{self as fiber, FiberId, Status};
use mlua::ffi;

use crate::cord;
use crate::raw::api;

/// Every fiber blocked on this thread, by id: each with its id and name,
/// and for a Lua fiber the Lua traceback of where it waits (its innermost
/// call, the C function that blocked, names what it waits on: `get` of a
/// channel, `wait` of a cond, `join`, ...). `main` is marked as the main
/// fiber.
///
/// # Safety
///
/// Runs outside any fiber, with the cord's main state idle.
pub(crate) unsafe fn report(main: FiberId) -> String {
    let mut ids = fiber::all();
    ids.sort();
    let mut out = String::from(
        "the main fiber can never be woken: no fiber is ready, sleeping or waiting on I/O; \
         blocked fibers:",
    );
    for id in ids {
        if fiber::status(id) != Some(Status::Suspended) {
            continue;
        }
        let name = fiber::name(id).unwrap_or_default();
        let name = fiber::DisplayName(&name);
        let main = if id == main { ", the main fiber" } else { "" };
        let _ = write!(out, "\n  fiber {id} ({name}){main}");
        let thread = fiber::ext(id)
            .ok()
            .filter(|&e| e > 0)
            .and_then(|e| cord::try_with(|c| c.fibers.get(e - 1).map(|lf| lf.thread)))
            .flatten();
        let Some(thread) = thread else {
            out.push_str(": a Rust fiber");
            continue;
        };
        // SAFETY: the main state is idle (contract) and the thread is the
        // blocked fiber's, which does not run while this does.
        match unsafe { traceback(thread.anchor) } {
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

/// The Lua traceback of the suspended thread that registry ref `anchor`
/// holds, or `None` when it cannot be made (out of memory).
///
/// # Safety
///
/// As [`report`]; the thread is suspended.
unsafe fn traceback(anchor: c_int) -> Option<String> {
    let main = cord::try_with(|c| c.main)?;
    // SAFETY: `main` is idle (contract); the pushes are balanced, and
    // luaL_traceback runs under lua_pcall, so its out-of-memory error is
    // caught there.
    unsafe {
        let top = ffi::lua_gettop(main);
        if ffi::lua_checkstack(main, 3) == 0 {
            return None;
        }
        ffi::lua_pushcfunction(main, crate::raw::wide_cfn!(traceback_of));
        api::push_registry_ref(main, anchor);
        let tb = match ffi::lua_pcall(main, 1, 1, 0) {
            0 => api::to_str(main, -1).map(|b| String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        ffi::lua_settop(main, top);
        tb
    }
}

/// `traceback_of(thread)`: the traceback of a suspended thread. Not under
/// `protect`: `luaL_traceback` may raise (out of memory), and no Rust value
/// is live when it does.
unsafe extern "C-unwind" fn traceback_of(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by `traceback` through lua_pcall with a thread at 1.
    unsafe {
        let t = ffi::lua_tothread(l, 1);
        ffi::luaL_traceback(l, t, std::ptr::null(), 0);
        1
    }
}
