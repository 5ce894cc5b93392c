//! Socket objects: a userdata holding a [`Sock`], whose methods are C
//! functions in the metatable's `__index` table (some replaced by Lua
//! functions in `socket.lua`).
//!
//! A socket made here (`socket()`, `s:accept()`, `socketpair()`) owns an
//! [`Fd`] registered with the cord's event loop, so a wait costs no
//! `epoll_ctl`; one made by `socket.from_fd(n)` wraps a number the caller
//! gave (it may be anything, even closed), waits with
//! [`io::wait_fd`](luafiber_runtime::io::wait_fd) and never registers.
//!
//! Fibers share a socket: every field is a `Cell` or a `RefCell` borrowed
//! only between two switches; the userdata holds an `Rc` of it
//! ([`Kind`]), so a fiber parked in a method holds a handle of its own.
//! `close()` keeps the [`Fd`] in place (closed, its waiters woken with
//! `EBADF`); it is dropped with the last handle once `__gc` ran, which
//! closes an fd still open without a switch.
//!
//! The unsafe code of the module is here, but for the FFI entries of
//! [`fast`](super::fast) and the stack's re-read after a switch
//! ([`wait`](super::wait)): the one borrow of the fd number
//! ([`Sock::call`], under every syscall) and the `close(2)` of a `from_fd`
//! number.

use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use luafiber_runtime::io::{self as rio, Fd, Interest, Ready};
use socket2::SockRef;

use super::rbuf::ReadBuf;
use crate::modules::errno;
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};

/// Per-cord state of socket objects (a part of the cord context): their
/// kind, an `Rc` of the socket, so that a method (and a fiber parked in
/// it) holds a handle of its own.
#[derive(Default)]
pub(crate) struct SockKind(Cell<Kind<Rc<Sock>>>);

/// The kind of socket objects.
#[inline(always)]
fn socks() -> Kind<Rc<Sock>> {
    SockKind::with(|k| k.0.get())
}

/// The payload of a socket userdata.
pub(crate) struct Sock {
    /// The fd; -1 once closed or detached.
    fd: Cell<RawFd>,
    /// The registration that owns `fd` (`None` for `from_fd`).
    reg: Option<Fd>,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, ... (0 when unknown).
    pub itype: c_int,
    /// `s:errno()`; 0 for none.
    errno: Cell<c_int>,
    /// A stream socket registered here: a read that comes back short means
    /// the socket is drained ([`Fd::drained`]). Off once `SO_PASSCRED` is
    /// set (a Unix socket's read then stops where the sender changes).
    pub stream: Cell<bool>,
    /// A TCP socket: `s:write()` passes `MSG_MORE` while the read-ahead
    /// buffer holds bytes (see [`write`](super::write)).
    pub tcp: bool,
    /// A `MSG_MORE` write may wait in the kernel for the next one.
    corked: Cell<bool>,
    /// The read-ahead buffer of `s:read()`.
    pub rbuf: RefCell<ReadBuf>,
}

impl Sock {
    /// A socket over `fd` (non-blocking; of an IP family when `ip`),
    /// registered with the cord's event loop.
    ///
    /// # Errors
    ///
    /// The registration's (the fd is closed then).
    pub fn registered(fd: OwnedFd, itype: c_int, ip: bool) -> io::Result<Sock> {
        let reg = Fd::from_nonblocking(fd)?;
        let raw = std::os::fd::AsRawFd::as_raw_fd(&reg);
        Ok(Sock {
            fd: Cell::new(raw),
            reg: Some(reg),
            itype,
            errno: Cell::new(0),
            stream: Cell::new(itype == libc::SOCK_STREAM),
            tcp: ip && itype == libc::SOCK_STREAM,
            corked: Cell::new(false),
            rbuf: RefCell::default(),
        })
    }

