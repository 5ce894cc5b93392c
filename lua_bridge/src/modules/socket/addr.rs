//! Socket addresses between Lua and the system: Tarantool's
//! `lbox_socket_local_resolve` (a literal host and a port to a `sockaddr`)
//! and `lbox_socket_push_addr` (a `sockaddr` to `{family, host, port}`),
//! and the names of families, socket types and protocols.

use std::borrow::Cow;
use std::ffi::{c_int, CStr};
use std::net::{IpAddr, SocketAddr};

use luafiber_runtime::net::sys;
use mlua::ffi;
use socket2::{SockAddr, SockRef};

use super::sock::Sock;
use crate::raw::Stack;

/// The text of a host or port argument, as Tarantool's `tostring(x)` has
/// it for strings, numbers, nil and booleans (so `s:bind(host)` binds
/// port `atoi("nil")`, 0: a free port, as in master); `None` for anything
/// else (whose `tostring` no address parses either).
pub(super) fn arg_text<'s>(s: &'s Stack, idx: c_int) -> Option<Cow<'s, [u8]>> {
    if let Some(b) = s.to_str(idx) {
        return Some(Cow::Borrowed(b));
    }
    if s.is_none_or_nil(idx) {
        return Some(Cow::Borrowed(b"nil"));
    }
    if s.type_of(idx) == mlua::ffi::LUA_TBOOLEAN {
        let text: &[u8] = if s.to_bool(idx) { b"true" } else { b"false" };
        return Some(Cow::Borrowed(text));
    }
    let n = s.to_number(idx)?;
    Some(Cow::Owned(match s.to_integer(idx) {
        Some(i) => i.to_string().into_bytes(),
        None => n.to_string().into_bytes(),
    }))
}

/// `atoi(3)` of a port, cut to 16 bits as `htons` does.
fn port_of(port: &[u8]) -> u16 {
    let t = port.trim_ascii_start();
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |n, &c| {
            n.wrapping_mul(10).wrapping_add(i64::from(c - b'0'))
        });
    (if neg { n.wrapping_neg() } else { n }) as u16
}

/// Tarantool's `lbox_socket_local_resolve`: `"unix/"` with a path as the
/// port, or a literal IPv4 or IPv6 address with a port number. No name is
/// resolved here (that is `socket.getaddrinfo`).
///
/// # Errors
///
/// The errno: `EINVAL` for a host that is no literal address, `ENOBUFS`
/// for a Unix path too long.
pub(super) fn resolve(host: &[u8], port: &[u8]) -> Result<SockAddr, c_int> {
    if host == b"unix/" {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::OsStr::from_bytes(port);
        // sun_path holds 108 bytes with the NUL.
        if port.len() >= 108 {
            return Err(libc::ENOBUFS);
        }
        return SockAddr::unix(path).map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL));
    }
    let ip: IpAddr = std::str::from_utf8(host)
        .ok()
        .and_then(|h| h.parse().ok())
        .ok_or(libc::EINVAL)?;
    Ok(SockAddr::from(SocketAddr::new(ip, port_of(port))))
}

/// Pushes `{family = ..., host = ..., port = ...}` for an IP or Unix
/// address (`host = 'unix/'`, `port` the path there), nil for any other
/// (or an empty one, `len == 0`). Tarantool's `lbox_socket_push_addr`.
pub(super) fn push_addr(s: &mut Stack, addr: &SockAddr) {
    if addr.len() == 0 {
        s.push_nil();
        return;
    }
    let family = c_int::from(addr.family());
    match (addr.as_socket(), family) {
        (Some(sa), _) => {
            let t = s.new_table(0, 3);
            push_family(s, family);
            s.set_field(t, c"family");
            s.push_str(&host_text(&sa));
            s.set_field(t, c"host");
            s.push_int(sa.port().into());
            s.set_field(t, c"port");
        }
        (None, libc::AF_UNIX) => {
            let t = s.new_table(0, 3);
            push_family(s, family);
            s.set_field(t, c"family");
            s.push_cstr(c"unix/");
            s.set_field(t, c"host");
            // A path up to its first NUL (an abstract name reads as '').
            let path = addr.as_unix().and_then(|u| {
                use std::os::unix::ffi::OsStrExt;
                u.as_pathname().map(|p| p.as_os_str().as_bytes().to_vec())
            });
            s.push_bytes(path.as_deref().unwrap_or_default());
            s.set_field(t, c"port");
        }
        _ => s.push_nil(),
    }
}

