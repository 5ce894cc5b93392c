//! Request bodies, decoded in place (`xrow_decode_call`, `xrow_decode_auth`,
//! `xrow_decode_dml`, `xrow_decode_id`): every string, key, tuple and
//! argument list is a slice of the packet.

use crate::consts::{key, kind};
use crate::error::Error;
use crate::frame::{body_map, Header};
use crate::mp::{Reader, Type};

const BAD_BODY: Error = Error::InvalidMsgpack("packet body");

/// A MessagePack array kept as its bytes (header included): CALL and EVAL
/// arguments, a response's DATA, a key or a tuple.
///
/// Every array is checked whole when it is made, except the arguments of a
/// CALL or EVAL that end the request's body (what every client sends):
/// those are left for the consumer, who decodes them anyway, to check in
/// the same pass ([`Array::is_checked`], [`Array::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Array<'a> {
    raw: &'a [u8],
    len: u32,
    items_at: usize,
    checked: bool,
}

impl<'a> Array<'a> {
    /// The empty array (`0x90`), what a request without arguments has.
    pub const EMPTY: Array<'static> = Array {
        raw: &[0x90],
        len: 0,
        items_at: 1,
        checked: true,
    };

    /// Reads `raw` as one whole array; `None` when it is not exactly that.
    pub fn new(raw: &'a [u8]) -> Option<Array<'a>> {
        let mut r = Reader::new(raw);
        let len = r.array()?;
        let items_at = r.pos();
        for _ in 0..len {
            r.skip()?;
        }
        r.is_empty().then_some(Array {
            raw,
            len,
            items_at,
            checked: true,
        })
    }

    /// [`Array::new`] of `raw` that is known to be one whole array (a
    /// value [`Reader::value`] took): reads only its header.
    pub(crate) fn of_value(raw: &'a [u8]) -> Option<Array<'a>> {
        let mut r = Reader::new(raw);
        let len = r.array()?;
        Some(Array {
            raw,
            len,
            items_at: r.pos(),
            checked: true,
        })
    }

    /// The array that starts `raw` and is all of it, its header read but
    /// its items not checked: `None` when `raw` starts with no array header
    /// or holds fewer bytes than it has items.
    fn unchecked(raw: &'a [u8]) -> Option<Array<'a>> {
        let mut r = Reader::new(raw);
        let len = r.array()?;
        let items_at = r.pos();
        (len as usize <= raw.len() - items_at).then_some(Array {
            raw,
            len,
            items_at,
            checked: false,
        })
    }

    /// Whether its items were checked when it was made (see [`Array`]).
    pub fn is_checked(&self) -> bool {
        self.checked
    }

    /// Checks an array made unchecked as [`Array::new`] would: its `len()`
    /// items are whole and nothing follows them. A consumer that decodes
    /// the items itself need not call it when its decode took every byte
    /// of [`Array::items_raw`] without finding them malformed.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMsgpack`]`("packet body")`, what
    /// [`decode_request`] answers for a malformed body.
    pub fn check(&self) -> Result<(), Error> {
        if self.checked || Array::new(self.raw).is_some() {
            Ok(())
        } else {
            Err(BAD_BODY)
        }
    }

    /// The array's bytes, header included.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The bytes of its items, one after another (no header): what a
    /// Lua decoder reads to push `len()` values.
    pub fn items_raw(&self) -> &'a [u8] {
        &self.raw[self.items_at..]
    }

    /// Number of items.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether it has no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items' bytes, one value each (of an array not checked, those
    /// before the first malformed one).
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut r = Reader::new(self.items_raw());
        // Checked in `new`: every item is whole.
        (0..self.len).map_while(move |_| r.value())
    }
}

/// Reads one array value of a body map.
fn array_value<'a>(r: &mut Reader<'a>) -> Result<Array<'a>, Error> {
    if r.peek() != Some(Type::Array) {
        return Err(BAD_BODY);
    }
    // `value` skipped the whole array, items included: they are whole.
    let raw = r.value().ok_or(BAD_BODY)?;
    Array::of_value(raw).ok_or(BAD_BODY)
}

/// CALL and CALL_16: the function's name (a `.`/`:` path through `_G`)
/// and its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call<'a> {
    /// The name's bytes (a MessagePack string; not checked for UTF-8).
    pub name: &'a [u8],
    /// The arguments ([`Array::EMPTY`] when the request has none).
    pub args: Array<'a>,
}

/// EVAL: the expression and its arguments (`...` in the chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eval<'a> {
    /// The Lua source.
    pub expr: &'a [u8],
    /// The arguments.
    pub args: Array<'a>,
}

/// AUTH: the user and the `[method, scramble]` tuple as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Auth<'a> {
    /// The user name.
    pub user: &'a [u8],
    /// The TUPLE: empty for `guest` without a password, else
    /// `['chap-sha1', scramble]`.
    pub tuple: Array<'a>,
}

