//! Lua fibers: creation on a pooled or new Lua thread, the fiber entry, the
//! message handler, join, and the guard every switch from Lua goes through.
//!
//! A Lua fiber's thread stack while it runs: `[msgh, fn, args...]`; after its
//! function returns: `[msgh, results...]` or `[msgh, error]`, kept there for
//! `join` when the fiber is joinable. A script's main fiber may start with
//! chunks to run first (the binary's `-e`): `[msgh, chunk1.., fn, args...]`.

use std::ffi::c_int;
use std::io::Write;

use luafiber_fiber::{self as fiber, Builder, FiberId};
use mlua::ffi;

use crate::cfunc::{LResult, Raise};
use crate::cord::{self, LuaFiber};
use crate::error::{self, ErrorKind};
use crate::lua;

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
    exit_on_error: bool,
) -> LResult<FiberId> {
    // SAFETY: caller's contract.
    unsafe { spawn_with(l, func, start, builder, exit_on_error, entry) }
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
    unsafe { spawn_with(l, func, Start::Ready, builder, true, body) }
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
    exit_on_error: bool,
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
        lua::push_registry_ref(thread.l, cord::refs().msgh);
        ffi::lua_xmove(l, thread.l, n);
        let idx = cord::with(|c| {
            c.fibers.insert(LuaFiber {
                thread,
                udata: ffi::LUA_NOREF,
                storage: ffi::LUA_NOREF,
                rc: None,
                traceback: None,
                exit_on_error,
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

/// The body of every Lua fiber, on its own stack.
fn entry(idx: usize) {
    let l = cord::with(|c| c.fibers[idx].thread.l);
    // SAFETY: `l` is this fiber's own thread, laid out as the module doc says;
    // lua_pcall catches every Lua error, so none reaches this Rust frame.
    let rc = unsafe {
        let nargs = ffi::lua_gettop(l) - 2;
        ffi::lua_pcall(l, nargs, ffi::LUA_MULTRET, 1)
    };
    let me = fiber::current().expect("a Lua fiber runs as current");
    let (storage, exit_on_error) = cord::with(|c| {
        let lf = &mut c.fibers[idx];
        lf.rc = Some(rc);
        (
            std::mem::replace(&mut lf.storage, ffi::LUA_NOREF),
            lf.exit_on_error,
        )
    });
    // SAFETY: `l` is this fiber's thread; unref does not allocate.
    unsafe { cord::unref(l, storage) };
    if rc != 0 && exit_on_error {
        exit_with_error(me, idx);
    }
    if fiber::is_joinable(me).unwrap_or(false) {
        return;
    }
    if rc != 0 && !fiber::is_cancelled(me).unwrap_or(false) {
        report_error(me, idx, "fiber error");
    }
    release(idx);
}

/// The body of a script's main fiber ([`spawn_main`]): runs the `prelude`
/// chunks, then goes on as [`entry`]. An error in a chunk ends the process
/// as one in the script does.
fn main_entry(idx: usize, prelude: c_int) {
    let l = cord::with(|c| c.fibers[idx].thread.l);
    for _ in 0..prelude {
        // SAFETY: `l` is this fiber's own thread, `[msgh, chunk, ...]`; the
        // chunk moves to the top and is called with no arguments and no
        // results; lua_pcall catches every Lua error.
        let rc = unsafe {
            ffi::lua_pushvalue(l, 2);
            ffi::lua_remove(l, 2);
            ffi::lua_pcall(l, 0, 0, 1)
        };
        if rc != 0 {
            let me = fiber::current().expect("a Lua fiber runs as current");
            exit_with_error(me, idx);
        }
    }
    if prelude > 0 {
        // Tarantool sleeps 0 between the `-e` chunks and the script, so
        // fibers those chunks made ready run first. Not a cancellation
        // point: a cancel is seen by the script.
        let _ = fiber::yield_now();
    }
    entry(idx);
}

/// Reports the error on top of a main fiber's thread and ends the process
/// with status 1.
fn exit_with_error(me: FiberId, idx: usize) -> ! {
    report_error(me, idx, "error");
    let _ = std::io::stdout().flush();
    // SAFETY: flushing C stdio has no preconditions.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    std::process::exit(1);
}

/// Frees a finished Lua fiber's Lua data.
fn release(idx: usize) {
    let lf = cord::with(|c| c.fibers.remove(idx));
    // SAFETY: the fiber has ended, so nothing runs on its thread.
    unsafe {
        cord::unref(lf.thread.l, lf.udata);
        cord::recycle_thread(lf.thread);
    }
}

/// Writes a fiber's error and traceback to stderr.
fn report_error(me: FiberId, idx: usize, what: &str) {
    let (l, tb) = cord::with(|c| {
        let lf = &mut c.fibers[idx];
        (lf.thread.l, lf.traceback.take())
    });
    // SAFETY: the error value is on top of the fiber's own finished thread.
    let msg = unsafe { describe(l, -1) };
    let name = fiber::name(me).unwrap_or_default();
    let mut err = std::io::stderr().lock();
    // The traceback starts with the message.
    let text = tb.unwrap_or(msg);
    let _ = writeln!(err, "luafiber: {what} in fiber {me} ({name}): {text}");
}

/// A printable form of the value at `idx` that runs no metamethod other than
/// an error object's message.
///
/// # Safety
///
/// `l` is valid and `idx` a valid index.
pub(crate) unsafe fn describe(l: *mut ffi::lua_State, idx: c_int) -> String {
    // SAFETY: caller's contract; every value pushed is popped.
    unsafe {
        let idx = if idx < 0 {
            ffi::lua_gettop(l) + idx + 1
        } else {
            idx
        };
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut len = 0;
                let p = ffi::lua_tolstring(l, idx, &mut len);
                String::from_utf8_lossy(std::slice::from_raw_parts(p.cast(), len)).into_owned()
            }
            ffi::LUA_TTABLE => {
                ffi::lua_pushstring(l, c"message".as_ptr());
                ffi::lua_rawget(l, idx);
                let s = lua::to_str(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
                ffi::lua_pop(l, 1);
                s.unwrap_or_else(|| format!("table: {:p}", ffi::lua_topointer(l, idx)))
            }
            ffi::LUA_TNIL => "nil".into(),
            t => {
                let name = std::ffi::CStr::from_ptr(ffi::lua_typename(l, t));
                format!(
                    "{}: {:p}",
                    name.to_string_lossy(),
                    ffi::lua_topointer(l, idx)
                )
            }
        }
    }
}

/// The message handler of every fiber: records a traceback for the fiber's
/// error report and returns the error value unchanged (join gives back the
/// very value raised).
///
/// Not under `protect`: `luaL_traceback` may raise (out of memory), and that
/// must not cross `catch_unwind`; no Rust value is live when it does.
pub(crate) unsafe extern "C-unwind" fn msgh(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua as the message handler, the error at 1.
    unsafe {
        ffi::lua_settop(l, 1);
        let msg = describe(l, 1);
        let cmsg = std::ffi::CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
        drop(msg);
        ffi::luaL_traceback(l, l, cmsg.as_ptr(), 1);
        drop(cmsg);
        let tb = lua::to_str(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
        if let Some(idx) = fiber::current()
            .and_then(|me| fiber::ext(me).ok())
            .filter(|&e| e > 0)
        {
            cord::try_with(|c| {
                if let Some(lf) = c.fibers.get_mut(idx - 1) {
                    lf.traceback = tb;
                }
            });
        }
        ffi::lua_settop(l, 1);
        1
    }
}

/// Joins a fiber from Lua: pushes `true, results...` or `false, error`, and
/// returns how many values it pushed. A join that times out pushes
/// `false, TimedOut`.
///
/// # Safety
///
/// `l` is a thread of the cord's state.
pub(crate) unsafe fn join(
    l: *mut ffi::lua_State,
    id: FiberId,
    timeout: Option<std::time::Duration>,
) -> LResult {
    // SAFETY: caller's contract; the joined fiber has ended, so its thread
    // is idle and its values can be moved.
    unsafe {
        let ext = match fiber::join(id, timeout) {
            Ok(ext) => ext,
            Err(fiber::Error::TimedOut) => {
                ffi::lua_pushboolean(l, 0);
                error::push_error_object(l, ErrorKind::TimedOut, "timed out");
                return Ok(2);
            }
            Err(e) => return Err(error::from_fiber(e)),
        };
        if ext == 0 {
            ffi::lua_pushboolean(l, 1);
            return Ok(1);
        }
        let lf = cord::with(|c| c.fibers.remove(ext - 1));
        let t = lf.thread.l;
        let n = ffi::lua_gettop(t) - 1;
        // The results, the flag, and the two slots `luaL_unref` takes.
        if ffi::lua_checkstack(l, n + 3) == 0 {
            cord::unref(l, lf.udata);
            cord::recycle_thread(lf.thread);
            return Err(Raise::illegal("fiber:join(): too many results"));
        }
        ffi::lua_pushboolean(l, c_int::from(lf.rc == Some(0)));
        ffi::lua_xmove(t, l, n);
        cord::unref(l, lf.udata);
        cord::recycle_thread(lf.thread);
        Ok(n + 1)
    }
}

/// Refuses a fiber switch requested by Lua code running on `l` unless it is
/// safe (DESIGN.md, hard rules): inside a fiber; on a thread of the cord's
/// own state other than its main thread; not inside a `__gc` finalizer; not
/// under an `mlua` callback. `what` names the function for the error.
///
/// # Safety
///
/// `l` is a valid Lua state.
#[inline(always)]
pub(crate) unsafe fn check_switch(l: *mut ffi::lua_State, what: &str) -> LResult<()> {
    // The common case in a few loads, without the cord (`fast_entry`,
    // rule 1): inlined into the blocking C functions; the rest is cold.
    // SAFETY: caller's contract.
    if unsafe { crate::fast_entry::may_switch(l) } {
        return Ok(());
    }
    // SAFETY: caller's contract.
    unsafe { check_switch_slow(l, what) }
}

/// [`check_switch`] when the common case does not hold: finds the reason
/// to refuse, if any.
///
/// # Safety
///
/// `l` is a valid Lua state.
#[cold]
#[inline(never)]
unsafe fn check_switch_slow(l: *mut ffi::lua_State, what: &str) -> LResult<()> {
    if fiber::current().is_none() {
        return Err(Raise::illegal(format!(
            "{what}: cannot yield outside a fiber"
        )));
    }
    // SAFETY: caller's contract; the pushed thread is popped at once.
    let (reg, main_thread, gc_running) = unsafe {
        let reg = lua::registry_ptr(l);
        let main_thread = ffi::lua_pushthread(l) == 1;
        ffi::lua_pop(l, 1);
        (reg, main_thread, gc_running(l))
    };
    let (same_state, gc_stopped, under_mlua) =
        cord::with(|c| (c.registry == reg, c.gc_stopped, c.lua.state() != c.main));
    let refusal = if !same_state {
        "cannot yield on a foreign Lua state"
    } else if main_thread {
        "cannot yield on the main Lua thread"
    } else if !(gc_running || cfg!(feature = "luajit") && gc_stopped) {
        "cannot yield inside a __gc finalizer"
    } else if under_mlua {
        "cannot yield under an mlua callback (register blocking Rust functions through the \
         luafiber bridge)"
    } else {
        return Ok(());
    };
    Err(Raise::illegal(format!("{what}: {refusal}")))
}

/// Whether the GC may run now: false inside a `__gc` finalizer, and (on
/// LuaJIT, which cannot tell the two apart) after `collectgarbage("stop")`.
///
/// # Safety
///
/// `l` is a valid Lua state.
pub(crate) unsafe fn gc_running(l: *mut ffi::lua_State) -> bool {
    #[cfg(feature = "luajit")]
    {
        // LuaJIT stops GC steps while a finalizer runs.
        // SAFETY: LUA_GCISRUNNING (9) only reads the GC state.
        unsafe { ffi::lua_gc(l, 9, 0) != 0 }
    }
    #[cfg(not(feature = "luajit"))]
    {
        // Lua 5.4's lua_gc returns -1 while a finalizer runs; a stopped
        // collector is not reported here, so the cord's flag stays false.
        // SAFETY: LUA_GCCOUNT only reads the GC state.
        unsafe { ffi::lua_gc(l, ffi::LUA_GCCOUNT, 0) >= 0 }
    }
}
