//! The connection steps of `net.box.lib`, for `net_box.lua`'s state
//! machine: the transport object, connect and greeting, the reader and
//! writer loops, the state, AUTH (Tarantool's `netbox_new_transport`,
//! `netbox_connect`, `netbox_transport_start`, the auth step of
//! `netbox_state_machine`).

use std::ffi::OsStr;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_iproto::encode;
use luafiber_runtime::ibuf::{Ibuf, ReserveError};

use super::calls::{
    after_switch, deadline_of, no_room, push_failure, timed_out, transport, transports,
    wait_request,
};
use super::request::{Decode, Request};
use super::transport::{Peer, ReadEnd, State, Transport, ER_NO_CONNECTION};
use crate::raw::{args, lua_fn, LResult, Raise, Stack};

lua_fn! {
    /// `lib.new_transport()`: a transport in state `initial`.
    pub(super) fn new_transport(s: &mut Stack) {
        s.ensure(1)?;
        transports().push(s, Rc::new(Transport::new()));
        Ok(1)
    }
}

lua_fn! {
    /// `__gc` of a transport: closes its socket.
    pub(super) fn transport_gc(s: &mut Stack) {
        if let Some(t) = transports().take(s, 1) {
            t.close_stream();
        }
        Ok(0)
    }
}

lua_fn! {
    /// `lib.connect(t, host, port, timeout)`: connects (`host` `'unix/'`:
    /// to the Unix socket at the path `port`) and reads the greeting;
    /// `{version_id, protocol, uuid, salt}` or nil and a message.
    pub(super) fn connect(s: &mut Stack) {
        let t = transport(s, 1)?;
        let host = s.to_str(2).map(<[u8]>::to_vec);
        let port = s.to_str(3).map(<[u8]>::to_vec);
        let timeout = s.to_number(4).and_then(args::seconds);
        let (Some(host), Some(port)) = (host, port) else {
            return Err(Raise::illegal("Usage: lib.connect(t, host, port, timeout)"));
        };
        crate::fiber::check_switch(s, "net.box.connect")?;
        let r = resolve(&host, &port, timeout).and_then(|peer| t.connect(&peer, timeout));
        after_switch(s);
        s.ensure(4)?;
        match r {
            Ok(g) => {
                let tab = s.new_table(0, 4);
                s.push_int(g.version_id.into());
                s.set_field(tab, c"version_id");
                s.push_str(if g.is_binary { "Binary" } else { "Lua console" });
                s.set_field(tab, c"protocol");
                s.push_bytes(g.uuid.as_ref().map_or(&[][..], |u| &u[..]));
                s.set_field(tab, c"uuid");
                s.push_bytes(g.salt());
                s.set_field(tab, c"salt");
                Ok(1)
            }
            Err(e) => {
                s.push_nil();
                s.push_str(&e);
                Ok(2)
            }
        }
    }
}

/// Where `host`:`port` is: the addresses of a host and a port, or, for
/// host `unix/`, the Unix socket at the path `port` (Tarantool's
/// `unix/:PATH`).
fn resolve(host: &[u8], port: &[u8], timeout: Option<Duration>) -> Result<Peer, String> {
    if host == b"unix/" {
        return Ok(Peer::Unix(PathBuf::from(OsStr::from_bytes(port))));
    }
    let (host, port) = (String::from_utf8_lossy(host), String::from_utf8_lossy(port));
    let port: u16 = port.parse().map_err(|_| format!("Invalid port: {port}"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Peer::Inet(vec![SocketAddr::new(ip, port)]));
    }
    let host = if host == "localhost" {
        "127.0.0.1"
    } else {
        host
    };
    luafiber_runtime::net::lookup_host(host, port, timeout)
        .map(Peer::Inet)
        .map_err(|e| super::transport::io_message(&e))
}

lua_fn! {
    /// `lib.set_state(t, name[, code, message])`: the state machine's
    /// state; a failed or closed state fails the requests in flight with
    /// the error.
    pub(super) fn set_state(s: &mut Stack) {
        let t = transport(s, 1)?;
        let state = s.to_str(2).and_then(State::from_name)
            .ok_or_else(|| Raise::illegal("net.box: bad state"))?;
        let err = s.to_integer(3).map(|code| {
            let msg = s.to_str(4).map(|m| String::from_utf8_lossy(m).into_owned()).unwrap_or_default();
            (code as u32, msg)
        });
        t.set_state(state, err);
        Ok(0)
    }
}

