//! [`TcpStream`]: a TCP connection whose reads and writes block only the
//! calling fiber.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use socket2::{SockAddr, Type};

use crate::io::{Fd, Interest, Ready};
use crate::net::sys;

/// A TCP connection on this cord (`std::net::TcpStream`'s twin; see the
/// [module docs](crate::net)). Reads and writes park the calling fiber
/// until the socket is ready; `Read` and `Write` are implemented for
/// `TcpStream` and `&TcpStream`. Writes use `MSG_NOSIGNAL`. Not `Send`.
pub struct TcpStream {
    fd: Fd,
    read_timeout: Cell<Option<Duration>>,
    write_timeout: Cell<Option<Duration>>,
}

impl TcpStream {
    /// Connects to `addr`; the calling fiber parks until the connection is
    /// made or refused.
    ///
    /// # Errors
    ///
    /// The connect's (`ECONNREFUSED`, ...); a cancel.
    pub fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        TcpStream::connect_timeout(addr, None)
    }

    /// [`connect`](TcpStream::connect), giving up after `timeout` (`None`:
    /// no limit).
    ///
    /// # Errors
    ///
    /// As [`connect`](TcpStream::connect); [`io::ErrorKind::TimedOut`].
    pub fn connect_timeout(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let sock = sys::socket(&addr, Type::STREAM)?;
        let fd = Fd::from_nonblocking(OwnedFd::from(sock))?;
        let pending = fd.with(|fd| match sys::sock(&fd).connect(&SockAddr::from(addr)) {
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(true),
            r => r.map(|()| false),
        })?;
        if pending {
            fd.wait(Interest::WRITABLE, timeout)?;
            let err = fd.with(|fd| sys::sock(&fd).take_error())?;
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(TcpStream::from_fd(fd))
    }

    /// A stream over an [`Fd`] that holds a connected TCP socket.
    pub fn from_fd(fd: Fd) -> TcpStream {
        TcpStream {
            fd,
            read_timeout: Cell::new(None),
            write_timeout: Cell::new(None),
        }
    }

    /// A stream over a connected `std` one (made non-blocking).
    ///
    /// # Errors
    ///
    /// As [`Fd::new`].
    pub fn from_std(s: std::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream::from_fd(Fd::new(OwnedFd::from(s))?))
    }

    /// The registered fd underneath, for waits and syscalls of one's own.
    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Reads into `buf` what has arrived, parking until something has (or
    /// the peer closed its end: `Ok(0)`), up to the read timeout.
    ///
    /// # Errors
    ///
    /// `ECONNRESET` when the peer reset the connection;
    /// [`io::ErrorKind::TimedOut`]; a cancel; `EBADF` once closed.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.fd
            .io(Interest::READABLE, self.read_timeout.get(), |fd| {
                sys::recv(fd, buf)
            })
    }

    /// Writes what fits of `buf` into the socket's buffer, parking until
    /// something fits, up to the write timeout. Returns the bytes written
    /// (a short write when the buffer filled).
    ///
    /// # Errors
    ///
    /// `EPIPE` or `ECONNRESET` when the peer is gone;
    /// [`io::ErrorKind::TimedOut`]; a cancel; `EBADF` once closed.
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        self.fd
            .io(Interest::WRITABLE, self.write_timeout.get(), |fd| {
                sys::send(fd, buf)
            })
    }

    /// Sets the timeout of each read (`None`: none, the default); a read
    /// that runs out fails with [`io::ErrorKind::TimedOut`].
    pub fn set_read_timeout(&self, timeout: Option<Duration>) {
        self.read_timeout.set(timeout);
    }

    /// Sets the timeout of each write, as
    /// [`set_read_timeout`](TcpStream::set_read_timeout).
    pub fn set_write_timeout(&self, timeout: Option<Duration>) {
        self.write_timeout.set(timeout);
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout.get()
    }

    /// The write timeout.
    pub fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout.get()
    }

    /// Parks until the socket is ready for `interest` (see [`Fd::wait`]).
    ///
    /// # Errors
    ///
    /// As [`Fd::wait`].
    pub fn ready(&self, interest: Interest, timeout: Option<Duration>) -> io::Result<Ready> {
        self.fd.wait(interest, timeout)
    }

    fn with<R>(&self, f: impl FnOnce(&socket2::SockRef<'_>) -> io::Result<R>) -> io::Result<R> {
        self.fd.with(|fd| f(&sys::sock(&fd)))
    }

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// `ENOTCONN`; `EBADF` once closed.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.fd.with(sys::peer_addr)
    }

    /// The local address.
    ///
    /// # Errors
    ///
    /// `EBADF` once closed.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.fd.with(sys::local_addr)
    }

    /// Shuts down the read, write or both halves (`shutdown(2)`): a fiber
    /// parked in a read then gets `Ok(0)`.
    ///
    /// # Errors
    ///
    /// `ENOTCONN`; `EBADF` once closed.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.with(|s| s.shutdown(how))
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    ///
    /// # Errors
    ///
    /// `setsockopt`'s; `EBADF` once closed.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.with(|s| s.set_tcp_nodelay(nodelay))
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    ///
    /// `getsockopt`'s; `EBADF` once closed.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.with(|s| s.tcp_nodelay())
    }

    /// Sets `SO_LINGER`: `Some(ZERO)` makes [`close`](TcpStream::close)
    /// reset the connection (the peer gets `ECONNRESET`).
    ///
    /// # Errors
    ///
    /// `setsockopt`'s; `EBADF` once closed.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        self.with(|s| s.set_linger(linger))
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    ///
    /// # Errors
    ///
    /// `getsockopt`'s; `EBADF` once closed.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.with(|s| s.take_error())
    }

    /// Closes the connection now (see [`Fd::close`]): fibers parked on it
    /// wake with `EBADF`. Dropping the stream does the same.
    ///
    /// # Errors
    ///
    /// As [`Fd::close`].
    pub fn close(&self) -> io::Result<()> {
        self.fd.close()
    }
}

impl Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::read(self, buf)
    }
}

impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::read(self, buf)
    }
}

impl Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::write(self, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::write(self, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl std::fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStream")
            .field("fd", &self.fd.as_raw_fd())
            .finish()
    }
}
