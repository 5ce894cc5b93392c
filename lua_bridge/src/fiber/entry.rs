//! The body of every Lua fiber: its `lua_pcall`, what happens to its
//! results and errors, and its message handler.

use std::ffi::c_int;
use std::io::Write;

use luafiber_fiber::{self as fiber, FiberId};
use mlua::ffi;

use crate::cord::{self, ErrorUse};
use crate::raw::context::{Part, RegRef};
use crate::raw::memory::{with_limit, Exempt};
use crate::raw::{api, Stack};

/// Per-cord state of fiber entry (a part of the cord context): registry
/// ref of [`msgh`] in the cord's state.
#[derive(Default)]
pub(crate) struct MsghRef(RegRef);

/// Makes the registry ref of the message handler; once per state, at setup.
pub(crate) fn init(s: &mut Stack) {
    s.push_cfunction(crate::raw::wide_cfn!(msgh));
    MsghRef::with(|m| m.0.set(s.make_ref()));
}

/// Pushes the message handler onto `s`.
pub(crate) fn push_msgh(s: &mut Stack) {
    s.push_ref(MsghRef::with(|m| m.0.get()));
}

/// The body of every Lua fiber, on its own stack.
///
/// Only the fiber's function runs under the memory limit: what the entry
/// does around it (its message handler's traceback, reading the outcome,
/// the error report, the release of the fiber's Lua data) is Rust code
/// outside any protected call, exempt from the limit (raw rule 3), so a
/// call that ran out of memory still ends with its own error ("not enough
/// memory"), not "error in error handling" or an abort.
pub(super) fn entry(idx: usize, s: &mut Stack) {
    let _exempt = Exempt::enter();
    // The message handler at 1 catches every Lua error, so none reaches
    // this Rust frame.
    let nargs = s.top() - 2;
    // A fresh stack: the C stack check has nothing to find.
    #[cfg(feature = "luajit")]
    let rc = with_limit(|| crate::luajit::cstack::pcall_fresh(s, nargs, ffi::LUA_MULTRET, 1));
    #[cfg(not(feature = "luajit"))]
    let rc = with_limit(|| s.pcall_with(nargs, ffi::LUA_MULTRET, 1));
    let flags = fiber::current_flags().expect("a Lua fiber runs as current");
    let me = flags.id;
    let (storage, errors, shutting_down) = cord::with(|c| {
        let lf = &mut c.fibers[idx];
        lf.rc = Some(rc);
        let storage = std::mem::replace(&mut lf.storage, ffi::LUA_NOREF);
        (storage, lf.errors, c.shutting_down)
    });
    s.unref(storage);
    // The runtime's drop cancelled it: the process goes on.
    if rc != 0 && errors == ErrorUse::Exit && !shutting_down {
        exit_with_error(me, idx, s);
    }
    if flags.joinable {
        return;
    }
    if rc != 0 && !flags.cancelled {
        report_error(me, idx, "fiber error", s);
    }
    release(idx);
}

/// The body of a fiber that serves a request ([`spawn_request_in`]): runs
/// its function as [`entry`] does, then `done(ok, s)` with its thread's
/// stack `[msgh, results...]` (`ok`) or `[msgh, error]`, then frees the
/// fiber's Lua data. `done` runs on the fiber, which may yield there.
///
/// [`spawn_request_in`]: super::spawn_request_in
pub(super) fn request_entry(idx: usize, s: &mut Stack, done: impl FnOnce(bool, &mut Stack)) {
    let ok = request_call(idx, s);
    done(ok, s);
    release(idx);
}

/// One request of a request fiber ([`request_entry`], or each request of a
/// pooled one, [`spawn_worker_in`]): calls the function on its thread's
/// stack `s` (`[msgh, fn, args...]`, or `[msgh, name, args...]` for a
/// CALL of a plain global name: `handlers::resolve_global`) and frees the
/// `fiber.storage` the call made; returns whether it returned (`[msgh, results...]`) rather
/// than raised (`[msgh, error]`).
///
/// [`spawn_worker_in`]: super::spawn_worker_in
pub(crate) fn request_call(idx: usize, s: &mut Stack) -> bool {
    if s.type_of(2) == ffi::LUA_TSTRING {
        super::handlers::resolve_global(s);
    }
    call_found(idx, s)
}

/// [`request_call`] of a function already on the stack (`[msgh, fn,
/// args...]`: no name to resolve).
pub(crate) fn call_found(idx: usize, s: &mut Stack) -> bool {
    let nargs = s.top() - 2;
    #[cfg(feature = "luajit")]
    let rc = crate::luajit::cstack::pcall_fresh(s, nargs, ffi::LUA_MULTRET, 1);
    #[cfg(not(feature = "luajit"))]
    let rc = s.pcall_with(nargs, ffi::LUA_MULTRET, 1);
    let storage = cord::with(|c| {
        let lf = &mut c.fibers[idx];
        lf.rc = Some(rc);
        std::mem::replace(&mut lf.storage, ffi::LUA_NOREF)
    });
    s.unref(storage);
    rc == 0
}

