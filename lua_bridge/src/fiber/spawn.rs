//! Creating a Lua fiber: its thread from the cord's pool, its function and
//! arguments moved there, its fiber in the scheduler.

use std::ffi::c_int;

use luafiber_fiber::{Builder, FiberId};
use mlua::ffi;

use super::entry::{entry, main_entry, push_msgh, request_entry};
use crate::cord::{self, ErrorUse, LuaFiber};
use crate::raw::{error, LResult, Raise, Stack};

/// How a new Lua fiber starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Run at once until its first yield (`fiber.create`).
    Now,
    /// Append to the ready queue (`fiber.new`).
    Ready,
}

/// Creates a Lua fiber running the function at `func` of `s` with every
/// value above it as arguments; those values are moved to the fiber's
/// thread. `errors` says who reads the fiber's error.
///
/// # Errors
///
/// `OutOfMemory` when no Lua thread or stack can be had; `IllegalParams`
/// for too many arguments.
///
/// # Panics
///
/// Panics when `func` is not on the stack (a bug of the caller).
pub(crate) fn spawn(
    s: &mut Stack,
    func: c_int,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
) -> LResult<FiberId> {
    spawn_at(s, func, start, builder, errors).map(|(id, _)| id)
}

/// [`spawn`], also returning the fiber's index in the cord's fibers (valid
/// while the fiber lives: always, right after a `Start::Ready` spawn).
///
/// # Errors
///
/// As [`spawn`].
pub(crate) fn spawn_at(
    s: &mut Stack,
    func: c_int,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
) -> LResult<(FiberId, usize)> {
    spawn_with(s, func, start, builder, errors, entry)
}

/// Creates a script's main fiber (ready; an error ends the process): the
/// `prelude` values from `func` are chunks it runs first, in order, each with
/// no arguments; the next value is the script's function, the values above
/// it the script's arguments.
///
/// # Errors
///
/// As [`spawn`].
pub(crate) fn spawn_main(
    s: &mut Stack,
    func: c_int,
    prelude: c_int,
    builder: Builder,
) -> LResult<FiberId> {
    let body = move |idx, s: &mut Stack| main_entry(idx, prelude, s);
    spawn_with(s, func, Start::Ready, builder, ErrorUse::Exit, body).map(|(id, _)| id)
}

/// Why [`spawn_request_in`] made no fiber.
pub(crate) enum Unfilled<E> {
    /// `fill` failed with this.
    Fill(E),
    /// No Lua thread or fiber could be had (as [`spawn`]'s errors).
    Spawn(Raise),
}

/// Creates a detached Lua fiber that serves a request (the IPROTO
/// server's CALL and EVAL, a host's local call), started as `start` says
/// (`Ready`: it runs when the scheduler gets to it; `Now`: at once, until
/// its first yield or its end, when `done` has run), running the function `fill` pushes, with the values `fill` pushes
/// above it as arguments, then `done(ok, s)` on its own thread's stack,
/// `[msgh, results...]` when `ok`, else `[msgh, error]`. No traceback is
/// built for an error: `done` reads the error value itself. `fill` pushes
/// straight onto the new fiber's Lua thread (above its message handler):
/// nothing is moved there from `s` (no `lua_xmove`), which only anchors a
/// newly made thread meanwhile.
/// Returns the fiber's id and its index in the cord's fibers (valid while
/// the fiber lives).
///
/// # Errors
///
/// [`Unfilled::Fill`] with `fill`'s error (nothing is left of the fiber,
/// its thread goes back to the pool); [`Unfilled::Spawn`] as [`spawn`].
pub(crate) fn spawn_request_in<E>(
    s: &mut Stack,
    fill: impl FnOnce(&mut Stack) -> Result<(), E>,
    start: Start,
    builder: Builder,
    done: impl FnOnce(bool, &mut Stack) + 'static,
) -> Result<(FiberId, usize), Unfilled<E>> {
    let body = move |idx, s: &mut Stack| request_entry(idx, s, done);
    spawn_filled_in(s, fill, start, builder, body).map(|(id, idx, _)| (id, idx))
}

/// Creates a detached Lua fiber that serves request after request (the
/// IPROTO server's pool of request fibers, as Tarantool's tx `fiber_pool`):
/// ready, its thread laid out by `fill` for its first request as
/// [`spawn_request_in`] lays it out, then `body(idx, l)` runs on it, `idx`
/// its index in the cord's fibers, `l` its Lua thread. The body calls
/// [`request_call`] for each request, [`worker_reset`] between requests,
/// and [`worker_end`] last. Returns the fiber's id, its index and its
/// thread (valid while the fiber lives).
///
/// # Errors
///
/// As [`spawn_request_in`].
///
/// [`request_call`]: super::entry::request_call
/// [`worker_reset`]: super::entry::worker_reset
/// [`worker_end`]: super::entry::worker_end
pub(crate) fn spawn_worker_in<E>(
    s: &mut Stack,
    fill: impl FnOnce(&mut Stack) -> Result<(), E>,
    builder: Builder,
    body: impl FnOnce(usize, *mut ffi::lua_State) + 'static,
) -> Result<(FiberId, usize, *mut ffi::lua_State), Unfilled<E>> {
    spawn_worker_started(s, fill, Start::Ready, builder, body)
}

