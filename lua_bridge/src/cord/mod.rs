//! The cord's Lua state: one per OS thread, its per-fiber Lua data, and the
//! pool of Lua threads ([`threads`]).
//!
//! The cord's data lives in the cord context ([`CordSlot`], see
//! `raw/context.rs`), reached through short borrows ([`with`]) that never
//! span a fiber switch. The layers above keep their
//! own registry refs (each made once, when the state is set up); the cord
//! keeps what every Lua fiber has: its thread and anchors ([`LuaFiber`]).

pub mod threads;

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use mlua::ffi;
use slab::Slab;

pub(crate) use threads::{recycle_thread, reset_thread, take_thread, LuaThread};

use crate::raw::context::Part;
use crate::raw::Stack;
pub use threads::{NewThread, ThreadPoolConfig};

/// The Lua side of one Lua fiber.
pub(crate) struct LuaFiber {
    /// Its thread, which the fiber runs on: reached only through
    /// [`LuaFiber::thread_ptr`] while the fiber lives, and owned again once
    /// it has ended ([`Ended`]).
    thread: LuaThread,
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
    /// Its own max slice (`fiber_obj:set_max_slice`), if set.
    pub max_slice: Option<crate::slice::Slice>,
    /// Lua code keyed something by this fiber's thread and id (box.error's
    /// last error): a pooled request fiber then ends with its request
    /// instead of serving the next one, which would see it.
    pub keyed: bool,
    /// A pooled request fiber waiting for its next request (the report
    /// of blocked fibers leaves it out).
    pub pooled: bool,
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
    /// A request of the IPROTO server: its body reads the error and sends
    /// it to the peer; no traceback is built.
    Reply,
}

impl LuaFiber {
    /// The Lua data of a new fiber that runs on `thread`.
    pub(crate) fn new(thread: LuaThread, errors: ErrorUse) -> LuaFiber {
        LuaFiber {
            thread,
            udata: ffi::LUA_NOREF,
            storage: ffi::LUA_NOREF,
            rc: None,
            traceback: None,
            errors,
            max_slice: None,
            keyed: false,
            pooled: false,
        }
    }

    /// The fiber's thread (the fiber's own code uses it; nothing else may
    /// while the fiber lives).
    pub(crate) fn thread_ptr(&self) -> *mut ffi::lua_State {
        self.thread.as_ptr()
    }

    /// Frees what the fiber held: its object's anchor and its thread.
    #[inline]
    fn free(mut self) {
        let udata = self.udata;
        self.thread.stack().unref(udata);
        recycle_thread(self.thread);
    }
}

/// The Lua data of a Lua fiber that has ended: its thread idle, its values
/// (results or error) on the thread's stack above the message handler.
/// Dropping it frees them.
pub(crate) struct Ended(Option<LuaFiber>);

impl Ended {
    /// Takes the Lua data of the fiber the fiber layer says has ended
    /// (`fiber::join` gave its embedder word `ext`); `None` for a fiber
    /// with none (`ext` 0).
    pub(crate) fn joined(
        id: luafiber_fiber::FiberId,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Ended>, luafiber_fiber::Error> {
        let ext = luafiber_fiber::join(id, timeout)?;
        Ok((ext > 0).then(|| Ended(Some(with(|c| c.fibers.remove(ext - 1))))))
    }

    /// Takes the Lua data of the fiber at `idx` of the cord's fibers.
    ///
    /// # Safety
    ///
    /// That fiber's function has returned and it runs no Lua code any more
    /// (the fiber itself calls this, at its end).
    #[inline]
    pub(crate) unsafe fn own(idx: usize) -> Ended {
        Ended(Some(with(|c| c.fibers.remove(idx))))
    }

    fn lf(&mut self) -> &mut LuaFiber {
        self.0
            .as_mut()
            .expect("an ended fiber's data until dropped")
    }

    /// `lua_pcall`'s result of the fiber's function.
    pub(crate) fn rc(&mut self) -> Option<c_int> {
        self.lf().rc
    }

    /// The traceback its message handler recorded.
    pub(crate) fn take_traceback(&mut self) -> Option<String> {
        self.lf().traceback.take()
    }

    /// The stack of its thread: `[msgh, results...]` or `[msgh, error]`,
    /// for Rust code outside any frame (reading the results, describing
    /// the error: [`Stack::outside`]).
    pub(crate) fn stack(&mut self) -> crate::raw::Outside<'_> {
        let l = self.lf().thread.as_ptr();
        // SAFETY: the fiber has ended: nothing runs on its thread, and
        // `&mut self` makes this the only handle on its stack; the handle is
        // a local of the caller.
        unsafe { Stack::outside(l) }
    }