/// Readies a pooled request fiber for its next request as a new fiber on
/// a pooled thread would start it: its thread's stack `s` back to
/// `[msgh]`, its environment and debug hook reset ([`reset_thread`]), its
/// own max slice and outcome forgotten (its `fiber.storage` went with its
/// call); it counts as waiting in the pool (`LuaFiber::pooled`) until
/// [`worker_woken`]. Returns `false` when it must end instead ([`worker_end`]): its
/// cord is shutting down (then it is left as it was), the Lua heap is past
/// its memory limit, or Lua code keyed state by its thread and id
/// (`LuaFiber::keyed`). With `pop` false the stack is left as it is
/// (`[msgh, results...]` for a reader outside the fiber, which pops it to
/// `[msgh]`).
///
/// [`reset_thread`]: cord::reset_thread
pub(crate) fn worker_reset(idx: usize, s: &mut Stack, pop: bool) -> bool {
    let Some((main, keyed)) = cord::with(|c| {
        if c.shutting_down {
            return None;
        }
        let lf = &mut c.fibers[idx];
        lf.rc = None;
        lf.traceback = None;
        lf.max_slice = None;
        lf.pooled = true;
        Some((c.main, lf.keyed))
    }) else {
        return false;
    };
    if pop {
        // SAFETY: a pop to `[msgh]` (the stack is `[msgh, results...]` or
        // `[msgh, error]`), which needs no room; the handle learns the top
        // again.
        unsafe {
            ffi::lua_settop(s.as_ptr(), 1);
            s.sync();
        }
    }
    // SAFETY: `main` is the cord's state, of this thread.
    if keyed || unsafe { crate::raw::memory::past_limit(main) } {
        return false;
    }
    // SAFETY: the fiber's own thread, idle between two calls (this Rust
    // code runs on the fiber, outside any Lua call), of the cord's state;
    // what it pushes it also pops.
    unsafe {
        let reset = cord::reset_thread(main, s.as_ptr());
        s.sync();
        reset
    }
}

/// Whether the pooled request fiber `me` (at `idx`, its thread's stack
/// `s`), whose request has ended, may serve another: not cancelled nor
/// joinable, its cord not stopping, readied by [`worker_reset`], and its
/// name back to `name` if its request renamed it. With `pop` false its
/// results stay on its stack (`[msgh, results...]`) for a reader outside
/// it, which pops them to `[msgh]` before the fiber takes another request.
pub(crate) fn worker_serves_again(
    idx: usize,
    me: FiberId,
    s: &mut Stack,
    name: &[u8],
    pop: bool,
) -> bool {
    let Some(flags) = fiber::current_flags() else {
        return false;
    };
    if flags.cancelled || flags.joinable {
        return false;
    }
    // The reset reads the cord's shutdown in its own look at the cord.
    if !worker_reset(idx, s, pop) {
        return false;
    }
    // Its own name is the bytes it was given (a renamed fiber's are its
    // own copy): the address tells most calls apart before the bytes.
    match fiber::with_name(me, |n| std::ptr::eq(n, name) || n == name) {
        Ok(true) => true,
        Ok(false) => fiber::set_name(me, name).is_ok(),
        Err(_) => false,
    }
}

/// A pooled request fiber readied by [`worker_reset`] has a request again
/// (it no longer only waits).
pub(crate) fn worker_woken(idx: usize) {
    cord::with(|c| c.fibers[idx].pooled = false);
}

/// The end of a pooled request fiber: frees its Lua data, as the end of
/// [`request_entry`] does.
pub(crate) fn worker_end(idx: usize) {
    release(idx);
}

/// The body of a script's main fiber ([`spawn_main`]): runs the `prelude`
/// chunks, then goes on as [`entry`]. An error in a chunk ends the process
/// as one in the script does (unless the runtime's drop cancelled the
/// fiber, see [`shutdown`](super::shutdown)).
///
/// [`spawn_main`]: super::spawn_main
pub(super) fn main_entry(idx: usize, prelude: c_int, s: &mut Stack) {
    // As in `entry`: only the Lua code runs under the memory limit.
    let _exempt = Exempt::enter();
    for _ in 0..prelude {
        // The chunk moves to the top and is called with no arguments and no
        // results, under the message handler.
        s.push_value(2);
        s.remove(2);
        if with_limit(|| s.pcall_with(0, 0, 1)) != 0 {
            if cord::with(|c| c.shutting_down) {
                // The runtime's drop cancelled it: only the fiber ends.
                release(idx);
                return;
            }
            let me = fiber::current().expect("a Lua fiber runs as current");
            exit_with_error(me, idx, s);
        }
    }
    if prelude > 0 {
        // Tarantool sleeps 0 between the `-e` chunks and the script, so
        // fibers those chunks made ready run first. Not a cancellation
        // point: a cancel is seen by the script.
        let _ = fiber::yield_now();
    }
    entry(idx, s);
}