    /// A socket over an fd number of the caller's (`socket.from_fd`),
    /// which it closes when closed or collected; its type from `SO_TYPE`
    /// (0 when that fails).
    pub fn foreign(fd: RawFd) -> Sock {
        let mut sock = Sock {
            fd: Cell::new(fd),
            reg: None,
            itype: 0,
            errno: Cell::new(0),
            stream: Cell::new(false),
            tcp: false,
            corked: Cell::new(false),
            rbuf: RefCell::default(),
        };
        sock.itype = sock
            .call(|fd| SockRef::from(&fd).r#type())
            .map_or(0, c_int::from);
        sock
    }

    /// Runs the syscalls of `f` on the fd, borrowed for the call; the errno
    /// of the error it returns, or `EBADF` (what a syscall on -1 says) once
    /// the socket is closed or detached. `f` must not close this socket,
    /// switch fibers or call Lua (no closure in this module does: each is
    /// a syscall or two).
    #[inline]
    pub fn call<R>(&self, f: impl FnOnce(BorrowedFd<'_>) -> io::Result<R>) -> Result<R, c_int> {
        let fd = self.fd.get();
        if fd < 0 {
            return Err(libc::EBADF);
        }
        // SAFETY: `fd` is not the -1 a `BorrowedFd` may not hold, and stays
        // open while `f` runs: this socket closes it only in `close` and
        // drop, which set `fd` to -1 first and which `f` does not call, and
        // whatever else could close the number (another socket over it,
        // Lua code) runs only when the fiber switches or calls Lua, which
        // `f` does not. (A `from_fd` number that was never open fails each
        // call with `EBADF`: the kernel checks it, no memory is at stake.)
        f(unsafe { BorrowedFd::borrow_raw(fd) }).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// The fd, or -1 when closed.
    #[inline]
    pub fn raw(&self) -> RawFd {
        self.fd.get()
    }

    /// Whether `close()` or `detach()` was called.
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.fd.get() < 0
    }

    /// `s:errno()`: 0 for none.
    pub fn errno(&self) -> c_int {
        self.errno.get()
    }

    /// Sets `s:errno()` and the Lua `errno()` (a failed call).
    #[inline]
    pub fn fail(&self, e: c_int) {
        self.errno.set(e);
        errno::set(e);
    }

    /// Clears `s:errno()` (a call that went well).
    #[inline]
    pub fn ok(&self) {
        self.errno.set(0);
    }

    /// Closes the fd (deregistered first); the errno of `close(2)` on
    /// failure. Never switches.
    pub fn close(&self) -> Result<(), c_int> {
        let fd = self.fd.replace(-1);
        match &self.reg {
            Some(reg) if !reg.is_closed() => reg.close().map_err(os_errno),
            // A registration closed behind this socket: another socket over
            // the same fd (`from_fd`) closed it.
            Some(_) => Err(libc::EBADF),
            // A negative number was never open (and -1 is a closed socket).
            None if fd < 0 => Err(libc::EBADF),
            // SAFETY: the number `from_fd` was given, for this socket to
            // close (Tarantool's `socket.from_fd` hands it over); `fd` is
            // -1 from now on, so no call here uses it again.
            None => match unsafe { libc::close(fd) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EBADF)),
            },
        }
    }

    /// Forgets the fd without closing it (`s:detach()`).
    pub fn detach(&self) {
        self.fd.set(-1);
        if let Some(reg) = &self.reg {
            let _ = reg.detach();
        }
    }

    /// The flags of an `s:write()`: `MSG_MORE` while a TCP socket's
    /// read-ahead buffer holds bytes (see [`write`](super::write)).
    #[inline]
    pub fn more_flag(&self) -> c_int {
        match self.tcp && self.rbuf.borrow().len() > 0 {
            true => libc::MSG_MORE,
            false => 0,
        }
    }

    /// Records whether the last `s:write()` passed `MSG_MORE`.
    #[inline]
    pub fn set_corked(&self, corked: bool) {
        self.corked.set(corked);
    }

    /// Sends what `MSG_MORE` writes left in the kernel (before a wait for
    /// input: the peer may be waiting for it). Clearing `TCP_CORK`, which
    /// is not set, pushes the pending frames as Nagle's rule allows.
    #[inline]
    pub fn uncork(&self) {
        if self.corked.replace(false) {
            let _ = self.call(|fd| SockRef::from(&fd).set_tcp_cork(false));
        }
    }

    /// Whether a read may find data without a wait (always, unregistered).
    #[inline]
    pub fn may_read(&self) -> bool {
        self.reg
            .as_ref()
            .is_none_or(|r| r.is_ready(Interest::READABLE))
    }

