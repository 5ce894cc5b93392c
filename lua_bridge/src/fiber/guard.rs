//! The guard every fiber switch requested by Lua code goes through
//! (DESIGN.md, hard rules: yield only from the bridge's raw C functions, on
//! the fiber's own thread).

use std::ffi::c_int;

use luafiber_fiber as fiber;
use mlua::ffi;

use crate::cord;
use crate::raw::{api, LResult, Raise};

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
    // The common case in a few loads, without the cord (`luajit::entry`,
    // rule 1): inlined into the blocking C functions; the rest is cold.
    // SAFETY: caller's contract.
    if unsafe { crate::luajit::entry::may_switch(l) } {
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
        let reg = api::registry_ptr(l);
        let main_thread = ffi::lua_pushthread(l) == 1;
        ffi::lua_pop(l, 1);
        (reg, main_thread, api::gc_running(l))
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

/// `collectgarbage` wrapper that tracks "stop"/"restart" (upvalue 1: the
/// original), so that the guard can tell a stopped collector from a running
/// finalizer on LuaJIT. Not under `protect`: it calls Lua.
unsafe extern "C-unwind" fn collectgarbage(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua; no Rust value is live across lua_call.
    unsafe {
        match api::to_str(l, 1) {
            Some(b"stop") => cord::with(|c| c.gc_stopped = true),
            Some(b"restart") => cord::with(|c| c.gc_stopped = false),
            _ => {}
        }
        let n = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, n, ffi::LUA_MULTRET);
        ffi::lua_gettop(l)
    }
}

/// Wraps the global `collectgarbage` (see [`collectgarbage`]).
///
/// # Safety
///
/// `l` is the idle main state of an installed cord, with room for 2 values.
pub(crate) unsafe fn wrap_collectgarbage(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    unsafe {
        ffi::lua_getglobal(l, c"collectgarbage".as_ptr());
        ffi::lua_pushcclosure(l, crate::raw::wide_cfn!(collectgarbage), 1);
        ffi::lua_setglobal(l, c"collectgarbage".as_ptr());
    }
}
