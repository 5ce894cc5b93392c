//! The Lua memory limit, enforced by the bridge's own allocator.
//!
//! An allocation past the limit fails (Lua raises "not enough memory") only
//! while Lua code runs: inside the bridge's C function bodies (counted in the
//! fiber layer's per-fiber word by `frame::protect` and `frame::protect_c`:
//! raw rule 3) it succeeds, unless a body asks for the limit again
//! ([`with_limit`], around a protected call), because a
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
    limit: Cell<usize>,
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
    if nsize > old && lim.used.get() + (nsize - old) > lim.limit.get() && fiber::fiber_word() == 0 {
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

/// A scope whose Lua allocations never fail on the memory limit (see the
/// module doc): counted in the running fiber's word (the thread's, outside
/// any fiber) while it lives, on a thread with a limit; elsewhere it costs
/// one thread-local read. Dropped in the fiber (or outside any fiber)
/// where it was made, in the reverse order of making.
pub struct Exempt(Option<usize>);

impl Exempt {
    /// Enters the scope.
    #[inline(always)]
    pub fn enter() -> Exempt {
        if !limited() {
            return Exempt(None);
        }
        let depth = fiber::fiber_word();
        fiber::set_fiber_word(depth + 1);
        Exempt(Some(depth))
    }
}

impl Drop for Exempt {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(depth) = self.0 {
            fiber::set_fiber_word(depth);
        }
    }
}

/// Runs `f`, a protected call of Lua code, with the memory limit in force
/// even inside an [`Exempt`] scope (a C function's body, the Rust code
/// around a fiber's call, a Rust caller's stack handle): an allocation
/// past the limit raises "not enough memory" in the Lua code, which the
/// protected call catches. For Lua code that Rust code calls: a C module's
/// `luaT_call`, a fiber's function, a `__tostring` that describes an
/// error.
pub fn with_limit<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            fiber::set_fiber_word(self.0);
        }
    }
    if !limited() {
        return f();
    }
    let _restore = Restore(fiber::fiber_word());
    fiber::set_fiber_word(0);
    f()
}

/// The limit of `l`'s state, if it has one. Without one (the usual case)
/// the cord's flag answers with no C call: only [`set_limit`] installs
/// `limited_alloc`, and it sets the flag of the thread's one context.
///
/// # Safety
///
/// `l` is a valid state of this thread.
#[inline(always)]
unsafe fn limit_of<'a>(l: *mut ffi::lua_State) -> Option<&'a Limit> {
    if !limited() {
        return None;
    }
    let mut ud = std::ptr::null_mut();
    // SAFETY: caller's contract; reading the allocator raises nothing.
    let f = unsafe { ffi::lua_getallocf(l, &mut ud) };
    // SAFETY: with `limited_alloc` as the allocator, `ud` is its leaked
    // `Limit`, which lives as long as the process.
    std::ptr::fn_addr_eq(f, limited_alloc as ffi::lua_Alloc)
        .then(|| unsafe { &*ud.cast::<Limit>() })
}

/// The bytes `l`'s state has allocated, when it has a memory limit.
///
/// # Safety
///
/// `l` is a valid state of this thread.
pub unsafe fn used(l: *mut ffi::lua_State) -> Option<usize> {
    // SAFETY: caller's contract.
    unsafe { limit_of(l) }.map(|lim| lim.used.get())
}

/// Whether `l`'s state has a memory limit and has allocated more than it
/// (which only an [`Exempt`] scope or a C function's body can do): then
/// nothing more should be kept for later (a pooled Lua thread), or the
/// heap could stay past the limit with no room left to run the Lua code
/// that would let go of its data.
///
/// # Safety
///
/// `l` is a valid state of this thread.
pub unsafe fn past_limit(l: *mut ffi::lua_State) -> bool {
    // SAFETY: caller's contract.
    unsafe { limit_of(l) }.is_some_and(|lim| lim.used.get() > lim.limit.get())
}

/// Whether `l`'s state, which had allocated `before` bytes, has allocated
/// more since and is now past its memory limit (which only an [`Exempt`]
/// scope or a C function's body can do). Garbage past the limit that was
/// there before (what an earlier exempt scope left) does not count: only
/// new allocations do.
///
/// # Safety
///
/// `l` is a valid state of this thread.
pub unsafe fn grew_past_limit(l: *mut ffi::lua_State, before: Option<usize>) -> bool {
    // SAFETY: caller's contract.
    unsafe { limit_of(l) }.is_some_and(|lim| {
        let now = lim.used.get();
        now > lim.limit.get() && before.is_some_and(|b| now > b)
    })
}

/// Lifts the memory limit of `l`'s state for good: for its close, whose
/// collection and finalizers must not fail half-way.
///
/// # Safety
///
/// `l` is a valid state of this thread.
pub unsafe fn lift(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    if let Some(lim) = unsafe { limit_of(l) } {
        lim.limit.set(usize::MAX);
    }
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
            limit: Cell::new(limit),
        }));
        ffi::lua_setallocf(main, limited_alloc, (lim as *mut Limit).cast());
    }
    Limited::with(|l| l.0.set(true));
}
