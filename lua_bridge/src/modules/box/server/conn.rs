//! One client connection: its socket, its reader (the connection's fiber:
//! reads packets, answers PING, AUTH and SELECT itself, starts a fiber per
//! CALL and EVAL) and its writer (a fiber that writes what the replies of
//! one loop iteration left in the output buffer, in one `send`), with no
//! Lua (Tarantool's `iproto_connection` of `src/box/iproto.cc`).
//!
//! No `RefCell` borrow is held across a switch: the reader owns its
//! read-ahead buffer, the writer swaps the output buffer out before it
//! writes, and a reply is appended whole with no switch in between.

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;

use luafiber_fiber::{Builder, Cond};
use luafiber_iproto::encode::{self, ErrorInfo};
use luafiber_iproto::{
    decode_request, errcode, feature, frame, split_header, Frame, Request, SALT_SIZE,
};
use luafiber_runtime::ibuf::Ibuf;
use luafiber_runtime::io::{Fd, Interest};
use luafiber_runtime::net::sys;

use super::users::{Object, Users};
use super::{
    call, has_triggers, watch, Limits, ServerState, SCHEMA, TRIGGER_AUTH, TRIGGER_CONNECT,
    TRIGGER_DISCONNECT,
};
use crate::raw::context::Part;

/// Space ids a box-less server answers SELECT on with an empty DATA
/// (`_vspace`, `_vindex`: what a client's schema fetch needs).
const EMPTY_SPACES: [u32; 2] = [281, 289];

/// The protocol version ID answers: 6, the first with every feature of
/// [`FEATURES`] (master's `iproto_features.h`).
const PROTOCOL_VERSION: u64 = 6;

/// The features ID announces: only what this server implements
/// (watchers and WATCH_ONCE; no streams, transactions or MP_ERROR
/// values in results).
const FEATURES: [u32; 2] = [feature::WATCHERS, feature::WATCH_ONCE];

/// The Tarantool version the greeting states. Clients switch on it: from
/// 2.10.0 net.box (master), tarantool-python and asynctnt send ID, which
/// this server answers; 2.6's net.box and tarantool-driver never do.
/// Below 2.10.5, so master's net.box does not ask for `_vspace_sequence`.
pub(crate) const GREETING_VERSION: &str = "2.10.0";

/// Most bytes one read asks for.
const READ_MAX: usize = 1 << 20;

/// A client's connection (Tarantool's session over IPROTO).
pub(crate) struct Conn {
    /// The socket.
    fd: Fd,
    /// The session id (`box.session.id()`).
    pub session: u64,
    /// The peer's address as text (`box.session.peer()`).
    pub peer: String,
    /// The greeting's salt, for AUTH.
    salt: [u8; SALT_SIZE],
    /// The session's user id (guest until an AUTH).
    pub user: Cell<u32>,
    /// Replies waiting for the writer.
    out: RefCell<Ibuf>,
    /// The writer's own buffer, swapped with `out` to write it.
    spare: RefCell<Ibuf>,
    /// Signalled when `out` gets its first bytes, or the connection closes.
    writer: Cond,
    /// CALL and EVAL fibers running for this connection.
    in_flight: Cell<u32>,
    /// Signalled when `in_flight` drops below the limit.
    room: Cond,
    /// The reader saw the end (or an error), or the writer failed: no more
    /// replies go out.
    closed: Cell<bool>,
    /// The user's privileges on the universe, as of a generation of the
    /// users: `(generation, user, bits)`.
    universe: Cell<(u64, u32, u32)>,
    /// Replies dropped because the connection had closed.
    pub dropped: Cell<u64>,
    /// The result of the on_connect triggers, once they ran: `Ok`, or
    /// the error reply of the one that failed.
    connected: RefCell<Option<Result<(), Vec<u8>>>>,
    /// Signalled when they have.
    connect_done: Cond,
    /// The writer is writing a batch (swapped out of `out`).
    writing: Cell<bool>,
}

