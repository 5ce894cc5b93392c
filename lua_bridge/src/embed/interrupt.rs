//! Interrupting running Lua code from a signal handler (Ctrl-C in a
//! console), the way `lua.c` does it: the handler sets a hook on the Lua
//! thread that runs the code, and the hook raises "interrupted!" at the
//! next instruction, call or return. `lua_sethook` is safe to call from a
//! signal handler on the thread that runs Lua (Lua's own design); nothing
//! else here is more than atomic loads and stores.
//!
//! What is interrupted: the Lua fiber that runs when the signal comes,
//! whichever it is (a fiber started at a console's prompt spinning in a
//! loop that never yields: nothing else could stop it), unless it is the
//! thread that shielded itself (`shield()`: the console's own fiber);
//! when none runs (the cord waits), the Lua thread armed by `pcall(f, ...)`
//! of the module `luafiber.interrupt` ([`LuaRuntime::install_interrupt`]
//! puts it into `package.loaded`) while `f` runs. A signal handler calls
//! [`interrupt`].
//!
//! On LuaJIT the hook is global and fires in whichever fiber runs Lua: it
//! raises only in the armed thread or the one that ran. LuaJIT does not
//! run hooks inside JIT-compiled code unless built with
//! `LUAJIT_ENABLE_CHECKHOOK` (it is, see `slice`); the console also turns
//! the JIT off for the code typed at its prompt (`jit.off(f, true)`).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use mlua::ffi;

use super::LuaRuntime;
use crate::raw::{lua_fn, Raise, Reg};

/// The armed Lua thread (null: none).
static ARMED: AtomicPtr<ffi::lua_State> = AtomicPtr::new(std::ptr::null_mut());
/// The Lua thread the last interrupt is for (the fiber that ran, or the
/// armed one), until its hook raised (null: none).
static RUNNING: AtomicPtr<ffi::lua_State> = AtomicPtr::new(std::ptr::null_mut());
/// The thread never interrupted as the running one (`shield()`).
static SHIELDED: AtomicPtr<ffi::lua_State> = AtomicPtr::new(std::ptr::null_mut());
/// An interrupt came and was not taken yet.
static PENDING: AtomicBool = AtomicBool::new(false);

/// The hook's events: every call, return and instruction.
const MASK: std::ffi::c_int = ffi::LUA_MASKCALL | ffi::LUA_MASKRET | ffi::LUA_MASKCOUNT;

/// Interrupts the Lua fiber that runs now, unless it is the shielded one,
/// or else the armed Lua thread, if any: sets the hook that raises
/// "interrupted!" in it, and marks an interrupt pending ([`take_pending`]).
/// Returns whether a thread will be interrupted.
///
/// Async-signal-safe: call it from a signal handler on the cord's thread
/// (the thread that runs the Lua threads), as `lua.c` calls `lua_sethook`
/// from its SIGINT handler.
pub fn interrupt() -> bool {
    PENDING.store(true, Ordering::SeqCst);
    // The running fiber's tag is its Lua thread (`fiber::spawn`).
    let running =
        luafiber_fiber::current_tag().map_or(std::ptr::null_mut(), |t| t as *mut ffi::lua_State);
    let target = if !running.is_null() && running != SHIELDED.load(Ordering::SeqCst) {
        running
    } else {
        ARMED.load(Ordering::SeqCst)
    };
    RUNNING.store(target, Ordering::SeqCst);
    if target.is_null() {
        return false;
    }
    // SAFETY: the running thread runs the instruction this handler
    // interrupted, and an armed one is inside `interrupt.pcall`: alive
    // (the handler runs on the cord's thread, between two instructions, so
    // it cannot interleave with a disarm or an end); lua_sethook only
    // stores the hook fields, which Lua allows from a signal handler.
    unsafe { ffi::lua_sethook(target, Some(hook), MASK, 1) };
    true
}

/// Whether an interrupt came and was not taken yet (async-signal-safe).
pub fn pending() -> bool {
    PENDING.load(Ordering::SeqCst)
}