/// The numeric host of an IP address, as `getnameinfo(NI_NUMERICHOST)`
/// gives it (with `%interface` for a scoped IPv6 address).
fn host_text(sa: &SocketAddr) -> String {
    match sa {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) if a.scope_id() == 0 => a.ip().to_string(),
        SocketAddr::V6(a) => {
            let scope = sys::interface_name(a.scope_id());
            let scope = scope.unwrap_or_else(|| a.scope_id().to_string());
            format!("{}%{scope}", a.ip())
        }
    }
}

/// Address families by name (`socket.internal.DOMAIN` has the `PF_` and
/// `AF_` spellings of each).
pub(super) const FAMILIES: &[(&CStr, c_int)] = &[
    (c"UNIX", libc::AF_UNIX),
    (c"LOCAL", libc::AF_LOCAL),
    (c"INET", libc::AF_INET),
    (c"INET6", libc::AF_INET6),
    (c"IPX", libc::AF_IPX),
    (c"NETLINK", libc::AF_NETLINK),
    (c"X25", libc::AF_X25),
    (c"AX25", libc::AF_AX25),
    (c"ATMPVC", libc::AF_ATMPVC),
    (c"APPLETALK", libc::AF_APPLETALK),
    (c"PACKET", libc::AF_PACKET),
];

/// Socket types by name (`socket.internal.SO_TYPE`).
pub(super) const TYPES: &[(&CStr, c_int)] = &[
    (c"SOCK_STREAM", libc::SOCK_STREAM),
    (c"SOCK_DGRAM", libc::SOCK_DGRAM),
    (c"SOCK_SEQPACKET", libc::SOCK_SEQPACKET),
    (c"SOCK_RAW", libc::SOCK_RAW),
    (c"SOCK_RDM", libc::SOCK_RDM),
];

/// Pushes a family's `AF_` name, or its number when it has none here.
pub(super) fn push_family(s: &mut Stack, family: c_int) {
    let name: Option<&CStr> = match family {
        libc::AF_UNIX => Some(c"AF_UNIX"),
        libc::AF_INET => Some(c"AF_INET"),
        libc::AF_INET6 => Some(c"AF_INET6"),
        libc::AF_IPX => Some(c"AF_IPX"),
        libc::AF_NETLINK => Some(c"AF_NETLINK"),
        libc::AF_X25 => Some(c"AF_X25"),
        libc::AF_AX25 => Some(c"AF_AX25"),
        libc::AF_ATMPVC => Some(c"AF_ATMPVC"),
        libc::AF_APPLETALK => Some(c"AF_APPLETALK"),
        libc::AF_PACKET => Some(c"AF_PACKET"),
        _ => None,
    };
    match name {
        Some(n) => s.push_cstr(n),
        None => s.push_int(family.into()),
    }
}

/// Linux's obsolete `SOCK_PACKET` (deprecated in `libc`).
const SOCK_PACKET: c_int = 10;

/// Pushes a socket type's name (its flags dropped), or its number.
pub(super) fn push_sotype(s: &mut Stack, sotype: c_int) {
    let t = sotype & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
    match TYPES.iter().find(|(_, v)| *v == t) {
        Some((name, _)) => s.push_cstr(name),
        None if t == SOCK_PACKET => s.push_cstr(c"SOCK_PACKET"),
        None => s.push_int(t.into()),
    }
}

/// Pushes a protocol's name (`tcp`), or its number (0 stays 0).
pub(super) fn push_protocol(s: &mut Stack, proto: c_int) {
    match (proto != 0).then(|| protocol_name(proto)).flatten() {
        Some(name) => s.push_bytes(&name),
        None => s.push_int(proto.into()),
    }
}

