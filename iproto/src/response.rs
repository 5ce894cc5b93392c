//! Response bodies, decoded in place (what a client reads): OK with its
//! DATA, CHUNK (a push), errors with the message (`0x31`) and the MP_ERROR
//! stack (`0x52`, `src/box/mp_error.cc`), and ID's answer.

use crate::consts::{key, kind};
use crate::error::Error;
use crate::frame::{body_map, Header};
use crate::mp::{Reader, Type};
use crate::request::Array;

const BAD_BODY: Error = Error::InvalidMsgpack("packet body");

/// A response, by its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response<'a> {
    /// Success. `data` is the DATA array when the body has one (CALL,
    /// EVAL, SELECT); `body` the whole body (empty for PING and AUTH).
    Ok {
        /// DATA.
        data: Option<Array<'a>>,
        /// The body's bytes.
        body: &'a [u8],
    },
    /// A push (`box.session.push`) for the request with this sync: DATA
    /// holds the pushed value (one item).
    Chunk {
        /// DATA.
        data: Option<Array<'a>>,
    },
    /// An error.
    Error(RemoteError<'a>),
}

/// An error response: the code from the header, the message (`0x31`) and
/// the MP_ERROR stack (`0x52`) when the server sent one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteError<'a> {
    /// The error code (the header's status without `TYPE_ERROR`).
    pub code: u32,
    /// The message (empty when the body had none).
    pub message: &'a [u8],
    /// The MP_ERROR map, top error first.
    pub stack: Option<ErrorStack<'a>>,
}

/// An MP_ERROR map (`{0x00: [error, cause, ...]}`), as a `0x52` body value
/// or the payload of a MessagePack extension of type 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorStack<'a> {
    raw: &'a [u8],
}

/// One error of an [`ErrorStack`]. Absent fields are empty / 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MpError<'a> {
    /// The error's type name (`ClientError`, `LuajitError`, ...).
    pub type_name: &'a [u8],
    /// The source file that raised it.
    pub file: &'a [u8],
    /// The source line.
    pub line: u64,
    /// The message.
    pub message: &'a [u8],
    /// The saved `errno`.
    pub errno: u64,
    /// The error code.
    pub code: u64,
    /// The payload fields (a MessagePack map), when it has any.
    pub fields: Option<&'a [u8]>,
}

/// Key of the error array in an MP_ERROR map.
pub const MP_ERROR_STACK: u8 = 0x00;
/// Keys of one error's map in an MP_ERROR stack (`mp_error.cc`).
pub mod mp_error_key {
    /// Type name (string).
    pub const TYPE: u8 = 0x00;
    /// File (string).
    pub const FILE: u8 = 0x01;
    /// Line (unsigned).
    pub const LINE: u8 = 0x02;
    /// Message (string).
    pub const MESSAGE: u8 = 0x03;
    /// errno (unsigned).
    pub const ERRNO: u8 = 0x04;
    /// Error code (unsigned).
    pub const CODE: u8 = 0x05;
    /// Payload fields (map).
    pub const FIELDS: u8 = 0x06;
}

impl<'a> ErrorStack<'a> {
    /// Checks `raw` as an MP_ERROR map (every error a map with a type,
    /// a file and a message, as Tarantool's `error_unpack` requires).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMsgpack`]`("MP_ERROR")` otherwise.
    pub fn new(raw: &'a [u8]) -> Result<ErrorStack<'a>, Error> {
        let s = ErrorStack { raw };
        for e in s.errors()? {
            e?;
        }
        Ok(s)
    }

    /// The map's bytes.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The errors, top first.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMsgpack`]`("MP_ERROR")` for a malformed map; each
    /// item is checked as it is read.
    pub fn errors(&self) -> Result<impl Iterator<Item = Result<MpError<'a>, Error>> + 'a, Error> {
        const BAD: Error = Error::InvalidMsgpack("MP_ERROR");
        let mut r = Reader::new(self.raw);
        let n = r.map().ok_or(BAD)?;
        let mut stack: Option<Reader<'a>> = None;
        let mut count = 0;
        for _ in 0..n {
            let k = r.uint().ok_or(BAD)?;
            if k == u64::from(MP_ERROR_STACK) && r.peek() == Some(Type::Array) {
                let mut s = r;
                count = s.array().ok_or(BAD)?;
                stack = Some(s);
            }
            r.skip().ok_or(BAD)?;
        }
        let mut s = stack.unwrap_or(Reader::new(&[]));
        Ok((0..count).map(move |_| decode_mp_error(&mut s)))
    }

    /// The top error.
    pub fn top(&self) -> Option<MpError<'a>> {
        self.errors().ok()?.next()?.ok()
    }
}

