//! Encoding into an [`Ibuf`] (a connection's output buffer or one of the
//! cord's stash): a server's replies in the layout Tarantool writes
//! (`iproto_header_encode`, `iproto_reply_*`: a fixed 28-byte header, so
//! the size and the DATA count are patched in place), and every request a
//! client sends in the layout 2.6's net.box writes (`netbox_encode_*`: a
//! 5-byte size prefix patched at the end, header `{SYNC, TYPE}`).
//!
//! The hot paths are two calls around the caller's own writes: [`begin_data_reply`]
//! / [`finish_data_reply`] around a reply's DATA items, [`begin_call`] /
//! [`finish_request`] around a request's arguments. A [`Mark`] is an offset
//! from the buffer's read position, so the buffer may grow in between, but
//! nothing may be consumed from it until the finish.
//!
//! Every function returns [`ReserveError`] when the buffer cannot grow and
//! then leaves the bytes it wrote in place: the caller truncates to the
//! mark it had (`buf.truncate(mark.offset())`) or drops the buffer.

use luafiber_runtime::ibuf::{Ibuf, ReserveError};

use crate::auth;
use crate::consts::{key, kind, REPLY_DATA_HEADER_LEN, REPLY_HEADER_LEN};
use crate::mp::{is_one_value, write_array, write_map, write_raw, write_str, write_uint};
use crate::response::{mp_error_key, MP_ERROR_STACK};

/// Where a reply or a request began: its offset from the buffer's read
/// position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a begun packet is finished with its mark"]
pub struct Mark(usize);

impl Mark {
    /// The offset from the read position (`buf.used()` when it began).
    pub fn offset(self) -> usize {
        self.0
    }
}

/// The 28 bytes Tarantool starts every reply with: size prefix `0xce`+u32
/// (the bytes after it), then `{TYPE: 0xce u32, SYNC: 0xcf u64,
/// SCHEMA_VERSION: 0xce u32}`.
#[inline]
fn reply_header(
    kind: u32,
    sync: u64,
    schema_version: u32,
    body_len: usize,
) -> [u8; REPLY_HEADER_LEN] {
    let mut h = [0u8; REPLY_HEADER_LEN];
    let len = (REPLY_HEADER_LEN - 5 + body_len) as u32;
    h[0] = 0xce;
    h[1..5].copy_from_slice(&len.to_be_bytes());
    h[5] = 0x83;
    h[6] = key::REQUEST_TYPE;
    h[7] = 0xce;
    h[8..12].copy_from_slice(&kind.to_be_bytes());
    h[12] = key::SYNC;
    h[13] = 0xcf;
    h[14..22].copy_from_slice(&sync.to_be_bytes());
    h[22] = key::SCHEMA_VERSION;
    h[23] = 0xce;
    h[24..28].copy_from_slice(&schema_version.to_be_bytes());
    h
}

/// Starts a reply with DATA (CALL, EVAL, SELECT, a CHUNK): reserves its
/// header and `{DATA: array32}`; the caller then writes the DATA items and
/// calls [`finish_data_reply`] (`iproto_prepare_select`).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
#[inline]
pub fn begin_data_reply(buf: &mut Ibuf) -> Result<Mark, ReserveError> {
    let at = buf.used();
    buf.try_alloc(REPLY_DATA_HEADER_LEN)?;
    Ok(Mark(at))
}