    /// Moves the `n` values on top of its thread onto `s`.
    ///
    /// # Errors
    ///
    /// "stack overflow" when `s` has no room for them (nothing moves).
    ///
    /// # Panics
    ///
    /// Panics when `s` is not a thread of the cord's state, or the fiber's
    /// thread has fewer than `n` values.
    pub(crate) fn move_to(&mut self, s: &mut Stack, n: c_int) -> crate::raw::LResult<()> {
        let registry = with(|c| c.registry);
        assert_eq!(
            s.to_pointer(ffi::LUA_REGISTRYINDEX),
            registry,
            "another Lua state"
        );
        let from = self.lf().thread.as_ptr();
        assert!(self.stack().top() >= n, "fewer values than moved");
        s.ensure(n)?;
        // SAFETY: two threads of the cord's state (checked); the fiber's is
        // idle, with `n` values.
        unsafe { s.xmove_from(from, n) };
        Ok(())
    }
}

impl Drop for Ended {
    #[inline]
    fn drop(&mut self) {
        if let Some(lf) = self.0.take() {
            lf.free();
        }
    }
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
    /// The cord of the Lua state `lua` (its main thread's stack `main`),
    /// with no fiber yet.
    pub(crate) fn new(
        lua: std::rc::Rc<mlua::Lua>,
        main: &Stack,
        thread_pool: ThreadPoolConfig,
        new_thread: NewThread,
    ) -> Cord {
        let registry = main.to_pointer(ffi::LUA_REGISTRYINDEX);
        let main = main.as_ptr();
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

/// The cord part of the cord context: the cord's Lua state and its
/// fibers' data, from [`install`] until [`uninstall`].
#[derive(Default)]
pub(crate) struct CordSlot(RefCell<Option<Cord>>);

/// Runs `f` on this thread's cord.
///
/// # Panics
///
/// Panics when this thread has no Lua cord (no `LuaRuntime`).
pub(crate) fn with<R>(f: impl FnOnce(&mut Cord) -> R) -> R {
    CordSlot::with(|c| {
        f(c.0
            .borrow_mut()
            .as_mut()
            .expect("this thread has a Lua cord"))
    })
}

/// Like [`with`], `None` when the thread has no cord.
pub(crate) fn try_with<R>(f: impl FnOnce(&mut Cord) -> R) -> Option<R> {
    CordSlot::try_with(|c| c.0.borrow_mut().as_mut().map(f)).flatten()
}

/// Like [`try_with`], `None` also while the cord is borrowed: for a Lua
/// hook, which may run inside any Lua code.
pub(crate) fn peek_with<R>(f: impl FnOnce(&mut Cord) -> R) -> Option<R> {
    CordSlot::try_with(|c| c.0.try_borrow_mut().ok()?.as_mut().map(f)).flatten()
}

/// Makes `cord` this thread's cord (its context is installed).
pub(crate) fn install(cord: Cord) {
    CordSlot::with(|c| *c.0.borrow_mut() = Some(cord));
}

/// Takes this thread's cord away (its runtime is going).
pub(crate) fn uninstall() -> Option<Cord> {
    CordSlot::try_with(|c| c.0.borrow_mut().take()).flatten()
}

/// Whether this thread has a cord.
pub(crate) fn is_installed() -> bool {
    CordSlot::try_with(|c| c.0.borrow().is_some()) == Some(true)
}
