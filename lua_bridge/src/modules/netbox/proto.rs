//! The bytes of IPROTO as a client sees them, with no Lua: the greeting,
//! chap-sha1, request headers and bodies, and the frames of responses
//! decoded in place (Tarantool's `xrow.c` and `net_box.c` encoders).
//!
//! A stand-in for the `luafiber-iproto` crate of the IPROTO server issue,
//! which is being written beside this module: when it lands, these
//! functions are replaced by its own and this file goes.
//!
//! Uses `sha1` and `base64` (RustCrypto and the `base64` crate) for the
//! scramble and the greeting's salt: nothing of the hot path.

use std::io::Write;

use base64::Engine as _;
use luafiber_runtime::ibuf::Ibuf;
use rmp::encode as enc;
use sha1::{Digest, Sha1};

/// Header keys.
pub const KEY_TYPE: u8 = 0x00;
/// The request's sync, echoed by the response.
pub const KEY_SYNC: u8 = 0x01;

/// Body keys of requests.
pub const KEY_SPACE_ID: u8 = 0x10;
/// The index of a SELECT, UPDATE, DELETE.
pub const KEY_INDEX_ID: u8 = 0x11;
/// SELECT's limit.
pub const KEY_LIMIT: u8 = 0x12;
/// SELECT's offset.
pub const KEY_OFFSET: u8 = 0x13;
/// SELECT's iterator.
pub const KEY_ITERATOR: u8 = 0x14;
/// UPSERT's index base.
pub const KEY_INDEX_BASE: u8 = 0x15;
/// A key.
pub const KEY_KEY: u8 = 0x20;
/// A tuple, or the arguments of CALL and EVAL.
pub const KEY_TUPLE: u8 = 0x21;
/// CALL's function name.
pub const KEY_FUNCTION_NAME: u8 = 0x22;
/// AUTH's user name.
pub const KEY_USER_NAME: u8 = 0x23;
/// EVAL's expression.
pub const KEY_EXPR: u8 = 0x27;
/// UPSERT's operations.
pub const KEY_OPS: u8 = 0x28;

/// Body keys of responses.
pub const KEY_DATA: u8 = 0x30;
/// The error message (a string).
pub const KEY_ERROR_24: u8 = 0x31;
/// The error stack (an MP_ERROR map).
pub const KEY_ERROR: u8 = 0x52;

/// Request types.
pub const SELECT: u32 = 1;
/// INSERT.
pub const INSERT: u32 = 2;
/// REPLACE.
pub const REPLACE: u32 = 3;
/// UPDATE.
pub const UPDATE: u32 = 4;
/// DELETE.
pub const DELETE: u32 = 5;
/// CALL of 1.6 (each return wrapped as a tuple).
pub const CALL_16: u32 = 6;
/// AUTH.
pub const AUTH: u32 = 7;
/// EVAL.
pub const EVAL: u32 = 8;
/// UPSERT.
pub const UPSERT: u32 = 9;
/// CALL.
pub const CALL: u32 = 10;
/// PING.
pub const PING: u32 = 64;

/// The response type of a push (`box.session.push`).
pub const CHUNK: u32 = 0x80;
/// The bit of an error response's type; the error code is below it.
pub const TYPE_ERROR: u32 = 0x8000;

/// The greeting's length.
pub const GREETING_SIZE: usize = 128;
/// The salt bytes chap-sha1 uses (of the greeting's 32).
const SCRAMBLE_SIZE: usize = 20;

/// The greeting's fields (Tarantool's `greeting_decode`).
#[derive(Debug, Clone)]
pub struct Greeting {
    /// `major << 16 | minor << 8 | patch`.
    pub version_id: u32,
    /// "Binary" or "Lua console".
    pub protocol: String,
    /// The instance UUID (text), empty when none.
    pub uuid: String,
    /// The decoded salt.
    pub salt: Vec<u8>,
}

/// Decodes the 128-byte greeting; `None` when it is not Tarantool's.
pub fn decode_greeting(g: &[u8]) -> Option<Greeting> {
    if g.len() < GREETING_SIZE || g[63] != b'\n' || g[127] != b'\n' {
        return None;
    }
    let line1 = std::str::from_utf8(&g[..63]).ok()?;
    let mut words = line1.split_whitespace();
    if words.next()? != "Tarantool" {
        return None;
    }
    let version = words.next()?;
    let mut nums = version.split(|c: char| !c.is_ascii_digit());
    let mut num = || nums.next().and_then(|n| n.parse::<u32>().ok()).unwrap_or(0);
    let version_id = (num() << 16) | (num() << 8) | num();
    let protocol = words.next().unwrap_or("(Binary)");
    let protocol = protocol.trim_matches(|c| c == '(' || c == ')').to_string();
    let uuid = words.next().unwrap_or("").to_string();
    let line2 = std::str::from_utf8(&g[64..127]).ok()?.trim();
    let salt = base64::engine::general_purpose::STANDARD
        .decode(line2)
        .unwrap_or_default();
    Some(Greeting {
        version_id,
        protocol,
        uuid,
        salt,
    })
}