/// Reports the error on top of a main fiber's thread (`s`) and ends the
/// process with status 1.
fn exit_with_error(me: FiberId, idx: usize, s: &mut Stack) -> ! {
    report_error(me, idx, "error", s);
    if let Some(note) = EXIT_NOTE.get().and_then(|f| f()) {
        let _ = writeln!(std::io::stderr(), "luafiber: {note}");
    }
    let _ = std::io::stdout().flush();
    // SAFETY: flushing C stdio has no preconditions.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    std::process::exit(1);
}

/// What a process that ends on an error drops besides this cord's fibers
/// (the work of the thread groups), set once by the layer that knows it.
static EXIT_NOTE: std::sync::OnceLock<fn() -> Option<String>> = std::sync::OnceLock::new();

/// Sets what an exit on an error says it drops ([`exit_note`]), once per
/// process.
pub(crate) fn set_exit_note(note: fn() -> Option<String>) {
    let _ = EXIT_NOTE.set(note);
}

/// What an exit now would drop besides this cord's fibers, if anything.
pub(crate) fn exit_note() -> Option<String> {
    EXIT_NOTE.get().and_then(|f| f())
}

/// Frees a finished Lua fiber's Lua data.
fn release(idx: usize) {
    // SAFETY: the fiber's function has returned (this is its end), so it
    // runs no Lua code any more.
    drop(unsafe { cord::Ended::own(idx) });
}

/// Writes a fiber's error (on top of its thread's stack `s`) and traceback
/// to stderr; its name as the bytes it is, as Tarantool writes it.
fn report_error(me: FiberId, idx: usize, what: &str, s: &mut Stack) {
    let tb = cord::with(|c| c.fibers[idx].traceback.take());
    let msg = s.describe(-1);
    let name = fiber::name(me).unwrap_or_default();
    let mut err = std::io::stderr().lock();
    // The traceback starts with the message.
    let text = tb.unwrap_or(msg);
    let _ = write!(err, "luafiber: {what} in fiber {me} (");
    let _ = err.write_all(&name);
    let _ = writeln!(err, "): {text}");
}

/// The message handler of every fiber: records a traceback for the fiber's
/// error report, when one will be read ([`traceback_wanted`]), and returns
/// the error value unchanged (join gives back the very value raised).
///
/// Not under `protect`: `luaL_traceback` may raise (out of memory), and that
/// must not cross `catch_unwind`; no Rust value that owns memory is live
/// when it does. It runs exempt from the memory limit (part of the fiber's
/// entry, see [`entry`]; an error's `__tostring` runs under it again), so
/// the error of a call that ran out of memory keeps its traceback; only a
/// failing `malloc` can make it raise, which leaves the exemption to the
/// `with_limit` around the fiber's call to end.
///
/// # Safety
///
/// Lua calls it as a message handler, with the error value at index 1.
unsafe extern "C-unwind" fn msgh(l: *mut ffi::lua_State) -> c_int {
    let Some(idx) = traceback_wanted() else {
        // SAFETY: called by Lua as the message handler, the error at 1.
        unsafe { ffi::lua_settop(l, 1) };
        return 1;
    };
    let exempt = Exempt::enter();
    // SAFETY: called by Lua as the message handler, the error at 1; the
    // handle is dropped before `luaL_traceback` could raise (a `__tostring`
    // that raises is caught by its pcall), and `exempt` owns no memory.
    let n = unsafe {
        ffi::lua_settop(l, 1);
        let msg = Stack::from_frame(l).describe_tostring(1);
        let cmsg = std::ffi::CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
        drop(msg);
        ffi::luaL_traceback(l, l, cmsg.as_ptr(), 1);
        drop(cmsg);
        let tb = api::to_str(l, -1).map(|b| String::from_utf8_lossy(b).into_owned());
        cord::try_with(|c| {
            if let Some(lf) = c.fibers.get_mut(idx) {
                lf.traceback = tb;
            }
        });
        ffi::lua_settop(l, 1);
        1
    };
    drop(exempt);
    n
}

/// The index of the running Lua fiber in the cord's fibers when its error
/// will be read with a traceback (printed, or given to a Rust caller; see
/// [`ErrorUse`]), else `None`: a cancelled fiber's error needs none, nor
/// one a Lua `join` takes as it is.
fn traceback_wanted() -> Option<usize> {
    let idx = fiber::current_ext().filter(|&e| e > 0)? - 1;
    let me = fiber::current_flags()?;
    let errors = cord::try_with(|c| c.fibers.get(idx).map(|lf| lf.errors)).flatten()?;
    let wanted = match errors {
        ErrorUse::Exit => true,
        ErrorUse::Rust => !me.cancelled,
        ErrorUse::Lua => !me.cancelled && !me.joinable,
        ErrorUse::Reply => false,
    };
    wanted.then_some(idx)
}
