//! How answers become Lua values: a push's message, a request's result
//! (Tarantool's method decoders of `net_box.lua`, master's
//! `netbox_decode_*`), the `buffer` option's copy. A body of the shape
//! every server sends, `{IPROTO_DATA = ...}`, is walked once, by the
//! decoder; any other goes through `luafiber_iproto::decode_response`,
//! which checks it whole first.

use std::ffi::c_int;

use luafiber_iproto::{self as iproto, key, kind, Array, Header, Response};

use super::calls::no_room;
use super::request::Decode;
use crate::modules::buffer::{self, LuaIbuf};
use crate::modules::msgpack::port::{self, Options};
use crate::raw::{LResult, Raise, Stack};

/// Pushes a count of bytes (what a request with `buffer` returns).
pub(super) fn push_len(s: &mut Stack, n: usize) {
    s.push_int(n as i64);
}

/// The DATA array of a response `body` of status `kind` ([`kind::OK`], or
/// [`kind::CHUNK`] for a push), when it has one.
///
/// # Errors
///
/// "net.box: invalid response" and why, for a body that does not decode.
fn data_of(body: &[u8], kind: u32) -> LResult<Option<Array<'_>>> {
    let h = Header {
        kind,
        ..Header::default()
    };
    match iproto::decode_response(&h, body) {
        Ok(Response::Ok { data, .. } | Response::Chunk { data }) => Ok(data),
        Ok(Response::Error(_)) => Ok(None),
        Err(e) => Err(Raise::illegal(format!("net.box: invalid response: {e}"))),
    }
}

/// Pushes the value of `body` when `body` is
/// `{IPROTO_DATA = ...}` (a map of that one key: what Tarantool and
/// luafiber send), DATA is an array (`item`: of one item, that item
/// pushed; else DATA itself) and the value ends where `body` ends.
/// Returns false, with the stack as it was, for any other body: the caller
/// then reads it by [`data_of`], which checks it whole (here the decode
/// checks it: it ran to the end). One walk of the body instead of two.
#[inline]
fn push_data_fast(s: &mut Stack, body: &[u8], item: bool) -> bool {
    if body.len() < 3 || body[0] != 0x81 || body[1] != key::DATA {
        return false;
    }
    // DATA's array header (Tarantool writes a 32-bit one) and its length.
    let (header, len) = match body[2] {
        b @ 0x90..=0x9f => (1, u32::from(b & 0x0f)),
        0xdc if body.len() >= 5 => (3, u32::from(u16::from_be_bytes([body[3], body[4]]))),
        0xdd if body.len() >= 7 => (5, u32::from_be_bytes([body[3], body[4], body[5], body[6]])),
        _ => return false,
    };
    let at = match item {
        true if len == 1 => 2 + header,
        true => return false,
        false => 2,
    };
    let top = s.top();
    match port::decode_value(s, &body[at..], Options::Cfg) {
        Ok(n) if at + n == body.len() => true,
        _ => {
            s.settop(top);
            false
        }
    }
}

/// Pushes the message of a push's body (`DATA[1]`).
pub(super) fn push_message(s: &mut Stack, body: &[u8]) -> LResult<()> {
    if push_data_fast(s, body, true) {
        return Ok(());
    }
    let data = data_of(body, kind::CHUNK)?
        .ok_or_else(|| Raise::illegal("net.box: a push without data"))?;
    if data.is_empty() {
        s.push_nil();
        return Ok(());
    }
    port::decode_value(s, data.items_raw(), Options::Cfg).map(drop)
}

/// Copies a body (or its DATA, with `skip_header`) to the end of `b`;
/// returns the bytes copied.
pub(super) fn copy_to_buffer(b: &LuaIbuf, body: &[u8], skip_header: bool) -> LResult<usize> {
    let bytes = match skip_header {
        true => data_of(body, kind::OK)?.map_or(&[][..], |d| d.raw()),
        false => body,
    };
    buffer::with_ibuf(b, |ib| ib.extend_from_slice(bytes))?.map_err(no_room)?;
    Ok(bytes.len())
}

/// Pushes the result of an answer `body` as `decode` says; `multi`: the
/// DATA of CALL and EVAL as several values (a synchronous call), else as
/// one table (a future's result); `how`: the `buffer` (then the count of
/// bytes copied), `skip_header`, `return_raw` (then one `msgpack.object`
/// of the DATA array, or of its first element for `Decode::First`, as
/// master's `netbox_decode_table`/`_value`). Returns the count pushed.
pub(super) fn push_result(
    s: &mut Stack,
    body: &[u8],
    decode: Decode,
    multi: bool,
    how: (Option<&LuaIbuf>, bool, bool),
) -> LResult {
    let (buffer, skip_header, return_raw) = how;
    s.ensure(4)?;
    if let Some(b) = buffer {
        let n = copy_to_buffer(b, body, skip_header)?;
        push_len(s, n);
        return Ok(1);
    }
    if decode == Decode::Ping {
        s.push_bool(true);
        return Ok(1);
    }
    if decode == Decode::Nothing {
        return Ok(0);
    }
    // A future's result, or one value: DATA's one walk by the decoder.
    let one = !(return_raw || multi && decode == Decode::Multi);
    if one && push_data_fast(s, body, decode == Decode::First) {
        return Ok(1);
    }
    let Some(data) = data_of(body, kind::OK)? else {
        return Ok(0);
    };
    if return_raw {
        let bytes = match decode {
            Decode::First if data.is_empty() => return Ok(0),
            Decode::First => data.items_raw(),
            _ => data.raw(),
        };
        port::push_object_from_raw(s, bytes)?;
        return Ok(1);
    }
    match decode {
        Decode::Multi if multi => {
            let n = data.len();
            if n > 1_000_000 || s.ensure(n as c_int + 4).is_err() {
                return Err(Raise::illegal("net.box: too many results"));
            }
            // Scalars pushed as they are read (the decoder's fast path).
            port::push_items(s, data.items_raw(), n, Options::Cfg)?;
            Ok(n as c_int)
        }
        Decode::First => {
            if data.is_empty() {
                return Ok(0);
            }
            port::decode_value(s, data.items_raw(), Options::Cfg)?;
            Ok(1)
        }
        _ => {
            port::decode_value(s, data.raw(), Options::Cfg)?;
            Ok(1)
        }
    }
}