/// chap-sha1: `sha1(password) XOR sha1(salt[..20] ++ sha1(sha1(password)))`
/// (Tarantool's `scramble_prepare`).
pub fn scramble(salt: &[u8], password: &[u8]) -> [u8; 20] {
    let hash1: [u8; 20] = Sha1::digest(password).into();
    let hash2: [u8; 20] = Sha1::digest(hash1).into();
    let mut h = Sha1::new();
    h.update(&salt[..salt.len().min(SCRAMBLE_SIZE)]);
    h.update(hash2);
    let hash3: [u8; 20] = h.finalize().into();
    std::array::from_fn(|i| hash1[i] ^ hash3[i])
}

/// Starts a request frame in `out`: a 5-byte length to patch and the
/// header `{TYPE: ty, SYNC: sync}`. Returns where the frame starts, for
/// [`end_frame`].
pub fn begin_frame(out: &mut Ibuf, ty: u32, sync: u64) -> usize {
    let start = out.used();
    // Writes into a growing buffer cannot fail but on allocation failure,
    // which aborts.
    let _ = out.write_all(&[0xce, 0, 0, 0, 0, 0x82, KEY_TYPE]);
    let _ = enc::write_uint(out, ty.into());
    let _ = out.write_all(&[KEY_SYNC]);
    let _ = enc::write_uint(out, sync);
    start
}

/// Patches the length of the frame begun at `start` in `out` (no byte
/// may have been read from `out` since).
pub fn end_frame(out: &mut Ibuf, start: usize) {
    let buf = out.data_mut();
    let len = (buf.len() - start - 5) as u32;
    buf[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
}

/// Writes a map header of `n` entries.
pub fn map(out: &mut impl Write, n: u32) {
    let _ = enc::write_map_len(out, n);
}

/// Writes an unsigned integer under the one-byte key `key`.
pub fn uint_field(out: &mut impl Write, key: u8, v: u64) {
    let _ = out.write_all(&[key]);
    let _ = enc::write_uint(out, v);
}

/// Writes the one-byte key `key` (a value follows).
pub fn key(out: &mut impl Write, key: u8) {
    let _ = out.write_all(&[key]);
}

/// Writes a string (its bytes as they are, UTF-8 or not, as net.box does).
pub fn str(out: &mut impl Write, s: &[u8]) {
    let _ = enc::write_str_len(out, s.len() as u32);
    let _ = out.write_all(s);
}

/// Writes a whole AUTH request for `user` with the scramble of `password`.
pub fn encode_auth(out: &mut Ibuf, sync: u64, user: &[u8], password: &[u8], salt: &[u8]) {
    let start = begin_frame(out, AUTH, sync);
    map(out, 2);
    key(out, KEY_USER_NAME);
    str(out, user);
    key(out, KEY_TUPLE);
    let _ = enc::write_array_len(out, 2);
    str(out, b"chap-sha1");
    str(out, &scramble(salt, password));
    end_frame(out, start);
}

/// A response's header.
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    /// 0: OK, [`CHUNK`], or [`TYPE_ERROR`] | code.
    pub ty: u32,
    /// The request's sync.
    pub sync: u64,
    /// The server's schema version (0 when absent).
    pub schema_version: u64,
}

/// A frame found at the start of a buffer.
pub struct Frame {
    /// Its header.
    pub header: Header,
    /// Where its body starts and ends, in the buffer.
    pub body: std::ops::Range<usize>,
    /// The bytes the frame takes (length prefix included).
    pub len: usize,
}

/// What [`parse_frame`] found.
pub enum Parsed {
    /// A whole frame.
    Frame(Frame),
    /// Not enough bytes yet: at least this many are needed in all.
    Need(usize),
}

