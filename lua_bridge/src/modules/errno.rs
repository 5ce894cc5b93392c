//! The Lua `errno` module: Tarantool's `src/lua/errno.lua` and `errno.c`.
//!
//! `errno()` gives the errno of the last failed call of the bridge's
//! modules on this thread (a `socket` call that returned `nil`),
//! `errno(n)` sets it and gives the one before; `errno.EAGAIN` and the
//! other constants of Tarantool's list are the system's numbers (a new
//! field raises "Can't create new errno constants"); `errno.strerror([n])`
//! is `strerror(3)` of `n` (default: `errno()`).
//!
//! Difference from Tarantool: its `errno()` is LuaJIT's `ffi.errno()`, the
//! C `errno` after the last FFI call; here it is the bridge's own copy,
//! set by the calls that fail (the C `errno` changes under the scheduler
//! and the allocator between any two Lua calls).

use std::cell::Cell;
use std::ffi::{c_int, CStr};

use crate::raw::context::Part;
use crate::raw::{lua_fn, Raise, Stack};

/// Per-cord state of `errno` (a part of the cord context): the cord's
/// Lua errno.
#[derive(Default)]
pub(crate) struct Errno(Cell<c_int>);

/// Sets the Lua errno (what a failed call leaves for `errno()`).
#[inline]
pub(crate) fn set(e: c_int) {
    Errno::try_with(|c| c.0.set(e));
}

/// The Lua errno.
pub(crate) fn get() -> c_int {
    Errno::try_with(|c| c.0.get()).unwrap_or(0)
}

/// `strerror(3)` of `e`.
pub(crate) fn strerror(e: c_int) -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is valid for its length; the XSI/GNU variant libc binds
    // writes a NUL-terminated message into it.
    let rc = unsafe { libc::strerror_r(e, buf.as_mut_ptr().cast(), buf.len()) };
    match CStr::from_bytes_until_nul(&buf) {
        Ok(m) if rc == 0 && !m.is_empty() => m.to_string_lossy().into_owned(),
        _ => format!("Unknown error {e}"),
    }
}

/// The text of `e` as Tarantool's messages give a system error: an OS
/// error's `strerror(3)` text without Rust's ` (os error N)` suffix
/// (`Address already in use`), any other error's own text.
pub(crate) fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => strerror(code),
        None => e.to_string(),
    }
}

