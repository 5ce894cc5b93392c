//! A connection's transport, with no Lua: the socket, the send buffer
//! and its writer, the reader that dispatches responses to the requests
//! in flight by sync, the connection state (Tarantool's `create_transport`
//! of 2.6's `net_box.lua`, and master's `netbox_transport` in `net_box.c`).
//!
//! Fibers: the requesting fibers append frames to [`Transport::send`] and
//! wake the writer when it was empty; the writer fiber
//! ([`Transport::write_loop`]) swaps the buffer out and writes it whole,
//! so the requests of one loop iteration leave in one write; the reader
//! fiber ([`Transport::read_loop`]) decodes frames in place from its
//! read-ahead buffer and completes requests, waking their fibers. No
//! `RefCell` borrow is held across a switch: each loop takes its buffer
//! out of the transport while it waits.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_fiber::Cond;
use luafiber_iproto::{self as iproto, Frame, Greeting, Header, Response};
use luafiber_runtime::ibuf::Ibuf;
use luafiber_runtime::io::{Fd, Interest};
use luafiber_runtime::net::TcpStream;
use socket2::{Domain, SockAddr, SockRef, Socket, Type};

use super::request::{Cause, ErrorBody, Failure, Request};

/// Tarantool's `ER_NO_CONNECTION`.
pub(crate) const ER_NO_CONNECTION: u32 = 77;
/// Tarantool's `ER_TIMEOUT`.
pub(crate) const ER_TIMEOUT: u32 = 78;
/// Tarantool's `ER_PROC_LUA`.
pub(crate) const ER_PROC_LUA: u32 = 32;

/// The connection states, in the order of [`STATE_NAMES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Not connected yet.
    Initial,
    /// Connected; authenticating.
    Auth,
    /// Fetching the schema.
    FetchSchema,
    /// Ready for requests.
    Active,
    /// Failed for good.
    Error,
    /// Failed; will connect again.
    ErrorReconnect,
    /// Closed by the user.
    Closed,
}

/// The names of [`State`]s, as `conn.state` gives them.
pub(crate) const STATE_NAMES: [&str; 7] = [
    "initial",
    "auth",
    "fetch_schema",
    "active",
    "error",
    "error_reconnect",
    "closed",
];

impl State {
    /// The state named `name`.
    pub fn from_name(name: &[u8]) -> Option<State> {
        const ALL: [State; 7] = [
            State::Initial,
            State::Auth,
            State::FetchSchema,
            State::Active,
            State::Error,
            State::ErrorReconnect,
            State::Closed,
        ];
        STATE_NAMES
            .iter()
            .position(|n| n.as_bytes() == name)
            .map(|i| ALL[i])
    }

    /// Whether no request can ever go out again.
    pub fn is_final(self) -> bool {
        matches!(self, State::Error | State::Closed)
    }
}

/// A hasher for syncs: they are distinct small integers.
#[derive(Default)]
pub(crate) struct SyncHasher(u64);

impl Hasher for SyncHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Requests = HashMap<u64, Rc<Request>, BuildHasherDefault<SyncHasher>>;

/// Where a connection goes.
#[derive(Debug)]
pub(crate) enum Peer {
    /// The addresses of a host and port, tried in order.
    Inet(Vec<SocketAddr>),
    /// A Unix-domain stream socket at this path (`unix/:PATH`).
    Unix(PathBuf),
}

/// How the reader stopped.
pub(crate) enum ReadEnd {
    /// A response carried a schema version other than the one installed:
    /// the schema is to be fetched again; the reader can go on after.
    Schema(u64),
    /// The connection failed (or was closed): a message.
    Failed(String),
    /// An EVENT came for a watched key: the key and its value (one
    /// MessagePack value), if it has one; the reader can go on after.
    Event(Vec<u8>, Option<Vec<u8>>),
}

