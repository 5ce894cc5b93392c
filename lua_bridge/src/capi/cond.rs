//! `fiber_cond_*` of the C module API (Tarantool's `fiber_cond.h`): a
//! [`luafiber_fiber::Cond`] behind a pointer.
//!
//! Difference from Tarantool: a wait ends on a signal, a broadcast, its
//! timeout or a cancel, not on a plain `fiber_wakeup` (no spurious
//! wakeups); C code that loops on its predicate, as Tarantool advises, works
//! the same.

use std::ffi::c_int;

use luafiber_fiber::{Cond, Error};

use super::{diag, guard, may_switch};
use crate::raw::error::ErrorKind;

/// `struct fiber_cond`, opaque to C.
pub struct FiberCond(Cond);

/// `fiber_cond_new()`: a new cond.
#[no_mangle]
pub extern "C" fn fiber_cond_new() -> *mut FiberCond {
    guard("fiber_cond_new", std::ptr::null_mut(), || {
        Box::into_raw(Box::new(FiberCond(Cond::new())))
    })
}

capi! {
    /// `fiber_cond_delete(cond)`: frees the cond; no fiber may wait on it.
    ///
    /// # Safety
    ///
    /// `cond` is NULL or from [`fiber_cond_new`], not deleted yet, with no
    /// waiter.
    fn fiber_cond_delete(cond: *mut FiberCond => Option<Box<FiberCond>>) {
        if let Some(c) = cond {
            guard("fiber_cond_delete", (), || drop(c));
        }
    }
}

capi! {
    /// `fiber_cond_signal(cond)`: wakes the fiber that has waited longest,
    /// if any.
    ///
    /// # Safety
    ///
    /// `cond` is NULL or from [`fiber_cond_new`], not deleted.
    fn fiber_cond_signal(cond: *const FiberCond => Option<&FiberCond>) {
        if let Some(c) = cond {
            guard("fiber_cond_signal", (), || c.0.signal());
        }
    }
}

capi! {
    /// `fiber_cond_broadcast(cond)`: wakes every waiting fiber.
    ///
    /// # Safety
    ///
    /// `cond` is NULL or from [`fiber_cond_new`], not deleted.
    fn fiber_cond_broadcast(cond: *const FiberCond => Option<&FiberCond>) {
        if let Some(c) = cond {
            guard("fiber_cond_broadcast", (), || c.0.broadcast());
        }
    }
}

capi! {
    /// `fiber_cond_wait_timeout(cond, timeout)`: waits for a signal, at most
    /// `timeout` seconds; 0 when signalled, -1 on timeout (`TimedOut`) or
    /// cancel (`FiberIsCancelled`) with the error in the diagnostics. A NaN
    /// `timeout` is refused at once (-1, `IllegalParams`).
    ///
    /// # Safety
    ///
    /// `cond` is NULL or from [`fiber_cond_new`], and outlives the wait.
    fn fiber_cond_wait_timeout(
        cond: *const FiberCond => Option<&FiberCond>,
        timeout: f64,
    ) -> c_int {
        wait(cond, timeout)
    }
}

capi! {
    /// `fiber_cond_wait(cond)`: [`fiber_cond_wait_timeout`] with no
    /// timeout.
    ///
    /// # Safety
    ///
    /// As [`fiber_cond_wait_timeout`].
    fn fiber_cond_wait(cond: *const FiberCond => Option<&FiberCond>) -> c_int {
        wait(cond, f64::INFINITY)
    }
}

/// The wait of [`fiber_cond_wait_timeout`].
fn wait(cond: Option<&FiberCond>, timeout: f64) -> c_int {
    let Some(c) = cond else {
        diag::set(
            ErrorKind::IllegalParams,
            "fiber_cond_wait: the cond is NULL",
        );
        return -1;
    };
    guard("fiber_cond_wait", -1, || {
        if !may_switch("fiber_cond_wait") {
            return -1;
        }
        let Ok(timeout) = super::fiber::timeout(timeout, "fiber_cond_wait") else {
            return -1;
        };
        match c.0.wait_tarantool(timeout) {
            Ok(true) => 0,
            Ok(false) => {
                diag::set_fiber_error(Error::TimedOut);
                -1
            }
            Err(e) => {
                diag::set_fiber_error(e);
                -1
            }
        }
    })
}
