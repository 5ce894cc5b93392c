//! The listening socket `box.cfg{listen = URI}` makes, and its accept
//! loop (a Rust fiber), with no Lua (Tarantool's `iproto_listen` and
//! `evio_service`).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use luafiber_fiber::{Builder, FiberId};
use luafiber_runtime::io::{Fd, Interest};
use luafiber_runtime::net::sys;
use luafiber_runtime::uri;
use socket2::{Domain, SockAddr, Socket, Type};

use crate::modules::errno;

/// A socket listening for IPROTO clients.
pub(crate) struct Listening {
    /// The URI as given.
    pub uri: String,
    /// The socket.
    fd: Rc<Fd>,
    /// The address it is bound to, as text (`host:port`, or
    /// `unix/:PATH`).
    pub addr: String,
    /// The Unix socket's path, removed when it stops.
    unix_path: Option<String>,
    /// The accept loop's fiber.
    fiber: Option<FiberId>,
}

impl Listening {
    /// Binds to `text` (`host:port`, a bare port or `*:port` on every
    /// interface, `unix/:/path`) and starts the accept loop.
    ///
    /// # Errors
    ///
    /// A message: the URI does not parse, the host does not resolve,
    /// `bind`/`listen` fail.
    pub fn start(text: &str) -> Result<Listening, String> {
        let u = uri::parse(text.as_bytes())
            .map_err(|_| format!("Incorrect value for option 'listen': expected host:service or /unix.socket, got '{text}'"))?;
        let (sock, addr, unix_path) = if let Some(path) = u.unix_path() {
            let sock = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)
                .map_err(|e| bind_failed(text, &e))?;
            // A socket file left by a previous run is replaced, as
            // Tarantool does when nobody answers on it.
            if std::fs::metadata(path).is_ok()
                && std::os::unix::net::UnixStream::connect(path).is_err()
            {
                let _ = std::fs::remove_file(path);
            }
            let sa = SockAddr::unix(path).map_err(|e| bind_failed(text, &e))?;
            sock.bind(&sa).map_err(|e| bind_failed(text, &e))?;
            (sock, format!("unix/:{path}"), Some(path.to_string()))
        } else {
            let host = u.host.as_deref().unwrap_or("0.0.0.0");
            let port: u16 = u
                .service
                .as_deref()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| {
                    format!("Incorrect value for option 'listen': bad port in '{text}'")
                })?;
            // '*' is every interface, as in Tarantool's `evio_service_bind`.
            let host = if host.is_empty() || host == "*" {
                "0.0.0.0"
            } else {
                host
            };
            let sa: SocketAddr = (host, port)
                .to_socket_addrs()
                .map_err(|e| format!("Failed to bind '{text}': {e}"))?
                .next()
                .ok_or_else(|| format!("Failed to bind '{text}': no address"))?;
            let sock = Socket::new(
                Domain::for_address(sa),
                Type::STREAM.nonblocking().cloexec(),
                None,
            )
            .map_err(|e| bind_failed(text, &e))?;
            sock.set_reuse_address(true)
                .map_err(|e| bind_failed(text, &e))?;
            sock.bind(&SockAddr::from(sa))
                .map_err(|e| bind_failed(text, &e))?;
            let local = sock
                .local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .unwrap_or(sa);
            (sock, local.to_string(), None)
        };
        sock.listen(libc::SOMAXCONN)
            .map_err(|e| bind_failed(text, &e))?;
        let fd =
            Rc::new(Fd::from_nonblocking(OwnedFd::from(sock)).map_err(|e| bind_failed(text, &e))?);
        let f = fd.clone();
        let fiber = Builder::new()
            .name("iproto.listen")
            .spawn_ready(move || accept_loop(&f))
            .map_err(|e| format!("Failed to start the listener: {e}"))?;
        Ok(Listening {
            uri: text.to_string(),
            fd,
            addr,
            unix_path,
            fiber: Some(fiber),
        })
    }

    /// Stops listening (the connections made stay).
    pub fn stop(&mut self) {
        let _ = self.fd.close();
        if let Some(id) = self.fiber.take() {
            let _ = luafiber_fiber::wakeup(id);
        }
        if let Some(p) = self.unix_path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop();
    }
}

fn bind_failed(uri: &str, e: &io::Error) -> String {
    format!("failed to bind '{uri}': {}", errno::io_text(e))
}

/// Accepts connections until the socket is closed or the fiber
/// cancelled; each connection gets its reader and writer.
fn accept_loop(fd: &Fd) {
    loop {
        match fd.io(Interest::READABLE, None, sys::accept_any) {
            Ok((conn, peer)) => {
                let is_tcp = peer.as_socket().is_some();
                let peer = match peer.as_socket() {
                    Some(a) => a.to_string(),
                    None => "unix/:(socket)".to_string(),
                };
                let conn = match Fd::from_nonblocking(conn) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(target: "iproto", "{peer}: cannot register the connection: {}", errno::io_text(&e));
                        continue;
                    }
                };
                if is_tcp {
                    let _ = conn.with(|b| sys::sock(&b).set_tcp_nodelay(true));
                }
                super::conn::start(conn, peer);
            }
            Err(e) if fd.is_closed() || luafiber_runtime::io::is_cancelled(&e) => return,
            Err(e) => {
                // EMFILE and the like: the connection stays queued.
                tracing::warn!(target: "iproto", "accept failed: {}", errno::io_text(&e));
                if luafiber_fiber::sleep(Duration::from_millis(10)).is_err() {
                    return;
                }
            }
        }
    }
}
