//! `coio_wait` and `coio_close` of the C module API (Tarantool's
//! `src/lib/core/coio.h`), on the cord's event loop
//! ([`luafiber_runtime::io`]).

use std::ffi::c_int;
use std::io::ErrorKind as IoKind;
use std::os::fd::{FromRawFd, OwnedFd};

use luafiber_fiber as sched;
use luafiber_runtime::io::{self, Fd, Interest};

use super::{diag, guard, may_switch};
use crate::raw::error::ErrorKind;

/// Tarantool's `COIO_READ`.
const COIO_READ: c_int = 0x1;
/// Tarantool's `COIO_WRITE`.
const COIO_WRITE: c_int = 0x2;

/// `coio_wait(fd, events, timeout)`: parks the current fiber until `fd` is
/// ready for `events` (`COIO_READ | COIO_WRITE`) or `timeout` seconds
/// pass; returns the ready events, or 0 on timeout, on a cancel and on an
/// error (which it records for `luaT_error`); a NaN `timeout` is such an
/// error (`IllegalParams`), refused before any wait. `fd` should be non-blocking
/// and stay open while a fiber waits (close it with [`coio_close`]).
/// Outside any fiber it blocks the thread in `poll(2)`.
#[no_mangle]
pub extern "C" fn coio_wait(fd: c_int, events: c_int, timeout: f64) -> c_int {
    guard("coio_wait", 0, || {
        let interest = match (events & COIO_READ != 0, events & COIO_WRITE != 0) {
            (true, true) => Interest::READABLE | Interest::WRITABLE,
            (true, false) => Interest::READABLE,
            (false, true) => Interest::WRITABLE,
            (false, false) => {
                diag::set(ErrorKind::IllegalParams, "coio_wait: no events to wait for");
                return 0;
            }
        };
        let Ok(timeout) = super::fiber::timeout(timeout, "coio_wait") else {
            return 0;
        };
        if sched::current().is_some() && !may_switch("coio_wait") {
            return 0;
        }
        match io::wait_fd(fd, interest, timeout) {
            Ok(ready) => {
                let read = if ready.is_readable() { COIO_READ } else { 0 };
                let write = if ready.is_writable() { COIO_WRITE } else { 0 };
                read | write
            }
            Err(e) if e.kind() == IoKind::TimedOut => 0,
            Err(e) if io::is_cancelled(&e) => {
                diag::set(ErrorKind::FiberIsCancelled, "fiber is cancelled");
                0
            }
            Err(e) => {
                diag::set(
                    ErrorKind::SystemError,
                    format!("coio_wait: {}", crate::modules::errno::io_text(&e)),
                );
                0
            }
        }
    })
}

/// `coio_close(fd)`: closes `fd`, waking the fibers that wait on it in
/// [`coio_wait`] (theirs returns 0); 0, or -1 with `errno` set.
#[no_mangle]
pub extern "C" fn coio_close(fd: c_int) -> c_int {
    guard("coio_close", -1, || {
        if fd < 0 {
            set_errno(libc::EBADF);
            return -1;
        }
        // SAFETY: the caller gives `fd` up (Tarantool's contract); an fd
        // that is not open makes the registration fail with EBADF and the
        // drop's close(2) fails harmlessly.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // Registering shares the record of the fibers waiting on `fd`; its
        // close deregisters, wakes them, then closes. On an error the fd is
        // closed already (a regular file, which epoll refuses, ends here).
        match Fd::from_nonblocking(owned).and_then(|f| f.close()) {
            Ok(()) => 0,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => 0,
            Err(e) => {
                set_errno(e.raw_os_error().unwrap_or(libc::EIO));
                -1
            }
        }
    })
}

fn set_errno(code: c_int) {
    nix::errno::Errno::set_raw(code);
}
