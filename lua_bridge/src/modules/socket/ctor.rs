//! The C half of the module's functions: the socket makers
//! (`socket.lua` turns names into the numbers they take),
//! `getaddrinfo`, `getprotobyname`.

use std::ffi::{c_int, CStr};
use std::os::fd::OwnedFd;

use luafiber_runtime::io::{self as rio, GaiError, Hints};
use mlua::ffi;
use socket2::{Domain, Protocol, Socket, Type};

use super::addr;
use super::sock::{self, os_errno, Sock};
use crate::modules::errno;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// A socket type with the flags every socket made here has
/// (non-blocking, close-on-exec).
fn sock_type(ty: c_int) -> Type {
    Type::from(ty | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
}

/// Three integral number arguments from 1.
fn triple(s: &Stack, usage: &str) -> LResult<(c_int, c_int, c_int)> {
    let n = |i| {
        s.to_integer(i)
            .and_then(|n| c_int::try_from(n).ok())
            .ok_or_else(|| Raise::illegal(usage))
    };
    Ok((n(1)?, n(2)?, n(3)?))
}

lua_fn! {
    /// `socket.internal.socket(domain, type, protocol)` (numbers): a new
    /// non-blocking, close-on-exec socket, registered with the cord's event
    /// loop; nil with `errno()` set.
    pub(super) fn internal_socket(s: &mut Stack) {
        let (domain, ty, proto) = triple(s, "Usage: internal.socket(domain, type, protocol)")?;
        let made = Socket::new_raw(Domain::from(domain), sock_type(ty), Some(Protocol::from(proto)));
        let fd = match made {
            Ok(fd) => OwnedFd::from(fd),
            Err(e) => {
                errno::set(os_errno(e));
                s.push_nil();
                return Ok(1);
            }
        };
        s.ensure(2)?;
        let ip = domain == libc::AF_INET || domain == libc::AF_INET6;
        if let Err(e) = sock::push_new(s, fd, ty, ip) {
            errno::set(e);
            s.push_nil();
        }
        Ok(1)
    }
}

lua_fn! {
    /// `socket.internal.socketpair(domain, type, protocol)` (numbers): two
    /// connected sockets, as `internal.socket` makes them; nil with
    /// `errno()` set.
    pub(super) fn internal_socketpair(s: &mut Stack) {
        let (domain, ty, proto) = triple(s, "Usage: internal.socketpair(domain, type, protocol)")?;
        let made = Socket::pair_raw(Domain::from(domain), sock_type(ty), Some(Protocol::from(proto)));
        let (a, b) = match made {
            Ok((a, b)) => (OwnedFd::from(a), OwnedFd::from(b)),
            Err(e) => {
                errno::set(os_errno(e));
                s.push_nil();
                return Ok(1);
            }
        };
        s.ensure(3)?;
        if let Err(e) = sock::push_new(s, a, ty, false) {
            // The second fd closes as `b` goes.
            errno::set(e);
            s.push_nil();
            return Ok(1);
        }
        if let Err(e) = sock::push_new(s, b, ty, false) {
            // The first socket closes when collected.
            s.pop(1);
            errno::set(e);
            s.push_nil();
            return Ok(1);
        }
        Ok(2)
    }
}

lua_fn! {
    /// `socket.from_fd(fd)`: a socket object over the fd number `fd`, as it
    /// is (not made non-blocking, not registered: its waits register it
    /// while they last); its type from `SO_TYPE`, 0 when that fails. "fd
    /// must be a number" for anything else. Closing it (or collecting it)
    /// closes `fd`.
    pub(super) fn socket_from_fd(s: &mut Stack) {
        let fd = s
            .to_integer(1)
            .and_then(|n| c_int::try_from(n).ok())
            .ok_or_else(|| Raise::illegal("fd must be a number"))?;
        s.ensure(2)?;
        sock::push(s, Sock::foreign(fd));
        Ok(1)
    }
}

lua_fn! {
    /// `socket.internal.getprotobyname(name)`: the protocol's number, or
    /// nil.
    pub(super) fn internal_getprotobyname(s: &mut Stack) {
        let name = s.to_str(1).ok_or_else(|| Raise::illegal("Usage: getprotobyname(name)"))?;
        match addr::protocol_number(name) {
            Some(n) => s.push_int(n.into()),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

/// The integer field `name` of the hints table at 4 (0 when absent).
fn hint(s: &mut Stack, name: &CStr) -> c_int {
    if s.type_of(4) != ffi::LUA_TTABLE {
        return 0;
    }
    s.rawget_field(4, name);
    let v = s
        .to_integer(-1)
        .and_then(|n| c_int::try_from(n).ok())
        .unwrap_or(0);
    s.pop(1);
    v
}

/// A host or port argument as text; nil, none and `''` (a host) are none.
fn text_arg(s: &Stack, idx: c_int) -> Option<String> {
    let t = addr::arg_text(s, idx)?;
    (!t.is_empty()).then(|| String::from_utf8_lossy(&t).into_owned())
}

/// glibc's `EAI_ADDRFAMILY` (not in `libc` for every target).
const EAI_ADDRFAMILY: c_int = -9;

/// The message of a failed resolution, as Tarantool words it.
fn gai_message(e: &std::io::Error) -> String {
    if rio::is_cancelled(e) {
        return "fiber is cancelled".into();
    }
    if e.kind() == std::io::ErrorKind::TimedOut {
        return "timed out".into();
    }
    match e.get_ref().and_then(|i| i.downcast_ref::<GaiError>()) {
        Some(g) => format!("getaddrinfo: {}", g.strerror()),
        None => format!("getaddrinfo: {e}"),
    }
}

lua_fn! {
    /// `socket.internal.getaddrinfo(host, port, timeout, hints)`: resolves
    /// on the cord's blocking pool (the fiber parks at most `timeout`
    /// seconds); `{{host =, port =, family =, type =, protocol =
    /// [, canonname =]}, ...}`, or nil and a message ("getaddrinfo: ...",
    /// "timed out", "fiber is cancelled"). `hints` holds numbers: `family`,
    /// `type`, `protocol`, `flags`. Tarantool's `lbox_socket_getaddrinfo`.
    pub(super) fn internal_getaddrinfo(s: &mut Stack) {
        let host = text_arg(s, 1);
        let port = text_arg(s, 2);
        let timeout = super::wait::opt_timeout(s, 3, "Usage: getaddrinfo(host, port, timeout, opts)")?;
        let hints = Hints {
            family: hint(s, c"family"),
            socktype: hint(s, c"type"),
            protocol: hint(s, c"protocol"),
            flags: hint(s, c"flags"),
        };
        crate::fiber::check_switch(s, "socket.getaddrinfo")?;
        let mut found = rio::getaddrinfo(host.as_deref(), port.as_deref(), hints, timeout);
        let retry = |e: &std::io::Error| {
            e.get_ref()
                .and_then(|i| i.downcast_ref::<GaiError>())
                .is_some_and(|g| g.code == libc::EAI_BADFLAGS || g.code == EAI_ADDRFAMILY)
        };
        if matches!(&found, Err(e) if retry(e)) && hints.flags & libc::AI_ADDRCONFIG != 0 {
            // As Tarantool: `::1` on a host with no IPv6 address.
            let hints = Hints { flags: hints.flags & !libc::AI_ADDRCONFIG, ..hints };
            found = rio::getaddrinfo(host.as_deref(), port.as_deref(), hints, timeout);
        }
        super::wait::after_switch(s);
        s.ensure(6)?;
        let found = match found {
            Ok(f) => f,
            Err(e) => {
                errno::set(libc::EIO);
                s.push_nil();
                s.push_str(&gai_message(&e));
                return Ok(2);
            }
        };
        let list = s.new_table(found.len() as c_int, 0);
        for (i, a) in found.iter().enumerate() {
            let t = s.new_table(0, 6);
            s.push_str(&a.addr.ip().to_string());
            s.set_field(t, c"host");
            s.push_int(a.addr.port().into());
            s.set_field(t, c"port");
            addr::push_family(s, a.family);
            s.set_field(t, c"family");
            addr::push_sotype(s, a.socktype);
            s.set_field(t, c"type");
            addr::push_protocol(s, a.protocol);
            s.set_field(t, c"protocol");
            if let Some(c) = &a.canonname {
                s.push_str(c);
                s.set_field(t, c"canonname");
            }
            s.rawseti(list, i as i64 + 1);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `socket.internal.usage(msg)`: raises an `IllegalParams` error object
    /// with `msg` (the Lua half's argument errors).
    pub(super) fn internal_usage(s: &mut Stack) {
        let msg = s.to_str(1).map(|m| String::from_utf8_lossy(m).into_owned());
        Err(sock::usage(msg.unwrap_or_else(|| "Usage error".into())))
    }
}
