//! [`Fd`]: a file descriptor owned by and registered with this cord's event
//! loop; [`wait_fd`] and friends for an fd the caller owns.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_fiber as fiber;

use crate::io::error;
use crate::io::reactor;
use crate::io::source::{Interest, Ready, Source};

/// A non-blocking file descriptor registered with this cord's event loop
/// (once, edge-triggered, for both directions), whose I/O blocks only the
/// calling fiber. What the [`net`](crate::net) types are made of, and what
/// an embedder wraps its own fds in (a pipe, a device, a socket from
/// another library).
///
/// Every method takes `&self`, so fibers can share one `Fd` through an
/// `Rc`: several may wait on it at once (each is woken by every event of
/// its direction and retries), and one may [`close`](Fd::close) it while
/// others wait (they get `EBADF`). Not `Send`: it belongs to its cord.
/// Dropping it closes the fd, deregistered first.
///
/// # Examples
///
/// A pipe read by one fiber, written by another:
///
/// ```
/// use luafiber_runtime::io::{Fd, Interest};
/// use luafiber_runtime::{spawn, Runtime};
/// use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
///
/// let rt = Runtime::new();
/// let got = rt.block_on(|| {
///     let mut fds = [0; 2];
///     assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
///     let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
///     let (r, w) = (Fd::new(r).unwrap(), Fd::new(w).unwrap());
///     spawn(move || {
///         let n = w.io(Interest::WRITABLE, None, |fd| {
///             let n = unsafe { libc::write(fd.as_raw_fd(), b"hi".as_ptr().cast(), 2) };
///             if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
///         });
///         assert_eq!(n.unwrap(), 2);
///     });
///     let mut buf = [0u8; 8];
///     // Nothing to read yet: the fiber parks until the writer ran.
///     let n = r.io(Interest::READABLE, None, |fd| {
///         let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
///         if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n as usize) }
///     });
///     buf[..n.unwrap()].to_vec()
/// });
/// assert_eq!(got, b"hi");
/// ```
pub struct Fd {
    src: Rc<Source>,
}

impl Fd {
    /// Makes `fd` non-blocking and registers it with this cord's event loop
    /// (made on first use).
    ///
    /// # Errors
    ///
    /// `fcntl` or `epoll_ctl` failures (`EPERM` for a regular file, which
    /// is always ready: do not wrap one); the event loop cannot be made.
    /// The fd is closed on error.
    pub fn new(fd: OwnedFd) -> io::Result<Fd> {
        set_nonblocking(fd.as_raw_fd())?;
        Fd::from_nonblocking(fd)
    }

    /// [`Fd::new`] for an fd already in non-blocking mode (made with
    /// `SOCK_NONBLOCK`, `O_NONBLOCK`): one syscall fewer. An fd in
    /// blocking mode would block the whole cord in its syscalls.
    ///
    /// # Errors
    ///
    /// As [`Fd::new`].
    pub fn from_nonblocking(fd: OwnedFd) -> io::Result<Fd> {
        let src = reactor::with(|r| r.acquire(fd.as_raw_fd()))??;
        let _ = fd.into_raw_fd();
        Ok(Fd { src })
    }

    /// Whether [`close`](Fd::close) was called.
    pub fn is_closed(&self) -> bool {
        self.src.is_closed()
    }