/// Finishes a reply begun at `mark`: writes its header with `kind`
/// ([`kind::OK`] or [`kind::CHUNK`]), `sync`, `schema_version`, and the
/// DATA count (`iproto_reply_select`, `iproto_reply_chunk`).
///
/// # Panics
///
/// Panics when `mark` is not a begun reply of this buffer (bytes were
/// consumed or truncated since), or the reply is 4 GiB or longer.
///
/// ```
/// use luafiber_iproto::encode::{begin_data_reply, finish_data_reply};
/// use luafiber_iproto::{decode_header, decode_response, frame, kind, Frame, Response};
/// use luafiber_runtime::ibuf::Ibuf;
///
/// let mut buf = Ibuf::new();
/// let mark = begin_data_reply(&mut buf).unwrap();
/// buf.extend_from_slice(&[0x07, 0x08]).unwrap(); // two items: 7, 8
/// finish_data_reply(&mut buf, mark, kind::OK, 14, 1, 2);
///
/// let Ok(Frame::Whole { header_at, end }) = frame(buf.data(), u64::MAX) else { panic!() };
/// let (h, body) = decode_header(&buf.data()[header_at..end]).unwrap();
/// let Ok(Response::Ok { data: Some(d), .. }) = decode_response(&h, body) else { panic!() };
/// assert_eq!((h.sync, d.len()), (14, 2));
/// ```
#[inline]
pub fn finish_data_reply(
    buf: &mut Ibuf,
    mark: Mark,
    kind: u32,
    sync: u64,
    schema_version: u32,
    count: u32,
) {
    let at = mark.0;
    let body_len = buf.used() - at - REPLY_HEADER_LEN;
    assert!(
        u32::try_from(body_len + REPLY_HEADER_LEN).is_ok(),
        "a reply under 4 GiB"
    );
    let out = &mut buf.data_mut()[at..at + REPLY_DATA_HEADER_LEN];
    out[..REPLY_HEADER_LEN].copy_from_slice(&reply_header(kind, sync, schema_version, body_len));
    out[REPLY_HEADER_LEN] = 0x81;
    out[REPLY_HEADER_LEN + 1] = key::DATA;
    out[REPLY_HEADER_LEN + 2] = 0xdd;
    out[REPLY_HEADER_LEN + 3..].copy_from_slice(&count.to_be_bytes());
}

/// A whole reply with DATA: `items` are `count` values' bytes, one after
/// another (`kind` is [`kind::OK`] or [`kind::CHUNK`]).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_data_reply(
    buf: &mut Ibuf,
    kind: u32,
    sync: u64,
    schema_version: u32,
    items: &[u8],
    count: u32,
) -> Result<(), ReserveError> {
    let mark = begin_data_reply(buf)?;
    write_raw(buf, items)?;
    finish_data_reply(buf, mark, kind, sync, schema_version, count);
    Ok(())
}

/// An OK reply with an empty body `{}` (PING, AUTH; `iproto_reply_ok`).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_ok(buf: &mut Ibuf, sync: u64, schema_version: u32) -> Result<(), ReserveError> {
    let mut out = [0u8; REPLY_HEADER_LEN + 1];
    out[..REPLY_HEADER_LEN].copy_from_slice(&reply_header(kind::OK, sync, schema_version, 1));
    out[REPLY_HEADER_LEN] = 0x80;
    write_raw(buf, &out)
}

/// One error of a reply's MP_ERROR stack, and its cause (the next one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorInfo<'a> {
    /// The error code (`box.error` code; 0 for a custom or Lua error).
    pub code: u32,
    /// The type name (`ClientError`, `LuajitError`, `AccessDeniedError`,
    /// `CustomError`, ...).
    pub type_name: &'a str,
    /// The message (any bytes).
    pub message: &'a [u8],
    /// The file that raised it.
    pub file: &'a str,
    /// The line.
    pub line: u32,
    /// The saved `errno` (0: none).
    pub errno: u32,
    /// Payload fields: one MessagePack map, written as is (a
    /// `CustomError` has `{custom_type = ...}`). Left out when it is not
    /// exactly one well-formed map.
    pub fields: Option<&'a [u8]>,
    /// The error this one was caused by (`prev` in `box.error`).
    pub cause: Option<&'a ErrorInfo<'a>>,
}

impl<'a> ErrorInfo<'a> {
    /// A `ClientError` with `code` and `message`, no file, no cause.
    pub fn client(code: u32, message: &'a [u8]) -> ErrorInfo<'a> {
        ErrorInfo {
            code,
            type_name: "ClientError",
            message,
            file: "",
            line: 0,
            errno: 0,
            fields: None,
            cause: None,
        }
    }

    fn chain(&self) -> impl Iterator<Item = &ErrorInfo<'a>> {
        std::iter::successors(Some(self), |e| e.cause)
    }
}

