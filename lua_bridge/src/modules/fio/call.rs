//! How a `fio` function runs its system call: on the cord's blocking pool
//! ([`run_blocking`](luafiber_runtime::io::run_blocking)), the calling
//! fiber parked meanwhile and the other fibers running, as Tarantool's
//! `coio` runs them on libeio's threads; and how its result reaches Lua
//! (`nil, err` or `false, err` with `errno()` set, `err` a `SystemError`
//! object whose message is `"fio: " .. strerror(errno)`, as master's
//! `diag_set(SystemError, "fio")`).

use std::ffi::c_int;
use std::io;

use luafiber_runtime::io as rio;

use crate::modules::errno;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{LResult, Raise, Stack};

/// Runs `f` on the blocking pool and parks the fiber until it is done;
/// where the fiber may not switch (outside any fiber, in a `__gc`
/// finalizer, under an mlua callback) `f` runs here, blocking the cord, as
/// a plain system call would.
///
/// # Errors
///
/// `FiberIsCancelled` when the fiber is cancelled while it waits (`f` runs
/// on to its end; what it returns is dropped). `f` owns what it works on
/// (a copy of the bytes to write, the buffer it reads into), so nothing it
/// touches is freed under it.
pub(crate) fn blocking<T, F>(s: &mut Stack, f: F) -> LResult<io::Result<T>>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    if crate::fiber::check_switch(s, "fio").is_err() {
        return Ok(f());
    }
    let r = rio::run_blocking(f, None);
    // SAFETY: the stack is as the C API left it: the switch ran other
    // fibers on their own Lua threads, and nothing wrote to this one.
    unsafe { s.sync() };
    match r {
        Ok(r) => Ok(r),
        Err(e) if rio::is_cancelled(&e) => Err(Raise::Error(
            ErrorKind::FiberIsCancelled,
            "fiber is cancelled".into(),
        )),
        // No pool thread could be made: the call's own error.
        Err(e) => Ok(Err(e)),
    }
}

/// The errno of `e` (`EIO` when it has none).
pub(super) fn errno_of(e: &io::Error) -> c_int {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Sets `errno()` and pushes the `SystemError` object of `e`.
pub(super) fn push_error(s: &mut Stack, e: &io::Error) {
    let code = errno_of(e);
    errno::set(code);
    error::push(
        s,
        ErrorKind::SystemError,
        &format!("fio: {}", errno::strerror(code)),
    );
}

/// Pushes `nil, err` for `e`: 2 results.
pub(super) fn push_nil_error(s: &mut Stack, e: &io::Error) -> LResult {
    s.ensure(8)?;
    s.push_nil();
    push_error(s, e);
    Ok(2)
}

/// Pushes `true`, or `false, err` (master's `lbox_fio_pushbool`).
pub(super) fn push_bool(s: &mut Stack, r: io::Result<()>) -> LResult {
    s.ensure(8)?;
    match r {
        Ok(()) => {
            s.push_bool(true);
            Ok(1)
        }
        Err(e) => {
            s.push_bool(false);
            push_error(s, &e);
            Ok(2)
        }
    }
}

/// A string argument, as `lua_tostring` gives it (a number is converted);
/// `None` for anything else.
pub(super) fn text(s: &mut Stack, idx: c_int) -> Option<Vec<u8>> {
    s.coerce_str(idx).map(<[u8]>::to_vec)
}

/// Raises `msg` as a string, as master's `luaL_error` does in `fio.c`.
pub(super) fn usage(msg: &str) -> Raise {
    Raise::Message(msg.into())
}
