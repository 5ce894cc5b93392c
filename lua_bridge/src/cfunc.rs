//! The frame every Lua-callable C function of the bridge runs in.
//!
//! Rules (DESIGN.md, "Hard rules"):
//!
//! 1. No Rust panic crosses a Lua frame: the body runs under `catch_unwind`,
//!    and a panic becomes a Lua error.
//! 2. No Lua error crosses a Rust frame that owns something: the body returns
//!    [`Raise`] instead of raising, and [`protect`] calls `lua_error` only
//!    after the body and every value it owned are dropped.

use std::ffi::c_int;
use std::panic::{self, AssertUnwindSafe};

use mlua::ffi;

use crate::error::{push_error, ErrorKind};

/// An error a C function body asks [`protect`] to raise.
#[derive(Debug)]
pub enum Raise {
    /// Raise an error object of this kind with this message.
    Error(ErrorKind, String),
    /// Raise the value on top of the Lua stack as it is.
    Top,
}

impl Raise {
    /// An `IllegalParams` error object with `msg`.
    pub fn illegal(msg: impl Into<String>) -> Raise {
        Raise::Error(ErrorKind::IllegalParams, msg.into())
    }
}

/// What a C function body returns: the number of results it pushed.
pub type LResult<T = c_int> = Result<T, Raise>;

/// Runs `body` as the body of a `lua_CFunction` called on `l`: returns its
/// result count, or raises its error (rules 1 and 2).
///
/// # Safety
///
/// `l` must be the state the C function was called with; `protect` must be
/// the last thing the C function does.
#[inline(always)]
pub unsafe fn protect(l: *mut ffi::lua_State, body: impl FnOnce() -> LResult) -> c_int {
    let raise = match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(n)) => return n,
        Ok(Err(raise)) => raise,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Raise::Error(ErrorKind::Panic, format!("Rust panic: {msg}"))
        }
    };
    // SAFETY: `l` is the calling state (contract); `push_error` consumes
    // `raise` and drops every Rust value it made before returning.
    unsafe {
        push_error(l, raise);
        ffi::lua_error(l)
    }
}

/// Declares `unsafe extern "C-unwind" fn $name(l) -> c_int` whose body runs
/// under [`protect`].
#[macro_export]
#[doc(hidden)]
macro_rules! lua_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($l:ident) $body:block) => {
        $(#[$m])*
        $vis unsafe extern "C-unwind" fn $name($l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
            let body = || $body;
            // SAFETY: called by Lua with its own state; `protect` is the last
            // thing this function does.
            unsafe { $crate::cfunc::protect($l, body) }
        }
    };
}
