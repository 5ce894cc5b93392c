//! The cord's Lua threads: made through a cached wrapper ref (pushed once,
//! called by `lua_rawgeti` + `lua_pcall`: no C function is pushed per
//! thread, and running out of memory is a Lua error), anchored by a
//! registry ref for a fiber's whole life, and pooled once the fiber is done
//! (reset, its globals restored).

use std::ffi::c_int;

use mlua::ffi;

use super::with;
use crate::raw::context::{Part, RegRef};
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, LResult, Raise, Stack};

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

/// How a new fiber's Lua thread is made when the pool has none: a bench
/// knob (`--cfg luafiber_bench`, see `benches/`); the product always uses
/// [`NewThread::CachedRef`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(not(luafiber_bench), allow(dead_code))]
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

/// A Lua thread anchored by a registry ref, owned: outside a
/// [`LuaFiber`](super::LuaFiber) (in the pool, or on its way to or from a
/// fiber) nothing runs on it.
pub(crate) struct LuaThread {
    l: *mut ffi::lua_State,
    anchor: c_int,
}

impl LuaThread {
    /// The thread's state.
    pub(crate) fn as_ptr(&self) -> *mut ffi::lua_State {
        self.l
    }

    /// Its stack: nothing runs on an owned thread (the type's invariant).
    pub(crate) fn stack(&mut self) -> Stack<'_> {
        // SAFETY: an owned thread is idle, and `&mut self` makes this the
        // only handle on its stack.
        unsafe { Stack::from_state(self.l) }
    }
}

/// Per-cord state of thread creation (a part of the cord context):
/// registry ref of [`newthread_wrapper`] in the cord's state.
#[derive(Default)]
pub(crate) struct NewThreadRef(RegRef);

/// Makes the registry ref of the wrapper; once per state, at setup.
pub(crate) fn init(s: &mut Stack) {
    s.push_cfunction(newthread_wrapper);
    NewThreadRef::with(|n| n.0.set(s.make_ref()));
}

lua_fn! {
    /// Made once and called by registry ref: `lua_newthread`, anchored at
    /// once by a registry ref; returns the thread and the ref.
    fn newthread_wrapper(s: &mut Stack) {
        s.push_new_thread();
        s.push_value(-1);
        let anchor = s.make_ref();
        s.push_int(anchor.into());
        Ok(2)
    }
}

fn no_memory() -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// Takes a Lua thread for a new fiber: a pooled one, or a new one made by
/// the cached wrapper ref. A new thread is also left on top of `s` (so the GC
/// cannot take it during setup); the result says whether it was.
///
/// # Errors
///
/// `OutOfMemory` when no thread can be made.
pub(crate) fn take_thread(s: &mut Stack) -> LResult<(LuaThread, bool)> {
    if let Some(t) = with(|c| c.threads.pop()) {
        return Ok((t, false));
    }
    let how = with(|c| c.new_thread);
    match how {
        NewThread::CachedRef => s.push_ref(NewThreadRef::with(|n| n.0.get())),
        NewThread::PushPerCall => s.push_cfunction(newthread_wrapper),
        #[cfg(feature = "luajit")]
        NewThread::Cpcall => return cpcall_thread(s),
    }
    // The wrapper runs under lua_pcall, which catches its out of memory.
    if s.pcall(0, 2).is_err() {
        s.pop(1);
        return Err(no_memory());
    }
    let anchor = s.to_integer(-1).unwrap_or(0) as c_int;
    s.pop(1);
    Ok((
        LuaThread {
            l: s.to_thread(-1),
            anchor,
        },
        true,
    ))
}

/// The `lua_cpcall` variant (Tarantool 2.6.0's `luaT_newthread`).
#[cfg(feature = "luajit")]
fn cpcall_thread(s: &mut Stack) -> LResult<(LuaThread, bool)> {
    /// # Safety
    ///
    /// Run by `lua_cpcall` with the out-slot as a light userdata.
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
    s.ensure(1)?;
    // SAFETY: `out` outlives the protected call, which writes it; the call
    // leaves nothing on the stack but an error message.
    let failed = unsafe {
        let failed = ffi::lua_cpcall(
            s.as_ptr(),
            crate::raw::wide_cfn!(body),
            (&raw mut out).cast(),
        ) != 0;
        s.sync();
        failed
    };
    if failed {
        s.pop(1);
        return Err(no_memory());
    }
    s.push_ref(out.anchor);
    Ok((out, true))
}