/// A connection's transport; see the module doc.
pub(crate) struct Transport {
    /// The socket while connected.
    stream: RefCell<Option<Rc<TcpStream>>>,
    /// Frames waiting for the writer.
    pub send: RefCell<Ibuf>,
    /// The writer's own buffer, swapped with `send` to write it.
    spare: RefCell<Ibuf>,
    /// The reader's read-ahead buffer.
    recv: RefCell<Ibuf>,
    /// Signalled when `send` gets its first bytes, or the socket closes.
    writer_cond: Cond,
    /// The last sync given.
    sync: Cell<u64>,
    /// The requests in flight by sync.
    requests: RefCell<Requests>,
    /// The connection state (set by `net_box.lua`'s state machine).
    state: Cell<State>,
    /// Broadcast on each change of `state`.
    pub state_cond: Cond,
    /// The error that ended the last connection: a code and a message.
    pub error: RefCell<Option<(u32, String)>>,
    /// The schema version installed.
    pub schema_version: Cell<u64>,
    /// A schema version the reader reported and nobody installed yet.
    reported: Cell<u64>,
}

impl Transport {
    /// A transport in state `initial`, not connected.
    pub fn new() -> Transport {
        Transport {
            stream: RefCell::new(None),
            send: RefCell::new(Ibuf::new()),
            spare: RefCell::new(Ibuf::new()),
            recv: RefCell::new(Ibuf::new()),
            writer_cond: Cond::new(),
            sync: Cell::new(0),
            requests: RefCell::new(HashMap::default()),
            state: Cell::new(State::Initial),
            state_cond: Cond::new(),
            error: RefCell::new(None),
            schema_version: Cell::new(0),
            reported: Cell::new(0),
        }
    }

    /// The connection state.
    #[inline]
    pub fn state(&self) -> State {
        self.state.get()
    }

    /// Sets the state and wakes the fibers waiting for one; a failed or
    /// closed state fails the requests in flight with `error` (or
    /// `NO_CONNECTION`).
    pub fn set_state(&self, state: State, error: Option<(u32, String)>) {
        self.state.set(state);
        if error.is_some() || matches!(state, State::Active) {
            *self.error.borrow_mut() = error;
        }
        if matches!(state, State::Error | State::ErrorReconnect | State::Closed) {
            let (code, msg) = self
                .error
                .borrow()
                .clone()
                .unwrap_or_else(|| (ER_NO_CONNECTION, "Connection is not established".into()));
            self.fail_all(code, &msg);
        }
        self.state_cond.broadcast();
    }

    /// A new sync.
    #[inline]
    pub fn next_sync(&self) -> u64 {
        let s = self.sync.get().wrapping_add(1) & 0x7FFF_FFFF_FFFF_FFFF;
        self.sync.set(s);
        s
    }

    /// The sync [`Transport::next_sync`] gives next.
    pub fn peek_sync(&self) -> u64 {
        self.sync.get().wrapping_add(1) & 0x7FFF_FFFF_FFFF_FFFF
    }

    /// Whether a connection is up (requests can be sent).
    #[inline]
    pub fn is_connected(&self) -> bool {
        self.stream.borrow().is_some()
    }

    /// Puts `req` in flight under its sync.
    #[inline]
    pub fn register(&self, req: Rc<Request>) {
        self.requests.borrow_mut().insert(req.sync.get(), req);
    }

    /// Takes the request under `sync` out of flight (a timeout, a discard):
    /// its answer will be dropped.
    #[inline]
    pub fn forget(&self, sync: u64) {
        self.requests.borrow_mut().remove(&sync);
    }

    /// The requests in flight.
    pub fn in_flight(&self) -> usize {
        self.requests.borrow().len()
    }

    /// Wakes the writer when `was_empty` (the caller's frame is the first
    /// in the send buffer).
    #[inline]
    pub fn sent(&self, was_empty: bool) {
        if was_empty {
            self.writer_cond.signal();
        }
    }

    /// Fails every request in flight.
    pub fn fail_all(&self, code: u32, msg: &str) {
        let all: Vec<Rc<Request>> = self.requests.borrow_mut().drain().map(|(_, r)| r).collect();
        for r in all {
            r.complete(Err(Failure::Local(code, msg.to_string())));
        }
    }

