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

/// `fiber_cond_delete(cond)`: frees the cond; no fiber may wait on it.
///
/// # Safety
///
/// `cond` is NULL or from [`fiber_cond_new`], not deleted yet, with no
/// waiter.
#[no_mangle]
pub unsafe extern "C" fn fiber_cond_delete(cond: *mut FiberCond) {
    if !cond.is_null() {
        // SAFETY: made by `Box::into_raw` in `fiber_cond_new` (contract).
        let c = unsafe { Box::from_raw(cond) };
        guard("fiber_cond_delete", (), || drop(c));
    }
}

/// `fiber_cond_signal(cond)`: wakes the fiber that has waited longest, if
/// any.
///
/// # Safety
///
/// `cond` is from [`fiber_cond_new`], not deleted.
#[no_mangle]
pub unsafe extern "C" fn fiber_cond_signal(cond: *mut FiberCond) {
    // SAFETY: a live cond (contract).
    if let Some(c) = unsafe { cond.as_ref() } {
        guard("fiber_cond_signal", (), || c.0.signal());
    }
}

/// `fiber_cond_broadcast(cond)`: wakes every waiting fiber.
///
/// # Safety
///
/// `cond` is from [`fiber_cond_new`], not deleted.
#[no_mangle]
pub unsafe extern "C" fn fiber_cond_broadcast(cond: *mut FiberCond) {
    // SAFETY: a live cond (contract).
    if let Some(c) = unsafe { cond.as_ref() } {
        guard("fiber_cond_broadcast", (), || c.0.broadcast());
    }
}

/// `fiber_cond_wait_timeout(cond, timeout)`: waits for a signal, at most
/// `timeout` seconds; 0 when signalled, -1 on timeout (`TimedOut`) or
/// cancel (`FiberIsCancelled`) with the error in the diagnostics.
///
/// # Safety
///
/// `cond` is from [`fiber_cond_new`] and outlives the wait.
#[no_mangle]
pub unsafe extern "C" fn fiber_cond_wait_timeout(cond: *mut FiberCond, timeout: f64) -> c_int {
    // SAFETY: a live cond for the whole wait (contract).
    let Some(c) = (unsafe { cond.as_ref() }) else {
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
        match c.0.wait(super::fiber::timeout(timeout)) {
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

/// `fiber_cond_wait(cond)`: [`fiber_cond_wait_timeout`] with no timeout.
///
/// # Safety
///
/// As [`fiber_cond_wait_timeout`].
#[no_mangle]
pub unsafe extern "C" fn fiber_cond_wait(cond: *mut FiberCond) -> c_int {
    // SAFETY: the same contract.
    unsafe { fiber_cond_wait_timeout(cond, f64::INFINITY) }
}
