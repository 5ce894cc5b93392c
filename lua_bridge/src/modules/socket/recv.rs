//! The methods that read the fd itself once, past the read-ahead buffer:
//! `sysread`, `recv`, `recvfrom`. None of them waits.

use std::ffi::c_int;

use luafiber_runtime::net::sys;
use socket2::SockRef;

use super::addr;
use super::rbuf::READAHEAD;
use super::read::{fail, sys_read, LIMIT_INFINITY};
use super::sock::{flags_arg, this, Sock};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// A size argument of `sysread`/`recv`: absent is `default`.
fn size_arg(s: &Stack, idx: c_int, default: usize, what: &str) -> LResult<usize> {
    if s.is_none_or_nil(idx) {
        return Ok(default);
    }
    match s.to_number(idx) {
        Some(n) if n >= 0.0 => Ok((n as usize).min(LIMIT_INFINITY)),
        Some(_) => Err(Raise::illegal(format!(
            "socket:{what}(): size can not be negative"
        ))),
        None => Err(Raise::illegal(format!("Usage: socket:{what}([size])"))),
    }
}

/// Runs `f` on `size` bytes of the socket's spare read-ahead room (past
/// the buffered bytes, which stay), then pushes what it wrote there, or
/// nil with the errno it gave.
fn read_into_spare<R>(
    s: &mut Stack,
    sock: &Sock,
    size: usize,
    f: impl FnOnce(&mut [u8]) -> Result<(usize, R), c_int>,
) -> LResult<Option<R>> {
    let mut b = sock.rbuf.borrow_mut();
    let room = &mut b.reserve(size)[..size];
    match f(room) {
        Ok((n, r)) => {
            sock.ok();
            s.push_bytes(&room[..n.min(size)]);
            Ok(Some(r))
        }
        Err(e) => {
            sock.fail(e);
            s.push_nil();
            Ok(None)
        }
    }
}

lua_fn! {
    /// `s:sysread([size])`: one `read(2)` of at most `size` bytes (default
    /// 16320) past the read-ahead buffer; `''` at end of stream, nil with
    /// `s:errno()` (`EAGAIN` when nothing is there). Never waits.
    pub(super) fn sock_sysread(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let size = size_arg(s, 2, READAHEAD, "sysread")?;
        read_into_spare(s, sock, size, |buf| sys_read(sock, buf).map(|n| (n, ())))?;
        Ok(1)
    }
}

/// The size `recv` takes when none is given: the next datagram's on a
/// datagram socket (`MSG_PEEK | MSG_TRUNC`), else 512. Tarantool's
/// `get_recv_size`.
fn recv_size(s: &Stack, sock: &Sock) -> LResult<Result<usize, c_int>> {
    if !s.is_none_or_nil(2) {
        return size_arg(s, 2, 512, "recv").map(Ok);
    }
    if sock.itype != libc::SOCK_DGRAM {
        return Ok(Ok(512));
    }
    // A zero-length peek: with MSG_TRUNC the length of the datagram.
    let peek = libc::MSG_PEEK | libc::MSG_TRUNC;
    Ok(sock.call(|fd| SockRef::from(&fd).recv_with_flags(&mut [], peek)))
}

/// The flags and size of `recv`/`recvfrom`: `Err` with the errno when
/// the size of the next datagram could not be had.
fn recv_args(s: &Stack, sock: &Sock) -> LResult<Result<(c_int, usize), c_int>> {
    let flags = flags_arg(s, 3)?;
    Ok(recv_size(s, sock)?.map(|size| (flags, size)))
}

lua_fn! {
    /// `s:recv([size[, flags]])`: one `recv(2)` (size: the next datagram's
    /// on a datagram socket, else 512); nil with `s:errno()`. Never waits.
    /// `socket.lua` turns flag names into the number.
    pub(super) fn sock_recv(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let (flags, size) = match recv_args(s, sock)? {
            Ok(a) => a,
            Err(e) => return fail(s, sock, e),
        };
        read_into_spare(s, sock, size, |buf| {
            sock.call(|fd| sys::recv_with_flags(fd, buf, flags)).map(|n| (n, ()))
        })?;
        Ok(1)
    }
}

lua_fn! {
    /// `s:recvfrom([size[, flags]])`: one `recvfrom(2)`: the data and the
    /// sender's address `{family, host, port}`; nil with `s:errno()`.
    pub(super) fn sock_recvfrom(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let (flags, size) = match recv_args(s, sock)? {
            Ok(a) => a,
            Err(e) => return fail(s, sock, e),
        };
        let from = read_into_spare(s, sock, size, |buf| {
            sock.call(|fd| sys::recv_from_with_flags(fd, buf, flags))
        })?;
        match from {
            Some(from) => {
                addr::push_addr(s, &from);
                Ok(2)
            }
            None => Ok(1),
        }
    }
}
