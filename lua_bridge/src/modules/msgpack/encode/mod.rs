//! Lua values to MsgPack, as Tarantool's `luamp_encode_r` + `luaL_tofield`.
//!
//! Rules the code keeps, cited as "encode rule N" (raw rule 2: no Lua
//! error may cross it):
//!
//! 1. Only raw accesses (`lua_rawget`, `lua_rawgeti`, `lua_next`), which run
//!    no metamethod.
//! 2. Lua code (a `__serialize` function, `tostring`) runs only under
//!    `lua_pcall` of the cached trampoline; its error is raised as it is.
//! 3. After Lua code ran during a table's traversal, the traversal goes on
//!    through the base library's `next` under `lua_pcall`: that code may have
//!    changed the table, and a raw `lua_next` would then raise.
//! 4. The encoder knows the stack top without asking (each function gets
//!    it as `top`); the stack handle counts the room it checked, and
//!    forgets it once Lua code ran (Lua stacks only shrink in a collection,
//!    which only Lua code or an allocation starts).
//!
//! The calls into Lua are the cost here (an encode is mostly C API calls),
//! so each value takes as few as it can: its type once, then its contents.

use std::ffi::c_int;

use luafiber_runtime::ibuf::Ibuf;
use mlua::ffi;
use rmp::encode as mp;

pub(crate) mod raw;
mod table;

use super::{Config, State, MAX_NESTING};
use crate::luajit::cdata::Scalar;
use crate::luajit::obj::LUA_TCDATA;
use crate::modules::ext::{self, Ext};
use crate::raw::error::ErrorKind;
use crate::raw::{LResult as LuaResult, Raise, Stack};

/// 2^63 as a float.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// How deep `__serialize` functions may hand over to each other (a function
/// whose result has a `__serialize` function, and so on).
const MAX_HANDOVERS: u32 = 64;

/// Stack slots a table level needs: the value, metatable, `__serialize`,
/// key, value, and a call's function and argument.
const SLOTS_PER_LEVEL: c_int = 8;

/// Stack slots checked at once (encode rule 4), so that `lua_checkstack`
/// runs once per encode, not once per table.
const SLOTS_AT_ONCE: c_int = 16 * SLOTS_PER_LEVEL;

/// Bytes of the longest MsgPack head of a scalar: a marker and 8 bytes.
const HEAD_MAX: usize = 9;

/// An encoder error, boxed so that results pass in a register on the hot
/// path; unboxed when the encode ends.
struct Fail(Box<Raise>);

impl From<Raise> for Fail {
    #[cold]
    fn from(r: Raise) -> Fail {
        Fail(Box::new(r))
    }
}

type LResult<T = ()> = Result<T, Fail>;

#[cold]
fn illegal(msg: impl Into<String>) -> Fail {
    Raise::illegal(msg).into()
}

#[cold]
fn oom<E>(_: E) -> Fail {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into()).into()
}

#[cold]
fn too_deep(level: u32) -> Fail {
    illegal(format!("Too high nest level - {}", level + 1))
}

#[cold]
fn no_stack(level: u32) -> Fail {
    illegal(format!(
        "msgpack.encode: nest level {} is too deep for the fiber's stack",
        level + 1
    ))
}

pub(super) struct Encoder<'a> {
    st: &'a State,
    cfg: Config,
    out: &'a mut Ibuf,
    /// Stack index of the string `"__serialize"`.
    key: c_int,
    /// Lua calls made so far (encode rule 3).
    calls: u64,
}

impl<'a> Encoder<'a> {
    /// An encoder writing to `out`; `key` is the stack index of the string
    /// `"__serialize"`.
    pub(super) fn new(st: &'a State, out: &'a mut Ibuf, key: c_int) -> Self {
        Encoder {
            st,
            cfg: st.cfg,
            out,
            key,
            calls: 0,
        }
    }