/// Tarantool's list of errno constants (`src/lua/errno.c`).
const NAMES: &[(&CStr, c_int)] = &[
    (c"E2BIG", libc::E2BIG),
    (c"EACCES", libc::EACCES),
    (c"EADDRINUSE", libc::EADDRINUSE),
    (c"EADDRNOTAVAIL", libc::EADDRNOTAVAIL),
    (c"EAFNOSUPPORT", libc::EAFNOSUPPORT),
    (c"EAGAIN", libc::EAGAIN),
    (c"EALREADY", libc::EALREADY),
    (c"EBADF", libc::EBADF),
    (c"EBADMSG", libc::EBADMSG),
    (c"EBUSY", libc::EBUSY),
    (c"ECANCELED", libc::ECANCELED),
    (c"ECHILD", libc::ECHILD),
    (c"ECONNABORTED", libc::ECONNABORTED),
    (c"ECONNREFUSED", libc::ECONNREFUSED),
    (c"ECONNRESET", libc::ECONNRESET),
    (c"EDEADLK", libc::EDEADLK),
    (c"EDESTADDRREQ", libc::EDESTADDRREQ),
    (c"EDOM", libc::EDOM),
    (c"EDQUOT", libc::EDQUOT),
    (c"EEXIST", libc::EEXIST),
    (c"EFAULT", libc::EFAULT),
    (c"EFBIG", libc::EFBIG),
    (c"EHOSTUNREACH", libc::EHOSTUNREACH),
    (c"EIDRM", libc::EIDRM),
    (c"EILSEQ", libc::EILSEQ),
    (c"EINPROGRESS", libc::EINPROGRESS),
    (c"EINTR", libc::EINTR),
    (c"EINVAL", libc::EINVAL),
    (c"EIO", libc::EIO),
    (c"EISCONN", libc::EISCONN),
    (c"EISDIR", libc::EISDIR),
    (c"ELOOP", libc::ELOOP),
    (c"EMFILE", libc::EMFILE),
    (c"EMLINK", libc::EMLINK),
    (c"EMSGSIZE", libc::EMSGSIZE),
    (c"EMULTIHOP", libc::EMULTIHOP),
    (c"ENAMETOOLONG", libc::ENAMETOOLONG),
    (c"ENETDOWN", libc::ENETDOWN),
    (c"ENETRESET", libc::ENETRESET),
    (c"ENETUNREACH", libc::ENETUNREACH),
    (c"ENFILE", libc::ENFILE),
    (c"ENOBUFS", libc::ENOBUFS),
    (c"ENODATA", libc::ENODATA),
    (c"ENODEV", libc::ENODEV),
    (c"ENOENT", libc::ENOENT),
    (c"ENOEXEC", libc::ENOEXEC),
    (c"ENOLCK", libc::ENOLCK),
    (c"ENOLINK", libc::ENOLINK),
    (c"ENOMEM", libc::ENOMEM),
    (c"ENOMSG", libc::ENOMSG),
    (c"ENOPROTOOPT", libc::ENOPROTOOPT),
    (c"ENOSPC", libc::ENOSPC),
    (c"ENOSR", libc::ENOSR),
    (c"ENOSTR", libc::ENOSTR),
    (c"ENOSYS", libc::ENOSYS),
    (c"ENOTCONN", libc::ENOTCONN),
    (c"ENOTDIR", libc::ENOTDIR),
    (c"ENOTEMPTY", libc::ENOTEMPTY),
    (c"ENOTSOCK", libc::ENOTSOCK),
    (c"ENOTSUP", libc::ENOTSUP),
    (c"ENOTTY", libc::ENOTTY),
    (c"ENXIO", libc::ENXIO),
    (c"EOPNOTSUPP", libc::EOPNOTSUPP),
    (c"EOVERFLOW", libc::EOVERFLOW),
    (c"EPERM", libc::EPERM),
    (c"EPIPE", libc::EPIPE),
    (c"EPROTO", libc::EPROTO),
    (c"EPROTONOSUPPORT", libc::EPROTONOSUPPORT),
    (c"EPROTOTYPE", libc::EPROTOTYPE),
    (c"ERANGE", libc::ERANGE),
    (c"EROFS", libc::EROFS),
    (c"ESPIPE", libc::ESPIPE),
    (c"ESRCH", libc::ESRCH),
    (c"ESTALE", libc::ESTALE),
    (c"ETIME", libc::ETIME),
    (c"ETIMEDOUT", libc::ETIMEDOUT),
    (c"ETXTBSY", libc::ETXTBSY),
    (c"EWOULDBLOCK", libc::EWOULDBLOCK),
    (c"EXDEV", libc::EXDEV),
];

/// An errno argument: an integral number.
fn arg_errno(s: &Stack, idx: c_int, usage: &str) -> Result<c_int, Raise> {
    s.to_integer(idx)
        .and_then(|n| c_int::try_from(n).ok())
        .ok_or_else(|| Raise::illegal(usage))
}

lua_fn! {
    /// `errno([n])` (the module's `__call`): the Lua errno; with `n`, sets
    /// it and gives the one before, as `ffi.errno(n)` does.
    fn errno_call(s: &mut Stack) {
        let old = get();
        if !s.is_none_or_nil(2) {
            set(arg_errno(s, 2, "Usage: errno([errno])")?);
        }
        s.push_int(old.into());
        Ok(1)
    }
}

lua_fn! {
    /// `errno.strerror([n])`: the message of `n`, default `errno()`.
    fn errno_strerror(s: &mut Stack) {
        let e = match s.is_none_or_nil(1) {
            true => get(),
            false => arg_errno(s, 1, "Usage: errno.strerror([errno])")?,
        };
        s.push_str(&strerror(e));
        Ok(1)
    }
}

lua_fn! {
    /// `__newindex`: constants are fixed.
    fn errno_newindex(_s: &mut Stack) {
        Err(Raise::illegal("Can't create new errno constants"))
    }
}

lua_fn! {
    /// The `errno` module's loader (`package.preload.errno`): makes the
    /// module table.
    pub(crate) fn open(s: &mut Stack) {
        s.ensure(6)?;
        let module = s.new_table(0, 1);
        s.push_cfunction(errno_strerror);
        s.set_field(module, c"strerror");
        let mt = s.new_table(0, 3);
        let names = s.new_table(0, NAMES.len() as c_int);
        for (name, value) in NAMES {
            s.push_int((*value).into());
            s.set_field(names, name);
        }
        s.set_field(mt, c"__index");
        s.push_cfunction(errno_newindex);
        s.set_field(mt, c"__newindex");
        s.push_cfunction(errno_call);
        s.set_field(mt, c"__call");
        s.set_metatable(module);
        Ok(1)
    }
}