fn decode_mp_error<'a>(r: &mut Reader<'a>) -> Result<MpError<'a>, Error> {
    use mp_error_key::*;
    const BAD: Error = Error::InvalidMsgpack("MP_ERROR");
    let n = r.map().ok_or(BAD)?;
    let mut e = MpError::default();
    let (mut has_type, mut has_file, mut has_message) = (false, false, false);
    for _ in 0..n {
        let k = r.uint().ok_or(BAD)?;
        match u8::try_from(k) {
            Ok(TYPE) => {
                e.type_name = r.str().ok_or(BAD)?;
                has_type = true;
            }
            Ok(FILE) => {
                e.file = r.str().ok_or(BAD)?;
                has_file = true;
            }
            Ok(LINE) => e.line = r.uint().ok_or(BAD)?,
            Ok(MESSAGE) => {
                e.message = r.str().ok_or(BAD)?;
                has_message = true;
            }
            Ok(ERRNO) => e.errno = r.uint().ok_or(BAD)?,
            Ok(CODE) => e.code = r.uint().ok_or(BAD)?,
            Ok(FIELDS) => {
                if r.peek() != Some(Type::Map) {
                    return Err(BAD);
                }
                e.fields = Some(r.value().ok_or(BAD)?);
            }
            _ => r.skip().ok_or(BAD)?,
        }
    }
    if has_type && has_file && has_message {
        Ok(e)
    } else {
        Err(BAD)
    }
}

/// Decodes a response's body by the status in its header.
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet body")` for a body that is not a map
/// or a DATA that is not an array, a message that is not a string;
/// `("MP_ERROR")` for a malformed `0x52` map (which 2.6's net.box would
/// choke on).
///
/// ```
/// use luafiber_iproto::{decode_header, decode_response, Response};
/// // Tarantool 2.6's answer to `return 7, 8`: {DATA: [7, 8]}
/// let pkt = [
///     0x83, 0x00, 0xce, 0, 0, 0, 0, 0x01, 0xcf, 0, 0, 0, 0, 0, 0, 0, 14, 0x05, 0xce, 0, 0, 0, 78,
///     0x81, 0x30, 0xdd, 0, 0, 0, 2, 0x07, 0x08,
/// ];
/// let (h, body) = decode_header(&pkt).unwrap();
/// assert_eq!((h.sync, h.schema_version), (14, Some(78)));
/// let Response::Ok { data: Some(data), .. } = decode_response(&h, body).unwrap() else { panic!() };
/// assert_eq!(data.items_raw(), &[7, 8]);
/// ```
pub fn decode_response<'a>(header: &Header, body: &'a [u8]) -> Result<Response<'a>, Error> {
    let (mut r, n) = body_map(body)?;
    let is_error = header.kind & kind::TYPE_ERROR != 0;
    let (mut data, mut message, mut stack) = (None, None, None);
    for _ in 0..n {
        let mut probe = r;
        let Some(k) = probe.uint() else {
            // A key of another type: skip it and its value.
            r.skip().ok_or(BAD_BODY)?;
            r.skip().ok_or(BAD_BODY)?;
            continue;
        };
        r = probe;
        match u8::try_from(k) {
            Ok(key::DATA) if !is_error => {
                if r.peek() != Some(Type::Array) {
                    return Err(BAD_BODY);
                }
                // `value` checked the whole array: only its header is read.
                data = Some(Array::of_value(r.value().ok_or(BAD_BODY)?).ok_or(BAD_BODY)?);
            }
            Ok(key::ERROR_24) if is_error => message = Some(r.str().ok_or(BAD_BODY)?),
            Ok(key::ERROR) if is_error => {
                stack = Some(ErrorStack::new(r.value().ok_or(BAD_BODY)?)?);
            }
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    Ok(if is_error {
        let message = match (message, stack.and_then(|s| s.top())) {
            (Some(m), _) => m,
            (None, Some(top)) => top.message,
            (None, None) => &[],
        };
        Response::Error(RemoteError {
            code: header.kind & !kind::TYPE_ERROR,
            message,
            stack,
        })
    } else if header.kind == kind::CHUNK {
        Response::Chunk { data }
    } else {
        Response::Ok { data, body }
    })
}

/// What a server answered to ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdReply<'a> {
    /// The server's protocol version.
    pub version: u64,
    /// Its feature ids.
    pub features: Array<'a>,
    /// Its authentication method, when it says.
    pub auth_type: Option<&'a [u8]>,
}

/// Decodes the body of an OK answer to ID.
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet body")` for fields of wrong types.
pub fn decode_id_reply(body: &[u8]) -> Result<IdReply<'_>, Error> {
    let (mut r, n) = body_map(body)?;
    let mut id = IdReply {
        version: 0,
        features: Array::EMPTY,
        auth_type: None,
    };
    for _ in 0..n {
        let k = r.uint().ok_or(BAD_BODY)?;
        match u8::try_from(k) {
            Ok(key::VERSION) => id.version = r.uint().ok_or(BAD_BODY)?,
            Ok(key::FEATURES) => {
                if r.peek() != Some(Type::Array) {
                    return Err(BAD_BODY);
                }
                id.features = Array::new(r.value().ok_or(BAD_BODY)?).ok_or(BAD_BODY)?;
            }
            Ok(key::AUTH_TYPE) => id.auth_type = Some(r.str().ok_or(BAD_BODY)?),
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    Ok(id)
}