    /// A read got `got` of the `asked` bytes: a short one drains a stream
    /// socket.
    #[inline]
    pub fn read_got(&self, got: usize, asked: usize) {
        if got < asked && self.stream.get() {
            if let Some(reg) = &self.reg {
                reg.drained(Interest::READABLE);
            }
        }
    }

    /// A syscall said `EAGAIN` for `interest`.
    #[inline]
    pub fn would_block(&self, interest: Interest) {
        if let Some(reg) = &self.reg {
            reg.clear_ready(interest);
        }
    }

    /// Parks until an event says the socket is ready for `interest` (at
    /// once when nothing said it is not), at most `timeout`.
    pub fn park(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        match &self.reg {
            Some(reg) => reg.park(interest, timeout),
            None => rio::wait_fd(self.raw(), interest, timeout),
        }
    }

    /// Waits until `poll(2)` or an event says the socket is ready for
    /// `interest`, at most `timeout` (`s:readable()`).
    pub fn wait(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        match &self.reg {
            Some(reg) => reg.wait(interest, timeout),
            None => rio::wait_fd(self.raw(), interest, timeout),
        }
    }
}

impl Drop for Sock {
    /// Closes an fd still open (no switch); `__gc` drops a socket.
    fn drop(&mut self) {
        if !self.is_closed() {
            let _ = self.close();
        }
    }
}

/// Pushes `true`, or `false` with the errno set.
pub(super) fn push_outcome(s: &mut Stack, sock: &Sock, r: Result<(), c_int>) -> LResult {
    match r {
        Ok(()) => {
            sock.ok();
            s.push_bool(true);
        }
        Err(e) => {
            sock.fail(e);
            s.push_bool(false);
        }
    }
    Ok(1)
}

/// A flags argument of `send`/`recv`, which `socket.lua` made a number
/// (nil: 0).
pub(super) fn flags_arg(s: &Stack, idx: c_int) -> LResult<c_int> {
    if s.is_none_or_nil(idx) {
        return Ok(0);
    }
    s.to_integer(idx)
        .and_then(|n| c_int::try_from(n).ok())
        .ok_or_else(|| Raise::illegal("socket: flags must be a number"))
}

/// The errno of an error of the runtime's I/O: its OS error, `ETIMEDOUT`
/// for a timeout, `EBADF` for a closed fd.
pub(super) fn os_errno(e: io::Error) -> c_int {
    match (e.raw_os_error(), e.kind()) {
        (Some(n), _) => n,
        (None, io::ErrorKind::TimedOut) => libc::ETIMEDOUT,
        _ => libc::EIO,
    }
}

/// The error of a method called on a closed socket.
pub(super) fn closed() -> Raise {
    Raise::illegal("attempt to use closed socket")
}

/// The socket at `idx`, open: Tarantool's `check_socket`.
///
/// # Errors
///
/// "Usage: socket:method()" (with ", called with non-socket" when the
/// value is not nil) or "attempt to use closed socket".
#[inline]
pub(super) fn this(s: &mut Stack, idx: c_int) -> LResult<Rc<Sock>> {
    let sock = any(s, idx)?;
    match sock.is_closed() {
        true => Err(closed()),
        false => Ok(sock),
    }
}

/// The socket at `idx`, closed or not.
#[inline]
pub(super) fn any(s: &mut Stack, idx: c_int) -> LResult<Rc<Sock>> {
    socks().get(s, idx).ok_or_else(|| not_a_socket(s, idx))
}

#[cold]
fn not_a_socket(s: &Stack, idx: c_int) -> Raise {
    match s.is_none_or_nil(idx) {
        true => Raise::illegal("Usage: socket:method()"),
        false => Raise::illegal("Usage: socket:method(), called with non-socket"),
    }
}

/// Pushes a new socket object holding `sock`.
pub(super) fn push(s: &mut Stack, sock: Sock) {
    socks().push(s, Rc::new(sock));
}

/// Pushes a socket over a new non-blocking `fd` (of an IP family when
/// `ip`), registered; on failure pushes nothing (the fd is closed) and
/// gives the errno.
pub(super) fn push_new(s: &mut Stack, fd: OwnedFd, itype: c_int, ip: bool) -> Result<(), c_int> {
    let sock = Sock::registered(fd, itype, ip).map_err(os_errno)?;
    push(s, sock);
    Ok(())
}

