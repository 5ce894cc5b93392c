//! `fiber.cond()`: Tarantool's `fiber_cond.c` over the fiber layer's
//! [`Cond`]. On LuaJIT `wait`, `signal` and `broadcast` are Lua wrappers
//! ([`wrappers`](super::wrappers)) for the common case.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use luafiber_fiber::Cond;
use mlua::ffi;

use crate::raw::{api, error, lua_fn, LResult, Raise};

thread_local! {
    /// The cond metatable: its registry ref and address.
    static COND_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
}

fn cond<'a>(l: *mut ffi::lua_State, usage: &str) -> LResult<&'a Cond> {
    // SAFETY: argument 1 of a lua_fn body.
    unsafe { api::check_udata(l, 1, COND_MT.with(Cell::get).1) }
        .ok_or_else(|| Raise::illegal(usage))
}

lua_fn! {
    /// `fiber.cond()`: a condition variable.
    pub(crate) fn cond_new(l) {
        // SAFETY: room for one result.
        unsafe { api::new_udata(l, Cond::new(), COND_MT.with(Cell::get).0) };
        Ok(1)
    }
}

lua_fn! {
    /// `cond:wait([timeout])`: true when signalled, false on timeout; raises
    /// `FiberIsCancelled` when the fiber is cancelled. `"Usage:
    /// cond:wait([timeout])"` for a bad timeout.
    fn cond_wait(l) {
        const USAGE: &str = "Usage: cond:wait([timeout])";
        let c = cond(l, USAGE)?;
        // SAFETY: arguments are on `l`.
        let timeout = unsafe { api::opt_timeout(l, 2, USAGE)? };
        // SAFETY: `l` is the calling state.
        unsafe { crate::fiber::check_switch(l, "cond:wait")? };
        let signalled = c.wait(timeout).map_err(error::from_fiber)?;
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushboolean(l, c_int::from(signalled)) };
        Ok(1)
    }
}

lua_fn! {
    /// `cond:wait()` for `lua/channel.lua`, which checked that argument 1 is
    /// a cond and that no timeout is given. Returns nothing: with no
    /// timeout, a wait that returns was signalled (the wrapper returns
    /// `true`); a cancelled wait returns its `FiberIsCancelled` error
    /// object, which the wrapper raises (an error raised from Lua unwinds
    /// two native frames fewer than one raised here: about a fifth of a
    /// cancelled fiber's end on LuaJIT).
    pub(super) fn cond_wait_unchecked(l) {
        // SAFETY: argument 1 is a cond userdata (the caller checked its
        // metatable); the cond lives while it is on the stack.
        let c = unsafe { &*crate::luajit::entry::arg1_udata(l).cast::<Cond>() };
        // SAFETY: `l` is the calling state.
        unsafe { crate::fiber::check_switch(l, "cond:wait")? };
        match c.wait(None) {
            Ok(signalled) => {
                debug_assert!(signalled, "a wait with no timeout ends signalled");
                Ok(0)
            }
            Err(e) => {
                // SAFETY: room for the error object (LUA_MINSTACK).
                unsafe { error::push_error(l, error::from_fiber(e)) };
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `cond:signal()`: wakes the first waiter.
    fn cond_signal(l) {
        cond(l, "Usage: cond:signal()")?.signal();
        Ok(0)
    }
}

lua_fn! {
    /// `cond:broadcast()`: wakes every waiter.
    fn cond_broadcast(l) {
        cond(l, "Usage: cond:broadcast()")?.broadcast();
        Ok(0)
    }
}

lua_fn! {
    /// `__tostring`: "cond", as in Tarantool.
    fn cond_tostring(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushstring(l, c"cond".as_ptr()) };
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: drops the cond.
    fn cond_gc(l) {
        // SAFETY: `__gc` of a cond userdata, never used again after this.
        unsafe {
            if api::check_udata::<Cond>(l, 1, COND_MT.with(Cell::get).1).is_some() {
                std::ptr::drop_in_place(ffi::lua_touserdata(l, 1).cast::<Cond>());
                ffi::lua_pushnil(l);
                ffi::lua_setmetatable(l, 1);
            }
        }
        Ok(0)
    }
}

/// Makes the cond metatable; returns its registry ref.
///
/// # Safety
///
/// `l` is the cord's main state, at setup.
pub(super) unsafe fn init(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: caller's contract.
    let mt = unsafe {
        api::make_mt(
            l,
            c"fiber.cond",
            &[
                (c"wait", cond_wait),
                (c"signal", cond_signal),
                (c"broadcast", cond_broadcast),
            ],
            &[(c"__tostring", cond_tostring), (c"__gc", cond_gc)],
        )
    };
    COND_MT.with(|m| m.set(mt));
    mt.0
}
