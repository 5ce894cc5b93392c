//! The methods that set a socket up or take it down: `bind`, `listen`,
//! `accept`, `sysconnect` and `connect`, `shutdown`, `name`, `peer`.

use std::ffi::c_int;
use std::net::Shutdown;

use luafiber_runtime::io::Interest;
use luafiber_runtime::net::sys;
use socket2::{SockAddr, SockRef};

use super::addr;
use super::sock::{self, push_outcome, this, Sock};
use super::wait::{failed, opt_timeout};
use crate::raw::{lua_fn, LResult, Stack};

/// The address of arguments 2 (host) and 3 (port), as Tarantool's
/// `tostring(host)`, `tostring(port)` and `lbox_socket_local_resolve`.
fn addr_args(s: &Stack) -> Result<SockAddr, c_int> {
    match (addr::arg_text(s, 2), addr::arg_text(s, 3)) {
        (Some(h), Some(p)) => addr::resolve(&h, &p),
        _ => Err(libc::EINVAL),
    }
}

/// `bind(2)` or `connect(2)` of the socket to `a`.
fn sys_addr(sock: &Sock, a: &SockAddr, connect: bool) -> Result<(), c_int> {
    sock.call(|fd| match connect {
        true => SockRef::from(&fd).connect(a),
        false => SockRef::from(&fd).bind(a),
    })
}

lua_fn! {
    /// `s:bind(host, port)`: binds to a literal address (`'unix/'` and a
    /// path); true, or false with `s:errno()`.
    pub(super) fn sock_bind(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let r = addr_args(s).and_then(|a| sys_addr(sock, &a, false));
        push_outcome(s, sock, r)
    }
}

lua_fn! {
    /// `s:sysconnect(host, port)`: one `connect(2)` to a literal address;
    /// true, or false with `s:errno()` (`EINPROGRESS` while a non-blocking
    /// connect goes on).
    pub(super) fn sock_sysconnect(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let r = addr_args(s).and_then(|a| sys_addr(sock, &a, true));
        push_outcome(s, sock, r)
    }
}

lua_fn! {
    /// `s:connect(host, port[, timeout])`: connects to a literal address,
    /// parking until the connection is made or fails: true, or nil with
    /// `s:errno()` (`ETIMEDOUT`, `ECONNREFUSED`, ...). What
    /// `socket.tcp_connect` does for each address (Tarantool's internal
    /// `socket_tcp_connect`; Tarantool has no such method).
    pub(super) fn sock_connect(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let timeout = opt_timeout(s, 4, "Usage: s:connect(host, port[, timeout])")?;
        sock.ok();
        let r = addr_args(s).and_then(|a| sys_addr(sock, &a, true));
        let e = match r {
            Ok(()) => 0,
            Err(libc::EINPROGRESS) => {
                if timeout != Some(std::time::Duration::ZERO) {
                    crate::fiber::check_switch(s, "socket.connect")?;
                }
                match sock.wait(Interest::WRITABLE, timeout) {
                    Ok(_) => addr::so_error(sock),
                    Err(e) => failed(e)?,
                }
            }
            Err(e) => e,
        };
        match e {
            0 => s.push_bool(true),
            e => {
                sock.fail(e);
                s.push_nil();
            }
        }
        Ok(1)
    }
}

lua_fn! {
    /// `s:listen([backlog])`: true, or false with `s:errno()`; the backlog
    /// is 256 by default.
    pub(super) fn sock_listen(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let backlog = match s.is_none_or_nil(2) {
            true => 256,
            false => s.to_integer(2).unwrap_or(256).clamp(0, i64::from(c_int::MAX)) as c_int,
        };
        let r = sock.call(|fd| SockRef::from(&fd).listen(backlog));
        push_outcome(s, sock, r)
    }
}

lua_fn! {
    /// `s:accept()`: a connection waiting on a listening socket (never
    /// waits): the new socket (non-blocking, close-on-exec) and the peer's
    /// address `{family, host, port}`; nil with `s:errno()` (`EAGAIN` when
    /// none waits).
    pub(super) fn sock_accept(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let (fd, from) = match sock.call(sys::accept_any) {
            Ok(v) => v,
            Err(e) => {
                if e == libc::EAGAIN {
                    sock.would_block(Interest::READABLE);
                }
                sock.fail(e);
                s.push_nil();
                return Ok(1);
            }
        };
        s.ensure(4)?;
        if let Err(e) = sock::push_new(s, fd, sock.itype, sock.tcp) {
            sock.fail(e);
            s.push_nil();
            return Ok(1);
        }
        sock.ok();
        addr::push_addr(s, &from);
        Ok(2)
    }
}

lua_fn! {
    /// `s:shutdown([how])`: `'R'`/`'READ'`/`'receive'`/0,
    /// `'W'`/`'WRITE'`/`'send'`/1, anything else both ways; true, or false
    /// with `s:errno()`.
    pub(super) fn sock_shutdown(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let how = match (s.to_integer(2), s.to_str(2)) {
            (Some(0), _) => Shutdown::Read,
            (Some(1), _) => Shutdown::Write,
            (_, Some(b"R" | b"READ" | b"receive")) => Shutdown::Read,
            (_, Some(b"W" | b"WRITE" | b"send")) => Shutdown::Write,
            _ => Shutdown::Both,
        };
        let r = sock.call(|fd| SockRef::from(&fd).shutdown(how));
        push_outcome(s, sock, r)
    }
}

/// `s:name()` and `s:peer()`: the address table, or nil with the errno.
fn name(s: &mut Stack, peer: bool) -> LResult {
    let sock = &*this(s, 1)?;
    s.ensure(4)?;
    match addr::push_name(s, sock, peer) {
        Ok(()) => sock.ok(),
        Err(e) => {
            sock.fail(e);
            s.push_nil();
        }
    }
    Ok(1)
}

lua_fn! {
    /// `s:name()`: `{family, host, port, type, protocol}` of the local
    /// end, or nil with `s:errno()`.
    pub(super) fn sock_name(s: &mut Stack) {
        name(s, false)
    }
}

lua_fn! {
    /// `s:peer()`: as `name()`, for the remote end.
    pub(super) fn sock_peer(s: &mut Stack) {
        name(s, true)
    }
}

/// `"host:port"` of the local (or remote) end of `sock`, if it has one.
fn end_text(sock: &Sock, peer: bool) -> Option<String> {
    let a = addr::end_addr(sock, peer).ok()?;
    if let Some(sa) = a.as_socket() {
        return Some(format!("{}:{}", sa.ip(), sa.port()));
    }
    let path = a.as_unix()?.as_pathname().map(|p| p.display().to_string());
    Some(format!("unix/:{}", path.unwrap_or_default()))
}

lua_fn! {
    /// `__tostring`: `"fd 5, aka 127.0.0.1:8080, peer 127.0.0.1:55610"`
    /// (`s:errno()` untouched).
    pub(super) fn sock_tostring(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let mut text = format!("fd {}", sock.raw());
        if let Some(aka) = end_text(sock, false) {
            text.push_str(", aka ");
            text.push_str(&aka);
        }
        if let Some(peer) = end_text(sock, true) {
            text.push_str(", peer ");
            text.push_str(&peer);
        }
        s.push_str(&text);
        Ok(1)
    }
}