impl Conn {
    /// Whether replies can still go out.
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    /// Appends `bytes` (whole replies) to the output, waking the writer
    /// when they are the first; dropped (and counted) once closed.
    #[inline]
    pub fn send(&self, bytes: &[u8]) {
        if self.closed.get() {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        let mut out = self.out.borrow_mut();
        let was_empty = out.is_empty();
        if out.extend_from_slice(bytes).is_err() {
            drop(out);
            tracing::warn!(target: "iproto", "{}: out of memory for a reply, closing", self.peer);
            self.close();
            return;
        }
        drop(out);
        if was_empty {
            self.writer.signal();
        }
    }

    /// Encodes a reply straight into the output with `f` (which must not
    /// switch fibers), waking the writer when it is the first.
    #[inline]
    pub(super) fn send_with(
        &self,
        f: impl FnOnce(&mut Ibuf) -> Result<(), luafiber_runtime::ibuf::ReserveError>,
    ) {
        if self.closed.get() {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        let mut out = self.out.borrow_mut();
        let was_empty = out.is_empty();
        let at = out.used();
        if f(&mut out).is_err() {
            out.truncate(at);
            drop(out);
            tracing::warn!(target: "iproto", "{}: out of memory for a reply, closing", self.peer);
            self.close();
            return;
        }
        drop(out);
        if was_empty {
            self.writer.signal();
        }
    }

    /// Encodes a reply straight into the output with `f`, which must not
    /// switch fibers (nor run Lua code, which could); waking the writer
    /// when it is the first. An error of `f` leaves the output as it was
    /// and is returned. Once closed, the reply is dropped (and counted).
    pub fn try_send_with<E>(&self, f: impl FnOnce(&mut Ibuf) -> Result<(), E>) -> Result<(), E> {
        if self.closed.get() {
            self.dropped.set(self.dropped.get() + 1);
            return Ok(());
        }
        let mut out = self.out.borrow_mut();
        let was_empty = out.is_empty();
        let at = out.used();
        let r = f(&mut out);
        if r.is_err() {
            out.truncate(at);
        }
        drop(out);
        if r.is_ok() && was_empty {
            self.writer.signal();
        }
        r
    }

    /// An error reply.
    pub fn send_error(&self, sync: u64, e: &ErrorInfo<'_>) {
        self.send_with(|out| encode::encode_error(out, sync, SCHEMA, e));
    }

    /// Ends the connection: no more replies, the writer and the reader
    /// wake and end, the socket closes.
    pub fn close(&self) {
        if self.closed.replace(true) {
            return;
        }
        let _ = self.fd.close();
        self.writer.broadcast();
        self.room.broadcast();
    }

    /// The session user's privileges on the universe (cached until the
    /// users change).
    #[inline]
    fn universe_bits(&self, st: &ServerState) -> u32 {
        let user = self.user.get();
        let gen = st.users_gen.get();
        let (g, u, bits) = self.universe.get();
        if g == gen && u == user {
            return bits;
        }
        let bits = st.users.borrow().effective(user, &Object::Universe);
        self.universe.set((gen, user, bits));
        bits
    }

    /// Whether replies are still waiting to go out (queued or being
    /// written).
    pub fn has_output(&self) -> bool {
        !self.closed.get() && (self.writing.get() || !self.out.borrow().is_empty())
    }

    /// CALL and EVAL fibers running for this connection.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.get()
    }

    /// A request fiber of this connection has ended.
    #[inline]
    pub fn request_done(&self) {
        let n = self.in_flight.get() - 1;
        self.in_flight.set(n);
        self.room.signal();
    }
}

/// Starts serving a connection accepted on the listener: its reader and
/// writer fibers.
pub(super) fn start(fd: Fd, peer: String) {
    let (session, limits) = ServerState::with(|st| {
        // Session 1 is the instance's own (the console, the script).
        let id = st.next_session.get().max(1) + 1;
        st.next_session.set(id);
        (id, st.limits.get())
    });
    let mut salt = [0u8; SALT_SIZE];
    fill_random(&mut salt);
    let conn = Rc::new(Conn {
        fd,
        session,
        peer,
        salt,
        user: Cell::new(super::users::GUEST),
        out: RefCell::new(Ibuf::new()),
        spare: RefCell::new(Ibuf::new()),
        writer: Cond::new(),
        in_flight: Cell::new(0),
        room: Cond::new(),
        closed: Cell::new(false),
        universe: Cell::new((u64::MAX, 0, 0)),
        dropped: Cell::new(0),
        connected: RefCell::new(None),
        connect_done: Cond::new(),
        writing: Cell::new(false),
    });
    ServerState::with(|st| st.conns.borrow_mut().insert(session, conn.clone()));
    let w = conn.clone();
    if let Err(e) = Builder::new()
        .name("iproto.writer")
        .spawn_ready(move || write_loop(&w))
    {
        tracing::warn!(target: "iproto", "{}: no fiber for the writer ({e}), closing", conn.peer);
        conn.close();
        ServerState::with(|st| st.conns.borrow_mut().remove(&session));
        return;
    }
    let r = conn.clone();
    if let Err(e) = Builder::new()
        .name("iproto.reader")
        .spawn_ready(move || read_loop(&r, limits))
    {
        tracing::warn!(target: "iproto", "{}: no fiber for the reader ({e}), closing", conn.peer);
        conn.close();
        ServerState::with(|st| st.conns.borrow_mut().remove(&session));
    }
}

/// Random bytes for a salt (`getrandom(2)`; the clock when it fails).
fn fill_random(buf: &mut [u8]) {
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n != buf.len() as isize {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (t >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
        }
    }
}

/// The writer: writes the output buffer whole each time it has bytes,
/// until the connection closes or a write fails.
fn write_loop(conn: &Conn) {
    loop {
        if conn.out.borrow().is_empty() {
            if conn.closed.get() || conn.writer.wait(None).is_err() {
                return;
            }
            continue;
        }
        let mut data = conn.spare.replace(Ibuf::new());
        std::mem::swap(&mut data, &mut *conn.out.borrow_mut());
        conn.writing.set(true);
        let mut failed = None;
        while !data.is_empty() {
            match conn
                .fd
                .io(Interest::WRITABLE, None, |fd| sys::send(fd, data.data()))
            {
                Ok(n) => {
                    data.consume(n);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        conn.writing.set(false);
        data.reset();
        *conn.spare.borrow_mut() = data;
        if let Some(e) = failed {
            if !conn.closed.get() {
                let e = crate::modules::errno::io_text(&e);
                tracing::info!(target: "iproto", "{}: write failed ({e}), closing", conn.peer);
                conn.close();
            }
            return;
        }
    }
}

/// The reader: reads packets and serves them until the peer goes, the
/// stream is garbage, or the connection is closed.
fn read_loop(conn: &Rc<Conn>, limits: Limits) {
    let uuid = ServerState::with(|st| st.uuid());
    let greeting = luafiber_iproto::encode_greeting(GREETING_VERSION, &uuid, &conn.salt);
    if has_triggers(TRIGGER_CONNECT) {
        if let Err(reply) = on_connect(conn) {
            refuse(conn, &greeting, &reply);
            return;
        }
    }
    conn.send(&greeting);
    let mut buf = Ibuf::new();
    let why = read_packets(conn, &mut buf, limits);
    ServerState::with(|st| st.conns.borrow_mut().remove(&conn.session));
    watch::drop_session(conn.session);
    if !conn.closed.get() {
        match why {
            Ok(()) => tracing::debug!(target: "iproto", "{}: peer closed", conn.peer),
            Err(e) => tracing::warn!(target: "iproto", "{}: {e}, closing", conn.peer),
        }
    }
    conn.close();
    let running = conn.in_flight.get();
    if running > 0 {
        tracing::warn!(
            target: "iproto",
            "{}: connection closed with {running} requests running: their replies are dropped",
            conn.peer
        );
    }
    on_disconnect(conn);
}

/// Ends `conn` whose on_connect trigger failed, as master's
/// `net_send_greeting` does: the greeting and `reply` (the trigger's error,
/// sync 0) in one write, whatever of it the socket takes, then the close;
/// the session was made, so its on_disconnect triggers run after, as
/// `tx_process_disconnect` runs them.
fn refuse(conn: &Rc<Conn>, greeting: &[u8], reply: &[u8]) {
    let mut data = Vec::with_capacity(greeting.len() + reply.len());
    data.extend_from_slice(greeting);
    data.extend_from_slice(reply);
    if let Err(e) = conn
        .fd
        .io(Interest::WRITABLE, None, |fd| sys::send(fd, &data))
    {
        let e = crate::modules::errno::io_text(&e);
        tracing::debug!(target: "iproto", "{}: the refusal was not sent ({e})", conn.peer);
    }
    conn.close();
    ServerState::with(|st| st.conns.borrow_mut().remove(&conn.session));
    on_disconnect(conn);
}

/// Starts the on_disconnect triggers of `conn`'s session, if there are any.
fn on_disconnect(conn: &Rc<Conn>) {
    if has_triggers(TRIGGER_DISCONNECT) {
        if let Err(e) = call::run_triggers(conn, "disconnect", &[], 0, |_| {}) {
            tracing::warn!(target: "iproto", "{}: on_disconnect triggers did not run: {e}", conn.peer);
        }
    }
}

/// Runs the on_connect triggers and waits for them; `Err` with the error
/// reply to send when one failed (the connection is then closed, as
/// Tarantool does), an empty one when they could not run.
fn on_connect(conn: &Rc<Conn>) -> Result<(), Vec<u8>> {
    let c = conn.clone();
    let done = move |failed: Option<Vec<u8>>| {
        *c.connected.borrow_mut() = Some(failed.map_or(Ok(()), Err));
        c.connect_done.broadcast();
    };
    if let Err(e) = call::run_triggers(conn, "connect", &[], 0, done) {
        tracing::warn!(target: "iproto", "{}: on_connect triggers did not run: {e}", conn.peer);
        return Err(Vec::new());
    }
    loop {
        if let Some(r) = conn.connected.borrow_mut().take() {
            return r;
        }
        if conn.connect_done.wait(None).is_err() {
            return Err(Vec::new());
        }
    }
}

fn read_packets(conn: &Rc<Conn>, buf: &mut Ibuf, limits: Limits) -> Result<(), String> {
    loop {
        let need;
        loop {
            if conn.closed.get() {
                return Ok(());
            }
            while conn.in_flight.get() >= limits.net_msg_max {
                // net_msg_max: read no more until replies go out.
                if conn.room.wait(None).is_err() || conn.closed.get() {
                    return Ok(());
                }
            }
            match frame(buf.data(), limits.max_packet) {
                Ok(Frame::Whole { header_at, end }) => {
                    serve_packet(conn, &buf.data()[header_at..end]);
                    buf.consume(end);
                }
                Ok(Frame::Partial { need: n }) => {
                    need = n;
                    break;
                }
                Err(e) => {
                    // As iproto_connection_on_input: the error to the
                    // client (sync 0), best effort, then the close.
                    let msg = e.to_string();
                    let mut out = Ibuf::new();
                    let info = ErrorInfo::client(e.code(), msg.as_bytes());
                    if encode::encode_error(&mut out, 0, SCHEMA, &info).is_ok() {
                        let _ = conn.fd.with(|fd| sys::send(fd, out.data()));
                    }
                    return Err(msg);
                }
            }
        }
        if buf.is_empty() {
            buf.reset();
        }
        // A packet grows the buffer as its bytes come, not as its size
        // prefix claims: a peer that lies costs only what it sends.
        let want = need
            .saturating_sub(buf.used())
            .min(READ_MAX)
            .max(limits.readahead);
        let room = buf.reserve(want);
        let asked = room.len();
        // After a short read (below) the event comes first, then the read:
        // no recv that says EAGAIN per batch of requests.
        let ready = if conn.fd.is_ready(Interest::READABLE) {
            Ok(())
        } else {
            conn.fd.park(Interest::READABLE, None).map(drop)
        };
        match ready.and_then(|()| {
            conn.fd
                .io(Interest::READABLE, None, |fd| sys::recv(fd, &mut room[..]))
        }) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                // A short read took all the socket had (a stream socket
                // fills a read from its whole queue).
                if n < asked {
                    conn.fd.drained(Interest::READABLE);
                }
                buf.advance(n);
            }
            Err(e) if conn.closed.get() => return Err(e.to_string()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "read failed ({})",
                    crate::modules::errno::io_text(&e)
                ))
            }
        }
    }
}

