//! Creating a Lua fiber: its thread from the cord's pool, its function and
//! arguments moved there, its fiber in the scheduler.

use std::ffi::c_int;

use luafiber_fiber::{Builder, FiberId};
use mlua::ffi;

use super::entry::{entry, main_entry, push_msgh};
use crate::cord::{self, ErrorUse, LuaFiber};
use crate::raw::{error, LResult, Raise};

/// How a new Lua fiber starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Run at once until its first yield (`fiber.create`).
    Now,
    /// Append to the ready queue (`fiber.new`).
    Ready,
}

/// Creates a Lua fiber running the function at `func` of `l` with every value
/// above it as arguments; those values are moved to the fiber's thread.
/// `errors` says who reads the fiber's error.
///
/// # Safety
///
/// `l` is a thread of the cord's state; `func` is an absolute index of a
/// function; room for 3 more values on `l`.
pub(crate) unsafe fn spawn(
    l: *mut ffi::lua_State,
    func: c_int,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
) -> LResult<FiberId> {
    // SAFETY: caller's contract.
    unsafe { spawn_with(l, func, start, builder, errors, entry) }
}

/// Creates a script's main fiber (ready; an error ends the process): the
/// `prelude` values from `func` are chunks it runs first, in order, each with
/// no arguments; the next value is the script's function, the values above
/// it the script's arguments.
///
/// # Safety
///
/// As [`spawn`]; `func + prelude` is also a valid index, of a function.
pub(crate) unsafe fn spawn_main(
    l: *mut ffi::lua_State,
    func: c_int,
    prelude: c_int,
    builder: Builder,
) -> LResult<FiberId> {
    let body = move |idx| main_entry(idx, prelude);
    // SAFETY: caller's contract.
    unsafe { spawn_with(l, func, Start::Ready, builder, ErrorUse::Exit, body) }
}

/// [`spawn`] with the fiber's body: `body(idx)` runs on the new fiber, `idx`
/// its index in the cord's fibers.
///
/// # Safety
///
/// As [`spawn`].
unsafe fn spawn_with(
    l: *mut ffi::lua_State,
    func: c_int,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
    body: impl FnOnce(usize) + 'static,
) -> LResult<FiberId> {
    // SAFETY: caller's contract; every call keeps the stacks balanced.
    unsafe {
        let n = ffi::lua_gettop(l) - func + 1;
        let (thread, pushed) = cord::take_thread(l)?;
        if ffi::lua_checkstack(thread.l, n + 2) == 0 {
            if pushed {
                ffi::lua_pop(l, 1);
            }
            cord::recycle_thread(thread);
            return Err(Raise::illegal("fiber: too many arguments"));
        }
        if pushed {
            // keep the new thread on `l`, below the moved values, until set up
            ffi::lua_insert(l, func);
        }
        push_msgh(thread.l);
        ffi::lua_xmove(l, thread.l, n);
        let idx = cord::with(|c| {
            c.fibers.insert(LuaFiber {
                thread,
                udata: ffi::LUA_NOREF,
                storage: ffi::LUA_NOREF,
                rc: None,
                traceback: None,
                errors,
            })
        });
        let builder = builder.ext(idx + 1);
        let run = move || body(idx);
        let spawned = match start {
            Start::Now => builder.spawn_now(run),
            Start::Ready => builder.spawn_ready(run),
        };
        if pushed {
            ffi::lua_pop(l, 1);
        }
        spawned.map_err(|e| {
            let lf = cord::with(|c| c.fibers.remove(idx));
            cord::recycle_thread(lf.thread);
            error::from_fiber(e)
        })
    }
}