    /// Runs `f` on the fd once, with no wait (for `setsockopt`,
    /// `getsockname`, a `connect` that may be `EINPROGRESS`...).
    ///
    /// # Errors
    ///
    /// What `f` returns; `EBADF` when the `Fd` is closed.
    pub fn with<R>(&self, f: impl FnOnce(BorrowedFd<'_>) -> io::Result<R>) -> io::Result<R> {
        if self.src.is_closed() {
            return Err(error::closed());
        }
        // SAFETY: as in `io`.
        f(unsafe { BorrowedFd::borrow_raw(self.src.fd()) })
    }

    /// Runs the non-blocking syscall `f` until it does not say
    /// `WouldBlock` (`EAGAIN`): at once when it succeeds or fails
    /// otherwise; on `EAGAIN` the fd's ready bit for `interest` is cleared
    /// and the calling fiber parks until an event sets it, then `f` runs
    /// again. `EINTR` is retried at once. A cancellation point only when it
    /// parks. `f` must read `errno` itself (as `io::Error::last_os_error()`
    /// does) before anything else runs; it must not close this `Fd`.
    ///
    /// `timeout` bounds the whole call (`None`: no limit; `Some(ZERO)`:
    /// one try, no park). Outside any fiber the thread blocks in `poll(2)`
    /// instead of parking, so the net types work there too.
    ///
    /// # Errors
    ///
    /// What `f` returns; [`io::ErrorKind::TimedOut`] when `timeout` runs
    /// out; a cancel of the fiber (see [`is_cancelled`](crate::io::is_cancelled));
    /// `EBADF` when the `Fd` is closed, or gets closed while the fiber waits.
    pub fn io<R>(
        &self,
        interest: Interest,
        timeout: Option<Duration>,
        mut f: impl FnMut(BorrowedFd<'_>) -> io::Result<R>,
    ) -> io::Result<R> {
        let mut deadline = None;
        loop {
            if self.src.is_closed() {
                return Err(error::closed());
            }
            // SAFETY: the fd is open: an `Fd` closes it only in `close` and
            // drop, which set `closed` first, and `f` (which must not close
            // it) ends before anything else runs on this thread.
            let fd = unsafe { BorrowedFd::borrow_raw(self.src.fd()) };
            match f(fd) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
            self.src.clear(interest);
            let d = *deadline.get_or_insert_with(|| deadline_of(timeout));
            park(&self.src, interest, d)?;
        }
    }

    /// Parks the calling fiber until the fd is ready for `interest`, as
    /// `poll(2)` says now or an event says later, or `timeout` runs out
    /// (`None`: no limit). Returns the ready directions. A cancellation
    /// point when it parks. Tarantool's `coio_wait`.
    ///
    /// # Errors
    ///
    /// As [`Fd::io`].
    pub fn wait(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        if self.src.is_closed() {
            return Err(error::closed());
        }
        wait_on(&self.src, interest, timeout)
    }

    /// Whether the fd may be ready for `interest`, as far as the event loop
    /// knows, with no syscall: true for a new `Fd`, false once a call found
    /// it not ready (an `EAGAIN` in [`Fd::io`], [`Fd::clear_ready`],
    /// [`Fd::drained`]), true again once an event for it came since.
    ///
    /// A caller that finds it false may [`park`](Fd::park) at once instead
    /// of trying its syscall first: the fd cannot have become ready
    /// without an event that sets it.
    pub fn is_ready(&self, interest: Interest) -> bool {
        self.src.is_ready(interest)
    }

    /// Records that the caller's own syscall said `EAGAIN` for `interest`
    /// (what [`Fd::io`] does itself), so [`Fd::park`] waits for the next
    /// event. Call it right after the syscall, with no fiber switch
    /// between.
    pub fn clear_ready(&self, interest: Interest) {
        self.src.clear(interest);
    }

    /// Records that the caller's read on a stream socket got fewer bytes
    /// than it asked for, which means the socket had no more (TCP and
    /// Unix stream sockets fill a read from their whole queue): the next
    /// read can [`park`](Fd::park) without the syscall that would say
    /// `EAGAIN`. Call it right after the read, with no fiber switch
    /// between: any byte that arrives later comes with an event, which
    /// sets the bit again.
    ///
    /// Kept ready when an event already said the peer hung up or the fd
    /// has an error (that event's edge is gone, and the end of the stream
    /// must be read). Not for datagram sockets, whose reads take one
    /// datagram each.
    pub fn drained(&self, interest: Interest) {
        self.src.drained(interest);
    }

    /// Parks the calling fiber until an event sets a ready bit of
    /// `interest` (at once when one is set, see [`Fd::is_ready`]), with no
    /// `poll(2)` first (unlike [`Fd::wait`]), or until `timeout` runs out
    /// (`None`: no limit; `Some(ZERO)`: no park). A cancellation point.
    /// Outside any fiber the thread blocks in `poll(2)` instead.
    ///
    /// Every fiber parked for a direction is woken by each event of it, and
    /// returns even when another one took the readiness first (with no
    /// ready bit of `interest` then, `Ready::NONE`): fibers that share a
    /// read-ahead buffer as well as the fd (two readers of one socket) must
    /// each look at the buffer again, since the first may have left there
    /// what the second waits for.
    ///
    /// # Errors
    ///
    /// As [`Fd::io`].
    pub fn park(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        if self.src.is_closed() {
            return Err(error::closed());
        }
        if !self.src.is_ready(interest) && timeout == Some(Duration::ZERO) {
            return Err(error::timed_out());
        }
        if fiber::current().is_some() {
            return self.src.wait_event(interest, deadline_of(timeout));
        }
        park(&self.src, interest, deadline_of(timeout))
    }

    /// Deregisters the fd and gives it back open, as [`Fd::into_owned`]
    /// does, from a shared reference: the `Fd` then counts as closed
    /// (fibers waiting on it wake with `EBADF`) but the fd is not, and the
    /// caller owns it. Tarantool's `s:detach()`.
    ///
    /// # Errors
    ///
    /// `EBADF` when the `Fd` is closed.
    pub fn detach(&self) -> io::Result<RawFd> {
        if self.src.is_closed() {
            return Err(error::closed());
        }
        release(&self.src, true);
        self.src.close();
        Ok(self.src.fd())
    }

    /// Deregisters the fd and closes it; fibers waiting on it wake with
    /// `EBADF`, and so does every later call. A second close is a no-op.
    ///
    /// # Errors
    ///
    /// `close(2)`'s (the fd is gone all the same).
    pub fn close(&self) -> io::Result<()> {
        if self.src.is_closed() {
            return Ok(());
        }
        release(&self.src, true);
        self.src.close();
        // SAFETY: this `Fd` owned the fd, and `closed` is now set, so it is
        // never used again.
        match unsafe { libc::close(self.src.fd()) } {
            // Linux frees the fd even then (EINTR included): no retry.
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        }
    }

    /// Deregisters the fd and gives it back open, as it is (non-blocking).
    ///
    /// # Errors
    ///
    /// `EBADF` when the `Fd` is closed.
    pub fn into_owned(self) -> io::Result<OwnedFd> {
        if self.src.is_closed() {
            return Err(error::closed());
        }
        release(&self.src, true);
        self.src.close();
        // SAFETY: as in `close` (whose drop then does nothing); ownership
        // passes to the caller.
        Ok(unsafe { OwnedFd::from_raw_fd(self.src.fd()) })
    }
}

impl AsRawFd for Fd {
    /// The fd, or -1 once closed.
    fn as_raw_fd(&self) -> RawFd {
        match self.src.is_closed() {
            true => -1,
            false => self.src.fd(),
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl std::fmt::Debug for Fd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Fd").field(&self.as_raw_fd()).finish()
    }
}

/// Drops a reference to `src` (all of them before a close: `owner`), if
/// the thread's reactor still exists.
fn release(src: &Source, owner: bool) {
    reactor::with_existing(|r| match owner {
        true => r.deregister(src),
        false => r.release(src),
    });
}

fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far_future))
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86_400)
}

