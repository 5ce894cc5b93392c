//! The last error of the C module API (Tarantool's diagnostics area, which
//! `luaT_error` raises): set by a function that fails, read by `luaT_error`.
//!
//! Difference from Tarantool: the area is per cord (its context), not per
//! fiber, so C code reads it before its fiber yields; a fiber made by
//! `fiber_new` that returns non-zero hands its error to its joiner, as in
//! Tarantool.

use std::cell::RefCell;

use crate::raw::context::Part;
use crate::raw::error::ErrorKind;

/// One error: its kind (the error object's `type`) and message.
#[derive(Clone, Debug)]
pub(crate) struct Diag {
    pub kind: ErrorKind,
    pub message: String,
    /// The error object's `type` when it is none of [`ErrorKind`]'s (a Lua
    /// error caught by `luaT_call`: `LuajitError`, or an error object's own).
    pub type_name: Option<String>,
}

/// Per-cord state of the C API's diagnostics area (a part of the cord
/// context): the last error.
#[derive(Default)]
pub(crate) struct LastDiag(RefCell<Option<Diag>>);

/// Records `message` of `kind` as the last error.
pub(crate) fn set(kind: ErrorKind, message: impl Into<String>) {
    let diag = Diag {
        kind,
        message: message.into(),
        type_name: None,
    };
    LastDiag::try_with(|l| *l.0.borrow_mut() = Some(diag));
}

/// Records `diag` (or clears the area with `None`).
pub(crate) fn put(diag: Option<Diag>) {
    LastDiag::try_with(|l| *l.0.borrow_mut() = diag);
}

/// The last error, if any (it stays set).
pub(crate) fn last() -> Option<Diag> {
    LastDiag::try_with(|l| l.0.borrow().clone()).flatten()
}

/// Records the fiber layer's error `e`, as the Lua modules map it.
pub(crate) fn set_fiber_error(e: luafiber_fiber::Error) {
    use luafiber_fiber::Error as E;
    let kind = match e {
        E::Cancelled => ErrorKind::FiberIsCancelled,
        // Tarantool's message for a C API wait that timed out.
        E::TimedOut => return set(ErrorKind::TimedOut, "Timeout exceeded"),
        E::Stack(_) => ErrorKind::OutOfMemory,
        _ => ErrorKind::IllegalParams,
    };
    set(kind, e.to_string());
}