    /// Encodes the value at `idx` of `s`, the running C function's stack,
    /// whose top is the `"__serialize"` key; the stack is as it was after.
    ///
    /// # Panics
    ///
    /// Panics when `idx` is not on the stack.
    pub(super) fn encode(&mut self, s: &mut Stack, idx: c_int) -> LuaResult<()> {
        let idx = s.abs(idx);
        if let Some(root) = self.st.tables.as_ref().and_then(|t| t.root(s, idx)) {
            if self.raw_root(root) {
                return Ok(());
            }
        }
        let top = s.top();
        self.value_at(s, idx, top, 0, 0).map_err(|f| *f.0)
    }

    /// Encodes the value at `idx` of `s` when that needs no stack slot and
    /// runs no Lua code: a number, a string, a boolean, nil, or (LuaJIT) a
    /// table the in-place walk takes whole; `None` (nothing written) for
    /// anything else, which [`Encoder::encode`] then encodes. The bytes are
    /// those [`Encoder::encode`] gives.
    #[inline]
    pub(super) fn in_place(&mut self, s: &Stack, idx: c_int) -> Option<LuaResult<()>> {
        // The usual results, read from their stack slots in place (LuaJIT,
        // probed); the bytes are those of the walk of a table's values.
        if let (Some(fill), Some(tables)) = (self.st.x.fill, self.st.tables.as_ref()) {
            if let Some(v) = fill.value_at(s, idx) {
                if let Some(n) = v.number() {
                    return Some(self.float(n).map_err(|f| *f.0));
                }
                if let Some(b) = v.str() {
                    return Some(self.str(b).map_err(|f| *f.0));
                }
                if let Some(root) = tables.table_of(v) {
                    return self.raw_root(root).then_some(Ok(()));
                }
            }
        }
        let r = match s.type_of(idx) {
            ffi::LUA_TNUMBER => self.number(s, idx),
            ffi::LUA_TSTRING => self.str(s.to_str(idx).unwrap_or_default()),
            ffi::LUA_TBOOLEAN => {
                let b = s.to_bool(idx);
                self.head(|w| mp::write_bool(w, b))
            }
            ffi::LUA_TNIL => self.head(|w| mp::write_nil(w)),
            ffi::LUA_TTABLE => {
                let st = self.st;
                let root = st.tables.as_ref()?.root(s, idx)?;
                if !self.raw_root(root) {
                    return None;
                }
                Ok(())
            }
            _ => return None,
        };
        Some(r.map_err(|f| *f.0))
    }

    /// [`Encoder::value`] of a value whose type is not known yet.
    #[inline(always)]
    fn value_at(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        let t = s.type_of(idx);
        self.value(s, idx, top, t, level, handovers)
    }

    /// Encodes the value at `idx`, of Lua type `t`; `top` is the stack top
    /// (encode rule 4). Numbers and strings are written here, in the
    /// caller's loop; the rest costs a call.
    #[inline(always)]
    fn value(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        t: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        match t {
            ffi::LUA_TNUMBER => self.number(s, idx),
            ffi::LUA_TSTRING => self.str(s.to_str(idx).unwrap_or_default()),
            _ => self.other(s, idx, top, t, level, handovers),
        }
    }

    /// [`Encoder::value`] of the types that are not numbers or strings.
    #[inline(never)]
    fn other(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        t: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        match t {
            ffi::LUA_TTABLE => self.table(s, idx, top, level, handovers),
            ffi::LUA_TNIL => self.head(|w| mp::write_nil(w)),
            ffi::LUA_TBOOLEAN => {
                let b = s.to_bool(idx);
                self.head(|w| mp::write_bool(w, b))
            }
            ffi::LUA_TLIGHTUSERDATA if s.to_userdata(idx).is_null() => {
                self.head(|w| mp::write_nil(w))
            }
            ffi::LUA_TUSERDATA | ffi::LUA_TLIGHTUSERDATA => {
                self.object(s, idx, top, level, handovers)
            }
            LUA_TCDATA => match self.st.ctypes.and_then(|ct| ct.read_at(s, idx)) {
                Some(sc) => self.scalar(sc),
                None => self.object(s, idx, top, level, handovers),
            },
            _ => self.unsupported(s, idx, top),
        }
    }

