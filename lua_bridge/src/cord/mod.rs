//! The cord's Lua state: one per OS thread, its per-fiber Lua data, and the
//! pool of Lua threads ([`threads`]).
//!
//! The cord's data lives in a `thread_local`, reached through short borrows
//! ([`with`]) that never span a fiber switch. The layers above keep their
//! own registry refs (each made once, when the state is set up); the cord
//! keeps what every Lua fiber has: its thread and anchors ([`LuaFiber`]).

pub mod threads;

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use mlua::ffi;
use slab::Slab;

pub(crate) use threads::{recycle_thread, take_thread, LuaThread};
pub use threads::{NewThread, ThreadPoolConfig};

/// The Lua side of one Lua fiber.
pub(crate) struct LuaFiber {
    pub thread: LuaThread,
    /// Registry ref of the cached fiber userdata, or `LUA_NOREF`.
    pub udata: c_int,
    /// Registry ref of `fiber.storage`, or `LUA_NOREF`.
    pub storage: c_int,
    /// `lua_pcall`'s result once the function returned.
    pub rc: Option<c_int>,
    /// Traceback recorded by the message handler, when `errors` says it
    /// will be read.
    pub traceback: Option<String>,
    /// Who reads the fiber's error.
    pub errors: ErrorUse,
}

/// Who reads a Lua fiber's error: this decides whether its message handler
/// builds a traceback, which costs far more than the rest of a fiber's end
/// (it is built only for an error that will be printed or asked for; a
/// cancel needs none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorUse {
    /// Lua code (`fiber.create`, `fiber.new`): a joinable fiber's `join`
    /// gets the value raised as it is; a detached fiber's error is printed,
    /// unless the fiber was cancelled.
    Lua,
    /// A Rust caller (call, eval, [`CallHandle`](crate::CallHandle)): its
    /// join gives the message and traceback; a cancel gives the message.
    Rust,
    /// The script's main fiber: an error is printed with its traceback and
    /// ends the process.
    Exit,
}

/// This thread's Lua state and the data of its Lua fibers.
pub(crate) struct Cord {
    /// In an `Rc` that stays put: the switch guard reads it without
    /// borrowing the cord.
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
    /// The runtime is being dropped and has cancelled its fibers: an error
    /// ending one (the script's main fiber too) ends only that fiber.
    pub shutting_down: bool,
}

impl Cord {
    /// The cord of the Lua state `lua` (its main thread `main`), with no
    /// fiber yet.
    pub(crate) fn new(
        lua: std::rc::Rc<mlua::Lua>,
        main: *mut ffi::lua_State,
        thread_pool: ThreadPoolConfig,
        new_thread: NewThread,
    ) -> Cord {
        // SAFETY: `main` is the valid main thread of `lua`'s state.
        let registry = unsafe { crate::raw::api::registry_ptr(main) };
        Cord {
            lua,
            main,
            registry,
            threads: Vec::new(),
            thread_pool,
            new_thread,
            fibers: Slab::new(),
            gc_stopped: false,
            shutting_down: false,
        }
    }
}

thread_local! {
    static CORD: RefCell<Option<Cord>> = const { RefCell::new(None) };
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

/// Makes `cord` this thread's cord.
pub(crate) fn install(cord: Cord) {
    CORD.with(|c| *c.borrow_mut() = Some(cord));
}

/// Takes this thread's cord away (its runtime is going).
pub(crate) fn uninstall() -> Option<Cord> {
    CORD.with(|c| c.borrow_mut().take())
}

/// Whether this thread has a cord.
pub(crate) fn is_installed() -> bool {
    CORD.with(|c| c.borrow().is_some())
}