lua_fn! {
    /// `__gc`: closes the fd if still open (no switch) and drops the socket.
    fn sock_gc(s: &mut Stack) {
        // Its drop (once no method holds it) closes the fd; a resurrected
        // socket is no socket any more (udata rule 2).
        drop(socks().take(s, 1));
        Ok(0)
    }
}

/// Makes the socket metatable (`__index` = `methods`, `__gc`); returns the
/// index of its methods table, left on the stack above the metatable.
pub(super) fn init_metatable(
    s: &mut Stack,
    methods: &[crate::raw::Reg],
) -> LResult<(c_int, c_int)> {
    s.ensure(4)?;
    let kind = Kind::new_empty(s, 4);
    kind.push_metatable(s);
    let mt = s.top();
    let m = s.new_table(0, methods.len() as c_int + 8);
    for (name, f) in methods {
        s.push_cfunction(*f);
        s.set_field(m, name);
    }
    // `read` looks its options up by the names it holds as upvalues.
    for key in super::read::READ_KEYS {
        s.push_cstr(key);
    }
    s.push_closure(
        super::read::sock_read,
        super::read::READ_KEYS.len() as c_int,
    );
    s.set_field(m, c"read");
    s.push_value(m);
    s.set_field(mt, c"__index");
    s.push_cfunction(sock_gc);
    s.set_field(mt, c"__gc");
    s.push_cfunction(super::conn::sock_tostring);
    s.set_field(mt, c"__tostring");
    s.push_cstr(c"socket");
    s.set_field(mt, c"__name");
    s.push_value(mt);
    s.set_field(mt, c"__metatable");
    SockKind::with(|k| k.0.set(kind));
    Ok((mt, m))
}

lua_fn! {
    /// `s:fd()`: the fd number.
    pub(super) fn sock_fd(s: &mut Stack) {
        let fd = this(s, 1)?.raw();
        s.push_int(fd.into());
        Ok(1)
    }
}

lua_fn! {
    /// `s:errno()`: the errno of the last failed call, 0 for none.
    pub(super) fn sock_errno(s: &mut Stack) {
        let e = this(s, 1)?.errno();
        s.push_int(e.into());
        Ok(1)
    }
}

lua_fn! {
    /// `s:error()`: the message of `s:errno()`, nil for none.
    pub(super) fn sock_error(s: &mut Stack) {
        match this(s, 1)?.errno() {
            0 => s.push_nil(),
            e => s.push_str(&errno::strerror(e)),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `s:close()`: true, or false with `s:errno()` set.
    pub(super) fn sock_close(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        sock.ok();
        match sock.close() {
            Ok(()) => s.push_bool(true),
            Err(e) => {
                sock.fail(e);
                s.push_bool(false);
            }
        }
        Ok(1)
    }
}

lua_fn! {
    /// `s:detach()`: forgets the fd without closing it.
    pub(super) fn sock_detach(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        sock.ok();
        sock.detach();
        Ok(0)
    }
}

lua_fn! {
    /// `socket.internal.is_closed(s)`: whether `s` is closed (for the
    /// accept loop of `socket.lua`).
    pub(super) fn sock_is_closed(s: &mut Stack) {
        let closed = any(s, 1)?.is_closed();
        s.push_bool(closed);
        Ok(1)
    }
}

lua_fn! {
    /// `socket.internal.itype(s)`: the socket type number (Tarantool's
    /// `s.itype`), 0 when unknown.
    pub(super) fn sock_itype(s: &mut Stack) {
        let t = any(s, 1)?.itype;
        s.push_int(t.into());
        Ok(1)
    }
}

lua_fn! {
    /// `socket.internal.set_errno(s, e)`: sets `s:errno()` (and `errno()`,
    /// unless `e` is 0), for the methods written in Lua.
    pub(super) fn sock_set_errno(s: &mut Stack) {
        let sock = &*any(s, 1)?;
        match s.to_integer(2).and_then(|e| c_int::try_from(e).ok()) {
            Some(0) | None => sock.ok(),
            Some(e) => sock.fail(e),
        }
        Ok(0)
    }
}

/// Raises `IllegalParams` with `msg` (for the Lua half's usage errors).
pub(super) fn usage(msg: impl Into<String>) -> Raise {
    Raise::Error(ErrorKind::IllegalParams, msg.into())
}
