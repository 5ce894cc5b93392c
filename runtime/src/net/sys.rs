//! The socket syscalls under the [`net`](crate::net) types, and under a
//! binding that makes its own (`lua_bridge`'s `socket` module): safe
//! calls on a [`BorrowedFd`] for what `socket2` has no safe call for
//! (a `recv` into initialized bytes, `accept4` with flags, options of any
//! level and size, `read`/`write` of an fd that is no socket), and the
//! `netdb` look-ups of protocols and interfaces.
//!
//! Fds are made non-blocking and close-on-exec in the syscall that makes
//! them, sends go with `MSG_NOSIGNAL`, and `errno` is read right after
//! each call (the `io::Error`'s `raw_os_error()`).

use std::ffi::{c_int, CStr};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

use socket2::{Domain, SockAddr, SockRef, Socket, Type};

/// A new non-blocking, close-on-exec socket for `addr`'s family.
///
/// # Errors
///
/// `socket(2)`'s.
pub fn socket(addr: &SocketAddr, ty: Type) -> io::Result<Socket> {
    Socket::new(Domain::for_address(*addr), ty.nonblocking().cloexec(), None)
}

/// socket2's view of a borrowed fd, for its options.
pub fn sock<'a>(fd: &'a BorrowedFd<'_>) -> SockRef<'a> {
    SockRef::from(fd)
}

#[inline]
fn check(n: isize) -> io::Result<usize> {
    match n {
        -1 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    }
}

/// `recv(2)` into `buf`.
///
/// # Errors
///
/// `recv(2)`'s (`WouldBlock` for `EAGAIN`).
#[inline]
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    recv_with_flags(fd, buf, 0)
}

/// `recv(2)` into `buf` with `flags` (`MSG_PEEK`, ...).
///
/// # Errors
///
/// `recv(2)`'s.
#[inline]
pub fn recv_with_flags(fd: BorrowedFd<'_>, buf: &mut [u8], flags: c_int) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
    check(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// `send(2)` of `buf` with `MSG_NOSIGNAL`.
///
/// # Errors
///
/// `send(2)`'s (`EPIPE` for a reset peer).
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    sock(&fd).send_with_flags(buf, libc::MSG_NOSIGNAL)
}

/// `sendto(2)` of `buf` to `addr` with `MSG_NOSIGNAL`.
///
/// # Errors
///
/// `sendto(2)`'s.
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SockAddr) -> io::Result<usize> {
    sock(&fd).send_to_with_flags(buf, addr, libc::MSG_NOSIGNAL)
}

/// `read(2)` into `buf` (an fd that is no socket: a pipe, a tty).
///
/// # Errors
///
/// `read(2)`'s.
#[inline]
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
    check(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `write(2)` of `buf` (an fd that is no socket).
///
/// # Errors
///
/// `write(2)`'s.
#[inline]
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of reads.
    check(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

fn socket_addr(addr: &SockAddr) -> io::Result<SocketAddr> {
    addr.as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP address"))
}

/// `recvfrom(2)` into `buf`, with the sender's address (an IP one).
///
/// # Errors
///
/// `recvfrom(2)`'s; `InvalidData` for a sender of another family.
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
    let (n, addr) = recv_from_with_flags(fd, buf, 0)?;
    Ok((n, socket_addr(&addr)?))
}

/// `recvfrom(2)` into `buf` with `flags`, with the sender's address, of
/// any family (empty, `len() == 0`, when the socket gives none).
///
/// # Errors
///
/// `recvfrom(2)`'s.
pub fn recv_from_with_flags(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: c_int,
) -> io::Result<(usize, SockAddr)> {
    // SAFETY: `try_init` gives storage for a socket address and its
    // length, which recvfrom fills; `buf` is valid for writes.
    unsafe {
        SockAddr::try_init(|storage, len| {
            check(libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
                storage.cast(),
                len,
            ))
        })
    }
}

/// `accept4(2)`: the connection, non-blocking and close-on-exec, and the
/// peer's address (an IP one).
///
/// # Errors
///
/// `accept4(2)`'s; `InvalidData` for a peer of another family.
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
    let (conn, addr) = accept_any(fd)?;
    Ok((conn, socket_addr(&addr)?))
}

