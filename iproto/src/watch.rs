//! Watchers: WATCH, UNWATCH and WATCH_ONCE bodies (`{EVENT_KEY: key}`),
//! and the EVENT a server sends for a watched key (`{EVENT_KEY: key,
//! EVENT_DATA: value}`, no DATA when the key has no value). Tarantool
//! master's `xrow_decode_watch` and `iproto_send_event` (`src/box/xrow.c`).

use luafiber_runtime::ibuf::{Ibuf, ReserveError};

use crate::consts::{key, kind};
use crate::encode::{begin_request, finish_request};
use crate::error::Error;
use crate::mp::{write_map, write_raw, write_str, write_uint, Reader, Type};

const BAD_BODY: Error = Error::InvalidMsgpack("packet body");

/// A decoded watch body: WATCH, UNWATCH and WATCH_ONCE carry a key, an
/// EVENT a key and maybe the key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch<'a> {
    /// The notification key (a MessagePack string's bytes).
    pub key: &'a [u8],
    /// EVENT_DATA's bytes (one whole value), when the body has it.
    pub data: Option<&'a [u8]>,
}

/// Decodes a watch body (`xrow_decode_watch`): a map with a string
/// EVENT_KEY and, in an EVENT, any EVENT_DATA; other keys are skipped.
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet body")` for a body that is not a map
/// or a key that is not a string; [`Error::MissingField`]`(EVENT_KEY)`
/// without a key.
///
/// ```
/// use luafiber_iproto::decode_watch;
/// // {EVENT_KEY: 'foo', EVENT_DATA: 7}
/// let w = decode_watch(&[0x82, 0x57, 0xa3, b'f', b'o', b'o', 0x58, 0x07]).unwrap();
/// assert_eq!((w.key, w.data), (&b"foo"[..], Some(&[7u8][..])));
/// ```
pub fn decode_watch(body: &[u8]) -> Result<Watch<'_>, Error> {
    let mut r = Reader::new(body);
    if r.peek() != Some(Type::Map) {
        return Err(BAD_BODY);
    }
    let n = r.map().ok_or(BAD_BODY)?;
    let (mut k, mut data) = (None, None);
    for _ in 0..n {
        let field = r.uint().ok_or(BAD_BODY)?;
        match u8::try_from(field) {
            Ok(key::EVENT_KEY) => k = Some(r.str().ok_or(BAD_BODY)?),
            Ok(key::EVENT_DATA) => data = Some(r.value().ok_or(BAD_BODY)?),
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    // Bytes after the map: a body that is not one value (checked before
    // the key, as a server's one-pass decode does).
    if !r.is_empty() {
        return Err(BAD_BODY);
    }
    Ok(Watch {
        key: k.ok_or(Error::MissingField(key::EVENT_KEY))?,
        data,
    })
}

/// A server's EVENT for `key` with its value `data` (one whole MessagePack
/// value; `None`: the key has none), echoing `sync` of the WATCH that
/// subscribed or acknowledged; its header has no schema version
/// (`iproto_send_event`).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_event(
    buf: &mut Ibuf,
    sync: u64,
    event_key: &[u8],
    data: Option<&[u8]>,
) -> Result<(), ReserveError> {
    let at = buf.used();
    write_raw(buf, &[0xce, 0, 0, 0, 0, 0x82, key::REQUEST_TYPE])?;
    write_uint(buf, u64::from(kind::EVENT))?;
    write_uint(buf, u64::from(key::SYNC))?;
    write_uint(buf, sync)?;
    write_map(buf, if data.is_some() { 2 } else { 1 })?;
    write_uint(buf, u64::from(key::EVENT_KEY))?;
    write_str(buf, event_key)?;
    if let Some(d) = data {
        write_uint(buf, u64::from(key::EVENT_DATA))?;
        write_raw(buf, d)?;
    }
    let len = (buf.used() - at - 5) as u32;
    buf.data_mut()[at + 1..at + 5].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// A client's WATCH, UNWATCH or WATCH_ONCE (`request`, a [`kind`]) for
/// `event_key`: `{EVENT_KEY: key}`. net.box sends WATCH and UNWATCH with
/// sync 0 (no reply comes).
///
/// # Errors
///
/// [`ReserveError`] when the buffer cannot grow.
pub fn encode_watch(
    buf: &mut Ibuf,
    request: u32,
    sync: u64,
    event_key: &[u8],
) -> Result<(), ReserveError> {
    let m = begin_request(buf, request, sync)?;
    write_map(buf, 1)?;
    write_uint(buf, u64::from(key::EVENT_KEY))?;
    write_str(buf, event_key)?;
    finish_request(buf, m);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{decode_header, frame, Frame};

    #[test]
    fn event_round_trip() {
        let mut b = Ibuf::new();
        encode_event(&mut b, 9, b"box.shutdown", Some(&[0xc3])).unwrap();
        encode_event(&mut b, 0, b"k", None).unwrap();
        let Ok(Frame::Whole { header_at, end }) = frame(b.data(), u64::MAX) else {
            panic!("one whole packet")
        };
        let (h, body) = decode_header(&b.data()[header_at..end]).unwrap();
        assert_eq!((h.kind, h.sync, h.schema_version), (kind::EVENT, 9, None));
        let w = decode_watch(body).unwrap();
        assert_eq!((w.key, w.data), (&b"box.shutdown"[..], Some(&[0xc3u8][..])));
        b.consume(end);
        let Ok(Frame::Whole { header_at, end }) = frame(b.data(), u64::MAX) else {
            panic!("a second packet")
        };
        let (_, body) = decode_header(&b.data()[header_at..end]).unwrap();
        assert_eq!(decode_watch(body).unwrap().data, None);
    }

    #[test]
    fn watch_bodies() {
        let mut b = Ibuf::new();
        encode_watch(&mut b, kind::WATCH, 0, b"foo").unwrap();
        let Ok(Frame::Whole { header_at, end }) = frame(b.data(), u64::MAX) else {
            panic!("one whole packet")
        };
        let (h, body) = decode_header(&b.data()[header_at..end]).unwrap();
        assert_eq!(h.kind, kind::WATCH);
        assert_eq!(decode_watch(body).unwrap().key, b"foo");
        assert_eq!(
            decode_watch(&[0x80]),
            Err(Error::MissingField(key::EVENT_KEY))
        );
        assert_eq!(decode_watch(&[0x81, 0x57, 0x01]), Err(BAD_BODY));
        assert_eq!(decode_watch(&[0x91, 0x01]), Err(BAD_BODY));
    }
}