/// AUTH's method and proof: `('chap-sha1', scramble)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthMethod<'a> {
    /// The method's name (`chap-sha1`).
    pub method: &'a [u8],
    /// The scramble: a string (net.box) or binary (other connectors), any
    /// bytes; chap-sha1 wants 20.
    pub scramble: &'a [u8],
}

impl<'a> Auth<'a> {
    /// The method and the scramble, or `None` for an empty tuple.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidMsgpack`]`("authentication request body")` for a
    /// tuple of one item or of other types, as Tarantool answers.
    pub fn method(&self) -> Result<Option<AuthMethod<'a>>, Error> {
        const BAD: Error = Error::InvalidMsgpack("authentication request body");
        if self.tuple.is_empty() {
            return Ok(None);
        }
        if self.tuple.len() < 2 {
            return Err(BAD);
        }
        let mut r = Reader::new(self.tuple.items_raw());
        let method = r.str().ok_or(BAD)?;
        let scramble = r.str_or_bin().ok_or(BAD)?;
        Ok(Some(AuthMethod { method, scramble }))
    }
}

/// SELECT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Select<'a> {
    /// Space id.
    pub space_id: u32,
    /// Index id (0 when absent).
    pub index_id: u32,
    /// Most tuples to return (`u32::MAX` when absent).
    pub limit: u32,
    /// Tuples to skip (0 when absent).
    pub offset: u32,
    /// Iterator ([`crate::iterator`]; `EQ` when absent).
    pub iterator: u32,
    /// The key.
    pub key: Array<'a>,
}

/// INSERT, REPLACE, UPDATE, UPSERT and DELETE: the fields they may carry.
/// Which must be there is checked by type ([`decode_request`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dml<'a> {
    /// Space id.
    pub space_id: u32,
    /// Index id (0 when absent).
    pub index_id: u32,
    /// Field numbers' base in operations (0 when absent).
    pub index_base: u32,
    /// KEY (UPDATE, DELETE).
    pub key: Option<Array<'a>>,
    /// TUPLE (INSERT, REPLACE, UPSERT; UPDATE's operations, as 2.6's
    /// net.box sends them).
    pub tuple: Option<Array<'a>>,
    /// OPS (UPSERT's operations).
    pub ops: Option<Array<'a>>,
}

/// ID: the peer's protocol version and features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id<'a> {
    /// Protocol version (0 when absent).
    pub version: u64,
    /// Feature ids ([`crate::feature`]); empty when absent.
    pub features: Array<'a>,
    /// The authentication method the client wants, when it says.
    pub auth_type: Option<&'a [u8]>,
}

impl Id<'_> {
    /// The feature ids that are unsigned integers (others are ignored, as
    /// Tarantool ignores ids it does not know).
    pub fn feature_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.features.iter().filter_map(|v| Reader::new(v).uint())
    }
}