/// Writes an MP_ERROR map (`{0x00: [error, cause, ...]}`, each error the
/// map of `mp_error.cc`: type, line, file, message, errno, code and the
/// fields when there are any): the `0x52` value of an error reply, or the
/// payload of an extension of type 3.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn write_error_stack(buf: &mut Ibuf, err: &ErrorInfo<'_>) -> Result<(), ReserveError> {
    use mp_error_key::*;
    write_map(buf, 1)?;
    write_uint(buf, u64::from(MP_ERROR_STACK))?;
    let n = err.chain().count();
    write_array(buf, u32::try_from(n).unwrap_or(u32::MAX))?;
    for e in err.chain() {
        let fields = e.fields.filter(|f| {
            f.first()
                .is_some_and(|&m| crate::mp::type_of(m) == Some(crate::mp::Type::Map))
                && is_one_value(f)
        });
        write_map(buf, 6 + u32::from(fields.is_some()))?;
        write_uint(buf, u64::from(TYPE))?;
        write_str(buf, e.type_name.as_bytes())?;
        write_uint(buf, u64::from(LINE))?;
        write_uint(buf, u64::from(e.line))?;
        write_uint(buf, u64::from(FILE))?;
        write_str(buf, e.file.as_bytes())?;
        write_uint(buf, u64::from(MESSAGE))?;
        write_str(buf, e.message)?;
        write_uint(buf, u64::from(ERRNO))?;
        write_uint(buf, u64::from(e.errno))?;
        write_uint(buf, u64::from(CODE))?;
        write_uint(buf, u64::from(e.code))?;
        if let Some(f) = fields {
            write_uint(buf, u64::from(FIELDS))?;
            write_raw(buf, f)?;
        }
    }
    Ok(())
}

/// An error reply (`iproto_reply_error`): status `TYPE_ERROR | err.code`,
/// body `{0x31: message, 0x52: MP_ERROR stack}`.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
///
/// ```
/// use luafiber_iproto::encode::{encode_error, ErrorInfo};
/// use luafiber_iproto::{decode_header, decode_response, errcode, Response};
/// use luafiber_runtime::ibuf::Ibuf;
///
/// let mut buf = Ibuf::new();
/// let e = ErrorInfo::client(errcode::NO_SUCH_PROC, b"Procedure 'f' is not defined");
/// encode_error(&mut buf, 7, 1, &e).unwrap();
/// let (h, body) = decode_header(&buf.data()[5..]).unwrap();
/// let Ok(Response::Error(r)) = decode_response(&h, body) else { panic!() };
/// assert_eq!((r.code, r.message), (33, &b"Procedure 'f' is not defined"[..]));
/// assert_eq!(r.stack.unwrap().top().unwrap().type_name, b"ClientError");
/// ```
pub fn encode_error(
    buf: &mut Ibuf,
    sync: u64,
    schema_version: u32,
    err: &ErrorInfo<'_>,
) -> Result<(), ReserveError> {
    let at = buf.used();
    buf.try_alloc(REPLY_HEADER_LEN)?;
    write_map(buf, 2)?;
    write_uint(buf, u64::from(key::ERROR_24))?;
    write_str(buf, err.message)?;
    write_uint(buf, u64::from(key::ERROR))?;
    write_error_stack(buf, err)?;
    let body_len = buf.used() - at - REPLY_HEADER_LEN;
    let h = reply_header(kind::TYPE_ERROR | err.code, sync, schema_version, body_len);
    buf.data_mut()[at..at + REPLY_HEADER_LEN].copy_from_slice(&h);
    Ok(())
}

/// A server's OK answer to ID: `{VERSION, FEATURES, AUTH_TYPE}`.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_id_reply(
    buf: &mut Ibuf,
    sync: u64,
    schema_version: u32,
    version: u64,
    features: &[u32],
    auth_type: &str,
) -> Result<(), ReserveError> {
    let at = buf.used();
    buf.try_alloc(REPLY_HEADER_LEN)?;
    write_id_body(buf, version, features, Some(auth_type))?;
    let body_len = buf.used() - at - REPLY_HEADER_LEN;
    let h = reply_header(kind::OK, sync, schema_version, body_len);
    buf.data_mut()[at..at + REPLY_HEADER_LEN].copy_from_slice(&h);
    Ok(())
}

fn write_id_body(
    buf: &mut Ibuf,
    version: u64,
    features: &[u32],
    auth_type: Option<&str>,
) -> Result<(), ReserveError> {
    write_map(buf, 2 + u32::from(auth_type.is_some()))?;
    write_uint(buf, u64::from(key::VERSION))?;
    write_uint(buf, version)?;
    write_uint(buf, u64::from(key::FEATURES))?;
    write_array(buf, features.len() as u32)?;
    for &f in features {
        write_uint(buf, u64::from(f))?;
    }
    if let Some(a) = auth_type {
        write_uint(buf, u64::from(key::AUTH_TYPE))?;
        write_str(buf, a.as_bytes())?;
    }
    Ok(())
}

// ---- requests (a client's side) ----

