//! The socket syscalls under the [`net`](crate::net) types: made
//! non-blocking and close-on-exec in the syscall that makes the fd, sends
//! with `MSG_NOSIGNAL`, `errno` read right after each call.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use socket2::{Domain, SockAddr, SockRef, Socket, Type};

/// A new non-blocking, close-on-exec socket for `addr`'s family.
pub fn socket(addr: &SocketAddr, ty: Type) -> io::Result<Socket> {
    Socket::new(Domain::for_address(*addr), ty.nonblocking().cloexec(), None)
}

/// socket2's view of a borrowed fd, for its options.
pub fn sock<'a>(fd: &'a BorrowedFd<'_>) -> SockRef<'a> {
    SockRef::from(fd)
}

fn check(n: isize) -> io::Result<usize> {
    match n {
        -1 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    }
}

/// `recv(2)` into `buf`.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
    check(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) })
}

/// `send(2)` of `buf` with `MSG_NOSIGNAL`.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of reads.
    check(unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    })
}

/// `sendto(2)` of `buf` to `addr` with `MSG_NOSIGNAL`.
pub fn send_to(fd: BorrowedFd<'_>, buf: &[u8], addr: &SockAddr) -> io::Result<usize> {
    sock(&fd).send_to_with_flags(buf, addr, libc::MSG_NOSIGNAL)
}

fn socket_addr(addr: &SockAddr) -> io::Result<SocketAddr> {
    addr.as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP address"))
}

/// `recvfrom(2)` into `buf`, with the sender's address.
pub fn recv_from(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
    // SAFETY: `try_init` gives storage for a socket address and its
    // length, which recvfrom fills; `buf` is valid for writes.
    let (n, addr) = unsafe {
        SockAddr::try_init(|storage, len| {
            check(libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                storage.cast(),
                len,
            ))
        })
    }?;
    Ok((n, socket_addr(&addr)?))
}

/// `accept4(2)`: the connection, non-blocking and close-on-exec, and the
/// peer's address.
pub fn accept(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, SocketAddr)> {
    // SAFETY: as in `recv_from`; a new fd is owned by the caller.
    let (conn, addr) = unsafe {
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
    }?;
    Ok((conn, socket_addr(&addr)?))
}

/// The socket's local address.
pub fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    socket_addr(&sock(&fd).local_addr()?)
}

/// The socket's peer address.
pub fn peer_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    socket_addr(&sock(&fd).peer_addr()?)
}
