//! TLS sessions of `http.client`: a rustls [`ClientConnection`] over a
//! connected socket object of the `socket` module, driven with
//! `read_tls`/`write_tls` on the socket's non-blocking fd. When the fd
//! has nothing to give or no room, the calling fiber parks on the
//! socket's readiness in the cord's event loop (the socket module's
//! [`park`]), so only that fiber waits, as a plain `s:read()` waits.
//!
//! A session is a userdata (`tls_session`) with three methods that
//! `conn.lua` builds its stream on: `recv(max, timeout)` (the decrypted
//! bytes there are, at most `max`, waiting for some: `''` at the end of
//! the stream, or nil and a message), `send(data, timeout)` (`#data`, or
//! nil and a message) and `close()` (a `close_notify` when the socket has
//! room for it; never waits). The socket stays the caller's to close.
//!
//! Every borrow of the session's `RefCell` ends before a park (design
//! rule "no borrow across a switch"); two fibers that use one session at
//! once interleave whole records, never corrupt memory.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, CStr};
use std::io::{self, Read, Write};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use luafiber_runtime::io::Interest;
use luafiber_runtime::net::sys;
use mlua::ffi;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};
use socket2::SockRef;

use super::config::{self, Options};
use crate::modules::errno;
use crate::modules::fio::call::blocking;
use crate::modules::socket::{self, park, Deadline, Sock};
use crate::raw::context::Part;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Kind, LResult, Raise, Reg, Stack};

/// Per-cord state of `http.client`'s TLS (a part of the cord context):
/// the sessions' kind, and the configurations that read no file of the
/// caller's (the system store), by `(verify_peer, verify_host)`, kept so
/// that their session tickets let the next connection resume.
#[derive(Default)]
pub(crate) struct TlsState {
    kind: Cell<Kind<Rc<Session>>>,
    configs: RefCell<Vec<KeptConfig>>,
}

/// A kept configuration and its `(verify_peer, verify_host)`.
type KeptConfig = ((bool, bool), Arc<ClientConfig>);

fn kind() -> Kind<Rc<Session>> {
    TlsState::with(|st| st.kind.get())
}

/// A session's userdata payload.
pub(crate) struct Session {
    sock: Rc<Sock>,
    conn: RefCell<ClientConnection>,
    closed: Cell<bool>,
}

/// Reads and writes the socket's fd for rustls: one `recv(2)` or
/// `send(2)` (`MSG_NOSIGNAL`), `EAGAIN` as `WouldBlock`.
struct FdIo<'a>(&'a Sock);

impl Read for FdIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .call(|fd| sys::recv(fd, buf))
            .map_err(io::Error::from_raw_os_error)
    }
}

impl Write for FdIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .call(|fd| SockRef::from(&fd).send_with_flags(buf, libc::MSG_NOSIGNAL))
            .map_err(io::Error::from_raw_os_error)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Why a session step failed.
enum Failure {
    /// The fd's error, or `ETIMEDOUT`.
    Os(c_int),
    /// The peer broke the TLS protocol, or its certificate was refused.
    Tls(rustls::Error),
    /// The peer closed the connection during the handshake.
    Eof,
}

impl Failure {
    fn message(&self) -> String {
        match self {
            Failure::Os(e) => errno::strerror(*e),
            Failure::Tls(e) => e.to_string(),
            Failure::Eof => "the peer closed the connection".into(),
        }
    }
}

type Step<T> = LResult<Result<T, Failure>>;

/// Parks until the socket is ready for `interest` after a syscall said
/// `EAGAIN`.
fn wait(s: &mut Stack, sock: &Sock, interest: Interest, deadline: &mut Deadline) -> Step<()> {
    sock.would_block(interest);
    Ok(park(s, sock, interest, deadline, "http.client")?.map_err(Failure::Os))
}