/// Starts a request: a 5-byte size prefix to patch and the header
/// `{SYNC: sync, REQUEST_TYPE: kind}`; the caller writes the body and calls
/// [`finish_request`] (`netbox_prepare_request`).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
#[inline]
pub fn begin_request(buf: &mut Ibuf, kind: u32, sync: u64) -> Result<Mark, ReserveError> {
    let at = buf.used();
    write_raw(buf, &[0xce, 0, 0, 0, 0, 0x82, key::SYNC])?;
    write_uint(buf, sync)?;
    write_uint(buf, u64::from(key::REQUEST_TYPE))?;
    write_uint(buf, u64::from(kind))?;
    Ok(Mark(at))
}

/// Finishes a request begun at `mark`: patches its size prefix.
///
/// # Panics
///
/// Panics when `mark` is not a begun request of this buffer, or the
/// request is 4 GiB or longer.
#[inline]
pub fn finish_request(buf: &mut Ibuf, mark: Mark) {
    let at = mark.0;
    let len = u32::try_from(buf.used() - at - 5).expect("a request under 4 GiB");
    buf.data_mut()[at + 1..at + 5].copy_from_slice(&len.to_be_bytes());
}

/// PING.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_ping(buf: &mut Ibuf, sync: u64) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::PING, sync)?;
    finish_request(buf, m);
    Ok(())
}

/// Starts CALL or CALL_16 (`kind`) of function `name`: writes all but the
/// arguments. The caller writes one MessagePack array of arguments and
/// calls [`finish_request`].
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
///
/// ```
/// use luafiber_iproto::encode::{begin_call, finish_request};
/// use luafiber_iproto::kind;
/// use luafiber_runtime::ibuf::Ibuf;
///
/// let mut buf = Ibuf::new();
/// let m = begin_call(&mut buf, kind::CALL, 6, b"echo").unwrap();
/// buf.extend_from_slice(&[0x91, 0x01]).unwrap(); // args: [1]
/// finish_request(&mut buf, m);
/// assert_eq!(buf.data()[..5], [0xce, 0, 0, 0, 15]);
/// ```
#[inline]
pub fn begin_call(buf: &mut Ibuf, kind: u32, sync: u64, name: &[u8]) -> Result<Mark, ReserveError> {
    let m = begin_request(buf, kind, sync)?;
    write_raw(buf, &[0x82, key::FUNCTION_NAME])?;
    write_str(buf, name)?;
    write_uint(buf, u64::from(key::TUPLE))?;
    Ok(m)
}

/// CALL of `name` with `args` (one MessagePack array, written as is).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_call(
    buf: &mut Ibuf,
    sync: u64,
    name: &[u8],
    args: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_call(buf, kind::CALL, sync, name)?;
    write_raw(buf, args)?;
    finish_request(buf, m);
    Ok(())
}

/// CALL_16 of `name` with `args` (one MessagePack array).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_call_16(
    buf: &mut Ibuf,
    sync: u64,
    name: &[u8],
    args: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_call(buf, kind::CALL_16, sync, name)?;
    write_raw(buf, args)?;
    finish_request(buf, m);
    Ok(())
}

/// Starts EVAL of `expr`: the caller writes one array of arguments and
/// calls [`finish_request`].
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
#[inline]
pub fn begin_eval(buf: &mut Ibuf, sync: u64, expr: &[u8]) -> Result<Mark, ReserveError> {
    let m = begin_request(buf, kind::EVAL, sync)?;
    write_raw(buf, &[0x82, key::EXPR])?;
    write_str(buf, expr)?;
    write_uint(buf, u64::from(key::TUPLE))?;
    Ok(m)
}

/// EVAL of `expr` with `args` (one MessagePack array).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_eval(
    buf: &mut Ibuf,
    sync: u64,
    expr: &[u8],
    args: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_eval(buf, sync, expr)?;
    write_raw(buf, args)?;
    finish_request(buf, m);
    Ok(())
}

/// AUTH of `user`: with a password, `TUPLE: ['chap-sha1', scramble]` (the
/// scramble as a string, as net.box sends it) under the greeting's `salt`;
/// without one, no TUPLE (`guest`).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_auth(
    buf: &mut Ibuf,
    sync: u64,
    user: &[u8],
    password: Option<&[u8]>,
    salt: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::AUTH, sync)?;
    write_map(buf, if password.is_some() { 2 } else { 1 })?;
    write_uint(buf, u64::from(key::USER_NAME))?;
    write_str(buf, user)?;
    if let Some(p) = password {
        write_uint(buf, u64::from(key::TUPLE))?;
        write_array(buf, 2)?;
        write_str(buf, auth::CHAP_SHA1)?;
        write_str(buf, &auth::scramble(salt, p))?;
    }
    finish_request(buf, m);
    Ok(())
}

