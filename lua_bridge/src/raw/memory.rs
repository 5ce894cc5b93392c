//! The Lua memory limit, enforced by the bridge's own allocator.
//!
//! An allocation past the limit fails (Lua raises "not enough memory") only
//! while Lua code runs: inside the bridge's C function bodies (counted in the
//! fiber layer's per-fiber word by `frame::protect` and `frame::protect_c`:
//! raw rule 3) it succeeds, unless a body asks for the limit again
//! (`frame::with_limit`, around a protected call), because a
//! Lua error raised there would have to cross Rust's `catch_unwind`, which
//! aborts on LuaJIT. The code that asked then fails at its next allocation.
//! Allocation itself is delegated to the allocator below (the small-block
//! pool of [`super::heap`] over mlua's).

use std::cell::Cell;
use std::ffi::c_void;

use luafiber_fiber as fiber;
use mlua::ffi;

use super::context::Part;

/// Per-cord state of the memory limit (a part of the cord context):
/// whether the cord's state has a limit ([`set_limit`] ran). Only then
/// does the per-fiber word of `frame::protect` matter: [`limited_alloc`]
/// is its only reader, and a state's allocator runs on the state's own
/// thread.
#[derive(Default)]
pub(crate) struct Limited(Cell<bool>);

/// Whether the cord's Lua state has a memory limit (then bridge C function
/// bodies must be counted, see the module doc); false with no cord.
#[inline(always)]
pub fn limited() -> bool {
    Limited::try_with(|l| l.0.get()) == Some(true)
}

struct Limit {
    inner: ffi::lua_Alloc,
    inner_ud: *mut c_void,
    used: Cell<usize>,
    limit: usize,
}

/// # Safety
///
/// Lua calls it as its allocator, `ud` the state's [`Limit`], with
/// `lua_Alloc`'s contract for `ptr`, `osize` and `nsize`.
unsafe extern "C" fn limited_alloc(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    // SAFETY: `ud` is the leaked `Limit` installed with this function.
    let lim = unsafe { &*ud.cast::<Limit>() };
    // With no block, `osize` is a type tag, not a size.
    let old = if ptr.is_null() { 0 } else { osize };
    if nsize > old && lim.used.get() + (nsize - old) > lim.limit && fiber::fiber_word() == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the inner allocator gets exactly what Lua gave.
    let p = unsafe { (lim.inner)(lim.inner_ud, ptr, osize, nsize) };
    if nsize == 0 {
        lim.used.set(lim.used.get() - old);
    } else if !p.is_null() {
        lim.used.set(lim.used.get() - old + nsize);
    }
    p
}

/// Caps the Lua heap of `main`'s state at `limit` bytes.
///
/// # Safety
///
/// `main` is the main thread of an idle state that has allocated
/// `used` bytes so far; called once.
pub unsafe fn set_limit(main: *mut ffi::lua_State, used: usize, limit: usize) {
    // SAFETY: caller's contract; the `Limit` is leaked, so it outlives the
    // state (it is a few words per runtime).
    unsafe {
        let mut inner_ud = std::ptr::null_mut();
        let inner = ffi::lua_getallocf(main, &mut inner_ud);
        let lim = Box::leak(Box::new(Limit {
            inner,
            inner_ud,
            used: Cell::new(used),
            limit,
        }));
        ffi::lua_setallocf(main, limited_alloc, (lim as *mut Limit).cast());
    }
    Limited::with(|l| l.0.set(true));
}