    /// Connects to `peer` (the first of its addresses that answers) and
    /// reads the greeting, all within `timeout`.
    ///
    /// # Errors
    ///
    /// A message: the connect's or the read's error, or a greeting that is
    /// not Tarantool's.
    pub fn connect(&self, peer: &Peer, timeout: Option<Duration>) -> Result<Greeting, String> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let stream = match peer {
            Peer::Unix(path) => connect_unix(path, left()).map_err(|e| io_message(&e))?,
            Peer::Inet(addrs) => {
                let mut last = Err(String::from("no address"));
                for addr in addrs {
                    last = TcpStream::connect_timeout(*addr, left()).map_err(|e| io_message(&e));
                    if last.is_ok() {
                        break;
                    }
                }
                let stream = last?;
                let _ = stream.set_nodelay(true);
                stream
            }
        };
        let mut g = [0u8; iproto::GREETING_SIZE];
        let mut got = 0;
        while got < g.len() {
            stream.set_read_timeout(left().or(None));
            if left() == Some(Duration::ZERO) {
                return Err("Connection timed out".into());
            }
            match stream.read(&mut g[got..]) {
                // A peer that closes before a whole greeting (master:
                // coio_readn_timeout's short read, then greeting_decode).
                Ok(0) => return Err("Invalid greeting".into()),
                Ok(n) => got += n,
                Err(e) => return Err(io_message(&e)),
            }
        }
        stream.set_read_timeout(None);
        let greeting = iproto::decode_greeting(&g).map_err(|_| "Invalid greeting")?;
        self.send.borrow_mut().reset();
        self.recv.borrow_mut().reset();
        self.reported.set(0);
        *self.stream.borrow_mut() = Some(Rc::new(stream));
        Ok(greeting)
    }

    /// Closes the socket (the reader and the writer wake with `EBADF` and
    /// end).
    pub fn close_stream(&self) {
        let stream = self.stream.borrow_mut().take();
        if let Some(s) = stream {
            let _ = s.close();
        }
        self.send.borrow_mut().reset();
        self.writer_cond.broadcast();
    }

    /// The schema version the last responses carried.
    pub fn seen_schema_version(&self) -> u64 {
        self.reported.get()
    }

    /// Marks `version` as installed.
    pub fn set_schema_version(&self, version: u64) {
        self.schema_version.set(version);
        self.reported.set(version);
    }

    /// The writer: writes what the requesters put in the send buffer,
    /// waiting on its cond while there is nothing, until the socket
    /// closes or fails (then it closes it). A cancellation point while it
    /// waits.
    pub fn write_loop(&self) {
        loop {
            let Some(stream) = self.stream.borrow().clone() else {
                return;
            };
            if self.send.borrow().is_empty() {
                if self.writer_cond.wait(None).is_err() {
                    return;
                }
                continue;
            }
            let mut out = self.spare.replace(Ibuf::new());
            std::mem::swap(&mut out, &mut *self.send.borrow_mut());
            let mut failed = false;
            while !out.is_empty() {
                match stream.write(out.data()) {
                    Ok(n) => {
                        out.consume(n);
                    }
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            out.reset();
            *self.spare.borrow_mut() = out;
            if failed {
                // The reader sees the closed socket and reports.
                self.close_stream();
                return;
            }
        }
    }

    /// The reader: reads responses and completes the requests they answer,
    /// until the connection fails or a response shows a new schema
    /// version. A cancellation point while it waits.
    pub fn read_loop(&self) -> ReadEnd {
        let Some(stream) = self.stream.borrow().clone() else {
            return ReadEnd::Failed("Connection closed".into());
        };
        let mut buf = self.recv.replace(Ibuf::new());
        let end = self.read_into(&stream, &mut buf);
        *self.recv.borrow_mut() = buf;
        end
    }

    fn read_into(&self, stream: &TcpStream, buf: &mut Ibuf) -> ReadEnd {
        loop {
            let need;
            loop {
                let (header_at, end) = match iproto::frame(buf.data(), iproto::PACKET_SIZE_MAX) {
                    Ok(Frame::Partial { need: n }) => {
                        need = n;
                        break;
                    }
                    Ok(Frame::Whole { header_at, end }) => (header_at, end),
                    Err(e) => return ReadEnd::Failed(e.to_string()),
                };
                let v = match iproto::decode_header(&buf.data()[header_at..end]) {
                    Ok((h, body)) if h.kind == iproto::kind::EVENT => {
                        let event = event_of(body);
                        buf.consume(end);
                        return event;
                    }
                    Ok((h, body)) => {
                        self.dispatch(&h, body);
                        h.schema_version.unwrap_or(0)
                    }
                    Err(e) => return ReadEnd::Failed(e.to_string()),
                };
                buf.consume(end);
                if v > 0 && v != self.reported.get() && self.reported.get() != 0 {
                    self.reported.set(v);
                    return ReadEnd::Schema(v);
                }
                if self.reported.get() == 0 && v > 0 {
                    self.reported.set(v);
                }
            }
            if buf.is_empty() {
                buf.reset();
            }
            let want = need.saturating_sub(buf.used()).max(16 * 1024);
            let room = buf.reserve(want);
            match stream.read(room) {
                Ok(0) => return ReadEnd::Failed("Peer closed".into()),
                Ok(n) => buf.advance(n),
                Err(e) => return ReadEnd::Failed(io_message(&e)),
            }
        }
    }

    /// Completes the request a response (`h`, `body`) answers, if it is
    /// still in flight: a push is kept as its body; an answer's body is kept
    /// whole (its DATA is decoded by the fiber that reads it), an error's
    /// message and type are read here.
    #[inline]
    fn dispatch(&self, h: &Header, body: &[u8]) {
        if h.kind == iproto::kind::CHUNK {
            let req = self.requests.borrow().get(&h.sync).cloned();
            if let Some(req) = req {
                req.push(body);
            }
            return;
        }
        let req = self.requests.borrow_mut().remove(&h.sync);
        let Some(req) = req else { return };
        let outcome = if h.kind & iproto::kind::TYPE_ERROR != 0 {
            let code = h.kind & !iproto::kind::TYPE_ERROR;
            let e = match iproto::decode_response(h, body) {
                Ok(Response::Error(e)) => {
                    let top = e.stack.and_then(|s| s.top());
                    ErrorBody {
                        message: e.message.to_vec(),
                        ty: top.map(|t| t.type_name.to_vec()),
                        fields: top.and_then(|t| t.fields).map(<[u8]>::to_vec),
                        causes: e
                            .stack
                            .and_then(|s| s.errors().ok())
                            .map(|errors| {
                                errors
                                    .skip(1)
                                    .map_while(Result::ok)
                                    .map(|c| Cause {
                                        ty: c.type_name.to_vec(),
                                        code: u32::try_from(c.code).unwrap_or(0),
                                        message: c.message.to_vec(),
                                        fields: c.fields.map(<[u8]>::to_vec),
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                }
                Ok(_) => ErrorBody::default(),
                // A body that does not decode: the code, and why.
                Err(e) => ErrorBody {
                    message: e.to_string().into_bytes(),
                    ..ErrorBody::default()
                },
            };
            Err(Failure::Remote(code, e))
        } else {
            Ok(body.to_vec())
        };
        req.complete(outcome);
    }
}

/// The EVENT of a body (master's `netbox_transport_on_event`); a body
/// that does not decode fails the connection.
fn event_of(body: &[u8]) -> ReadEnd {
    match iproto::decode_watch(body) {
        Ok(w) => ReadEnd::Event(w.key.to_vec(), w.data.map(<[u8]>::to_vec)),
        Err(e) => ReadEnd::Failed(e.to_string()),
    }
}

/// Connects a Unix-domain stream socket to `path`, the calling fiber
/// parked at most `timeout` (Tarantool's `coio_connect` of `unix/:PATH`).
/// The stream is a [`TcpStream`] over the socket: reads, writes, timeouts
/// and close are the same for both kinds.
fn connect_unix(path: &std::path::Path, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let addr = SockAddr::unix(path)?;
    let sock = Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)?;
    let fd = Fd::from_nonblocking(OwnedFd::from(sock))?;
    let pending = fd.with(|fd| match SockRef::from(&fd).connect(&addr) {
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(true),
        r => r.map(|()| false),
    })?;
    if pending {
        fd.wait(Interest::WRITABLE, timeout)?;
        if let Some(e) = fd.with(|fd| SockRef::from(&fd).take_error())? {
            return Err(e);
        }
    }
    Ok(TcpStream::from_fd(fd))
}

/// The message of an I/O error as Tarantool's net.box gives it.
pub(crate) fn io_message(e: &std::io::Error) -> String {
    if luafiber_runtime::io::is_cancelled(e) {
        return "fiber is cancelled".into();
    }
    match e.raw_os_error() {
        Some(_) => crate::modules::errno::io_text(e),
        None if e.kind() == std::io::ErrorKind::TimedOut => "Connection timed out".into(),
        None => e.to_string(),
    }
}
