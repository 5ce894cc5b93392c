//! Fiber-blocking sockets: [`TcpListener`], [`TcpStream`] and
//! [`UdpSocket`], shaped like `std::net`'s.
//!
//! Their calls (`accept`, `connect`, `read`, `write`, `send_to`,
//! `recv_from`) block only the calling fiber: on `EAGAIN` it parks in the
//! cord's event loop (see [`io`](crate::io)) and other fibers run (outside
//! any fiber, they block the thread in `poll(2)`, as `std::net`'s do). Each
//! type implements what its `std::net` twin does where it makes sense
//! (`Read` and `Write`, for the type and a reference to it; timeouts set
//! with `set_read_timeout`/`set_write_timeout`, which give
//! [`TimedOut`](std::io::ErrorKind::TimedOut)), takes `&self` everywhere
//! (share one between fibers with an `Rc`), and has a `close(&self)`
//! that wakes the fibers waiting on it with `EBADF`.
//!
//! Addresses are [`SocketAddr`]s: a host name is
//! resolved first with [`lookup_host`] (off the cord). Errors are
//! [`io::Error`]s as the [`io`](crate::io#errors) module
//! describes: a peer that vanished gives `ECONNRESET` or `EPIPE` (never a
//! `SIGPIPE`), a cancel of the fiber gives an error
//! [`io::is_cancelled`](crate::io::is_cancelled) tells.
//!
//! ```
//! use luafiber_runtime::net::{TcpListener, TcpStream};
//! use luafiber_runtime::{spawn, Runtime};
//! use std::io::{Read, Write};
//!
//! let rt = Runtime::new();
//! let reply = rt.block_on(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     spawn(move || {
//!         let (mut conn, _) = listener.accept().unwrap();
//!         let mut buf = [0; 5];
//!         conn.read_exact(&mut buf).unwrap();
//!         conn.write_all(&buf).unwrap();
//!     });
//!     let mut s = TcpStream::connect(addr).unwrap();
//!     s.write_all(b"hello").unwrap();
//!     let mut reply = String::new();
//!     s.read_to_string(&mut reply).unwrap();
//!     reply
//! });
//! assert_eq!(reply, "hello");
//! ```

mod listener;
mod stream;
pub mod sys;
mod udp;

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

pub use listener::TcpListener;
pub use stream::TcpStream;
pub use udp::UdpSocket;

/// The addresses of `host` (a name or a literal address) with `port`,
/// resolved off the cord with [`io::getaddrinfo`](crate::io::getaddrinfo)
/// (one per address, stream sockets); the calling fiber parks at most
/// `timeout`.
///
/// # Errors
///
/// As [`io::getaddrinfo`](crate::io::getaddrinfo).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{net, Runtime};
///
/// let rt = Runtime::new();
/// let addrs = rt.block_on(|| net::lookup_host("localhost", 8080, None).unwrap());
/// assert!(addrs.iter().all(|a| a.port() == 8080 && a.ip().is_loopback()));
/// ```
pub fn lookup_host(
    host: &str,
    port: u16,
    timeout: Option<Duration>,
) -> io::Result<Vec<SocketAddr>> {
    let hints = crate::io::Hints {
        socktype: libc::SOCK_STREAM,
        ..Default::default()
    };
    let found = crate::io::getaddrinfo(Some(host), Some(&port.to_string()), hints, timeout)?;
    Ok(found.into_iter().map(|a| a.addr).collect())
}
