//! The cord's Lua state: the registry refs set up once, the Lua thread pool,
//! and the per-fiber Lua data.
//!
//! One Lua state per OS thread (cord). Its data lives in a `thread_local`,
//! reached through short borrows that never span a fiber switch.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};

use mlua::ffi;
use slab::Slab;

use crate::cfunc::{LResult, Raise};
use crate::error::ErrorKind;
use crate::lua;

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

/// The Lua side of one Lua fiber.
pub(crate) struct LuaFiber {
    pub thread: LuaThread,
    /// Registry ref of the cached fiber userdata, or `LUA_NOREF`.
    pub udata: c_int,
    /// Registry ref of `fiber.storage`, or `LUA_NOREF`.
    pub storage: c_int,
    /// `lua_pcall`'s result once the function returned.
    pub rc: Option<c_int>,
    /// Traceback recorded by the message handler.
    pub traceback: Option<String>,
    /// An error ends the process (the script's main chunk).
    pub exit_on_error: bool,
}

/// Registry refs, each set once when the cord's Lua state is set up.
#[derive(Clone, Copy)]
pub(crate) struct Refs {
    pub newthread: c_int,
    pub msgh: c_int,
    pub fiber_mt: c_int,
    pub fiber_methods: c_int,
    pub error_mt: c_int,
    /// `call.rs`: the CALL handler.
    pub call_handler: c_int,
    /// `call.rs`: the EVAL handler.
    pub eval_handler: c_int,
    /// `call.rs`: the module loader.
    pub module_handler: c_int,
    /// `call.rs`: the table of compiled EVAL chunks, by source.
    pub eval_cache: c_int,
}

pub(crate) struct Cord {
    /// In an `Rc` that stays put: `fast_entry` reads it without borrowing
    /// the cord.
    pub lua: std::rc::Rc<mlua::Lua>,
    pub main: *mut ffi::lua_State,
    pub registry: *const c_void,
    pub threads: Vec<LuaThread>,
    pub thread_pool: ThreadPoolConfig,
    pub new_thread: NewThread,
    pub fibers: Slab<LuaFiber>,
    /// `collectgarbage("stop")` is in force (LuaJIT's "is the GC running"
    /// cannot tell that apart from a running finalizer).
    pub gc_stopped: bool,
    /// Blocking Rust functions registered with `LuaRuntime::register_fn`.
    pub rust_fns: Vec<(crate::value::RustFn, String)>,
}

thread_local! {
    static CORD: RefCell<Option<Cord>> = const { RefCell::new(None) };
    static REFS: Cell<Refs> = const { Cell::new(Refs {
        newthread: ffi::LUA_NOREF,
        msgh: ffi::LUA_NOREF,
        fiber_mt: ffi::LUA_NOREF,
        fiber_methods: ffi::LUA_NOREF,
        error_mt: ffi::LUA_NOREF,
        call_handler: ffi::LUA_NOREF,
        eval_handler: ffi::LUA_NOREF,
        module_handler: ffi::LUA_NOREF,
        eval_cache: ffi::LUA_NOREF,
    }) };
}

/// Runs `f` on this thread's cord.
///
/// # Panics
///
/// Panics when this thread has no Lua cord (no `LuaRuntime`).
pub(crate) fn with<R>(f: impl FnOnce(&mut Cord) -> R) -> R {
    CORD.with(|c| f(c.borrow_mut().as_mut().expect("this thread has a Lua cord")))
}

/// Like [`with`], `None` when the thread has no cord.
pub(crate) fn try_with<R>(f: impl FnOnce(&mut Cord) -> R) -> Option<R> {
    CORD.with(|c| c.borrow_mut().as_mut().map(f))
}

pub(crate) fn refs() -> Refs {
    REFS.with(Cell::get)
}

pub(crate) fn error_mt_ref() -> c_int {
    refs().error_mt
}

pub(crate) fn install(cord: Cord, refs: Refs) {
    REFS.with(|r| r.set(refs));
    CORD.with(|c| *c.borrow_mut() = Some(cord));
}

pub(crate) fn uninstall() -> Option<Cord> {
    crate::fast_entry::uninstall();
    CORD.with(|c| c.borrow_mut().take())
}

pub(crate) fn is_installed() -> bool {
    CORD.with(|c| c.borrow().is_some())
}

crate::lua_fn! {
    /// Made once and called by registry ref: `lua_newthread`, anchored at
    /// once by a registry ref; returns the thread and the ref.
    pub(crate) fn newthread_wrapper(l) {
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
                lua::push_registry_ref(l, refs().newthread);
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
            return Err(Raise::Error(
                ErrorKind::OutOfMemory,
                "not enough memory".into(),
            ));
        }
        let anchor = ffi::lua_tointeger(l, -1) as c_int;
        ffi::lua_pop(l, 1);
        let t = ffi::lua_tothread(l, -1);
        Ok((LuaThread { l: t, anchor }, true))
    }
}

/// The `lua_cpcall` variant (Tarantool 2.6.0's `luaT_newthread`).
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
        if ffi::lua_cpcall(l, crate::wide_cfn!(body), (&raw mut out).cast()) != 0 {
            ffi::lua_pop(l, 1);
            return Err(Raise::Error(
                ErrorKind::OutOfMemory,
                "not enough memory".into(),
            ));
        }
        lua::push_registry_ref(l, out.anchor);
    }
    Ok((out, true))
}

/// Gives a finished fiber's thread back: reset and pooled, or unanchored
/// (the GC then takes it) when the pool is full or off.
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
            with(|c| c.threads.push(t));
        } else {
            ffi::luaL_unref(main, ffi::LUA_REGISTRYINDEX, t.anchor);
        }
    }
}

/// Releases a registry ref if it is one.
///
/// # Safety
///
/// `l` is a thread of the cord's state.
pub(crate) unsafe fn unref(l: *mut ffi::lua_State, r: c_int) {
    if r != ffi::LUA_NOREF && r != ffi::LUA_REFNIL {
        // SAFETY: caller's contract; luaL_unref does not allocate.
        unsafe { ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r) };
    }
}