lua_fn! {
    /// `lib.run(t)`: the reader, on the calling fiber, until the
    /// connection fails (`'error', message`; the requests in flight fail
    /// with it at once, as master's `netbox_transport_fail` fails them, so
    /// a handshake's own requests, the schema's selects, do not wait for a
    /// reply that cannot come), a response shows another
    /// schema version (`'schema', version`) or an EVENT comes (`'event',
    /// key, value` with the value as a MessagePack string, or nil).
    pub(super) fn run(s: &mut Stack) {
        let t = transport(s, 1)?;
        crate::fiber::check_switch(s, "net.box")?;
        let end = t.read_loop();
        after_switch(s);
        s.ensure(2)?;
        match end {
            ReadEnd::Schema(v) => {
                s.push_cstr(c"schema");
                s.push_number(v as f64);
            }
            ReadEnd::Failed(m) => {
                t.fail_all(ER_NO_CONNECTION, &m);
                s.push_cstr(c"error");
                s.push_str(&m);
            }
            ReadEnd::Event(key, data) => {
                s.ensure(3)?;
                s.push_cstr(c"event");
                s.push_bytes(&key);
                match data {
                    Some(d) => s.push_bytes(&d),
                    None => s.push_nil(),
                }
                return Ok(3);
            }
        }
        Ok(2)
    }
}

lua_fn! {
    /// `lib.writer(t)`: the writer, on the calling fiber, until the
    /// connection closes.
    pub(super) fn writer(s: &mut Stack) {
        let t = transport(s, 1)?;
        crate::fiber::check_switch(s, "net.box")?;
        t.write_loop();
        after_switch(s);
        Ok(0)
    }
}

lua_fn! {
    /// `lib.close(t)`: closes the socket (the reader and the writer end).
    pub(super) fn close(s: &mut Stack) {
        transport(s, 1)?.close_stream();
        Ok(0)
    }
}

lua_fn! {
    /// `lib.set_schema_version(t, v)`.
    pub(super) fn set_schema_version(s: &mut Stack) {
        let t = transport(s, 1)?;
        t.set_schema_version(s.to_number(2).unwrap_or(0.0) as u64);
        Ok(0)
    }
}

lua_fn! {
    /// `lib.auth(t, user, password, salt, timeout)`: AUTH on the
    /// connection (its reader running); true, or nil and the error object.
    pub(super) fn auth(s: &mut Stack) {
        let t = transport(s, 1)?;
        let user = s.to_str(2).unwrap_or(b"").to_vec();
        let password = s.to_str(3).unwrap_or(b"").to_vec();
        let salt = s.to_str(4).unwrap_or(b"").to_vec();
        let deadline = deadline_of(s.to_number(5));
        let req = round_trip(s, &t, deadline, |out, sync| {
            encode::encode_auth(out, sync, &user, Some(&password), &salt)
        })?;
        s.ensure(2)?;
        let done = req.done.borrow();
        match done.as_ref() {
            Some(Ok(_)) => {
                s.push_bool(true);
                Ok(1)
            }
            Some(Err(f)) => {
                s.push_nil();
                push_failure(s, f);
                Ok(2)
            }
            None => unreachable!("ready"),
        }
    }
}

/// One request of the connection's own steps (AUTH, ID): `encode` writes
/// it into the send buffer with its sync, and the calling fiber parks
/// until the answer, or until `deadline` (the request then completes with
/// `TimedOut`, its late answer dropped). Returns the request, answered.
///
/// # Errors
///
/// Out of memory for the request; a cancel of the calling fiber.
pub(super) fn round_trip(
    s: &mut Stack,
    t: &Transport,
    deadline: Option<Instant>,
    encode: impl FnOnce(&mut Ibuf, u64) -> Result<(), ReserveError>,
) -> LResult<Rc<Request>> {
    let sync = t.next_sync();
    {
        let mut out = t.send.borrow_mut();
        let was_empty = out.is_empty();
        let at = out.used();
        if let Err(e) = encode(&mut out, sync) {
            out.truncate(at);
            return Err(no_room(e));
        }
        drop(out);
        t.sent(was_empty);
    }
    let req = Rc::new(Request::new(sync, Decode::Nothing));
    t.register(req.clone());
    while !req.is_ready() {
        if !wait_request(s, &req, deadline)? {
            t.forget(sync);
            req.complete(Err(timed_out()));
        }
    }
    Ok(req)
}
