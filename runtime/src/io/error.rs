//! The errors of fiber-blocking I/O: a cancel, a timeout, a closed fd.

use std::io;

use luafiber_fiber as fiber;

use crate::error::FiberError;

/// The error of an I/O wait whose fiber was cancelled: kind
/// [`io::ErrorKind::Other`], with a [`FiberError`] (its
/// [`is_cancelled`](FiberError::is_cancelled) is true, and it names the
/// fiber) as the inner error; [`is_cancelled`] tells it apart.
///
/// Not [`io::ErrorKind::Interrupted`]: `std::io`'s `read_exact`,
/// `write_all` and `copy` retry an interrupted call, and a cancelled fiber
/// would retry forever (the cancel flag is sticky).
pub(crate) fn cancelled() -> io::Error {
    let id = fiber::current().unwrap_or(fiber::FiberId(fiber::SCHED_FID));
    io::Error::other(FiberError::cancelled(id))
}

/// Whether `e` is the error of an I/O wait whose fiber was cancelled (see
/// the [module docs](crate::io#errors)).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{io, spawn_now, Runtime};
/// use std::os::fd::AsRawFd;
///
/// let rt = Runtime::new();
/// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
/// let h = spawn_now(move || io::wait_readable(a.as_raw_fd(), None));
/// h.cancel();
/// rt.run();
/// assert!(io::is_cancelled(&h.join().unwrap().unwrap_err()));
/// ```
pub fn is_cancelled(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|e| e.downcast_ref::<FiberError>())
        .is_some_and(FiberError::is_cancelled)
}

/// The error of a wait whose timeout ran out: [`io::ErrorKind::TimedOut`].
pub(crate) fn timed_out() -> io::Error {
    io::Error::from(io::ErrorKind::TimedOut)
}

/// The error of an operation on an [`Fd`](crate::io::Fd) that is closed, or
/// that was closed (by another fiber) while the caller waited: `EBADF`.
pub(crate) fn closed() -> io::Error {
    io::Error::from_raw_os_error(libc::EBADF)
}
