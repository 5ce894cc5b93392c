//! [`TcpListener`]: a listening TCP socket whose accept blocks only the
//! calling fiber.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use socket2::{SockAddr, Type};

use crate::io::{Fd, Interest};
use crate::net::{sys, TcpStream};

/// A listening TCP socket on this cord (`std::net::TcpListener`'s twin;
/// see the [module docs](crate::net)). Several fibers may accept on one
/// listener (through an `Rc`): each connection goes to one of them. Not
/// `Send`.
///
/// # Examples
///
/// An accept loop keeps [`Runtime::run`](crate::Runtime::run) going until
/// the listener is closed:
///
/// ```
/// use luafiber_runtime::net::{TcpListener, TcpStream};
/// use luafiber_runtime::{spawn, Runtime};
/// use std::rc::Rc;
///
/// let rt = Runtime::new();
/// let listener = Rc::new(TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap());
/// let addr = listener.local_addr().unwrap();
/// let l = listener.clone();
/// let server = spawn(move || {
///     let mut served = 0;
///     while let Ok((conn, _peer)) = l.accept() {
///         served += 1;
///         drop(conn);
///     }
///     served
/// });
/// spawn(move || {
///     for _ in 0..3 {
///         let c = TcpStream::connect(addr).unwrap();
///         // The server accepted and dropped it: end of stream.
///         assert_eq!(c.read(&mut [0; 1]).unwrap(), 0);
///     }
///     listener.close().unwrap(); // the accept loop gets EBADF and ends
/// });
/// rt.run();
/// assert_eq!(server.join().unwrap(), 3);
/// ```
pub struct TcpListener {
    fd: Fd,
}

impl TcpListener {
    /// Binds to `addr` (port 0: any free one) with `SO_REUSEADDR` and
    /// listens with the system's largest backlog (`SOMAXCONN`).
    ///
    /// # Errors
    ///
    /// `EADDRINUSE`, `EACCES`, ...; the event loop cannot be made.
    pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
        let sock = sys::socket(&addr, Type::STREAM)?;
        sock.set_reuse_address(true)?;
        sock.bind(&SockAddr::from(addr))?;
        sock.listen(libc::SOMAXCONN)?;
        Ok(TcpListener {
            fd: Fd::from_nonblocking(OwnedFd::from(sock))?,
        })
    }

    /// A listener over an [`Fd`] that holds a listening TCP socket.
    pub fn from_fd(fd: Fd) -> TcpListener {
        TcpListener { fd }
    }

    /// The registered fd underneath.
    pub fn fd(&self) -> &Fd {
        &self.fd
    }

    /// Accepts a connection, parking the calling fiber until one comes;
    /// returns it (non-blocking, registered) and the peer's address.
    ///
    /// # Errors
    ///
    /// `accept4`'s (`EMFILE` when out of fds: the connection stays queued);
    /// a cancel; `EBADF` once the listener is closed.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        self.accept_timeout(None)
    }

    /// [`accept`](TcpListener::accept), giving up after `timeout` (`None`:
    /// no limit).
    ///
    /// # Errors
    ///
    /// As [`accept`](TcpListener::accept); [`io::ErrorKind::TimedOut`].
    pub fn accept_timeout(&self, timeout: Option<Duration>) -> io::Result<(TcpStream, SocketAddr)> {
        let (conn, peer) = self.fd.io(Interest::READABLE, timeout, sys::accept)?;
        Ok((TcpStream::from_fd(Fd::from_nonblocking(conn)?), peer))
    }

    /// The local address (with the port chosen for port 0).
    ///
    /// # Errors
    ///
    /// `EBADF` once closed.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.fd.with(sys::local_addr)
    }

    /// Stops listening and closes the socket: fibers parked in `accept`
    /// wake with `EBADF`. Dropping the listener does the same.
    ///
    /// # Errors
    ///
    /// As [`Fd::close`].
    pub fn close(&self) -> io::Result<()> {
        self.fd.close()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpListener")
            .field("fd", &self.fd.as_raw_fd())
            .finish()
    }
}
