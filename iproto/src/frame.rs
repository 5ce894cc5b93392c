//! Framing: where a whole packet lies in a connection's read-ahead bytes,
//! and its header (`iproto_enqueue_batch` and `xrow_header_decode`).
//!
//! A packet is a MessagePack unsigned size, then that many bytes: a header
//! map and, after it, at most one body value (a map).

use crate::consts::key;
use crate::error::Error;
use crate::mp::{Reader, Type};

/// What [`frame`] found at the start of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole packet: its header starts at `header_at` (after the size
    /// prefix) and it ends at `end` (exclusive), both offsets into the
    /// buffer given. The next packet starts at `end`.
    Whole {
        /// Offset of the header map.
        header_at: usize,
        /// Offset just past the packet.
        end: usize,
    },
    /// Not enough bytes yet: the packet needs at least `need` bytes from
    /// the buffer's start (more than it has). When the size prefix itself
    /// is cut, `need` is the prefix's length: read more and ask again.
    Partial {
        /// Bytes the buffer must hold before asking again.
        need: usize,
    },
}

/// Finds the packet at the start of `buf` (a connection's unread bytes).
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet length")` when the size is not a
/// MessagePack unsigned integer, [`Error::TooBig`] when it is above
/// `max_size`: the stream cannot be resynchronised, so the connection
/// is closed, as Tarantool does.
///
/// ```
/// use luafiber_iproto::{frame, Frame};
/// let ping = [0xce, 0, 0, 0, 5, 0x82, 0x01, 0x05, 0x00, 0x40];
/// assert_eq!(frame(&ping, 1 << 20), Ok(Frame::Whole { header_at: 5, end: 10 }));
/// assert_eq!(frame(&ping[..7], 1 << 20), Ok(Frame::Partial { need: 10 }));
/// ```
pub fn frame(buf: &[u8], max_size: u64) -> Result<Frame, Error> {
    let Some(&m) = buf.first() else {
        return Ok(Frame::Partial { need: 1 });
    };
    let prefix = match m {
        0x00..=0x7f => 1,
        0xcc => 2,
        0xcd => 3,
        0xce => 5,
        0xcf => 9,
        _ => return Err(Error::InvalidMsgpack("packet length")),
    };
    if buf.len() < prefix {
        return Ok(Frame::Partial { need: prefix });
    }
    let Some(len) = Reader::new(buf).uint() else {
        return Err(Error::InvalidMsgpack("packet length"));
    };
    if len > max_size {
        return Err(Error::TooBig(len));
    }
    // len <= max_size, which the caller keeps to memory sizes.
    let end = prefix.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
    if end > buf.len() {
        return Ok(Frame::Partial { need: end });
    }
    Ok(Frame::Whole {
        header_at: prefix,
        end,
    })
}

/// A packet's header: the fields every request and response has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The request type, or a response's status ([`crate::kind`]: `OK`,
    /// `CHUNK`, `TYPE_ERROR | code`). 0 when absent, as in Tarantool.
    pub kind: u32,
    /// The request's id (0 when absent).
    pub sync: u64,
    /// The sender's schema version, when it sent one.
    pub schema_version: Option<u64>,
    /// The stream id (0: none).
    pub stream_id: u64,
}

/// Splits a packet (the bytes after its size prefix) into its header and
/// its body (the body's bytes, empty when it has none).
///
/// Keys this layer does not know are skipped; the known ones must be
/// unsigned integers (`kind` one that fits 32 bits).
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet header")` for a header that is not a
/// well-formed map as above; `("packet body")` when what follows it is not
/// exactly one well-formed value.
///
/// ```
/// use luafiber_iproto::{decode_header, kind};
/// let (h, body) = decode_header(&[0x82, 0x01, 0x05, 0x00, 0x40]).unwrap();
/// assert_eq!((h.kind, h.sync, body.len()), (kind::PING, 5, 0));
/// ```
pub fn decode_header(packet: &[u8]) -> Result<(Header, &[u8]), Error> {
    let (h, body) = split_header(packet)?;
    if !body.is_empty() && !crate::mp::is_one_value(body) {
        return Err(Error::InvalidMsgpack("packet body"));
    }
    Ok((h, body))
}

/// [`decode_header`] without its check of the body: the body's bytes are
/// whatever follows the header, for [`crate::decode_request`] to check as
/// it decodes them (one pass over a request instead of two: a server's
/// hot path). `split_header` then `decode_request` answers exactly what
/// `decode_header` then `decode_request` does.
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet header")`, as [`decode_header`].
///
/// ```
/// use luafiber_iproto::{kind, split_header};
/// let (h, body) = split_header(&[0x82, 0x01, 0x05, 0x00, 0x40, 0xc1]).unwrap();
/// assert_eq!((h.kind, h.sync, body), (kind::PING, 5, &[0xc1][..]));
/// ```
pub fn split_header(packet: &[u8]) -> Result<(Header, &[u8]), Error> {
    const BAD: Error = Error::InvalidMsgpack("packet header");
    let mut r = Reader::new(packet);
    let mut h = Header::default();
    let n = r.map().ok_or(BAD)?;
    for _ in 0..n {
        let k = r.uint().ok_or(BAD)?;
        match u8::try_from(k) {
            Ok(key::REQUEST_TYPE) => h.kind = r.uint32().ok_or(BAD)?,
            Ok(key::SYNC) => h.sync = r.uint().ok_or(BAD)?,
            Ok(key::SCHEMA_VERSION) => h.schema_version = Some(r.uint().ok_or(BAD)?),
            Ok(key::STREAM_ID) => h.stream_id = r.uint().ok_or(BAD)?,
            _ => r.skip().ok_or(BAD)?,
        }
    }
    Ok((h, r.rest()))
}

/// Whether `body` is a map (or empty), the shape every body has.
pub(crate) fn body_map(body: &[u8]) -> Result<(Reader<'_>, u32), Error> {
    let mut r = Reader::new(body);
    if body.is_empty() {
        return Ok((r, 0));
    }
    if r.peek() != Some(Type::Map) {
        return Err(Error::InvalidMsgpack("packet body"));
    }
    let n = r.map().ok_or(Error::InvalidMsgpack("packet body"))?;
    Ok((r, n))
}