    /// Writes a head of at most [`HEAD_MAX`] bytes with `write`, into room
    /// reserved once (not through `io::Write`, which checks per byte).
    #[inline(always)]
    fn head<E>(&mut self, write: impl FnOnce(&mut &mut [u8]) -> Result<(), E>) -> LResult<()> {
        let room = self.out.try_reserve(HEAD_MAX).map_err(oom)?;
        let had = room.len();
        let mut w = room;
        if write(&mut w).is_err() {
            return Err(oom(()));
        }
        let n = had - w.len();
        self.out.advance(n);
        Ok(())
    }

    #[inline(always)]
    fn str(&mut self, s: &[u8]) -> LResult<()> {
        let len =
            u32::try_from(s.len()).map_err(|_| illegal("msgpack.encode: string is too long"))?;
        let room = self.out.try_reserve(5 + s.len()).map_err(oom)?;
        let head = len_head(room, len, true);
        room[head..head + s.len()].copy_from_slice(s);
        self.out.advance(head + s.len());
        Ok(())
    }

    #[inline(always)]
    fn number(&mut self, s: &Stack, idx: c_int) -> LResult<()> {
        // An integral float in the int64 range converts too on Lua 5.4:
        // Tarantool's rule makes it an integer.
        #[cfg(not(feature = "luajit"))]
        if let Some(i) = s.to_integer(idx) {
            return self.int(i);
        }
        self.float(s.to_number(idx).unwrap_or_default())
    }

    /// A Lua number `n` (a float).
    #[inline(always)]
    fn float(&mut self, n: f64) -> LResult<()> {
        // Tarantool's rule: integral values in the int64/uint64 range are
        // integers, everything else a float64.
        if n.is_finite() {
            let room = self.out.try_reserve(HEAD_MAX).map_err(oom)?;
            let len = finite_number(room, n);
            self.out.advance(len);
            return Ok(());
        }
        if !self.cfg.encode_invalid_numbers {
            if self.cfg.encode_invalid_as_nil {
                return self.head(|w| mp::write_nil(w));
            }
            return Err(illegal("number must not be NaN or Inf"));
        }
        self.head(|w| mp::write_f64(w, n))
    }

    /// A scalar cdata, as Tarantool's `luaL_tofield`: integers in their
    /// shortest form, `float` and `double` as such, `bool`, NULL as nil.
    fn scalar(&mut self, s: Scalar) -> LResult<()> {
        match s {
            Scalar::Nil => self.head(|w| mp::write_nil(w)),
            Scalar::Bool(b) => self.head(|w| mp::write_bool(w, b)),
            Scalar::Int(i) => self.int(i),
            Scalar::Uint(u) => self.head(|w| mp::write_uint(w, u).map(drop)),
            Scalar::F32(f) => self.head(|w| mp::write_f32(w, f)),
            Scalar::F64(f) => self.head(|w| mp::write_f64(w, f)),
        }
    }

    /// An integer: the one-byte form inline (the usual case), the rest in
    /// [`Encoder::wide_int`].
    #[inline(always)]
    fn int(&mut self, i: i64) -> LResult<()> {
        if (0..128).contains(&i) {
            return self.head(|w| mp::write_pfix(w, i as u8));
        }
        self.wide_int(i)
    }

    /// The other integers ([`int_bytes`]).
    #[inline(never)]
    fn wide_int(&mut self, i: i64) -> LResult<()> {
        let (b, n) = int_bytes(i);
        let room = self.out.try_reserve(HEAD_MAX).map_err(oom)?;
        room[..HEAD_MAX].copy_from_slice(&b);
        self.out.advance(n);
        Ok(())
    }

