//! The library's value types as the serializers see them: Tarantool's
//! MsgPack extensions (`src/lib/core/mp_extension_types.h`) and their text.
//!
//! | type | Lua value | MsgPack body |
//! |---|---|---|
//! | 1 `MP_DECIMAL` | `decimal` | the scale, then packed BCD digits |
//! | 2 `MP_UUID` | `uuid` | the 16 RFC 4122 bytes |
//! | 4 `MP_DATETIME` | `datetime` | seconds, then nsec, tzoffset, tzindex |
//! | 6 `MP_INTERVAL` | `datetime.interval` | a count, then numbered fields |
//!
//! [`read`] tells whether a Lua value is one of them (by its ctype id or
//! metatable, [`ValueType`](super::ctype::ValueType)), [`read_payload`]
//! the same for a cdata the msgpack encoder walks in place; `Ext::write`
//! appends its MsgPack form, [`Ext::text`] gives what `json` and `yaml`
//! write; [`push`] makes the Lua value of an extension's body, loading its
//! module (by `require`, under `lua_pcall`) the first time one is decoded.
//!
//! Per-cord state: none of its own; each module keeps its value type.

use std::ffi::c_int;

use mlua::ffi;

use super::datetime::{self, value::Datetime, value::Interval};
use super::decimal::{self, value::Dec};
use super::uuid;
use super::uuid::value::TtUuid;
use crate::raw::error::ErrorKind;
use crate::raw::{LResult, Raise, Stack};

/// `MP_DECIMAL`.
pub(crate) const MP_DECIMAL: i8 = 1;
/// `MP_UUID`.
pub(crate) const MP_UUID: i8 = 2;
/// `MP_DATETIME`.
pub(crate) const MP_DATETIME: i8 = 4;
/// `MP_INTERVAL`.
pub(crate) const MP_INTERVAL: i8 = 6;

/// A value of one of the library's value types.
#[derive(Clone, Copy)]
pub(crate) enum Ext {
    /// A `decimal`.
    Decimal(Dec),
    /// A `uuid`.
    Uuid(TtUuid),
    /// A `datetime`.
    Datetime(Datetime),
    /// A `datetime.interval`.
    Interval(Interval),
}

/// The value at `idx`, when it is one of the value types (cdata or
/// userdata; anything else is `None` at the cost of a type check).
#[inline]
pub(crate) fn read(s: &mut Stack, idx: c_int) -> Option<Ext> {
    match s.type_of(idx) {
        ffi::LUA_TUSERDATA | crate::luajit::obj::LUA_TCDATA => {}
        _ => return None,
    }
    if let Some(u) = uuid::get(s, idx) {
        return Some(Ext::Uuid(u));
    }
    if let Some(d) = decimal::get(s, idx) {
        return Some(Ext::Decimal(d));
    }
    if let Some(d) = datetime::get_dt(s, idx) {
        return Some(Ext::Datetime(d));
    }
    if let Some(iv) = datetime::get_iv(s, idx) {
        return Some(Ext::Interval(iv));
    }
    None
}

/// [`read`] of a cdata of ctype `id` whose payload is at `payload`.
///
/// # Safety
///
/// `payload` is the payload of a live cdata whose ctype id is `id`.
#[inline]
pub(crate) unsafe fn read_payload(id: u16, payload: *const u8) -> Option<Ext> {
    if let Some(t) = uuid::SLOT.get() {
        // SAFETY: caller's contract.
        if let Some(u) = unsafe { t.read_payload(id, payload) } {
            return Some(Ext::Uuid(u));
        }
    }
    if let Some(t) = decimal::SLOT.get() {
        // SAFETY: caller's contract.
        if let Some(d) = unsafe { t.read_payload(id, payload) } {
            return Some(Ext::Decimal(d));
        }
    }
    if let Some(t) = datetime::DT_SLOT.get() {
        // SAFETY: caller's contract.
        if let Some(d) = unsafe { t.read_payload(id, payload) } {
            return Some(Ext::Datetime(d));
        }
    }
    if let Some(t) = datetime::IV_SLOT.get() {
        // SAFETY: caller's contract.
        if let Some(iv) = unsafe { t.read_payload(id, payload) } {
            return Some(Ext::Interval(iv));
        }
    }
    None
}

/// Bytes of the longest MsgPack form of an [`Ext`].
pub(crate) const PACKED_MAX: usize = 96;

/// The MsgPack form of an [`Ext`], on the stack.
pub(crate) struct Packed {
    bytes: [u8; PACKED_MAX],
    len: usize,
}