/// [`spawn_worker_in`], started as `start` says (`Now`: it runs at once,
/// until its first yield or its end: a host's local call,
/// `embed/host/direct.rs`).
///
/// # Errors
///
/// As [`spawn_request_in`].
pub(crate) fn spawn_worker_started<E>(
    s: &mut Stack,
    fill: impl FnOnce(&mut Stack) -> Result<(), E>,
    start: Start,
    builder: Builder,
    body: impl FnOnce(usize, *mut ffi::lua_State) + 'static,
) -> Result<(FiberId, usize, *mut ffi::lua_State), Unfilled<E>> {
    spawn_filled_in(s, fill, start, builder, move |idx, s: &mut Stack| {
        body(idx, s.as_ptr())
    })
}

/// [`spawn_request_in`] with the fiber's body, started as `start` says;
/// also returns its thread.
fn spawn_filled_in<E>(
    s: &mut Stack,
    fill: impl FnOnce(&mut Stack) -> Result<(), E>,
    start: Start,
    builder: Builder,
    body: impl FnOnce(usize, &mut Stack) + 'static,
) -> Result<(FiberId, usize, *mut ffi::lua_State), Unfilled<E>> {
    let (mut thread, pushed) = cord::take_thread(s).map_err(Unfilled::Spawn)?;
    let filled = {
        let t = &mut thread.stack();
        match t.ensure(2) {
            Ok(()) => {
                push_msgh(t);
                fill(t).map_err(Unfilled::Fill)
            }
            Err(_) => Err(Unfilled::Spawn(Raise::illegal("fiber: too many arguments"))),
        }
    };
    if let Err(e) = filled {
        if pushed {
            s.pop(1);
        }
        cord::recycle_thread(thread);
        return Err(e);
    }
    let l = thread.as_ptr();
    let r = launch(thread, start, builder, ErrorUse::Reply, body);
    if pushed {
        s.pop(1);
    }
    r.map(|(id, idx)| (id, idx, l)).map_err(Unfilled::Spawn)
}

/// [`spawn`] with the fiber's body: `body(idx, s)` runs on the new fiber,
/// `idx` its index in the cord's fibers, `s` the stack of its thread.
fn spawn_with(
    s: &mut Stack,
    func: c_int,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
    body: impl FnOnce(usize, &mut Stack) + 'static,
) -> LResult<(FiberId, usize)> {
    let func = s.abs(func);
    let n = s.top() - func + 1;
    let (mut thread, pushed) = cord::take_thread(s)?;
    let t = &mut thread.stack();
    if t.ensure(n + 2).is_err() {
        if pushed {
            s.pop(1);
        }
        cord::recycle_thread(thread);
        return Err(Raise::illegal("fiber: too many arguments"));
    }
    if pushed {
        // keep the new thread on `s`, below the moved values, until set up
        s.insert(func);
    }
    push_msgh(t);
    // SAFETY: `t` is another thread of the same state (taken from its pool
    // or made on it), idle, with room for `n`.
    unsafe { s.xmove_to(thread.as_ptr(), n) };
    let r = launch(thread, start, builder, errors, body);
    if pushed {
        s.pop(1);
    }
    r
}

/// Makes the fiber of `thread`, whose stack is laid out already (message
/// handler, function, arguments): its entry in the cord's fibers, its
/// fiber in the scheduler. On an error nothing is left of it.
fn launch(
    thread: cord::LuaThread,
    start: Start,
    builder: Builder,
    errors: ErrorUse,
    body: impl FnOnce(usize, &mut Stack) + 'static,
) -> LResult<(FiberId, usize)> {
    // The tag: the fiber's Lua thread, for the slice watchdog's signal
    // handler (`crate::slice`).
    let l = thread.as_ptr();
    let tag = l as usize;
    let idx = cord::with(|c| c.fibers.insert(LuaFiber::new(thread, errors)));
    let builder = builder.ext(idx + 1).tag(tag);
    let run = move || {
        // SAFETY: the fiber's own thread, laid out as fiber/mod.rs says: it
        // runs this fiber's code only, through this handle, which lives
        // while the fiber runs.
        body(idx, &mut unsafe { Stack::from_state(l) })
    };
    let spawned = match start {
        Start::Now => builder.spawn_now(run),
        Start::Ready => builder.spawn_ready(run),
    };
    spawned.map(|id| (id, idx)).map_err(|e| {
        // SAFETY: the fiber was never made, so nothing runs on its thread.
        drop(unsafe { cord::Ended::own(idx) });
        error::from_fiber(e)
    })
}