/// Malformed input: the connection cannot go on.
#[derive(Debug)]
pub struct Bad(pub &'static str);

/// Decodes the frame at the start of `buf`, in place.
///
/// # Errors
///
/// [`Bad`] when the length or the header is malformed.
pub fn parse_frame(buf: &[u8]) -> Result<Parsed, Bad> {
    if buf.len() < 5 {
        return Ok(Parsed::Need(5));
    }
    let mut r = Reader { b: buf, pos: 0 };
    let len = r.uint().map_err(|_| Bad("invalid packet length"))? as usize;
    let total = r.pos.checked_add(len).ok_or(Bad("invalid packet length"))?;
    if buf.len() < total {
        return Ok(Parsed::Need(total));
    }
    let mut r = Reader {
        b: &buf[..total],
        pos: r.pos,
    };
    let n = r.map_len().map_err(|_| Bad("invalid header"))?;
    let mut header = Header::default();
    for _ in 0..n {
        let k = r.uint().map_err(|_| Bad("invalid header"))?;
        match k {
            0x00 => header.ty = r.uint().map_err(|_| Bad("invalid header"))? as u32,
            0x01 => header.sync = r.uint().map_err(|_| Bad("invalid header"))?,
            0x05 => header.schema_version = r.uint().map_err(|_| Bad("invalid header"))?,
            _ => r.skip().map_err(|_| Bad("invalid header"))?,
        }
    }
    Ok(Parsed::Frame(Frame {
        header,
        body: r.pos..total,
        len: total,
    }))
}

/// The value under `key` in the body map `body`, as a slice from its
/// start to the body's end; `None` when absent or malformed.
pub fn body_field(body: &[u8], key: u64) -> Option<&[u8]> {
    let mut r = Reader { b: body, pos: 0 };
    let n = r.map_len().ok()?;
    for _ in 0..n {
        let k = r.uint();
        match k {
            Ok(k) if k == key => return Some(&body[r.pos..]),
            Ok(_) => r.skip().ok()?,
            Err(()) => {
                r.skip().ok()?;
                r.skip().ok()?;
            }
        }
    }
    None
}

/// An array's length at the start of `data` and the bytes its header
/// takes.
pub fn array_header(data: &[u8]) -> Option<(u32, usize)> {
    let mut r = Reader { b: data, pos: 0 };
    let n = r.array_len().ok()?;
    Some((n, r.pos))
}

/// A string at the start of `data`.
pub fn read_str(data: &[u8]) -> Option<&[u8]> {
    let mut r = Reader { b: data, pos: 0 };
    r.str().ok()
}

/// An error response's body, read: its message, and its type and code
/// from the MP_ERROR stack when there is one.
#[derive(Debug, Clone, Default)]
pub struct ErrorBody {
    /// `IPROTO_ERROR_24`, or the stack's top message.
    pub message: Vec<u8>,
    /// The stack's top error type (`ClientError`, ...), when given.
    pub ty: Option<Vec<u8>>,
}

/// Reads an error response's body.
pub fn decode_error(body: &[u8]) -> ErrorBody {
    let mut e = ErrorBody::default();
    if let Some(m) = body_field(body, KEY_ERROR_24.into()).and_then(read_str) {
        e.message = m.to_vec();
    }
    if let Some(stack) = body_field(body, KEY_ERROR.into()) {
        // {0: [{0: type, 3: message, ...}, ...]}
        if let Some(top) = body_field(stack, 0).and_then(|a| {
            let (n, at) = array_header(a)?;
            (n > 0).then(|| &a[at..])
        }) {
            if let Some(t) = body_field(top, 0).and_then(read_str) {
                e.ty = Some(t.to_vec());
            }
            if e.message.is_empty() {
                if let Some(m) = body_field(top, 3).and_then(read_str) {
                    e.message = m.to_vec();
                }
            }
        }
    }
    e
}

/// A bounds-checked MsgPack reader over a slice.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, ()> {
        let v = *self.b.get(self.pos).ok_or(())?;
        self.pos += 1;
        Ok(v)
    }

    fn be(&mut self, n: usize) -> Result<u64, ()> {
        let s = self.b.get(self.pos..self.pos + n).ok_or(())?;
        self.pos += n;
        Ok(s.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    fn advance(&mut self, n: u64) -> Result<(), ()> {
        let n = usize::try_from(n).map_err(|_| ())?;
        if self.b.len() - self.pos < n {
            return Err(());
        }
        self.pos += n;
        Ok(())
    }

    fn uint(&mut self) -> Result<u64, ()> {
        let start = self.pos;
        let r = match self.byte()? {
            m @ 0x00..=0x7f => Ok(u64::from(m)),
            0xcc => self.be(1),
            0xcd => self.be(2),
            0xce => self.be(4),
            0xcf => self.be(8),
            _ => Err(()),
        };
        if r.is_err() {
            self.pos = start;
        }
        r
    }

    fn map_len(&mut self) -> Result<u32, ()> {
        match self.byte()? {
            m @ 0x80..=0x8f => Ok(u32::from(m & 0x0f)),
            0xde => self.be(2).map(|n| n as u32),
            0xdf => self.be(4).map(|n| n as u32),
            _ => Err(()),
        }
    }

    fn array_len(&mut self) -> Result<u32, ()> {
        match self.byte()? {
            m @ 0x90..=0x9f => Ok(u32::from(m & 0x0f)),
            0xdc => self.be(2).map(|n| n as u32),
            0xdd => self.be(4).map(|n| n as u32),
            _ => Err(()),
        }
    }

    fn str(&mut self) -> Result<&'a [u8], ()> {
        let n = match self.byte()? {
            m @ 0xa0..=0xbf => u64::from(m & 0x1f),
            0xd9 | 0xc4 => self.be(1)?,
            0xda | 0xc5 => self.be(2)?,
            0xdb | 0xc6 => self.be(4)?,
            _ => return Err(()),
        };
        let start = self.pos;
        self.advance(n)?;
        Ok(&self.b[start..self.pos])
    }

    /// Skips one value (containers by counting what is still due, no
    /// recursion).
    fn skip(&mut self) -> Result<(), ()> {
        let mut due: u64 = 1;
        while due > 0 {
            due -= 1;
            let m = self.byte()?;
            let (skip, more): (u64, u64) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
                0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
                0x90..=0x9f => (0, u64::from(m & 0x0f)),
                0xa0..=0xbf => (u64::from(m & 0x1f), 0),
                0xc4 | 0xd9 => (self.be(1)?, 0),
                0xc5 | 0xda => (self.be(2)?, 0),
                0xc6 | 0xdb => (self.be(4)?, 0),
                0xc7 => (self.be(1)? + 1, 0),
                0xc8 => (self.be(2)? + 1, 0),
                0xc9 => (self.be(4)? + 1, 0),
                0xca => (4, 0),
                0xcb => (8, 0),
                0xcc | 0xd0 => (1, 0),
                0xcd | 0xd1 => (2, 0),
                0xce | 0xd2 => (4, 0),
                0xcf | 0xd3 => (8, 0),
                0xd4 => (2, 0),
                0xd5 => (3, 0),
                0xd6 => (5, 0),
                0xd7 => (9, 0),
                0xd8 => (17, 0),
                0xdc => (0, self.be(2)?),
                0xdd => (0, self.be(4)?),
                0xde => (0, 2 * self.be(2)?),
                0xdf => (0, 2 * self.be(4)?),
                0xc1 => return Err(()),
            };
            self.advance(skip)?;
            if more > (self.b.len() - self.pos) as u64 {
                return Err(());
            }
            due += more;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips() {
        let mut buf = Ibuf::new();
        let start = begin_frame(&mut buf, PING, 7);
        map(&mut buf, 0);
        end_frame(&mut buf, start);
        let out = buf.data();
        let Ok(Parsed::Frame(f)) = parse_frame(out) else {
            panic!("no frame")
        };
        assert_eq!(f.header.ty, PING);
        assert_eq!(f.header.sync, 7);
        assert_eq!(f.len, out.len());
        assert_eq!(&out[f.body], &[0x80]);
        assert!(matches!(parse_frame(&out[..6]), Ok(Parsed::Need(_))));
    }

    #[test]
    fn the_scramble_is_tarantools() {
        // sha1('') xor sha1(salt ++ sha1(sha1(''))) for a zero salt: a
        // fixed value, checked against the real 2.6 by the net.box tests.
        let s = scramble(&[0; 32], b"");
        assert_eq!(s.len(), 20);
        assert_ne!(s, [0; 20]);
    }

    #[test]
    fn an_error_body_gives_message_and_type() {
        // {0x31: 'boom', 0x52: {0: [{0: 'ClientError', 3: 'boom'}]}}
        let body = [
            0x82, 0x31, 0xa4, b'b', b'o', b'o', b'm', 0x52, 0x81, 0x00, 0x91, 0x82, 0x00, 0xab,
            b'C', b'l', b'i', b'e', b'n', b't', b'E', b'r', b'r', b'o', b'r', 0x03, 0xa4, b'b',
            b'o', b'o', b'm',
        ];
        let e = decode_error(&body);
        assert_eq!(e.message, b"boom");
        assert_eq!(e.ty.as_deref(), Some(&b"ClientError"[..]));
    }
}
