//! [`UdpSocket`]: a UDP socket whose sends and receives block only the
//! calling fiber.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use socket2::{SockAddr, Type};

use crate::io::{Fd, Interest, Ready};
use crate::net::sys;

/// A UDP socket on this cord (`std::net::UdpSocket`'s twin; see the
/// [module docs](crate::net)). Not `Send`.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::net::UdpSocket;
/// use luafiber_runtime::Runtime;
///
/// let rt = Runtime::new();
/// let (n, from, sender) = rt.block_on(|| {
///     let a = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
///     let b = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
///     b.send_to(b"ping", a.local_addr().unwrap()).unwrap();
///     let mut buf = [0; 16];
///     let (n, from) = a.recv_from(&mut buf).unwrap();
///     (n, from, b.local_addr().unwrap())
/// });
/// assert_eq!((n, from), (4, sender));
/// ```
pub struct UdpSocket {
    fd: Fd,
    read_timeout: Cell<Option<Duration>>,
    write_timeout: Cell<Option<Duration>>,
}

impl UdpSocket {
    /// A socket bound to `addr` (port 0: any free one).
    ///
    /// # Errors
    ///
    /// `EADDRINUSE`, ...; the event loop cannot be made.
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
        let sock = sys::socket(&addr, Type::DGRAM)?;
        sock.bind(&SockAddr::from(addr))?;
        Ok(UdpSocket::from_fd(Fd::from_nonblocking(OwnedFd::from(
            sock,
        ))?))
    }

    /// A socket over an [`Fd`] that holds a UDP socket.
    pub fn from_fd(fd: Fd) -> UdpSocket {
        UdpSocket {
            fd,
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
        }
    }

    /// The registered fd underneath.
    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Sets the default peer: [`send`](UdpSocket::send) goes to it, and
    /// [`recv`](UdpSocket::recv) takes datagrams only from it.
    ///
    /// # Errors
    ///
    /// `connect(2)`'s; `EBADF` once closed.
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        self.fd
            .with(|fd| sys::sock(&fd).connect(&SockAddr::from(addr)))
    }

    /// Sends `buf` as one datagram to `addr`, parking while the socket's
    /// buffer is full (up to the write timeout).
    ///
    /// # Errors
    ///
    /// `EMSGSIZE` for a datagram too large; [`io::ErrorKind::TimedOut`];
    /// a cancel; `EBADF` once closed.
    pub fn send_to(&self, buf: &[u8], addr: SocketAddr) -> io::Result<usize> {
        let to = SockAddr::from(addr);
        self.fd
            .io(Interest::WRITABLE, self.write_timeout.get(), |fd| {
                sys::send_to(fd, buf, &to)
            })
    }

    /// Receives one datagram into `buf` (cut to its length), parking until
    /// one comes (up to the read timeout); returns its length and sender.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::TimedOut`]; a cancel; `EBADF` once closed;
    /// `ECONNREFUSED` on a connected socket whose peer had no listener.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.fd
            .io(Interest::READABLE, self.read_timeout.get(), |fd| {
                sys::recv_from(fd, buf)
            })
    }

    /// [`send_to`](UdpSocket::send_to) the connected peer.
    ///
    /// # Errors
    ///
    /// As [`send_to`](UdpSocket::send_to); `EDESTADDRREQ` when not
    /// connected.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.fd
            .io(Interest::WRITABLE, self.write_timeout.get(), |fd| {
                sys::send(fd, buf)
            })
    }

    /// [`recv_from`](UdpSocket::recv_from) without the sender.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](UdpSocket::recv_from).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.fd
            .io(Interest::READABLE, self.read_timeout.get(), |fd| {
                sys::recv(fd, buf)
            })
    }

    /// Sets the timeout of each receive (`None`: none, the default).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) {
        self.read_timeout.set(timeout);
    }

    /// Sets the timeout of each send (`None`: none, the default).
    pub fn set_write_timeout(&self, timeout: Option<Duration>) {
        self.write_timeout.set(timeout);
    }

    /// Parks until the socket is ready for `interest` (see [`Fd::wait`]).
    ///
    /// # Errors
    ///
    /// As [`Fd::wait`].
    pub fn ready(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        self.fd.wait(interest, timeout)
    }

    /// Sets `SO_BROADCAST`.
    ///
    /// # Errors
    ///
    /// `setsockopt`'s; `EBADF` once closed.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.fd.with(|fd| sys::sock(&fd).set_broadcast(on))
    }

    /// The local address (with the port chosen for port 0).
    ///
    /// # Errors
    ///
    /// `EBADF` once closed.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.fd.with(sys::local_addr)
    }

    /// The connected peer's address.
    ///
    /// # Errors
    ///
    /// `ENOTCONN`; `EBADF` once closed.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.fd.with(sys::peer_addr)
    }

    /// Closes the socket now (see [`Fd::close`]).
    ///
    /// # Errors
    ///
    /// As [`Fd::close`].
    pub fn close(&self) -> io::Result<()> {
        self.fd.close()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("fd", &self.fd.as_raw_fd())
            .finish()
    }
}