/// Gives a thread back: reset and pooled, or unanchored (the GC then takes
/// it) when the pool is full or off, or when the Lua heap is past its
/// memory limit (threads made by exempt C function bodies would keep it
/// there, and on Lua 5.4 even a call needs a little memory). A pooled thread keeps nothing a fiber
/// can set on its thread: its stack is emptied, its environment (LuaJIT's
/// `setfenv(0, ...)`) and its debug hook (Lua 5.4's `debug.sethook`) are
/// reset, so nothing of it reaches the next fiber.
pub(crate) fn recycle_thread(t: LuaThread) {
    let (main, room) = with(|c| (c.main, c.threads.len() < c.thread_pool.max));
    // SAFETY: an owned thread is idle (the type's invariant), a thread of
    // the cord's state as `main` is; these calls do not allocate.
    unsafe {
        let keep = room && !crate::raw::memory::past_limit(main);
        ffi::lua_settop(t.l, 0);
        if keep && reset_thread(main, t.l) {
            with(|c| c.threads.push(t));
        } else {
            ffi::luaL_unref(main, ffi::LUA_REGISTRYINDEX, t.anchor);
        }
    }
}

/// The globals of `main` back as the environment of `l` (LuaJIT), when a
/// fiber moved them (rare: out of line); `false` when `l` has no slot for
/// the move and none can be had.
///
/// # Safety
///
/// As [`reset_thread`].
#[cfg(feature = "luajit")]
#[cold]
#[inline(never)]
unsafe fn restore_globals(main: *mut ffi::lua_State, l: *mut ffi::lua_State) -> bool {
    // SAFETY: the caller's contract; the slot is checked for first.
    unsafe {
        if ffi::lua_checkstack(l, 1) == 0 {
            return false;
        }
        ffi::lua_pushvalue(main, ffi::LUA_GLOBALSINDEX);
        ffi::lua_xmove(main, l, 1);
        ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
    }
    true
}

/// Resets what a fiber can set on its Lua thread `l` besides its stack:
/// its environment (LuaJIT's `setfenv(0, ...)`: back to the globals of
/// `main`) and its debug hook (Lua 5.4's `debug.sethook`; LuaJIT's is per
/// state). Leaves `l`'s stack as it was. `false` when the environment
/// could not be reset (LuaJIT: no stack slot could be had for the move,
/// the heap is out of memory): the thread must not be reused.
///
/// # Safety
///
/// `l` is an idle thread of the state whose main thread is `main` (no Lua
/// code runs on it). Nothing allocates but the growth of `l`'s stack by
/// a slot, when the environment moved and the stack is full.
#[inline]
pub(crate) unsafe fn reset_thread(main: *mut ffi::lua_State, l: *mut ffi::lua_State) -> bool {
    // SAFETY: the caller's contract.
    unsafe {
        // setfenv(0, ...) is per thread on LuaJIT: restore the globals
        // (when they changed: a look at both is cheaper than the move).
        #[cfg(feature = "luajit")]
        let moved = match crate::luajit::entry::entry() {
            Some(e) => e.globals(l) != e.globals(main),
            None => {
                ffi::lua_topointer(l, ffi::LUA_GLOBALSINDEX)
                    != ffi::lua_topointer(main, ffi::LUA_GLOBALSINDEX)
            }
        };
        #[cfg(feature = "luajit")]
        if moved {
            return restore_globals(main, l);
        }
        // Lua 5.4's hooks are per thread (LuaJIT's per state).
        #[cfg(not(feature = "luajit"))]
        {
            let _ = main;
            ffi::lua_sethook(l, None, 0, 0);
        }
    }
    true
}