/// Sends all the session has to send.
fn flush(s: &mut Stack, ses: &Session, deadline: &mut Deadline) -> Step<()> {
    loop {
        let r = {
            let mut c = ses.conn.borrow_mut();
            if !c.wants_write() {
                return Ok(Ok(()));
            }
            c.write_tls(&mut FdIo(&ses.sock))
        };
        match r {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Err(f) = wait(s, &ses.sock, Interest::WRITABLE, deadline)? {
                    return Ok(Err(f));
                }
            }
            Err(e) => return Ok(Err(Failure::Os(e.raw_os_error().unwrap_or(libc::EIO)))),
        }
    }
}

/// Reads what the fd has and processes the records: `false` at the end
/// of the stream.
fn fill(s: &mut Stack, ses: &Session, deadline: &mut Deadline) -> Step<bool> {
    loop {
        let r = ses.conn.borrow_mut().read_tls(&mut FdIo(&ses.sock));
        match r {
            Ok(n) => {
                let processed = ses.conn.borrow_mut().process_new_packets();
                if let Err(e) = processed {
                    // The alert that tells the peer why, if there is room.
                    let _ = ses.conn.borrow_mut().write_tls(&mut FdIo(&ses.sock));
                    return Ok(Err(Failure::Tls(e)));
                }
                return Ok(Ok(n > 0));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Err(f) = wait(s, &ses.sock, Interest::READABLE, deadline)? {
                    return Ok(Err(f));
                }
            }
            Err(e) => return Ok(Err(Failure::Os(e.raw_os_error().unwrap_or(libc::EIO)))),
        }
    }
}

/// The handshake, to its end.
fn handshake(s: &mut Stack, ses: &Session, deadline: &mut Deadline) -> Step<()> {
    loop {
        if let Err(f) = flush(s, ses, deadline)? {
            return Ok(Err(f));
        }
        if !ses.conn.borrow().is_handshaking() {
            return Ok(Ok(()));
        }
        match fill(s, ses, deadline)? {
            Ok(true) => {}
            Ok(false) => return Ok(Err(Failure::Eof)),
            Err(f) => return Ok(Err(f)),
        }
    }
}

/// The options table at `idx` (master's names; a missing `verify_*` is
/// true, any other value counts by its truth).
fn options(s: &mut Stack, idx: c_int) -> Options {
    let flag = |s: &mut Stack, name: &CStr| {
        let t = s.rawget_field(idx, name);
        let v = t == ffi::LUA_TNIL || s.to_bool(-1);
        s.pop(1);
        v
    };
    let verify_peer = flag(s, c"verify_peer");
    let verify_host = flag(s, c"verify_host");
    let text = |s: &mut Stack, name: &CStr| {
        s.rawget_field(idx, name);
        let v = s
            .to_str(-1)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        s.pop(1);
        v
    };
    Options {
        verify_peer,
        verify_host,
        ca_file: text(s, c"ca_file"),
        ca_path: text(s, c"ca_path"),
        ssl_cert: text(s, c"ssl_cert"),
        ssl_key: text(s, c"ssl_key"),
    }
}

/// The configuration `o` asks for: a kept one, or one built on the
/// blocking pool.
fn config_for(s: &mut Stack, o: Options) -> LResult<Result<Arc<ClientConfig>, String>> {
    let key = (o.verify_peer, o.verify_host);
    let default = o.is_default_store();
    if default {
        let kept = TlsState::with(|st| {
            let configs = st.configs.borrow();
            configs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, c)| c.clone())
        });
        if let Some(c) = kept {
            return Ok(Ok(c));
        }
    }
    let built = blocking(s, move || Ok(config::build(&o)))?;
    let c = match built {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Ok(Err(e.0)),
        Err(e) => return Ok(Err(e.to_string())),
    };
    if default {
        TlsState::with(|st| st.configs.borrow_mut().push((key, c.clone())));
    }
    Ok(Ok(c))
}