/// Serves one packet (the bytes after its size prefix).
fn serve_packet(conn: &Rc<Conn>, packet: &[u8]) {
    // One pass: `decode_request` checks the body as it decodes it (the
    // arguments as the fiber decodes them).
    let (header, body) = match split_header(packet) {
        Ok(hb) => hb,
        Err(e) => return malformed(conn, 0, e),
    };
    let sync = header.sync;
    let req = match decode_request(&header, body) {
        Ok(r) => r,
        Err(e) => return malformed(conn, sync, e),
    };
    match req {
        Request::Ping => conn.send_with(|out| encode::encode_ok(out, sync, SCHEMA)),
        Request::Call(c) | Request::Call16(c) => {
            let user = conn.user.get();
            let allowed = ServerState::with(|st| {
                let universe = conn.universe_bits(st);
                st.users.borrow().may_call(user, universe, c.name)
            });
            if !allowed {
                // A malformed body is reported first, as when it was
                // checked before the request was looked at.
                if let Err(e) = c.args.check() {
                    bad_request(conn, sync, e);
                    return;
                }
                access_denied(conn, sync, "function", c.name);
                return;
            }
            call::start(conn, sync, header.kind, c.name, c.args);
        }
        Request::Eval(e) => {
            if !ServerState::with(|st| Users::may_eval(conn.universe_bits(st))) {
                if let Err(e) = e.args.check() {
                    bad_request(conn, sync, e);
                    return;
                }
                access_denied(conn, sync, "universe", b"");
                return;
            }
            call::start(conn, sync, header.kind, e.expr, e.args);
        }
        Request::Auth(a) => {
            let scramble = match a.method() {
                Ok(m) => m.map(|m| m.scramble),
                Err(e) => {
                    let msg = e.to_string();
                    conn.send_error(sync, &ErrorInfo::client(e.code(), msg.as_bytes()));
                    return;
                }
            };
            let r = ServerState::with(|st| {
                st.users.borrow().authenticate(a.user, scramble, &conn.salt)
            });
            let ok = r.is_ok();
            match r {
                Ok(id) => {
                    conn.user.set(id);
                    conn.send_with(|out| encode::encode_ok(out, sync, SCHEMA));
                }
                Err((code, msg)) => conn.send_error(sync, &ErrorInfo::client(code, msg.as_bytes())),
            }
            if has_triggers(TRIGGER_AUTH) {
                // on_auth(user_name, success), after the reply.
                let mut extra = Vec::with_capacity(8 + a.user.len());
                let _ = rmp::encode::write_str_len(&mut extra, a.user.len() as u32);
                extra.extend_from_slice(a.user);
                let _ = rmp::encode::write_bool(&mut extra, ok);
                if let Err(e) = call::run_triggers(conn, "auth", &extra, 2, |_| {}) {
                    tracing::warn!(target: "iproto", "{}: on_auth triggers did not run: {e}", conn.peer);
                }
            }
        }
        Request::Id(_) => conn.send_with(|out| {
            encode::encode_id_reply(out, sync, SCHEMA, PROTOCOL_VERSION, &FEATURES, "chap-sha1")
        }),
        // No reply to these two (master's tx_process_misc).
        Request::Watch(key) => watch::watch(conn, sync, key),
        Request::Unwatch(key) => watch::unwatch(conn.session, key),
        Request::WatchOnce(key) => {
            let data = watch::value(key);
            let (n, items) = data.as_deref().map_or((0, &[][..]), |d| (1, d));
            conn.send_with(|out| encode::encode_data_reply(out, 0, sync, SCHEMA, items, n));
        }
        Request::Select(s) if EMPTY_SPACES.contains(&s.space_id) => {
            conn.send_with(|out| encode::encode_data_reply(out, 0, sync, SCHEMA, &[], 0));
        }
        Request::Select(s) => {
            let msg = format!("Space '{}' does not exist", s.space_id);
            conn.send_error(
                sync,
                &ErrorInfo::client(errcode::NO_SUCH_SPACE, msg.as_bytes()),
            );
        }
        _ => {
            let msg = format!("Unknown request type {}", header.kind);
            conn.send_error(
                sync,
                &ErrorInfo::client(errcode::UNKNOWN_REQUEST_TYPE, msg.as_bytes()),
            );
        }
    }
}