/// Whether a Lua thread is armed (async-signal-safe).
pub fn armed() -> bool {
    !ARMED.load(Ordering::SeqCst).is_null()
}

/// Whether an interrupt came since the last call (and clears it).
pub fn take_pending() -> bool {
    PENDING.swap(false, Ordering::SeqCst)
}

/// The hook: raises "interrupted!" in the thread the interrupt is for,
/// and clears itself.
///
/// # Safety
///
/// Lua calls it as its debug hook, with the running thread `l`.
unsafe extern "C-unwind" fn hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    if RUNNING
        .compare_exchange(l, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // LuaJIT's hook is global: another fiber runs; the one to
        // interrupt raises when it runs again (or is disarmed).
        if cfg!(not(feature = "luajit")) {
            // SAFETY: clearing a hook does not raise.
            unsafe { ffi::lua_sethook(l, None, 0, 0) };
        }
        return;
    }
    // SAFETY: a hook runs on a Lua thread between instructions, where Lua
    // may raise; this frame owns nothing (raw rule 2), as lua.c's `lstop`.
    unsafe {
        ffi::lua_sethook(l, None, 0, 0);
        ffi::lua_pushstring(l, c"interrupted!".as_ptr());
        ffi::lua_error(l);
    }
}

lua_fn! {
    /// `pcall(f, ...)`: `pcall` that [`interrupt`] may interrupt: the
    /// calling thread is armed while `f` runs (an interrupt still pending,
    /// one not taken with [`take_pending`], interrupts it at once), and
    /// disarmed (its hook
    /// cleared) in C before any Lua instruction runs again, so the hook
    /// never raises outside the call.
    fn interrupt_pcall(s: &mut Stack) {
        if s.top() < 1 {
            return Err(Raise::illegal("Usage: interrupt.pcall(f, ...)"));
        }
        ARMED.store(s.as_ptr(), Ordering::SeqCst);
        if PENDING.load(Ordering::SeqCst) {
            // An interrupt came before `f` started (its fiber had not run
            // yet): the first instruction raises.
            interrupt();
        }
        let ok = s.pcall(s.top() - 1, ffi::LUA_MULTRET).is_ok();
        ARMED.store(std::ptr::null_mut(), Ordering::SeqCst);
        // An interrupt for this thread that its hook did not take is over.
        let _ = RUNNING.compare_exchange(
            s.as_ptr(),
            std::ptr::null_mut(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        // The calling thread's (on LuaJIT the state's).
        s.clear_hook();
        s.push_bool(ok);
        s.insert(1);
        Ok(s.top())
    }
}

lua_fn! {
    /// `shield()`: the calling Lua thread is never interrupted as the one
    /// that runs when an interrupt comes (the console's own fiber, which
    /// must survive a Ctrl-C that lands while it formats a result); it
    /// still is when armed by `pcall`.
    fn interrupt_shield(s: &mut Stack) {
        SHIELDED.store(s.as_ptr(), Ordering::SeqCst);
        Ok(0)
    }
}

impl LuaRuntime {
    /// Puts the module `luafiber.interrupt` (`pcall(f, ...)`, `shield()`)
    /// into `package.loaded`, for Lua code that a signal handler may
    /// interrupt through [`interrupt`] (see the module doc of
    /// `interrupt.rs`).
    pub fn install_interrupt(&self) {
        const FUNCS: &[Reg] = &[(c"pcall", interrupt_pcall), (c"shield", interrupt_shield)];
        let s = &mut self.main_stack();
        let top = s.top();
        s.push_globals();
        if s.rawget_field(-1, c"package") == ffi::LUA_TTABLE
            && s.rawget_field(-1, c"loaded") == ffi::LUA_TTABLE
        {
            let loaded = s.top();
            let t = s.new_table(0, FUNCS.len() as c_int);
            s.set_funcs(t, FUNCS);
            s.set_field(loaded, c"luafiber.interrupt");
        }
        s.settop(top);
    }
}