/// Pushes `nil, status, reason` (a response master's driver makes of a
/// failed request) or `nil, 0, err` (an error object to raise once the
/// socket is closed): 3 results.
fn push_failure(s: &mut Stack, status: i64, reason: &str) -> LResult {
    s.ensure(8)?;
    s.push_nil();
    s.push_int(status);
    match status {
        0 => error::push(s, ErrorKind::SystemError, &format!("curl: {reason}")),
        _ => s.push_str(reason),
    }
    Ok(3)
}

/// The seconds at `idx` (nil: no limit).
fn timeout_arg(s: &Stack, idx: c_int) -> Option<Duration> {
    s.to_number(idx)
        .map(|t| Duration::try_from_secs_f64(t.max(0.0)).unwrap_or(Duration::MAX))
}

lua_fn! {
    /// `tls_connect(sock, host, opts, timeout)`: a TLS session with `host`
    /// over the connected socket `sock`, its handshake done, verified as
    /// `opts` asks (module doc of [`config`]). On failure `nil, status,
    /// reason` as master's driver reports it: 495 and libcurl's `"SSL
    /// peer certificate or SSH remote key was not OK"` with rustls's
    /// reason after it for a refused certificate, 408 for the timeout; or
    /// `nil, 0, err` with a `SystemError` object `"curl: ..."` where
    /// master raises (a CA file or client certificate that cannot be
    /// used, a handshake the peer broke off).
    fn tls_connect(s: &mut Stack) {
        let sock = socket::arg(s, 1)?;
        let Some(host) = s.to_str(2).map(|b| String::from_utf8_lossy(b).into_owned()) else {
            return Err(Raise::illegal("tls_connect: host must be a string"));
        };
        if s.type_of(3) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("tls_connect: options must be a table"));
        }
        let o = options(s, 3);
        let mut deadline = Deadline::new(timeout_arg(s, 4));
        let config = match config_for(s, o)? {
            Ok(c) => c,
            Err(e) => return push_failure(s, 0, &e),
        };
        let name = match ServerName::try_from(host) {
            Ok(n) => n,
            Err(e) => return push_failure(s, 0, &format!("SSL connect error: {e}")),
        };
        let conn = match ClientConnection::new(config, name) {
            Ok(c) => c,
            Err(e) => return push_failure(s, 0, &format!("SSL connect error: {e}")),
        };
        let ses = Rc::new(Session { sock, conn: RefCell::new(conn), closed: Cell::new(false) });
        match handshake(s, &ses, &mut deadline)? {
            Ok(()) => {
                s.ensure(2)?;
                kind().push(s, ses);
                Ok(1)
            }
            Err(Failure::Os(libc::ETIMEDOUT)) => push_failure(s, 408, "Timeout was reached"),
            Err(Failure::Tls(
                e @ (rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented),
            )) => push_failure(
                s,
                495,
                &format!("SSL peer certificate or SSH remote key was not OK: {e}"),
            ),
            Err(f) => push_failure(s, 0, &format!("SSL connect error: {}", f.message())),
        }
    }
}

/// The open session at 1.
fn this(s: &mut Stack) -> LResult<Rc<Session>> {
    match kind().get(s, 1) {
        Some(ses) if !ses.closed.get() => Ok(ses),
        Some(_) => Err(Raise::illegal("attempt to use a closed TLS session")),
        None => Err(Raise::illegal("Usage: session:method()")),
    }
}

/// Pushes `nil, message`: 2 results.
fn push_nil_message(s: &mut Stack, f: &Failure) -> LResult {
    s.ensure(4)?;
    s.push_nil();
    s.push_str(&f.message());
    Ok(2)
}

/// The most bytes one `recv` gives.
const RECV_MAX: usize = 64 * 1024;