    /// A type MsgPack has no form for: its `tostring` or nil when the
    /// config says so, else an error.
    fn unsupported(&mut self, s: &mut Stack, idx: c_int, top: c_int) -> LResult<()> {
        if self.cfg.encode_use_tostring && self.st.tostring != ffi::LUA_NOREF {
            s.push_ref(self.st.call);
            s.push_ref(self.st.tostring);
            s.push_value(idx);
            self.call(s)?;
            let r = match s.to_str(top + 1) {
                Some(b) => self.str(b),
                None => Err(illegal("msgpack.encode: tostring did not return a string")),
            };
            s.settop(top);
            return r;
        }
        if self.cfg.encode_invalid_as_nil {
            return self.head(|w| mp::write_nil(w));
        }
        Err(illegal(format!(
            "unsupported Lua type '{}'",
            crate::raw::error::type_name(s.type_of(idx)).to_string_lossy()
        )))
    }

    /// Calls `f(x)` through the trampoline (encode rule 2): the trampoline,
    /// `f` and `x` are the top three values; leaves the result in their
    /// place.
    fn call(&mut self, s: &mut Stack) -> LResult<()> {
        self.calls += 1;
        s.pcall(2, 1).map_err(|()| Raise::Top.into())
    }

    /// Userdata, light userdata and cdata: encoded through a `__serialize`
    /// function in their metatable or in its `__index` table, else
    /// unsupported.
    fn object(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        if let Some(e) = ext::read(s, idx) {
            // A value type of the library: its MsgPack extension, whatever
            // the config (Tarantool's `luaL_tofield` knows their ctypes).
            return self.ext(&e);
        }
        if let Some(obj) = super::object::try_obj_at(s, idx) {
            let bytes = obj.bytes();
            // A msgpack.object: its bytes as they are (`luamp_get`).
            return self.out.extend_from_slice(bytes).map_err(oom);
        }
        if !self.cfg.encode_load_metatables {
            return self.unsupported(s, idx, top);
        }
        if let Some(c) = self.st.x.cdata.filter(|c| c.is_declared(s, idx)) {
            // `value.__serialize` through its metatype, protected (a cdata
            // raises for a missing field): Tarantool's
            // `lua_field_inspect_ucdata`.
            s.push_nil();
            s.push_ref(c.index_serialize);
            s.push_value(idx);
            let found = s.pcall(1, 1).is_ok() && !s.is_none_or_nil(top + 2);
            if found && s.type_of(top + 2) == ffi::LUA_TFUNCTION {
                return self.hand_over(s, idx, top, level, handovers);
            }
            s.settop(top);
            if found {
                return Err(illegal("invalid __serialize value"));
            }
            return self.unsupported(s, idx, top);
        }
        if !s.get_metatable(idx) {
            return self.unsupported(s, idx, top);
        }
        s.push_value(self.key);
        s.rawget(top + 1);
        if s.type_of(top + 2) != ffi::LUA_TFUNCTION {
            // Master looks `value.__serialize` up through `__index`
            // (`lua_field_inspect_ucdata`): an `__index` table's is found
            // too (a function `__index` is not called).
            s.settop(top + 1);
            s.push_cstr(c"__index");
            s.rawget(top + 1);
            let found = s.type_of(top + 2) == ffi::LUA_TTABLE && {
                s.push_value(self.key);
                s.rawget(top + 2);
                s.replace(top + 2);
                s.type_of(top + 2) == ffi::LUA_TFUNCTION
            };
            if !found {
                s.settop(top);
                return self.unsupported(s, idx, top);
            }
        }
        self.hand_over(s, idx, top, level, handovers)
    }

    /// A value of the library's value types: its MsgPack extension.
    fn ext(&mut self, e: &Ext) -> LResult<()> {
        self.out
            .extend_from_slice(e.packed().as_slice())
            .map_err(oom)
    }

    /// With the metatable and its `__serialize` function at `top + 1` and
    /// `top + 2`: calls the function with the value at `idx` and encodes its
    /// result instead.
    fn hand_over(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        if handovers >= MAX_HANDOVERS {
            return Err(illegal(
                "msgpack.encode: __serialize functions nest too deep",
            ));
        }
        s.push_ref(self.st.call);
        s.replace(top + 1);
        s.push_value(idx);
        self.call(s)?;
        let r = self.value_at(s, top + 1, top + 1, level, handovers + 1);
        s.settop(top);
        r
    }
}