/// Parks the calling fiber on `src` (see `Source::wait`); outside any
/// fiber, blocks the thread in `poll(2)` instead.
fn park(src: &Source, interest: Interest, deadline: Option<Instant>) -> io::Result<Ready> {
    if fiber::current().is_some() {
        return src.wait(interest, deadline);
    }
    let ms = match deadline {
        None => -1,
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            // Rounded up, so a wait never ends before its deadline.
            left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
        }
    };
    match poll_now(src.fd(), interest, ms)? {
        Ready::NONE => Err(error::timed_out()),
        ready => Ok(ready),
    }
}

/// `poll(2)` with no timeout: the directions of `interest` ready now.
fn poll_now(fd: RawFd, interest: Interest, timeout_ms: libc::c_int) -> io::Result<Ready> {
    let mut p = libc::pollfd {
        fd,
        events: interest.poll_events(),
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if n >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    if p.revents & libc::POLLNVAL != 0 {
        return Err(error::closed());
    }
    Ok(Ready::from_poll(p.revents, interest))
}

/// [`Fd::wait`] and [`wait_fd`] on a record: `poll(2)` first, then a park
/// for an edge.
fn wait_on(src: &Source, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
    let now = poll_now(src.fd(), interest, 0)?;
    if now != Ready::NONE {
        return Ok(now);
    }
    if timeout == Some(Duration::ZERO) {
        return Err(error::timed_out());
    }
    src.clear(interest);
    park(src, interest, deadline_of(timeout))
}

/// Parks the calling fiber until `fd` is ready for `interest`, or until
/// `timeout` runs out (`None`: no limit); returns the ready directions.
/// For any fd the caller owns: it is registered with the cord's event loop
/// while fibers wait on it (shared by all of them, and with the [`Fd`] that
/// owns it, if any). A cancellation point when it parks. Outside any fiber
/// it blocks the thread in `poll(2)`. Tarantool's `coio_wait` (Lua's
/// `socket.iowait`).
///
/// A regular file (which `epoll` refuses) is always ready. The caller must
/// not close `fd` while a fiber waits on it (that fiber would wait until its
/// timeout: the kernel drops a closed fd's registration unseen).
///
/// # Errors
///
/// [`io::ErrorKind::TimedOut`]; a cancel (see
/// [`is_cancelled`](crate::io::is_cancelled)); `EBADF` when `fd` is not
/// open.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{io, spawn, Runtime};
/// use std::io::Write;
/// use std::os::fd::AsRawFd;
/// use std::time::Duration;
///
/// let rt = Runtime::new();
/// let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
/// rt.block_on(move || {
///     let err = io::wait_readable(a.as_raw_fd(), Some(Duration::from_millis(1))).unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
///     spawn(move || b.write_all(b"x").unwrap());
///     io::wait_readable(a.as_raw_fd(), None).unwrap();
/// });
/// ```
pub fn wait_fd(fd: RawFd, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
    if fiber::current().is_none() {
        return park(&Source::new(fd), interest, deadline_of(timeout));
    }
    let src = match reactor::with(|r| r.acquire(fd))? {
        Ok(src) => src,
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => return Ok(Ready::all(interest)),
        Err(e) => return Err(e),
    };
    let r = wait_on(&src, interest, timeout);
    release(&src, false);
    r
}

/// [`wait_fd`] for reading.
///
/// # Errors
///
/// As [`wait_fd`].
pub fn wait_readable(fd: RawFd, timeout: Option<Duration>) -> io::Result<()> {
    wait_fd(fd, Interest::READABLE, timeout).map(drop)
}

/// [`wait_fd`] for writing.
///
/// # Errors
///
/// As [`wait_fd`].
pub fn wait_writable(fd: RawFd, timeout: Option<Duration>) -> io::Result<()> {
    wait_fd(fd, Interest::WRITABLE, timeout).map(drop)
}

/// Sets `O_NONBLOCK` on `fd`.
///
/// # Errors
///
/// `ioctl(FIONBIO)`'s.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: FIONBIO reads one int.
    match unsafe { libc::ioctl(fd, libc::FIONBIO, &on) } {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}
