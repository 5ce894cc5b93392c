//! Socket options: the tables of `socket.internal.SO_OPT` (Tarantool's
//! `so_opts` and `so_tcp_opts`), the primitives `socket.lua`'s
//! `setsockopt`/`getsockopt` call once they found the option, and
//! `s:linger()`, `s:nonblock()`.

use std::ffi::{c_int, CStr};

use luafiber_runtime::net::sys;
use socket2::SockRef;

use super::sock::{push_outcome, this, Sock};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// How an option's value is passed: an `int`, or bytes (a device name).
/// 0 is an option the generic calls do not handle (`SO_LINGER`,
/// `TCP_INFO`).
const INT: u8 = 1;
const BYTES: u8 = 2;
const OTHER: u8 = 0;

/// An option: name, number, kind, writable.
type Opt = (&'static CStr, c_int, u8, bool);

/// The `SOL_SOCKET` options.
pub(super) const SOCKET_OPTS: &[Opt] = &[
    (c"SO_ACCEPTCONN", libc::SO_ACCEPTCONN, INT, false),
    (c"SO_BINDTODEVICE", libc::SO_BINDTODEVICE, BYTES, true),
    (c"SO_BROADCAST", libc::SO_BROADCAST, INT, true),
    (c"SO_DEBUG", libc::SO_DEBUG, INT, true),
    (c"SO_DOMAIN", libc::SO_DOMAIN, INT, false),
    (c"SO_ERROR", libc::SO_ERROR, INT, false),
    (c"SO_DONTROUTE", libc::SO_DONTROUTE, INT, true),
    (c"SO_KEEPALIVE", libc::SO_KEEPALIVE, INT, true),
    (c"SO_LINGER", libc::SO_LINGER, OTHER, false),
    (c"SO_MARK", libc::SO_MARK, INT, true),
    (c"SO_OOBINLINE", libc::SO_OOBINLINE, INT, true),
    (c"SO_PASSCRED", libc::SO_PASSCRED, INT, true),
    (c"SO_PEERCRED", libc::SO_PEERCRED, INT, false),
    (c"SO_PRIORITY", libc::SO_PRIORITY, INT, true),
    (c"SO_RCVBUF", libc::SO_RCVBUF, INT, true),
    (c"SO_RCVBUFFORCE", libc::SO_RCVBUFFORCE, INT, true),
    (c"SO_RCVLOWAT", libc::SO_RCVLOWAT, INT, true),
    (c"SO_SNDLOWAT", libc::SO_SNDLOWAT, INT, true),
    (c"SO_RCVTIMEO", libc::SO_RCVTIMEO, INT, true),
    (c"SO_SNDTIMEO", libc::SO_SNDTIMEO, INT, true),
    (c"SO_REUSEADDR", libc::SO_REUSEADDR, INT, true),
    (c"SO_REUSEPORT", libc::SO_REUSEPORT, INT, true),
    (c"SO_SNDBUF", libc::SO_SNDBUF, INT, true),
    (c"SO_SNDBUFFORCE", libc::SO_SNDBUFFORCE, INT, true),
    (c"SO_TIMESTAMP", libc::SO_TIMESTAMP, INT, true),
    (c"SO_PROTOCOL", libc::SO_PROTOCOL, INT, false),
    (c"SO_TYPE", libc::SO_TYPE, INT, false),
];

/// The `IPPROTO_TCP` options.
pub(super) const TCP_OPTS: &[Opt] = &[
    (c"TCP_NODELAY", libc::TCP_NODELAY, INT, true),
    (c"TCP_MAXSEG", libc::TCP_MAXSEG, INT, true),
    (c"TCP_CORK", libc::TCP_CORK, INT, true),
    (c"TCP_KEEPIDLE", libc::TCP_KEEPIDLE, INT, true),
    (c"TCP_KEEPINTVL", libc::TCP_KEEPINTVL, INT, true),
    (c"TCP_KEEPCNT", libc::TCP_KEEPCNT, INT, true),
    (c"TCP_SYNCNT", libc::TCP_SYNCNT, INT, true),
    (c"TCP_LINGER2", libc::TCP_LINGER2, INT, true),
    (c"TCP_DEFER_ACCEPT", libc::TCP_DEFER_ACCEPT, INT, true),
    (c"TCP_WINDOW_CLAMP", libc::TCP_WINDOW_CLAMP, INT, true),
    (c"TCP_INFO", libc::TCP_INFO, OTHER, false),
    (c"TCP_QUICKACK", libc::TCP_QUICKACK, INT, true),
    (c"TCP_CONGESTION", libc::TCP_CONGESTION, INT, true),
    (c"TCP_MD5SIG", libc::TCP_MD5SIG, INT, true),
    (
        c"TCP_THIN_LINEAR_TIMEOUTS",
        libc::TCP_THIN_LINEAR_TIMEOUTS,
        INT,
        true,
    ),
    (c"TCP_THIN_DUPACK", libc::TCP_THIN_DUPACK, INT, true),
    (c"TCP_USER_TIMEOUT", libc::TCP_USER_TIMEOUT, INT, true),
    (c"TCP_REPAIR", libc::TCP_REPAIR, INT, true),
    (c"TCP_REPAIR_QUEUE", libc::TCP_REPAIR_QUEUE, INT, true),
    (c"TCP_QUEUE_SEQ", libc::TCP_QUEUE_SEQ, INT, true),
    (c"TCP_REPAIR_OPTIONS", libc::TCP_REPAIR_OPTIONS, INT, true),
    (c"TCP_FASTOPEN", libc::TCP_FASTOPEN, INT, true),
    (c"TCP_TIMESTAMP", libc::TCP_TIMESTAMP, INT, true),
    (c"TCP_NOTSENT_LOWAT", libc::TCP_NOTSENT_LOWAT, INT, true),
    (c"TCP_CC_INFO", libc::TCP_CC_INFO, INT, true),
    (c"TCP_SAVE_SYN", libc::TCP_SAVE_SYN, INT, true),
    (c"TCP_SAVED_SYN", libc::TCP_SAVED_SYN, INT, true),
];

/// Pushes `{NAME = {iname =, type =, rw =}, ...}` for `opts`.
pub(super) fn push_opts(s: &mut Stack, opts: &[Opt]) -> LResult<()> {
    s.ensure(4)?;
    let t = s.new_table(0, opts.len() as c_int);
    for (name, value, kind, rw) in opts {
        let o = s.new_table(0, 3);
        s.push_int((*value).into());
        s.set_field(o, c"iname");
        s.push_int((*kind).into());
        s.set_field(o, c"type");
        s.push_bool(*rw);
        s.set_field(o, c"rw");
        s.set_field(t, name);
    }
    Ok(())
}

/// An integral number argument.
fn int_arg(s: &Stack, idx: c_int, usage: &str) -> LResult<c_int> {
    s.to_integer(idx)
        .and_then(|n| c_int::try_from(n).ok())
        .ok_or_else(|| Raise::illegal(usage))
}

/// `setsockopt(2)` of the bytes `value`.
fn set(sock: &Sock, level: c_int, name: c_int, value: &[u8]) -> Result<(), c_int> {
    sock.call(|fd| sys::setsockopt(fd, level, name, value))
}

/// `getsockopt(2)` into `buf`: the length the kernel gave.
fn get(sock: &Sock, level: c_int, name: c_int, buf: &mut [u8]) -> Result<usize, c_int> {
    sock.call(|fd| sys::getsockopt(fd, level, name, buf))
}

/// `struct linger` as `SO_LINGER` takes it: `l_onoff`, then `l_linger`.
fn linger_bytes(on: c_int, secs: c_int) -> [u8; 8] {
    let mut b = [0; 8];
    b[..4].copy_from_slice(&on.to_ne_bytes());
    b[4..].copy_from_slice(&secs.to_ne_bytes());
    b
}

const SET_USAGE: &str = "Usage: internal.setsockopt(s, level, name, type, value)";

lua_fn! {
    /// `socket.internal.setsockopt(s, level, iname, type, value)`: sets an
    /// `int` option (type 1; value a number) or a bytes one (type 2; a
    /// string); true, or false with `s:errno()`. `socket.lua`'s
    /// `s:setsockopt()` finds the numbers first.
    pub(super) fn internal_setsockopt(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let level = int_arg(s, 2, SET_USAGE)?;
        let name = int_arg(s, 3, SET_USAGE)?;
        let r = match int_arg(s, 4, SET_USAGE)? {
            1 => {
                let v = int_arg(s, 5, SET_USAGE)?;
                set(sock, level, name, &v.to_ne_bytes())
            }
            _ => {
                let v = s.to_str(5).ok_or_else(|| Raise::illegal(SET_USAGE))?;
                set(sock, level, name, v)
            }
        };
        if r.is_ok() && level == libc::SOL_SOCKET && name == libc::SO_PASSCRED {
            // A Unix stream read no longer drains the socket when short.
            sock.stream.set(false);
        }
        push_outcome(s, sock, r)
    }
}

const GET_USAGE: &str = "Usage: internal.getsockopt(s, level, name, type)";

lua_fn! {
    /// `socket.internal.getsockopt(s, level, iname, type)`: an `int`
    /// option's number (type 1) or a bytes one's string (type 2, at most
    /// 256 bytes); nil with `s:errno()`.
    pub(super) fn internal_getsockopt(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let level = int_arg(s, 2, GET_USAGE)?;
        let name = int_arg(s, 3, GET_USAGE)?;
        let kind = int_arg(s, 4, GET_USAGE)?;
        let mut buf = [0u8; 256];
        let room = match kind {
            1 => std::mem::size_of::<c_int>(),
            _ => buf.len(),
        };
        let len = match get(sock, level, name, &mut buf[..room]) {
            Ok(len) => len.min(buf.len()),
            Err(e) => {
                sock.fail(e);
                s.push_nil();
                return Ok(1);
            }
        };
        sock.ok();
        match kind {
            1 if len == std::mem::size_of::<c_int>() => {
                s.push_int(c_int::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]).into())
            }
            1 => return Err(Raise::illegal(format!("Internal error: unexpected optlen: {len}"))),
            _ => s.push_bytes(&buf[..len]),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `s:linger([active[, timeout]])`: without arguments, `active,
    /// timeout` of `SO_LINGER`; else sets them (timeout in seconds, 0 by
    /// default) and gives them back; nil with `s:errno()`.
    pub(super) fn sock_linger(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let r = if s.is_none_or_nil(2) {
            let mut b = linger_bytes(0, 0);
            get(sock, libc::SOL_SOCKET, libc::SO_LINGER, &mut b).map(|_| {
                let int = |i: usize| c_int::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                (int(0), int(4))
            })
        } else {
            let on = c_int::from(s.to_bool(2));
            let secs = match s.is_none_or_nil(3) {
                true => 0,
                false => int_arg(s, 3, "Usage: s:linger([active[, timeout]])")?,
            };
            let b = linger_bytes(on, secs);
            set(sock, libc::SOL_SOCKET, libc::SO_LINGER, &b).map(|()| (on, secs))
        };
        match r {
            Ok((on, secs)) => {
                sock.ok();
                s.push_bool(on != 0);
                s.push_int(secs.into());
                Ok(2)
            }
            Err(e) => {
                sock.fail(e);
                s.push_nil();
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `s:nonblock([on])`: whether `O_NONBLOCK` is set; with `on`, sets or
    /// clears it first. nil with `s:errno()`. A socket in blocking mode
    /// blocks the whole cord in its syscalls, as in Tarantool.
    pub(super) fn sock_nonblock(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        // `fcntl(F_GETFL)`, and `F_SETFL` when the flag changes.
        let r = match s.is_none_or_nil(2) {
            true => sock.call(|fd| SockRef::from(&fd).nonblocking()),
            false => {
                let on = s.to_bool(2);
                sock.call(|fd| SockRef::from(&fd).set_nonblocking(on)).map(|()| on)
            }
        };
        match r {
            Ok(on) => {
                sock.ok();
                s.push_bool(on);
            }
            Err(e) => {
                sock.fail(e);
                s.push_nil();
            }
        }
        Ok(1)
    }
}