/// Writes the head of a string of `n` bytes (`str`) or of an array of
/// `n` elements at the start of `room` (at least 5 bytes) in rmp's
/// shortest form (Tarantool's `mp_encode_strl`, `mp_encode_array`);
/// returns its length.
#[inline(always)]
fn len_head(room: &mut [u8], n: u32, str: bool) -> usize {
    use rmp::Marker as M;
    if str && n < 32 {
        // The usual short string: rmp's fixstr marker, without the call.
        room[0] = M::FixStr(n as u8).to_u8();
        return 1;
    }
    if !str && n < 16 {
        room[0] = M::FixArray(n as u8).to_u8();
        return 1;
    }
    if str && n < 256 {
        room[0] = M::Str8.to_u8();
        room[1] = n as u8;
        return 2;
    }
    let (m16, m32) = if str {
        (M::Str16, M::Str32)
    } else {
        (M::Array16, M::Array32)
    };
    if n < 65536 {
        room[0] = m16.to_u8();
        room[1..3].copy_from_slice(&(n as u16).to_be_bytes());
        return 3;
    }
    room[0] = m32.to_u8();
    room[1..5].copy_from_slice(&n.to_be_bytes());
    5
}

/// An integer in rmp's shortest form, as a fixed 9-byte block (one copy,
/// where rmp's writers copy each part with a `memcpy` call) and the
/// length of its used prefix.
#[inline(always)]
fn int_bytes(i: i64) -> ([u8; HEAD_MAX], usize) {
    use rmp::Marker as M;
    let mut b = [0u8; HEAD_MAX];
    let n = if (0..0x80).contains(&i) {
        b[0] = i as u8;
        1
    } else if i >= 0 {
        let u = i as u64;
        let (m, n) = match u {
            0x80..=0xff => (M::U8, 1),
            0x100..=0xffff => (M::U16, 2),
            0x1_0000..=0xffff_ffff => (M::U32, 4),
            _ => (M::U64, 8),
        };
        b[0] = m.to_u8();
        b[1..=n].copy_from_slice(&u.to_be_bytes()[8 - n..]);
        n + 1
    } else if i >= -32 {
        b[0] = M::FixNeg(i as i8).to_u8();
        1
    } else {
        let (m, n) = match i {
            -0x80..=-33 => (M::I8, 1),
            -0x8000..=-0x81 => (M::I16, 2),
            -0x8000_0000..=-0x8001 => (M::I32, 4),
            _ => (M::I64, 8),
        };
        b[0] = m.to_u8();
        b[1..=n].copy_from_slice(&i.to_be_bytes()[8 - n..]);
        n + 1
    };
    (b, n)
}

/// Writes the finite Lua number `n` at the start of `room` (at least
/// [`HEAD_MAX`] bytes) as Tarantool's rule has it (an integer when it is
/// one in the int64/uint64 range, else a float64); returns its length.
/// The one-byte form inline (the usual case), the rest in
/// [`wide_number`].
#[inline(always)]
fn finite_number(room: &mut [u8], n: f64) -> usize {
    if (0.0..128.0).contains(&n) {
        let b = n as u8;
        if f64::from(b) == n {
            room[0] = b;
            return 1;
        }
    }
    wide_number(room, n)
}

/// [`finite_number`] of the numbers that are not `0..=127`.
#[inline(never)]
fn wide_number(room: &mut [u8], n: f64) -> usize {
    if (-TWO_63..TWO_63).contains(&n) {
        let i = n as i64;
        if i as f64 == n {
            let (b, len) = int_bytes(i);
            room[..HEAD_MAX].copy_from_slice(&b);
            return len;
        }
    } else if (TWO_63..2.0 * TWO_63).contains(&n) {
        room[0] = rmp::Marker::U64.to_u8();
        room[1..HEAD_MAX].copy_from_slice(&(n as u64).to_be_bytes());
        return HEAD_MAX;
    }
    room[0] = rmp::Marker::F64.to_u8();
    room[1..HEAD_MAX].copy_from_slice(&n.to_bits().to_be_bytes());
    HEAD_MAX
}
