//! The writing methods: `s:write()` (all of it, waiting for room:
//! Tarantool's `socket_write`), and `syswrite`, `send`, `sendto`, which
//! write once.
//!
//! Sockets are written with `send(2)` and `MSG_NOSIGNAL` (a reset peer is
//! `EPIPE`, never a `SIGPIPE`); an fd that is no socket (`from_fd` of a
//! pipe) with `write(2)`.
//!
//! A pipelining peer: while a TCP socket's read-ahead buffer still holds
//! bytes (more requests came in one read), `s:write()` passes `MSG_MORE`,
//! so the replies to one batch leave in one segment when the last one is
//! written (its buffer then empty), instead of one segment each, which
//! Nagle's rule holds back until the peer's delayed ACK (40 ms). A read
//! that must wait for input first sends what such writes left
//! ([`Sock::uncork`]); the kernel sends it anyway once the data in flight
//! is acknowledged, or after about 200 ms.

use std::ffi::c_int;

use luafiber_runtime::io::Interest;
use luafiber_runtime::net::sys;
use socket2::SockRef;

use super::addr;
use super::sock::{flags_arg, this, Sock};
use super::wait::{opt_timeout, park, Deadline};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// One `send(2)` with `MSG_NOSIGNAL | flags`; `write(2)` when the fd is
/// no socket (and `flags` is 0).
#[inline]
pub(super) fn sys_send(sock: &Sock, data: &[u8], flags: c_int) -> Result<usize, c_int> {
    sock.call(
        |fd| match SockRef::from(&fd).send_with_flags(data, flags | libc::MSG_NOSIGNAL) {
            Err(e) if flags == 0 && e.raw_os_error() == Some(libc::ENOTSOCK) => {
                sys::write(fd, data)
            }
            r => r,
        },
    )
}

/// The data argument of a write: a string (numbers are refused, as
/// Tarantool's `#octets` refuses them).
fn data_arg<'s>(s: &'s Stack, idx: c_int, usage: &str) -> LResult<&'s [u8]> {
    s.to_str(idx).ok_or_else(|| Raise::illegal(usage))
}

const WRITE_USAGE: &str = "Usage: s:write(octets[, timeout])";

/// Fails a method with `e`: nil, `s:errno()` set.
fn fail(s: &mut Stack, sock: &Sock, e: c_int) -> LResult {
    sock.fail(e);
    s.push_nil();
    Ok(1)
}

lua_fn! {
    /// `s:write(octets[, timeout])`: writes all of `octets`, parking while
    /// the socket has no room; gives their length (fewer when the fd takes
    /// nothing more), or nil with `s:errno()` on an error or timeout
    /// (`ETIMEDOUT`). One `send(2)` when the socket has room. A cancel
    /// raises `FiberIsCancelled`. Tarantool's `socket_write`.
    pub(super) fn sock_write(s: &mut Stack) {
        write(s, 0)
    }
}

lua_fn! {
    /// `write_from(s, octets, timeout, done)`: `s:write(octets, timeout)`
    /// whose first `done` bytes were sent already, for the LuaJIT wrapper
    /// of `fast.rs`.
    pub(super) fn sock_write_from(s: &mut Stack) {
        let done = s.to_integer(4).and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
        write(s, done)
    }
}

/// The loop of `s:write()` from byte `done` on.
fn write(s: &mut Stack, mut done: usize) -> LResult {
    let sock = &*this(s, 1)?;
    let mut deadline = Deadline::new(opt_timeout(s, 3, WRITE_USAGE)?);
    let more = sock.more_flag();
    loop {
        // The string stays on the stack, so its bytes stay put (raw rule
        // 6) while the fiber parks; they are borrowed afresh each time
        // round.
        let data = data_arg(s, 2, WRITE_USAGE)?;
        if done >= data.len() {
            break;
        }
        if sock.is_closed() {
            return fail(s, sock, libc::EBADF);
        }
        match sys_send(sock, &data[done..], more) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => {
                sock.would_block(Interest::WRITABLE);
                if let Err(e) = park(s, sock, Interest::WRITABLE, &mut deadline, "socket.write")? {
                    return fail(s, sock, e);
                }
            }
            Err(e) => return fail(s, sock, e),
        }
    }
    sock.set_corked(more != 0);
    sock.ok();
    s.push_int(done as i64);
    Ok(1)
}

/// One send of argument 2 with `flags`: the bytes sent, or nil with
/// `s:errno()`.
fn send_once(s: &mut Stack, flags: c_int, usage: &str) -> LResult {
    let sock = &*this(s, 1)?;
    let data = data_arg(s, 2, usage)?;
    match sys_send(sock, data, flags) {
        Ok(n) => {
            sock.ok();
            s.push_int(n as i64);
            Ok(1)
        }
        Err(e) => fail(s, sock, e),
    }
}

lua_fn! {
    /// `s:syswrite(octets)`: one write, never waiting: the bytes written,
    /// or nil with `s:errno()` (`EAGAIN` when the socket has no room).
    pub(super) fn sock_syswrite(s: &mut Stack) {
        send_once(s, 0, "Usage: socket:syswrite(data)")
    }
}

lua_fn! {
    /// `s:send(octets[, flags])`: one `send(2)`, never waiting: the bytes
    /// sent, or nil with `s:errno()`.
    pub(super) fn sock_send(s: &mut Stack) {
        let flags = flags_arg(s, 3)?;
        send_once(s, flags, "Usage: socket:send(octets[, flags])")
    }
}

lua_fn! {
    /// `s:sendto(host, port, octets[, flags])`: one `sendto(2)` to a literal
    /// address (or `'unix/'` and a path): the bytes sent (`true` for empty
    /// `octets`, as Tarantool), or nil with `s:errno()`.
    pub(super) fn sock_sendto(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let flags = flags_arg(s, 5)?;
        sock.ok();
        let data = match (s.is_none_or_nil(4), s.to_str(4)) {
            (true, _) => b"".as_slice(),
            (false, Some(d)) => d,
            (false, None) => return Err(Raise::illegal("Usage: socket:sendto(host, port, octets)")),
        };
        if data.is_empty() {
            s.push_bool(true);
            return Ok(1);
        }
        let to = match (addr::arg_text(s, 2), addr::arg_text(s, 3)) {
            (Some(h), Some(p)) => addr::resolve(&h, &p),
            _ => Err(libc::EINVAL),
        };
        let to = match to {
            Ok(to) => to,
            Err(e) => return fail(s, sock, e),
        };
        let flags = flags | libc::MSG_NOSIGNAL;
        match sock.call(|fd| SockRef::from(&fd).send_to_with_flags(data, &to, flags)) {
            Err(e) => fail(s, sock, e),
            Ok(n) => {
                s.push_int(n as i64);
                Ok(1)
            }
        }
    }
}