lua_fn! {
    /// `session:recv(max[, timeout])`: the decrypted bytes there are, at
    /// most `max` (1..=65536), waiting for some; `''` at the end of the
    /// stream (a `close_notify`, or the TCP end without one: HTTP's own
    /// framing tells a cut body); nil and a message on error or timeout.
    fn ses_recv(s: &mut Stack) {
        let ses = this(s)?;
        let max = s.to_integer(2).map_or(RECV_MAX, |n| n.clamp(1, RECV_MAX as i64) as usize);
        let mut deadline = Deadline::new(timeout_arg(s, 3));
        let mut buf = vec![0u8; max];
        loop {
            let r = ses.conn.borrow_mut().reader().read(&mut buf);
            match r {
                Ok(n) => {
                    s.ensure(2)?;
                    s.push_bytes(&buf[..n]);
                    return Ok(1);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The TCP end without a close_notify.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    s.ensure(2)?;
                    s.push_bytes(b"");
                    return Ok(1);
                }
                Err(e) => return push_nil_message(s, &Failure::Os(e.raw_os_error().unwrap_or(libc::EIO))),
            }
            if let Err(f) = flush(s, &ses, &mut deadline)? {
                return push_nil_message(s, &f);
            }
            match fill(s, &ses, &mut deadline)? {
                Ok(true) => {}
                Ok(false) => {
                    // Whatever the last records held, then the end.
                    let r = ses.conn.borrow_mut().reader().read(&mut buf);
                    s.ensure(2)?;
                    s.push_bytes(&buf[..r.unwrap_or(0)]);
                    return Ok(1);
                }
                Err(f) => return push_nil_message(s, &f),
            }
        }
    }
}

lua_fn! {
    /// `session:send(data[, timeout])`: encrypts and sends all of `data`;
    /// `#data`, or nil and a message on error or timeout.
    fn ses_send(s: &mut Stack) {
        let ses = this(s)?;
        let Some(data) = s.to_str(2) else {
            return Err(Raise::illegal("Usage: session:send(data[, timeout])"));
        };
        let n = data.len();
        // Into the session's buffer whole (no limit), so that no borrow of
        // the argument lives across a wait.
        let written = {
            let mut c = ses.conn.borrow_mut();
            c.set_buffer_limit(None);
            c.writer().write_all(data)
        };
        if let Err(e) = written {
            return push_nil_message(s, &Failure::Os(e.raw_os_error().unwrap_or(libc::EIO)));
        }
        let mut deadline = Deadline::new(timeout_arg(s, 3));
        match flush(s, &ses, &mut deadline)? {
            Ok(()) => {
                s.ensure(2)?;
                s.push_int(n as i64);
                Ok(1)
            }
            Err(f) => push_nil_message(s, &f),
        }
    }
}

lua_fn! {
    /// `session:close()`: sends a `close_notify` if the socket has room
    /// for it now (never waits) and ends the session; the socket stays
    /// open. Closing twice does nothing.
    fn ses_close(s: &mut Stack) {
        if let Some(ses) = kind().get(s, 1) {
            if !ses.closed.replace(true) {
                let mut c = ses.conn.borrow_mut();
                c.send_close_notify();
                let _ = c.write_tls(&mut FdIo(&ses.sock));
            }
        }
        Ok(0)
    }
}

lua_fn! {
    /// `__gc`: drops the session (no I/O).
    fn ses_gc(s: &mut Stack) {
        drop(kind().take(s, 1));
        Ok(0)
    }
}

const METHODS: &[Reg] = &[
    (c"recv", ses_recv),
    (c"send", ses_send),
    (c"close", ses_close),
];

const META: &[Reg] = &[(c"__gc", ses_gc)];

/// Makes the sessions' metatable (once per cord) and sets `tls_connect`
/// in the table at `internal`.
pub(super) fn init(s: &mut Stack, internal: c_int) {
    if kind().metatable_ptr().is_null() {
        let k = Kind::<Rc<Session>>::new(s, c"tls_session", METHODS, META);
        TlsState::with(|st| st.kind.set(k));
    }
    s.push_cfunction(tls_connect);
    s.set_field(internal, c"tls_connect");
}
