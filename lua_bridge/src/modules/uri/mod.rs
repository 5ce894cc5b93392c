//! The Lua `uri` module: Tarantool master's `src/lua/uri.lua` and
//! `uri.c`, over the parser of [`luafiber_runtime::uri`].
//!
//! Two halves, as in Tarantool: C functions here parse a string into the
//! result table ([`table`]) and escape bytes, and `uri.lua` builds the
//! module on them: the table forms of `parse` and `parse_many`
//! (`{uri, login = ..., password = ..., params = ...}`, `default_params`),
//! `format`, `escape`/`unescape` with their option sets, `unreserved`,
//! `values` and `_internal.params`. `require('uri')` loads it
//! (`package.preload`).
//!
//! Errors as master's: `parse` and `parse_many` return `nil, err`, `err`
//! an `IllegalParams` error object; wrong arguments raise strings
//! (`"Usage: uri.parse(string|table)"`).
//!
//! Difference from Tarantool: `uri.unreserved(chars)` gives an
//! `unsigned char[256]` cdata on LuaJIT as master does, and on Lua 5.4
//! (no FFI) a table that the escape options accept.

pub(crate) mod table;

use luafiber_runtime::uri;

use crate::raw::{error, lua_fn, Raise, Reg};

/// `uri.lua`, run once per state by the loader.
const CHUNK: &str = include_str!("uri.lua");

/// The functions `uri.lua` is given.
const INTERNAL: &[Reg] = &[
    (c"parse", internal_parse),
    (c"parse_many", internal_parse_many),
    (c"escape", internal_escape),
    (c"unescape", internal_unescape),
    (c"error", internal_error),
];

lua_fn! {
    /// `parse(str)`: the table of one URI, or nothing.
    fn internal_parse(s: &mut Stack) {
        let text = s.to_str(1).map(<[u8]>::to_vec).unwrap_or_default();
        match uri::parse(&text) {
            Ok(u) => {
                table::push(s, &u)?;
                Ok(1)
            }
            Err(_) => Ok(0),
        }
    }
}

lua_fn! {
    /// `parse_many(str)`: an array of URI tables (comma-separated text),
    /// or nothing.
    fn internal_parse_many(s: &mut Stack) {
        let text = s.to_str(1).map(<[u8]>::to_vec).unwrap_or_default();
        let Ok(uris) = uri::parse_many(&text) else {
            return Ok(0);
        };
        s.ensure(2)?;
        let t = s.new_table(uris.len() as i32, 0);
        for (i, u) in uris.iter().enumerate() {
            table::push(s, u)?;
            s.rawseti(t, i as i64 + 1);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `escape(str, unreserved, plus)`: `unreserved` a 256-byte string,
    /// each byte non-zero for a byte left as it is.
    fn internal_escape(s: &mut Stack) {
        let table = s.to_str(2).filter(|t| t.len() == 256).map(|t| {
            let mut u: uri::Unreserved = [false; 256];
            for (slot, &b) in u.iter_mut().zip(t) {
                *slot = b != 0;
            }
            u
        });
        let table = table.ok_or_else(|| Raise::Message("use uri.unreserved for building opts.unreserved".into()))?;
        let plus = s.to_bool(3);
        let mut out = Vec::new();
        uri::escape(s.to_str(1).unwrap_or_default(), &table, plus, &mut out);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `unescape(str, plus)`.
    fn internal_unescape(s: &mut Stack) {
        let plus = s.to_bool(2);
        let mut out = Vec::new();
        uri::unescape(s.to_str(1).unwrap_or_default(), plus, &mut out);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `error(message)`: a new `IllegalParams` error object (what master's
    /// `uri.lib` functions raise through `diag_set`).
    fn internal_error(s: &mut Stack) {
        let message = String::from_utf8_lossy(s.to_str(1).unwrap_or_default()).into_owned();
        error::push(s, error::ErrorKind::IllegalParams, &message);
        Ok(1)
    }
}

lua_fn! {
    /// The `uri` module's loader (`package.preload.uri`): runs `uri.lua`
    /// over the internal functions, which gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(4)?;
        let internal = s.new_table(0, INTERNAL.len() as i32);
        s.set_funcs(internal, INTERNAL);
        s.load(CHUNK, c"=uri").map_err(|()| Raise::Top)?;
        s.push_value(internal);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