/// SELECT from `space_id`/`index_id` with `key` (one MessagePack array).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
#[allow(
    clippy::too_many_arguments,
    reason = "the request's fields, as net.box's encode_select"
)]
pub fn encode_select(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    index_id: u32,
    iterator: u32,
    offset: u32,
    limit: u32,
    key: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::SELECT, sync)?;
    write_map(buf, 6)?;
    for (k, v) in [
        (key::SPACE_ID, space_id),
        (key::INDEX_ID, index_id),
        (key::ITERATOR, iterator),
        (key::OFFSET, offset),
        (key::LIMIT, limit),
    ] {
        write_uint(buf, u64::from(k))?;
        write_uint(buf, u64::from(v))?;
    }
    write_uint(buf, u64::from(key::KEY))?;
    write_raw(buf, key)?;
    finish_request(buf, m);
    Ok(())
}

fn encode_insert_or_replace(
    buf: &mut Ibuf,
    kind: u32,
    sync: u64,
    space_id: u32,
    tuple: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind, sync)?;
    write_map(buf, 2)?;
    write_uint(buf, u64::from(key::SPACE_ID))?;
    write_uint(buf, u64::from(space_id))?;
    write_uint(buf, u64::from(key::TUPLE))?;
    write_raw(buf, tuple)?;
    finish_request(buf, m);
    Ok(())
}

/// INSERT of `tuple` (one MessagePack array) into `space_id`.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_insert(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    tuple: &[u8],
) -> Result<(), ReserveError> {
    encode_insert_or_replace(buf, kind::INSERT, sync, space_id, tuple)
}

/// REPLACE of `tuple` (one MessagePack array) in `space_id`.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_replace(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    tuple: &[u8],
) -> Result<(), ReserveError> {
    encode_insert_or_replace(buf, kind::REPLACE, sync, space_id, tuple)
}

/// UPDATE by `key` with `ops` (both MessagePack arrays; the operations go
/// under TUPLE with INDEX_BASE 1, as 2.6's net.box sends them).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_update(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    index_id: u32,
    key: &[u8],
    ops: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::UPDATE, sync)?;
    write_map(buf, 5)?;
    for (k, v) in [
        (key::SPACE_ID, space_id),
        (key::INDEX_ID, index_id),
        (key::INDEX_BASE, 1),
    ] {
        write_uint(buf, u64::from(k))?;
        write_uint(buf, u64::from(v))?;
    }
    write_uint(buf, u64::from(key::TUPLE))?;
    write_raw(buf, ops)?;
    write_uint(buf, u64::from(key::KEY))?;
    write_raw(buf, key)?;
    finish_request(buf, m);
    Ok(())
}

/// UPSERT of `tuple` with `ops` (both MessagePack arrays; INDEX_BASE 1).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_upsert(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    tuple: &[u8],
    ops: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::UPSERT, sync)?;
    write_map(buf, 4)?;
    for (k, v) in [(key::SPACE_ID, space_id), (key::INDEX_BASE, 1)] {
        write_uint(buf, u64::from(k))?;
        write_uint(buf, u64::from(v))?;
    }
    write_uint(buf, u64::from(key::OPS))?;
    write_raw(buf, ops)?;
    write_uint(buf, u64::from(key::TUPLE))?;
    write_raw(buf, tuple)?;
    finish_request(buf, m);
    Ok(())
}

/// DELETE by `key` (one MessagePack array).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_delete(
    buf: &mut Ibuf,
    sync: u64,
    space_id: u32,
    index_id: u32,
    key: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::DELETE, sync)?;
    write_map(buf, 3)?;
    for (k, v) in [(key::SPACE_ID, space_id), (key::INDEX_ID, index_id)] {
        write_uint(buf, u64::from(k))?;
        write_uint(buf, u64::from(v))?;
    }
    write_uint(buf, u64::from(key::KEY))?;
    write_raw(buf, key)?;
    finish_request(buf, m);
    Ok(())
}

/// ID: the client's protocol `version`, `features` and, when given, the
/// authentication method it will use.
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_id(
    buf: &mut Ibuf,
    sync: u64,
    version: u64,
    features: &[u32],
    auth_type: Option<&str>,
) -> Result<(), ReserveError> {
    let m = begin_request(buf, kind::ID, sync)?;
    write_id_body(buf, version, features, auth_type)?;
    finish_request(buf, m);
    Ok(())
}
