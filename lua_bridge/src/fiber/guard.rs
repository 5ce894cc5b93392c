//! The guard every fiber switch requested by Lua code goes through: a
//! fiber yields only from the bridge's C functions, on the fiber's own
//! thread, and never where the switch would break something
//! ([`check_switch`]).
//!
//! # Rules
//!
//! Cited as "guard rule N":
//!
//! 1. The fast test ([`may_switch`]) is only a sufficient condition for
//!    what the slow check accepts, read from the same facts: in a fiber; on
//!    the cord's own state (the same `global_State` on LuaJIT, the same
//!    registry otherwise); not its main thread; the GC may run (not inside
//!    a `__gc` finalizer); mlua runs no callback (its current state is the
//!    main thread). When it says no, the slow check decides and words the
//!    refusal, so behaviour and errors are the slow check's.
//! 2. [`Facts`] holds only what is fixed while the cord is installed (its
//!    main thread, its state's identity, where its `mlua::Lua` lives, the
//!    probe's entry token), set by [`install`] and cleared by
//!    [`uninstall`]; every other fact is read at the call.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use luafiber_fiber as fiber;
use mlua::ffi;

use crate::cord;
use crate::luajit::{self, entry, Entry};
use crate::raw::context::Part;
use crate::raw::{api, LResult, Raise, Stack};

/// What the fast test reads of the cord (guard rule 2); all null while no
/// cord is installed.
#[derive(Clone, Copy)]
struct Facts {
    /// The cord's main thread.
    main: *mut ffi::lua_State,
    /// The cord's state's identity ([`identity`]).
    state: *const c_void,
    /// The cord's `mlua::Lua`, kept alive by `Guard::lua`; valid whenever it is
    /// not null.
    lua: *const mlua::Lua,
    /// The probe's entry token, for the in-place reads of the facts.
    entry: entry::Slot,
}

const OFF: Facts = Facts {
    main: std::ptr::null_mut(),
    state: std::ptr::null(),
    lua: std::ptr::null(),
    entry: entry::Slot::NONE,
};

/// Per-cord state of the guard (a part of the cord context).
pub(crate) struct Guard {
    facts: Cell<Facts>,
    /// The `mlua::Lua` that `Facts::lua` points into, kept alive while the
    /// facts are set (guard rule 2).
    lua: RefCell<Option<Rc<mlua::Lua>>>,
}

impl Default for Guard {
    fn default() -> Guard {
        Guard {
            facts: Cell::new(OFF),
            lua: RefCell::new(None),
        }
    }
}

/// The identity of `s`'s Lua state: `G(L)` read in place with the entry
/// token, else the registry's address (both are the same for every thread
/// of one state).
#[inline(always)]
fn identity(s: &Stack, entry: Option<Entry>) -> *const c_void {
    match entry {
        Some(e) => e.identity(s),
        None => s.to_pointer(ffi::LUA_REGISTRYINDEX),
    }
}

/// Arms the fast test for the cord whose main thread `s` is and whose mlua
/// handle is `lua` (kept here until [`uninstall`]); after the probe
/// ([`luajit::install`]).
pub(crate) fn install(s: &Stack, lua: &Rc<mlua::Lua>) {
    let entry = luajit::entry::entry();
    Guard::with(|g| {
        *g.lua.borrow_mut() = Some(lua.clone());
        g.facts.set(Facts {
            main: s.as_ptr(),
            state: identity(s, entry),
            lua: Rc::as_ptr(lua),
            entry: entry::Slot::of(entry),
        });
    });
}

/// Disarms the fast test (the cord is going away).
pub(crate) fn uninstall() {
    let lua = Guard::try_with(|g| {
        g.facts.set(OFF);
        g.lua.borrow_mut().take()
    });
    // Dropped outside the closure (context rule 2).
    drop(lua);
}

/// The fast test of guard rule 1: true only when [`check_switch_slow`]
/// would let Lua code running on `s` switch fibers now; false whenever no
/// cord is installed.
#[inline(always)]
fn may_switch(s: &Stack) -> bool {
    let Some(f) = Guard::try_with(|g| g.facts.get()) else {
        return false;
    };
    let e = f.entry.get();
    let gc_may_run = || match e {
        Some(e) => e.gc_may_run(s),
        None => s.gc_may_run(),
    };
    fiber::switch_count().is_some()
        && s.as_ptr() != f.main
        && identity(s, e) == f.state
        && gc_may_run()
        // SAFETY: the identity matched, so the facts are set (no state's
        // identity is null) and `f.lua` points into the `Rc` that `Guard::lua`
        // keeps (guard rule 2).
        && unsafe { (*f.lua).state() } == f.main
}

/// Refuses a fiber switch requested by Lua code running on `s` unless it is
/// safe (guard rule 1): inside a fiber; on a thread of the cord's
/// own state other than its main thread; not inside a `__gc` finalizer; not
/// under an `mlua` callback. `what` names the function for the error.
#[inline(always)]
pub(crate) fn check_switch(s: &mut Stack, what: &str) -> LResult<()> {
    // The common case in a few loads, without the cord: inlined into the
    // blocking C functions; the rest is cold.
    if may_switch(s) {
        return Ok(());
    }
    check_switch_slow(s, what)
}

/// [`check_switch`] when the common case does not hold: finds the reason
/// to refuse, if any.
#[cold]
#[inline(never)]
fn check_switch_slow(s: &mut Stack, what: &str) -> LResult<()> {
    if fiber::current().is_none() {
        return Err(Raise::illegal(format!(
            "{what}: cannot yield outside a fiber"
        )));
    }
    let reg = s.to_pointer(ffi::LUA_REGISTRYINDEX);
    let main_thread = s.is_main_thread();
    let gc_running = s.gc_may_run();
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
/// finalizer on LuaJIT. Not under `protect`: it calls Lua, whose errors go
/// through it (it owns nothing).
///
/// # Safety
///
/// Lua calls it as a C closure whose upvalue 1 is the original
/// `collectgarbage`.
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
pub(crate) fn wrap_collectgarbage(s: &mut Stack) {
    s.push_globals();
    let globals = s.top();
    s.rawget_field(globals, c"collectgarbage");
    s.push_closure(crate::raw::wide_cfn!(collectgarbage), 1);
    s.set_field(globals, c"collectgarbage");
    s.pop(1);
}