/// `accept4(2)`: the connection, non-blocking and close-on-exec, and the
/// peer's address, of any family.
///
/// # Errors
///
/// `accept4(2)`'s (`WouldBlock` when no connection waits).
pub fn accept_any(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SockAddr)> {
    // SAFETY: as in `recv_from_with_flags`; the new fd is the caller's.
    unsafe {
        SockAddr::try_init(|storage, len| {
            match libc::accept4(
                fd.as_raw_fd(),
                storage.cast(),
                len,
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            ) {
                -1 => Err(io::Error::last_os_error()),
                conn => Ok(OwnedFd::from_raw_fd(conn)),
            }
        })
    }
}

/// `setsockopt(2)` of option `name` at `level` to the bytes of `value`
/// (an `int` as its `to_ne_bytes()`).
///
/// # Errors
///
/// `setsockopt(2)`'s (`ENOPROTOOPT`, `EINVAL`...).
pub fn setsockopt(fd: BorrowedFd<'_>, level: c_int, name: c_int, value: &[u8]) -> io::Result<()> {
    let len = libc::socklen_t::try_from(value.len()).map_err(|_| einval())?;
    // SAFETY: `value` is valid for reads of `len` bytes.
    match unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), len) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `getsockopt(2)` of option `name` at `level` into `buf`: the length
/// the kernel gave (at most `buf.len()` is written; a longer value is cut).
///
/// # Errors
///
/// `getsockopt(2)`'s.
pub fn getsockopt(
    fd: BorrowedFd<'_>,
    level: c_int,
    name: c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = libc::socklen_t::try_from(buf.len()).map_err(|_| einval())?;
    // SAFETY: `buf` is valid for writes of `len` bytes, `len` for a write.
    match unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    } {
        0 => Ok(len as usize),
        _ => Err(io::Error::last_os_error()),
    }
}

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

/// The name of network interface `index` (`if_indextoname(3)`), if one
/// has it.
pub fn interface_name(index: u32) -> Option<String> {
    let mut name = [0u8; libc::IF_NAMESIZE];
    // SAFETY: `name` has IF_NAMESIZE bytes, as if_indextoname needs.
    let p = unsafe { libc::if_indextoname(index, name.as_mut_ptr().cast()) };
    if p.is_null() {
        return None;
    }
    CStr::from_bytes_until_nul(&name)
        .ok()
        .map(|n| n.to_string_lossy().into_owned())
}

/// `getprotobyname(3)` and `getprotobynumber(3)` use one static buffer:
/// the threads take turns.
static PROTOENT: Mutex<()> = Mutex::new(());

/// The number of protocol `name` in the protocols database
/// (`getprotobyname(3)`, `/etc/protocols`), if it has one.
pub fn protocol_number(name: &CStr) -> Option<c_int> {
    let _turn = PROTOENT.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: a NUL-terminated name; the entry is read before the lock goes.
    unsafe {
        let p = libc::getprotobyname(name.as_ptr());
        (!p.is_null()).then(|| (*p).p_proto)
    }
}

/// The name of protocol `proto` in the protocols database
/// (`getprotobynumber(3)`), if it has one.
pub fn protocol_name(proto: c_int) -> Option<Vec<u8>> {
    let _turn = PROTOENT.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the entry and its name are read before the lock goes.
    unsafe {
        let p = libc::getprotobynumber(proto);
        if p.is_null() || (*p).p_name.is_null() {
            return None;
        }
        Some(CStr::from_ptr((*p).p_name).to_bytes().to_vec())
    }
}

/// The socket's local address.
///
/// # Errors
///
/// `getsockname(2)`'s; `InvalidData` for an address not an IP one.
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    socket_addr(&sock(&fd).local_addr()?)
}

/// The socket's peer address.
///
/// # Errors
///
/// `getpeername(2)`'s; `InvalidData` for an address not an IP one.
pub fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    socket_addr(&sock(&fd).peer_addr()?)
}
