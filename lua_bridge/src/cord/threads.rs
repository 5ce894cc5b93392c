//! The cord's Lua threads: made through a cached wrapper ref (DESIGN.md,
//! mechanism 1), anchored by a registry ref for a fiber's whole life
//! (mechanism 2), and pooled once the fiber is done (mechanism 3).

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi;

use super::with;
use crate::raw::error::ErrorKind;
use crate::raw::{api, lua_fn, LResult, Raise};

/// Sizes of the Lua thread pool.
#[derive(Clone, Copy, Debug)]
pub struct ThreadPoolConfig {
    /// Most finished Lua threads kept for reuse; 0 switches the pool off.
    pub max: usize,
}

impl Default for ThreadPoolConfig {
    fn default() -> Self {
        ThreadPoolConfig { max: 4096 }
    }
}

/// How a new fiber's Lua thread is made when the pool has none. Only benches
/// pick anything but [`NewThread::CachedRef`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NewThread {
    /// `lua_rawgeti` of the wrapper's registry ref + `lua_pcall` (the fast
    /// path, Tarantool's `luaT_newthread` since 2.6.1).
    #[default]
    CachedRef,
    /// `lua_pushcfunction(wrapper)` + `lua_pcall` on every creation.
    PushPerCall,
    /// `lua_cpcall(wrapper)` (LuaJIT and Lua 5.1 only; Tarantool 2.6.0).
    #[cfg(feature = "luajit")]
    Cpcall,
}

/// A Lua thread anchored by a registry ref.
#[derive(Clone, Copy)]
pub(crate) struct LuaThread {
    pub l: *mut ffi::lua_State,
    pub anchor: c_int,
}

thread_local! {
    /// Registry ref of [`newthread_wrapper`] in this thread's state.
    static NEWTHREAD: Cell<c_int> = const { Cell::new(ffi::LUA_NOREF) };
}

/// Makes the registry ref of the wrapper; once per state, at setup.
///
/// # Safety
///
/// `l` is the idle main state of a new cord, with room for one value.
pub(crate) unsafe fn init(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract; the push is consumed by luaL_ref.
    let r = unsafe {
        ffi::lua_pushcfunction(l, newthread_wrapper);
        ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)
    };
    NEWTHREAD.with(|n| n.set(r));
}

lua_fn! {
    /// Made once and called by registry ref: `lua_newthread`, anchored at
    /// once by a registry ref; returns the thread and the ref.
    fn newthread_wrapper(l) {
        // SAFETY: called through lua_pcall, so an out-of-memory error here is
        // caught by that pcall; no Rust value is live across these calls.
        unsafe {
            ffi::lua_newthread(l);
            ffi::lua_pushvalue(l, -1);
            let anchor = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            ffi::lua_pushinteger(l, anchor as ffi::lua_Integer);
        }
        Ok(2)
    }
}

fn no_memory() -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// Takes a Lua thread for a new fiber: a pooled one, or a new one made by
/// the cached wrapper ref. A new thread is also left on top of `l` (so the GC
/// cannot take it during setup); the result says whether it was.
///
/// # Safety
///
/// `l` is a thread of the cord's Lua state with room for 2 values.
pub(crate) unsafe fn take_thread(l: *mut ffi::lua_State) -> LResult<(LuaThread, bool)> {
    if let Some(t) = with(|c| c.threads.pop()) {
        return Ok((t, false));
    }
    let how = with(|c| c.new_thread);
    // SAFETY: `l` is valid (contract); the wrapper runs under lua_pcall (or
    // lua_cpcall), so its errors are caught there.
    unsafe {
        let rc = match how {
            NewThread::CachedRef => {
                api::push_registry_ref(l, NEWTHREAD.with(Cell::get));
                ffi::lua_pcall(l, 0, 2, 0)
            }
            NewThread::PushPerCall => {
                ffi::lua_pushcfunction(l, newthread_wrapper);
                ffi::lua_pcall(l, 0, 2, 0)
            }
            #[cfg(feature = "luajit")]
            NewThread::Cpcall => return cpcall_thread(l),
        };
        if rc != 0 {
            ffi::lua_pop(l, 1);
            return Err(no_memory());
        }
        let anchor = ffi::lua_tointeger(l, -1) as c_int;
        ffi::lua_pop(l, 1);
        let t = ffi::lua_tothread(l, -1);
        Ok((LuaThread { l: t, anchor }, true))
    }
}

/// The `lua_cpcall` variant (Tarantool 2.6.0's `luaT_newthread`).
///
/// # Safety
///
/// As [`take_thread`].
#[cfg(feature = "luajit")]
unsafe fn cpcall_thread(l: *mut ffi::lua_State) -> LResult<(LuaThread, bool)> {
    unsafe extern "C-unwind" fn body(l: *mut ffi::lua_State) -> c_int {
        // SAFETY: run by lua_cpcall on `l` with the out-slot as lightuserdata.
        unsafe {
            let out = ffi::lua_touserdata(l, 1).cast::<LuaThread>();
            let t = ffi::lua_newthread(l);
            ffi::lua_pushvalue(l, -1);
            (*out).l = t;
            (*out).anchor = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            0
        }
    }
    let mut out = LuaThread {
        l: std::ptr::null_mut(),
        anchor: ffi::LUA_NOREF,
    };
    // SAFETY: `out` outlives the protected call, which writes it.
    unsafe {
        if ffi::lua_cpcall(l, crate::raw::wide_cfn!(body), (&raw mut out).cast()) != 0 {
            ffi::lua_pop(l, 1);
            return Err(no_memory());
        }
        api::push_registry_ref(l, out.anchor);
    }
    Ok((out, true))
}

/// Gives a finished fiber's thread back: reset and pooled, or unanchored
/// (the GC then takes it) when the pool is full or off. A pooled thread
/// keeps nothing a fiber can set on its thread: its stack is emptied, its
/// environment (LuaJIT's `setfenv(0, ...)`) and its debug hook (Lua 5.4's
/// `debug.sethook`) are reset, so nothing of it reaches the next fiber.
///
/// # Safety
///
/// `t` is a thread of the cord's state that no fiber runs any more.
pub(crate) unsafe fn recycle_thread(t: LuaThread) {
    let (main, keep) = with(|c| (c.main, c.threads.len() < c.thread_pool.max));
    // SAFETY: `t.l` is idle (contract); these calls do not allocate.
    unsafe {
        ffi::lua_settop(t.l, 0);
        if keep {
            #[cfg(feature = "luajit")]
            {
                // setfenv(0, ...) is per thread on LuaJIT: restore the globals.
                ffi::lua_pushvalue(main, ffi::LUA_GLOBALSINDEX);
                ffi::lua_xmove(main, t.l, 1);
                ffi::lua_replace(t.l, ffi::LUA_GLOBALSINDEX);
            }
            // Lua 5.4's hooks are per thread (LuaJIT's per state).
            #[cfg(not(feature = "luajit"))]
            ffi::lua_sethook(t.l, None, 0, 0);
            with(|c| c.threads.push(t));
        } else {
            ffi::luaL_unref(main, ffi::LUA_REGISTRYINDEX, t.anchor);
        }
    }
}