/// The protocols most sockets use, without a look into `/etc/protocols`.
const PROTOCOLS: &[(&[u8], c_int)] = &[
    (b"ip", libc::IPPROTO_IP),
    (b"icmp", libc::IPPROTO_ICMP),
    (b"tcp", libc::IPPROTO_TCP),
    (b"udp", libc::IPPROTO_UDP),
    (b"ipv6", libc::IPPROTO_IPV6),
    (b"ipv6-icmp", libc::IPPROTO_ICMPV6),
    (b"sctp", libc::IPPROTO_SCTP),
    (b"udplite", libc::IPPROTO_UDPLITE),
    (b"raw", libc::IPPROTO_RAW),
];

/// The number of protocol `name` (`getprotobyname(3)`).
pub(super) fn protocol_number(name: &[u8]) -> Option<c_int> {
    if let Some((_, n)) = PROTOCOLS.iter().find(|(p, _)| *p == name) {
        return Some(*n);
    }
    sys::protocol_number(&std::ffi::CString::new(name).ok()?)
}

/// The name of protocol `proto` (`getprotobynumber(3)`).
fn protocol_name(proto: c_int) -> Option<Cow<'static, [u8]>> {
    if let Some((name, _)) = PROTOCOLS.iter().find(|(_, n)| *n == proto) {
        return Some(Cow::Borrowed(name));
    }
    sys::protocol_name(proto).map(Cow::Owned)
}

/// The address of the local end of `sock` (`getsockname`), or of the
/// remote one (`getpeername`); the errno when that fails.
pub(super) fn end_addr(sock: &Sock, peer: bool) -> Result<SockAddr, c_int> {
    sock.call(|fd| match peer {
        true => SockRef::from(&fd).peer_addr(),
        false => SockRef::from(&fd).local_addr(),
    })
}

/// Pushes the table `s:name()` / `s:peer()` give: the address with `type`
/// and `protocol` (Tarantool's `lbox_socket_name`), or nil with the errno
/// when `getsockname`/`getpeername` fails.
pub(super) fn push_name(s: &mut Stack, sock: &Sock, peer: bool) -> Result<(), c_int> {
    let addr = end_addr(sock, peer)?;
    push_addr(s, &addr);
    if s.type_of(-1) != ffi::LUA_TTABLE {
        return Ok(());
    }
    if let Ok(t) = sock.call(|fd| SockRef::from(&fd).r#type()) {
        push_sotype(s, t.into());
        s.set_field(-2, c"type");
    }
    // `SO_PROTOCOL` (0, which socket2 gives as none, stays 0).
    if let Ok(p) = sock.call(|fd| SockRef::from(&fd).protocol()) {
        push_protocol(s, p.map_or(0, c_int::from));
        s.set_field(-2, c"protocol");
    }
    Ok(())
}

/// The pending error of a socket (`SO_ERROR`), 0 for none; the errno of
/// `getsockopt` itself when that fails.
pub(super) fn so_error(sock: &Sock) -> c_int {
    match sock.call(|fd| SockRef::from(&fd).take_error()) {
        Ok(pending) => pending.and_then(|e| e.raw_os_error()).unwrap_or(0),
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_as_atoi_reads_them() {
        assert_eq!(port_of(b"8080"), 8080);
        assert_eq!(port_of(b" 80abc"), 80);
        assert_eq!(port_of(b"x"), 0);
        assert_eq!(port_of(b"65537"), 1);
    }

    #[test]
    fn literal_addresses_only() {
        let a = resolve(b"127.0.0.1", b"80").unwrap();
        assert_eq!(a.as_socket().unwrap(), "127.0.0.1:80".parse().unwrap());
        let a = resolve(b"::1", b"0").unwrap();
        assert_eq!(a.as_socket().unwrap(), "[::1]:0".parse().unwrap());
        assert_eq!(resolve(b"localhost", b"80").unwrap_err(), libc::EINVAL);
        assert!(resolve(b"unix/", b"/tmp/x.sock").unwrap().is_unix());
        assert_eq!(resolve(b"unix/", &[b'a'; 200]).unwrap_err(), libc::ENOBUFS);
    }

    #[test]
    fn protocols_by_name_and_number() {
        assert_eq!(protocol_number(b"tcp"), Some(6));
        assert_eq!(protocol_name(17).as_deref(), Some(&b"udp"[..]));
        assert_eq!(protocol_number(b"no-such-protocol"), None);
    }
}