impl Packed {
    fn new() -> Packed {
        Packed {
            bytes: [0; PACKED_MAX],
            len: 0,
        }
    }

    fn put(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// An extension's head for a body of `len` bytes (rmp's shortest form:
    /// fixext for 1, 2, 4, 8, 16 bytes, else ext 8/16/32), as msgpuck's
    /// `mp_encode_extl`.
    fn ext_head(&mut self, t: i8, len: usize) {
        let mut w = &mut self.bytes[self.len..];
        let had = w.len();
        let _ = rmp::encode::write_ext_meta(&mut w, len as u32, t);
        self.len += had - w.len();
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Ext {
    /// Its MsgPack extension, header and body (Tarantool's
    /// `mpstream_encode_uuid` and siblings).
    pub(crate) fn packed(&self) -> Packed {
        let mut p = Packed::new();
        match self {
            Ext::Decimal(d) => {
                let mut body = Vec::with_capacity(48);
                decimal::value::pack(d, &mut body);
                p.ext_head(MP_DECIMAL, body.len());
                p.put(&body);
            }
            Ext::Uuid(u) => {
                p.put(&[0xd8, MP_UUID as u8]);
                p.put(&u.rfc_bytes());
            }
            Ext::Datetime(d) => {
                let mut body = Vec::with_capacity(16);
                d.pack(&mut body);
                p.ext_head(MP_DATETIME, body.len());
                p.put(&body);
            }
            Ext::Interval(iv) => {
                let mut body = Vec::with_capacity(64);
                iv.pack(&mut body);
                p.ext_head(MP_INTERVAL, body.len());
                p.put(&body);
            }
        }
        p
    }

    /// What `json.encode` and `yaml.encode` write of it: a UUID's or a
    /// decimal's text.
    pub(crate) fn text(&self) -> Vec<u8> {
        match self {
            Ext::Decimal(d) => decimal::value::to_text(d).into_bytes(),
            Ext::Uuid(u) => u.text().to_vec(),
            Ext::Datetime(d) => d.text().into_bytes(),
            Ext::Interval(iv) => iv.text().into_bytes(),
        }
    }
}

/// The error of an extension body its type does not accept (Tarantool's
/// `ER_INVALID_MSGPACK` "invalid extension"; the "cannot unpack uuid" it
/// chains is not kept).
pub(crate) fn invalid() -> Raise {
    Raise::Error(
        ErrorKind::ClientError,
        "Invalid MsgPack - invalid extension".into(),
    )
}

/// Whether the extension type `t` is one [`push`] decodes.
pub(crate) fn known(t: i8) -> bool {
    matches!(t, MP_DECIMAL | MP_UUID | MP_DATETIME | MP_INTERVAL)
}

/// Pushes the Lua value of the extension of type `t` with body `body`.
///
/// # Errors
///
/// [`invalid`] for a body its type does not accept; the module's load
/// error, or out of memory.
///
/// # Panics
///
/// Panics when `t` is not [`known`].
pub(crate) fn push(s: &mut Stack, t: i8, body: &[u8]) -> LResult<()> {
    match t {
        MP_DECIMAL => {
            let d = decimal::value::unpack(body).ok_or_else(invalid)?;
            if decimal::SLOT.get().is_none() {
                require(s, c"decimal")?;
            }
            decimal::push(s, d)
        }
        MP_UUID => {
            let u = TtUuid::from_mp(body).ok_or_else(invalid)?;
            if uuid::SLOT.get().is_none() {
                require(s, c"uuid")?;
            }
            uuid::push(s, u)
        }
        MP_DATETIME => {
            let d = Datetime::unpack(body).ok_or_else(invalid)?;
            if datetime::DT_SLOT.get().is_none() {
                require(s, c"datetime")?;
            }
            datetime::push_dt(s, d)
        }
        MP_INTERVAL => {
            let iv = Interval::unpack(body).ok_or_else(invalid)?;
            if datetime::IV_SLOT.get().is_none() {
                require(s, c"datetime")?;
            }
            datetime::push_iv(s, iv)
        }
        _ => panic!("MsgPack extension {t} is not decoded here"),
    }
}

/// `require(name)`, under `lua_pcall`, for the value type it makes.
fn require(s: &mut Stack, name: &std::ffi::CStr) -> LResult<()> {
    s.ensure(3)?;
    s.push_globals();
    s.rawget_field(-1, c"require");
    s.remove(-2);
    s.push_cstr(name);
    s.pcall(1, 0).map_err(|()| Raise::Top)
}