/// A packet whose header or body could not be decoded: a log line (master
/// logs the diag) and the error reply; the connection goes on.
fn malformed(conn: &Conn, sync: u64, e: luafiber_iproto::Error) {
    tracing::error!(target: "iproto", "{e}, from {}", conn.peer);
    bad_request(conn, sync, e);
}

/// The error reply to a request that could not be decoded.
fn bad_request(conn: &Conn, sync: u64, e: luafiber_iproto::Error) {
    let msg = e.to_string();
    conn.send_error(sync, &ErrorInfo::client(e.code(), msg.as_bytes()));
}

/// Error 42 for the session's user on `object` (`function 'f'` or
/// `universe ''`).
fn access_denied(conn: &Conn, sync: u64, kind: &str, name: &[u8]) {
    let user = ServerState::with(|st| st.users.borrow().name_of(conn.user.get()).to_string());
    let msg = format!(
        "Execute access to {kind} '{}' is denied for user '{user}'",
        String::from_utf8_lossy(name)
    );
    // An AccessDeniedError's fields: 2.6's net.box refuses one without
    // them (and drops the connection).
    let mut fields = Vec::with_capacity(64 + name.len() + user.len());
    let _ = rmp::encode::write_map_len(&mut fields, 4);
    for (k, v) in [
        (&b"object_type"[..], kind.as_bytes()),
        (b"object_name", name),
        (b"access_type", b"Execute"),
        (b"user", user.as_bytes()),
    ] {
        let _ = rmp::encode::write_str_len(&mut fields, k.len() as u32);
        fields.extend_from_slice(k);
        let _ = rmp::encode::write_str_len(&mut fields, v.len() as u32);
        fields.extend_from_slice(v);
    }
    let mut e = ErrorInfo::client(errcode::ACCESS_DENIED, msg.as_bytes());
    e.type_name = "AccessDeniedError";
    e.fields = Some(&fields);
    conn.send_error(sync, &e);
}

/// Counts a request fiber started for `conn`.
#[inline]
pub(super) fn request_started(conn: &Conn) {
    conn.in_flight.set(conn.in_flight.get() + 1);
}
