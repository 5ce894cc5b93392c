//! The Lua `http.client` module: Tarantool master's `src/lua/httpc.lua`
//! API (`new`, `request`, `get`, `post`, `put`, `patch`, `delete`,
//! `head`, `options`, `trace`, `connect`, `stat`; responses with
//! `status`, `reason`, `headers`, `cookies`, `body`, `decode()`; the
//! chunked io object), with HTTP/1.1 spoken here instead of through
//! libcurl, and TLS through rustls.
//!
//! Lua chunks on luafiber's `socket` module, so a request parks only the
//! calling fiber: `conn.lua` (URLs, streams, the per-client pool of
//! kept connections, request heads, response heads and framing),
//! `request.lua` (one exchange, redirects, master's failure statuses),
//! `io.lua` (the chunked io object) and `httpc.lua` (master's API, header
//! and cookie handling). In Rust: this face, which parses a response head
//! with the `httparse` crate (a well-kept, fuzzed parser: an HTTP head is
//! not ours to get wrong), [`tls`] (sessions over a socket's fd) and
//! [`config`] (rustls configurations from master's TLS options).
//! `require('http.client')` loads it (`package.preload`).

mod config;
mod tls;

use std::ffi::{c_int, CStr};

use mlua::ffi;

use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// The module's part of the cord context.
pub(crate) use tls::TlsState;

/// The Lua chunks, in the order the loader runs them, each given the
/// results of those before it (after `internal`).
const CHUNKS: &[(&str, &CStr)] = &[
    (include_str!("conn.lua"), c"@builtin/httpc/conn.lua"),
    (include_str!("request.lua"), c"@builtin/httpc/request.lua"),
    (include_str!("io.lua"), c"@builtin/httpc/io.lua"),
    (include_str!("httpc.lua"), c"@builtin/httpc.lua"),
];

/// The most headers a response may have (curl has no limit; 100 is
/// httparse's common choice, and the head is refused beyond it).
const MAX_HEADERS: usize = 100;

lua_fn! {
    /// `parse_head(bytes)`: parses a response head (the status line and
    /// the headers, up to and with the empty line): `status, reason,
    /// headers, minor_version` (`headers` maps each lower-cased name to
    /// its value, or to a list of them when it came more than once), `nil`
    /// when the head is not complete yet, or `false, message` when it is
    /// malformed.
    fn parse_head(s: &mut Stack) {
        let Some(bytes) = s.to_str(1).map(<[u8]>::to_vec) else {
            return Err(Raise::Message("parse_head: a string expected".into()));
        };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        s.ensure(8)?;
        match resp.parse(&bytes) {
            Ok(httparse::Status::Partial) => {
                s.push_nil();
                Ok(1)
            }
            Err(e) => {
                s.push_bool(false);
                s.push_str(&format!("Invalid HTTP response: {e}"));
                Ok(2)
            }
            Ok(httparse::Status::Complete(_)) => {
                s.push_int(resp.code.unwrap_or(0).into());
                s.push_str(resp.reason.unwrap_or(""));
                let t = s.new_table(0, resp.headers.len() as c_int);
                for h in resp.headers.iter() {
                    push_header(s, t, h.name, h.value)?;
                }
                s.push_int(resp.version.unwrap_or(1).into());
                Ok(4)
            }
        }
    }
}

/// Sets header `name: value` in the table at `t`: a second value turns
/// the entry into a list of them (as master's driver gives repeated
/// headers to `httpc.lua`).
fn push_header(s: &mut Stack, t: c_int, name: &str, value: &[u8]) -> LResult<()> {
    s.ensure(4)?;
    s.push_str(&name.to_ascii_lowercase());
    s.push_value(-1);
    s.rawget(t);
    match s.type_of(-1) {
        ffi::LUA_TNIL => {
            s.pop(1);
            s.push_bytes(value);
            s.rawset(t)?;
        }
        ffi::LUA_TTABLE => {
            let list = s.top();
            let mut n = 1;
            while s.rawgeti(list, n) != ffi::LUA_TNIL {
                s.pop(1);
                n += 1;
            }
            s.pop(1);
            s.push_bytes(value);
            s.rawseti(list, n.into());
            s.pop(2);
        }
        _ => {
            let first = s.top();
            let list = s.new_table(2, 0);
            s.push_value(first);
            s.rawseti(list, 1);
            s.push_bytes(value);
            s.rawseti(list, 2);
            s.replace(first);
            s.rawset(t)?;
        }
    }
    Ok(())
}

lua_fn! {
    /// `illegal(message)`: raises an `IllegalParams` error object (master's
    /// `diag_set(IllegalParams, ...)` in `httpc.c`).
    fn illegal(s: &mut Stack) {
        let msg = String::from_utf8_lossy(s.to_str(1).unwrap_or(b"")).into_owned();
        Err(Raise::illegal(msg))
    }
}

lua_fn! {
    /// `timed_out()`: raises master's `TimedOut` error object ("timed
    /// out"), as a wait of the io object that ran out does.
    fn timed_out(_s: &mut Stack) {
        Err(Raise::Error(ErrorKind::TimedOut, "timed out".into()))
    }
}

lua_fn! {
    /// The `http.client` module's loader (`package.preload['http.client']`):
    /// runs the chunks ([`CHUNKS`]) with `internal` (the C functions) and
    /// the results of those before; the last gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(CHUNKS.len() as c_int + 8)?;
        let internal = s.new_table(0, 4);
        s.push_cfunction(parse_head);
        s.set_field(internal, c"parse_head");
        s.push_cfunction(illegal);
        s.set_field(internal, c"illegal");
        s.push_cfunction(timed_out);
        s.set_field(internal, c"timed_out");
        tls::init(s, internal);
        // Stack: internal, then one result per chunk run.
        for (i, (chunk, name)) in CHUNKS.iter().enumerate() {
            s.load(chunk, name).map_err(|()| Raise::Top)?;
            for arg in 1..=(i as c_int + 1) {
                s.push_value(arg);
            }
            s.pcall(i as c_int + 1, 1).map_err(|()| Raise::Top)?;
        }
        Ok(1)
    }
}