/// A request, by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// PING (its body, if any, is ignored).
    Ping,
    /// CALL (type 10).
    Call(Call<'a>),
    /// CALL_16 (type 6).
    Call16(Call<'a>),
    /// EVAL.
    Eval(Eval<'a>),
    /// AUTH.
    Auth(Auth<'a>),
    /// SELECT.
    Select(Select<'a>),
    /// INSERT.
    Insert(Dml<'a>),
    /// REPLACE.
    Replace(Dml<'a>),
    /// UPDATE.
    Update(Dml<'a>),
    /// UPSERT.
    Upsert(Dml<'a>),
    /// DELETE.
    Delete(Dml<'a>),
    /// ID.
    Id(Id<'a>),
    /// WATCH: subscribe to a key, or acknowledge its last EVENT.
    Watch(&'a [u8]),
    /// UNWATCH: unsubscribe from a key.
    Unwatch(&'a [u8]),
    /// WATCH_ONCE: a key's value now.
    WatchOnce(&'a [u8]),
    /// Any other type, not decoded (a server answers
    /// `ER_UNKNOWN_REQUEST_TYPE`).
    Other(u32),
}

/// Decodes a request's body by the type in its header, checking it in the
/// same pass: the body must be empty or exactly one well-formed value (as
/// [`crate::decode_header`] checks), so the body [`crate::split_header`]
/// gives needs no other check.
///
/// Unknown body keys are skipped; the known ones must have their types
/// (names and expressions strings, tuples, keys and arguments arrays,
/// ids unsigned integers of 32 bits).
///
/// # Errors
///
/// [`Error::InvalidMsgpack`]`("packet body")` for a body that is not one
/// well-formed value, not a map, or has a value of the wrong type; [`Error::MissingField`] for a request
/// without a field it needs (CALL's FUNCTION_NAME, EVAL's EXPR, AUTH's
/// USER_NAME and TUPLE, SELECT's SPACE_ID, DML's SPACE_ID, TUPLE, KEY, OPS
/// by type, as Tarantool's key maps).
///
/// ```
/// use luafiber_iproto::{decode_header, decode_request, Request};
/// // net.box 2.6: conn:call('echo', {1})
/// let pkt = [0x82, 0x01, 0x06, 0x00, 0x0a, 0x82, 0x22, 0xa4, b'e', b'c', b'h', b'o', 0x21, 0x91, 0x01];
/// let (h, body) = decode_header(&pkt).unwrap();
/// let Request::Call(call) = decode_request(&h, body).unwrap() else { panic!() };
/// assert_eq!((call.name, call.args.len()), (&b"echo"[..], 1));
/// ```
pub fn decode_request<'a>(header: &Header, body: &'a [u8]) -> Result<Request<'a>, Error> {
    Ok(match header.kind {
        kind::PING => {
            whole_value(body)?;
            Request::Ping
        }
        kind::CALL | kind::CALL_16 | kind::EVAL => decode_call(header.kind, body)?,
        kind::AUTH => decode_auth(body)?,
        kind::SELECT => decode_select(body)?,
        k @ (kind::INSERT | kind::REPLACE | kind::UPDATE | kind::UPSERT | kind::DELETE) => {
            let d = decode_dml(k, body)?;
            match k {
                kind::INSERT => Request::Insert(d),
                kind::REPLACE => Request::Replace(d),
                kind::UPDATE => Request::Update(d),
                kind::UPSERT => Request::Upsert(d),
                _ => Request::Delete(d),
            }
        }
        kind::ID => decode_id(body)?,
        kind::WATCH => Request::Watch(crate::watch::decode_watch(body)?.key),
        kind::UNWATCH => Request::Unwatch(crate::watch::decode_watch(body)?.key),
        kind::WATCH_ONCE => Request::WatchOnce(crate::watch::decode_watch(body)?.key),
        other => {
            whole_value(body)?;
            Request::Other(other)
        }
    })
}

/// Checks a body that is not decoded: empty or one well-formed value.
fn whole_value(body: &[u8]) -> Result<(), Error> {
    if body.is_empty() || crate::mp::is_one_value(body) {
        Ok(())
    } else {
        Err(BAD_BODY)
    }
}

/// Checks that the body map just read was the whole body.
#[inline]
fn at_end(r: &Reader<'_>) -> Result<(), Error> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(BAD_BODY)
    }
}

fn decode_call(k: u32, body: &[u8]) -> Result<Request<'_>, Error> {
    let (mut r, n) = body_map(body)?;
    let (mut name, mut expr, mut args) = (None, None, Array::EMPTY);
    for i in 0..n {
        let key = r.uint().ok_or(BAD_BODY)?;
        match u8::try_from(key) {
            Ok(key::FUNCTION_NAME) => name = Some(r.str().ok_or(BAD_BODY)?),
            Ok(key::EXPR) => expr = Some(r.str().ok_or(BAD_BODY)?),
            // The arguments that end the body are checked by whoever
            // decodes them (one pass over them, not two).
            Ok(key::TUPLE) if i + 1 == n && r.peek() == Some(Type::Array) => {
                args = Array::unchecked(r.rest()).ok_or(BAD_BODY)?;
                r = Reader::new(&[]);
            }
            Ok(key::TUPLE) => args = array_value(&mut r)?,
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    at_end(&r)?;
    // A missing field is reported after a malformed body, as when the
    // body was checked first.
    let missing = |f| args.check().and(Err(Error::MissingField(f)));
    Ok(match k {
        kind::EVAL => Request::Eval(Eval {
            expr: expr.map_or_else(|| missing(key::EXPR), Ok)?,
            args,
        }),
        _ => {
            let call = Call {
                name: name.map_or_else(|| missing(key::FUNCTION_NAME), Ok)?,
                args,
            };
            if k == kind::CALL {
                Request::Call(call)
            } else {
                Request::Call16(call)
            }
        }
    })
}

fn decode_auth(body: &[u8]) -> Result<Request<'_>, Error> {
    let (mut r, n) = body_map(body)?;
    let (mut user, mut tuple) = (None, None);
    for _ in 0..n {
        let key = r.uint().ok_or(BAD_BODY)?;
        match u8::try_from(key) {
            Ok(key::USER_NAME) => user = Some(r.str().ok_or(BAD_BODY)?),
            Ok(key::TUPLE) => tuple = Some(array_value(&mut r)?),
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    at_end(&r)?;
    Ok(Request::Auth(Auth {
        user: user.ok_or(Error::MissingField(key::USER_NAME))?,
        tuple: tuple.ok_or(Error::MissingField(key::TUPLE))?,
    }))
}

/// The fields of SELECT and DML bodies (`xrow_decode_dml`).
#[derive(Default)]
struct DmlFields<'a> {
    space_id: Option<u32>,
    index_id: u32,
    limit: Option<u32>,
    offset: u32,
    iterator: u32,
    index_base: u32,
    key: Option<Array<'a>>,
    tuple: Option<Array<'a>>,
    ops: Option<Array<'a>>,
}

fn dml_fields(body: &[u8]) -> Result<DmlFields<'_>, Error> {
    let (mut r, n) = body_map(body)?;
    let mut f = DmlFields::default();
    for _ in 0..n {
        let key = r.uint().ok_or(BAD_BODY)?;
        let u32_value = |r: &mut Reader| r.uint32().ok_or(BAD_BODY);
        match u8::try_from(key) {
            Ok(key::SPACE_ID) => f.space_id = Some(u32_value(&mut r)?),
            Ok(key::INDEX_ID) => f.index_id = u32_value(&mut r)?,
            // Clients send any unsigned width here (asynctnt: a uint64
            // 0xFFFFFFFF); a value past u32 means "no limit".
            Ok(key::LIMIT) => f.limit = Some(saturate(r.uint().ok_or(BAD_BODY)?)),
            Ok(key::OFFSET) => f.offset = saturate(r.uint().ok_or(BAD_BODY)?),
            Ok(key::ITERATOR) => f.iterator = u32_value(&mut r)?,
            Ok(key::INDEX_BASE) => f.index_base = u32_value(&mut r)?,
            Ok(key::KEY) => f.key = Some(array_value(&mut r)?),
            Ok(key::TUPLE) => f.tuple = Some(array_value(&mut r)?),
            Ok(key::OPS) => f.ops = Some(array_value(&mut r)?),
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    at_end(&r)?;
    Ok(f)
}

fn saturate(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn decode_select(body: &[u8]) -> Result<Request<'_>, Error> {
    let f = dml_fields(body)?;
    Ok(Request::Select(Select {
        space_id: f.space_id.ok_or(Error::MissingField(key::SPACE_ID))?,
        index_id: f.index_id,
        limit: f.limit.unwrap_or(u32::MAX),
        offset: f.offset,
        iterator: f.iterator,
        key: f.key.ok_or(Error::MissingField(key::KEY))?,
    }))
}

fn decode_dml(k: u32, body: &[u8]) -> Result<Dml<'_>, Error> {
    let f = dml_fields(body)?;
    let space_id = f.space_id.ok_or(Error::MissingField(key::SPACE_ID))?;
    let need_key = matches!(k, kind::UPDATE | kind::DELETE);
    let need_tuple = matches!(
        k,
        kind::INSERT | kind::REPLACE | kind::UPDATE | kind::UPSERT
    );
    if need_key && f.key.is_none() {
        return Err(Error::MissingField(key::KEY));
    }
    if need_tuple && f.tuple.is_none() {
        return Err(Error::MissingField(key::TUPLE));
    }
    if k == kind::UPSERT && f.ops.is_none() {
        return Err(Error::MissingField(key::OPS));
    }
    Ok(Dml {
        space_id,
        index_id: f.index_id,
        index_base: f.index_base,
        key: f.key,
        tuple: f.tuple,
        ops: f.ops,
    })
}

fn decode_id(body: &[u8]) -> Result<Request<'_>, Error> {
    let (mut r, n) = body_map(body)?;
    let mut id = Id {
        version: 0,
        features: Array::EMPTY,
        auth_type: None,
    };
    for _ in 0..n {
        let key = r.uint().ok_or(BAD_BODY)?;
        match u8::try_from(key) {
            Ok(key::VERSION) => id.version = r.uint().ok_or(BAD_BODY)?,
            Ok(key::FEATURES) => id.features = array_value(&mut r)?,
            Ok(key::AUTH_TYPE) => id.auth_type = Some(r.str().ok_or(BAD_BODY)?),
            _ => r.skip().ok_or(BAD_BODY)?,
        }
    }
    at_end(&r)?;
    Ok(Request::Id(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_takes_a_limit_of_any_width() {
        // {SPACE_ID: 281, LIMIT: uint64 2^32 (asynctnt's schema fetch
        // sends more than u32), KEY: []}
        let body = [
            0x83, 0x10, 0xcd, 0x01, 0x19, 0x12, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, 0x20, 0x90,
        ];
        let h = Header {
            kind: kind::SELECT,
            ..Header::default()
        };
        let Ok(Request::Select(s)) = decode_request(&h, &body) else {
            panic!("not a select")
        };
        assert_eq!((s.space_id, s.limit), (281, u32::MAX));
    }
}
