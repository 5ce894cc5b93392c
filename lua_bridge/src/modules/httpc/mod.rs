//! The Lua `http.client` module: Tarantool master's `src/lua/httpc.lua`
//! API (`new`, `request`, `get`, `post`, `put`, `patch`, `delete`,
//! `head`, `options`, `trace`, `connect`, `stat`; responses with
//! `status`, `reason`, `headers`, `cookies`, `body`, `decode()`), with
//! HTTP/1.1 spoken here instead of through libcurl.
//!
//! Two halves: `httpc.lua` (the requests: a per-client pool of keep-alive
//! connections on luafiber's `socket` module, so a request parks only the
//! calling fiber; request heads, bodies by `Content-Length`, chunked or
//! to the end of the stream; redirects; master's header and cookie
//! handling) and this file, which parses a response head with the
//! `httparse` crate (a well-kept, fuzzed parser: an HTTP head is not
//! ours to get wrong). `require('http.client')` loads it
//! (`package.preload`).

use std::ffi::c_int;

use mlua::ffi;

use crate::raw::{lua_fn, LResult, Raise, Stack};

/// `httpc.lua`, run once per cord by the loader.
const CHUNK: &str = include_str!("httpc.lua");

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
    /// The `http.client` module's loader (`package.preload['http.client']`):
    /// runs `httpc.lua` with the parser, which gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(4)?;
        s.load(CHUNK, c"@builtin/httpc.lua").map_err(|()| Raise::Top)?;
        let internal = s.new_table(0, 1);
        s.push_cfunction(parse_head);
        s.set_field(internal, c"parse_head");
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
