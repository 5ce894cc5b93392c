//! The deserializer of [`read_results`](super::read_results): Lua values
//! on a stack read as `rmp-serde`'s `Deserializer` reads the MessagePack
//! the bridge's encoder makes of them.

use std::ffi::c_int;

use luafiber_runtime::ibuf;
use mlua::ffi;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, Visitor};
use serde::Deserialize;

use super::args::{self, Shape};
use super::cache;
use crate::luajit::obj::{itype, FALSE, ISNUM, LUA_TCDATA, NIL, STR, TAB, TRUE};
use crate::luajit::Entry;
use crate::modules::msgpack::port::{self, Options};
use crate::modules::msgpack::MAX_NESTING;
use crate::modules::serializer::{self, Config, Hint, Shape as TableShape};
use crate::raw::Stack;

/// `rmp-serde`'s deserializer over bytes, as `args::decode` makes it.
type RmpDe<'b> = rmp_serde::Deserializer<rmp_serde::decode::ReadReader<&'b [u8]>>;

/// 2^63 as a float.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A fast path leaves the values to the general one: the reader to the
/// MessagePack path, the scalar read to the reader, the scalar push to
/// the pusher (`scalar.rs`); for something it does not handle itself, or
/// any error (the general path then gives the right one).
#[derive(Debug)]
pub(super) struct Leave;

impl std::fmt::Display for Leave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to the general path")
    }
}

impl std::error::Error for Leave {}

impl de::Error for Leave {
    #[cold]
    fn custom<T: std::fmt::Display>(_: T) -> Leave {
        Leave
    }
}

impl serde::ser::Error for Leave {
    #[cold]
    fn custom<T: std::fmt::Display>(_: T) -> Leave {
        Leave
    }
}

pub(super) type ReadResult<T> = Result<T, Leave>;

/// A Lua number as the encoder writes it.
#[derive(Clone, Copy)]
pub(super) enum Num {
    /// An integer, in `rmp`'s shortest form.
    Int(i64),
    /// An integral float in `2^63..2^64`: a `uint 64`.
    Uint(u64),
    /// A `float 64`.
    Float(f64),
}

/// What a value on the stack encodes as, at its head.
pub(super) enum Head {
    Nil,
    Bool(bool),
    Num(Num),
    Str,
    Table,
}

/// The stack being read, and the encoder's options (the port's: the
/// defaults).
pub(super) struct Reader<'a, 'f> {
    s: &'a mut Stack<'f>,
    cfg: Config,
    /// Whether the encoder reads tables in place (LuaJIT's probed layout).
    in_place: bool,
    /// The probe's entry token: a value's head read in place (LuaJIT).
    entry: Option<Entry>,
    /// The index of the cache table ([`cache`]) once a value needed it,
    /// else 0.
    cache: c_int,
    /// The top when the read began (debug builds: `cache`'s check).
    start: c_int,
}

impl<'a, 'f> Reader<'a, 'f> {
    /// A reader of `s`'s values, encoded with `cfg`.
    pub(super) fn new(s: &'a mut Stack<'f>, cfg: Config) -> Self {
        let layout = crate::luajit::layout();
        Reader {
            s,
            cfg,
            in_place: layout.tables.is_some(),
            entry: layout.entry,
            cache: 0,
            start: 0,
        }
    }

    /// The reader without the encoder's in-place tables (its tests: the
    /// reader's own table code on LuaJIT too).
    #[cfg(test)]
    pub(super) fn without_in_place(mut self) -> Self {
        self.in_place = false;
        self
    }

    /// `R` from the `n` values at `first..`, as `args::decode` takes it
    /// from their array; every value is read (validated when dropped), as
    /// every value is encoded.
    pub(super) fn results<R: DeserializeOwned>(&mut self, first: c_int, n: c_int) -> ReadResult<R> {
        if cfg!(debug_assertions) {
            // Only the check in `cache` reads it.
            self.start = self.s.top();
        }
        let (r, used) = match args::de_shape::<R>() {
            Shape::Unit => (nil_value()?, 0),
            Shape::One if n == 0 => (nil_value()?, 0),
            Shape::One => (R::deserialize(self.at(first, 0))?, 1),
            Shape::Tuple(len) => {
                let r = R::deserialize(Spread {
                    r: self,
                    first,
                    n: n.max(0) as u32,
                    len: u32::try_from(len).map_err(|_| Leave)?,
                })?;
                (r, len.min(n as usize) as c_int)
            }
        };
        for i in used..n {
            IgnoredAny::deserialize(self.at(first + i, 0))?;
        }
        Ok(r)
    }

    fn at<'r>(&'r mut self, idx: c_int, level: u32) -> ValueDe<'r, 'a, 'f> {
        ValueDe {
            r: self,
            idx,
            level,
        }
    }

    /// What the value at `idx` encodes as; `Leave` for what only the
    /// encoder encodes.
    #[inline]
    /// The index of the cache table, pushed the first time a value needs
    /// it: a table the reader reads itself or a cdata, first met at level
    /// 0 (a nested one's table met it first), when nothing of the
    /// reader's is on the stack yet; there it stays until the end.
    fn cache(&mut self) -> ReadResult<c_int> {
        if self.cache == 0 {
            debug_assert_eq!(self.s.top(), self.start, "the cache on top of the read");
            cache::push(self.s).map_err(|_| Leave)?;
            self.cache = self.s.top();
        }
        Ok(self.cache)
    }

    fn head(&mut self, idx: c_int) -> ReadResult<Head> {
        match scalar_head(self.s, self.entry, idx) {
            Ok(h) => Ok(h),
            Err(ffi::LUA_TTABLE) => Ok(Head::Table),
            Err(LUA_TCDATA) => {
                let c = self.cache()?;
                if is_null_cdata(self.s, c, idx) {
                    Ok(Head::Nil)
                } else {
                    Err(Leave)
                }
            }
            Err(_) => Err(Leave),
        }
    }

    /// The shape of the table at `idx` (level `level`) and its element or
    /// pair count, as the encoder decides it: the `__serialize` hint, else
    /// Tarantool's rule. `Leave` for a `__serialize` function or a bad
    /// hint, and where the encoder would refuse (nesting too deep).
    fn shape(&mut self, idx: c_int, level: u32) -> ReadResult<(TableShape, u32)> {
        if level >= self.cfg.encode_max_depth.min(MAX_NESTING) || !serializer::stack_ok() {
            return Err(Leave);
        }
        let c = self.cache()?;
        let s = &mut *self.s;
        // A metatable, its `__serialize`, a key and a value (serde rule 1).
        s.ensure(4).map_err(|_| Leave)?;
        let mut hint = None;
        if s.get_metatable(idx) {
            let mt = s.top();
            s.rawgeti(c, cache::SERIALIZE);
            s.rawget(mt);
            hint = match s.type_of(-1) {
                ffi::LUA_TNIL => None,
                ffi::LUA_TSTRING => Some(s.to_str(-1).and_then(serializer::hint).ok_or(Leave)?),
                _ => return Err(Leave),
            };
            s.settop(mt - 1);
        }
        let shape = match hint {
            Some(Hint::Array) => TableShape::Array(serializer::max_key(s, idx)),
            Some(Hint::Map) => return Ok((TableShape::Map, count(s, idx)?)),
            None => serializer::inspect(s, idx, &self.cfg).map_err(|_| Leave)?,
        };
        match shape {
            TableShape::Array(n) => Ok((shape, u32::try_from(n).map_err(|_| Leave)?)),
            TableShape::Map => Ok((shape, count(s, idx)?)),
        }
    }
}

/// The head of the value at `idx` of `s` when it is a scalar (a number, a
/// boolean, nil or absent, a string, a null light userdata): what is read
/// with nothing pushed. Else its Lua type (`LUA_TCDATA` for a cdata).
/// `entry`: the probe's, to read the value in place (LuaJIT).
#[inline(always)]
pub(super) fn scalar_head(s: &Stack, entry: Option<Entry>, idx: c_int) -> Result<Head, c_int> {
    // Read in place when its type says all (the others, and Lua 5.4,
    // through the C API below).
    if let Some(w) = entry.and_then(|e| e.value(s, idx)) {
        match itype(w) {
            t if t <= ISNUM => return Ok(Head::Num(num_of(f64::from_bits(w)))),
            NIL => return Ok(Head::Nil),
            FALSE => return Ok(Head::Bool(false)),
            TRUE => return Ok(Head::Bool(true)),
            STR => return Ok(Head::Str),
            TAB => return Err(ffi::LUA_TTABLE),
            _ => {}
        }
    }
    Ok(match s.type_of(idx) {
        // SAFETY: a number there.
        ffi::LUA_TNUMBER => Head::Num(unsafe { number(s, idx) }),
        ffi::LUA_TSTRING => Head::Str,
        ffi::LUA_TNIL | ffi::LUA_TNONE => Head::Nil,
        ffi::LUA_TBOOLEAN => Head::Bool(s.to_bool(idx)),
        ffi::LUA_TLIGHTUSERDATA if s.to_userdata(idx).is_null() => Head::Nil,
        t => return Err(t),
    })
}

/// `R` from a MessagePack nil, as `args::decode` makes it.
fn nil_value<R: DeserializeOwned>() -> ReadResult<R> {
    rmp_serde::from_slice(&[0xc0]).map_err(|_| Leave)
}

/// The number at `idx` as the encoder writes it (Tarantool's rule:
/// integral values in the `int64`/`uint64` range are integers).
///
/// # Safety
///
/// The value at `idx` is a number.
#[inline(always)]
unsafe fn number(s: &Stack, idx: c_int) -> Num {
    let l = s.as_ptr();
    #[cfg(not(feature = "luajit"))]
    {
        let mut exact = 0;
        // SAFETY: a number at `idx` (the caller's contract).
        let i = unsafe { ffi::lua_tointegerx(l, idx, &mut exact) };
        if exact != 0 {
            return Num::Int(i as i64);
        }
    }
    // SAFETY: as above.
    num_of(unsafe { ffi::lua_tonumber(l, idx) })
}

/// The encoder's form of the number `n` (see [`number`]).
#[inline(always)]
fn num_of(n: f64) -> Num {
    if (-TWO_63..TWO_63).contains(&n) {
        let i = n as i64;
        if i as f64 == n {
            return Num::Int(i);
        }
        return Num::Float(n);
    }
    if (TWO_63..2.0 * TWO_63).contains(&n) {
        return Num::Uint(n as u64);
    }
    Num::Float(n)
}

/// Whether the cdata at `idx` is `msgpack.NULL` itself (the encoder's nil;
/// other cdata are left to it).
#[cold]
fn is_null_cdata(s: &mut Stack, cache: c_int, idx: c_int) -> bool {
    if s.ensure(1).is_err() {
        return false;
    }
    s.rawgeti(cache, cache::NULL);
    // SAFETY: two values on the stack; `lua_rawequal` runs no metamethod.
    let same = unsafe { ffi::lua_rawequal(s.as_ptr(), idx, -1) } != 0;
    s.pop(1);
    same
}

/// The pairs of the table at `t`.
fn count(s: &mut Stack, t: c_int) -> ReadResult<u32> {
    let mut n: u32 = 0;
    s.push_nil();
    // SAFETY: the key on top is nil, then the one `next` pushed; nothing
    // assigns to the table (serde rule 2).
    while unsafe { s.next(t) } {
        s.pop(1);
        n = n.checked_add(1).ok_or(Leave)?;
    }
    Ok(n)
}

/// Calls the `visit_*` that `rmp-serde` calls for the encoder's form of `n`.
#[inline]
pub(super) fn visit_num<'de, V: Visitor<'de>>(n: Num, v: V) -> ReadResult<V::Value> {
    match n {
        // `rmp`'s shortest forms, as the encoder writes them.
        Num::Int(i) => match i {
            0..=0xff => v.visit_u8(i as u8),
            0x100..=0xffff => v.visit_u16(i as u16),
            0x1_0000..=0xffff_ffff => v.visit_u32(i as u32),
            0x1_0000_0000.. => v.visit_u64(i as u64),
            -0x80..=-1 => v.visit_i8(i as i8),
            -0x8000..=-0x81 => v.visit_i16(i as i16),
            -0x8000_0000..=-0x8001 => v.visit_i32(i as i32),
            _ => v.visit_i64(i),
        },
        Num::Uint(u) => v.visit_u64(u),
        Num::Float(f) => v.visit_f64(f),
    }
}

/// The string at `idx` of `s` (its type read: a string): `visit_str`, or
/// for bytes that are not UTF-8 `visit_bytes` (`rmp-serde`'s
/// `read_str_data`).
#[inline]
pub(super) fn visit_string<'de, V: Visitor<'de>>(
    s: &Stack,
    idx: c_int,
    v: V,
) -> ReadResult<V::Value> {
    let mut len = 0;
    // SAFETY: a string at `idx` (`lua_tolstring` converts nothing), which
    // stays on the stack while `s` is borrowed (raw rule 6).
    let b = unsafe {
        let p = ffi::lua_tolstring(s.as_ptr(), idx, &mut len);
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    };
    match std::str::from_utf8(b) {
        Ok(s) => v.visit_str(s),
        Err(_) => v.visit_bytes(b),
    }
}

/// `rmp-serde`'s `i128`: an integer's value; anything else is left.
pub(super) fn visit_i128<'de, V: Visitor<'de>>(h: Head, v: V) -> ReadResult<V::Value> {
    match h {
        Head::Num(Num::Int(i)) => v.visit_i128(i.into()),
        Head::Num(Num::Uint(u)) => v.visit_i128(u.into()),
        _ => Err(Leave),
    }
}

/// `rmp-serde`'s `u128`: an integer's value (a negative one wrapped, as
/// `rmp-serde` reads it); anything else is left.
pub(super) fn visit_u128<'de, V: Visitor<'de>>(h: Head, v: V) -> ReadResult<V::Value> {
    match h {
        Head::Num(Num::Int(i)) => v.visit_u128(i as u128),
        Head::Num(Num::Uint(u)) => v.visit_u128(u.into()),
        _ => Err(Leave),
    }
}

/// `rmp-serde`'s newtype struct: the value `d` itself, but for its
/// MessagePack extension (left).
pub(super) fn newtype<'de, D, V>(d: D, name: &'static str, v: V) -> ReadResult<V::Value>
where
    D: de::Deserializer<'de, Error = Leave>,
    V: Visitor<'de>,
{
    if name == rmp_serde::MSGPACK_EXT_STRUCT_NAME {
        return Err(Leave);
    }
    v.visit_newtype_struct(d)
}

/// The deserializers `rmp-serde` reads through `any_num` (a scalar that
/// is not a string, else an error): [`ValueDe::scalar`].
macro_rules! scalars {
    ($($f:ident)*) => {$(
        fn $f<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
            self.scalar(v)
        }
    )*};
}

/// One value on the stack, as a `serde` deserializer: `rmp-serde`'s
/// `Deserializer` over the encoder's form of the value.
struct ValueDe<'r, 'a, 'f> {
    r: &'r mut Reader<'a, 'f>,
    /// Its index (absolute; 0: nil, a missing value).
    idx: c_int,
    /// Its nesting level, as the encoder counts it.
    level: u32,
}

impl ValueDe<'_, '_, '_> {
    /// A table at level 0 read as `rmp-serde` reads the bytes the encoder
    /// writes of it in place (LuaJIT with the probed table layout: no C
    /// API call per key or value, which the reader cannot match). `v`
    /// back when the encoder leaves the table to its C API path (a
    /// `__serialize` function, a value it does not read in place), or
    /// elsewhere (Lua 5.4; a nested table, whose level the encoder would
    /// count from 0): the reader reads it then.
    fn in_place<'de, V: Visitor<'de>>(
        &mut self,
        v: V,
        read: impl FnOnce(V, &mut RmpDe<'_>) -> Result<V::Value, rmp_serde::decode::Error>,
    ) -> Result<ReadResult<V::Value>, V> {
        if self.level != 0 || !self.r.in_place {
            return Err(v);
        }
        let (s, idx) = (&*self.r.s, self.idx);
        let mut v = Some(v);
        let r = ibuf::with_cord_scratch(|out| {
            match port::encode_value_in_place(s, idx, out, Options::Default)? {
                Ok(()) => {
                    let v = v.take()?;
                    let mut d = rmp_serde::Deserializer::new(out.data());
                    Some(read(v, &mut d).map_err(|_| Leave))
                }
                // The encoder's error: the MessagePack path gives it.
                Err(_) => Some(Err(Leave)),
            }
        });
        match (r, v) {
            (Some(r), _) => Ok(r),
            (None, Some(v)) => Err(v),
            (None, None) => Ok(Err(Leave)),
        }
    }

    fn head(&mut self) -> ReadResult<Head> {
        if self.idx == 0 {
            return Ok(Head::Nil);
        }
        self.r.head(self.idx)
    }

    /// A table: an array as a sequence, a map as a map; each read to its
    /// end (`rmp-serde` checks that).
    fn table<'de, V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        let (shape, n) = self.r.shape(self.idx, self.level)?;
        let level = self.level + 1;
        match shape {
            TableShape::Array(_) => {
                let seq = Elements {
                    r: self.r,
                    from: Source::Table(self.idx),
                    next: 0,
                    len: n,
                    level,
                };
                seq.read(v)
            }
            TableShape::Map => {
                let top = self.r.s.top();
                self.r.s.push_nil();
                let mut map = Pairs {
                    r: self.r,
                    t: self.idx,
                    left: n,
                    level,
                    value_due: false,
                };
                let value = v.visit_map(&mut map)?;
                if map.left != 0 {
                    return Err(Leave);
                }
                map.r.s.settop(top);
                Ok(value)
            }
        }
    }
}

impl<'de> de::Deserializer<'de> for ValueDe<'_, '_, '_> {
    type Error = Leave;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        match self.head()? {
            Head::Num(n) => visit_num(n, v),
            Head::Str => visit_string(self.r.s, self.idx, v),
            Head::Table => match self.in_place(v, |v, d| d.deserialize_any(v)) {
                Ok(r) => r,
                Err(v) => self.table(v),
            },
            Head::Nil => v.visit_unit(),
            Head::Bool(b) => v.visit_bool(b),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        match self.head()? {
            Head::Nil => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    /// `rmp-serde`: a map of one pair is the variant and its value; any
    /// other value is a unit variant's name (or index); another map is an
    /// error.
    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> ReadResult<V::Value> {
        if !matches!(self.head()?, Head::Table) {
            return v.visit_enum(UnitVariant(self));
        }
        let v = match self.in_place(v, |v, d| d.deserialize_enum(name, variants, v)) {
            Ok(r) => return r,
            Err(v) => v,
        };
        match self.r.shape(self.idx, self.level)? {
            (TableShape::Map, 1) => {
                let s = &mut *self.r.s;
                let top = s.top();
                s.push_nil();
                // SAFETY: a nil key on top (serde rule 2).
                if !unsafe { s.next(self.idx) } {
                    return Err(Leave);
                }
                let value = v.visit_enum(Variant {
                    r: &mut *self.r,
                    key: top + 1,
                    level: self.level + 1,
                })?;
                self.r.s.settop(top);
                Ok(value)
            }
            (TableShape::Map, _) => Err(Leave),
            (TableShape::Array(_), _) => v.visit_enum(UnitVariant(self)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> ReadResult<V::Value> {
        newtype(self, name, v)
    }

    /// `rmp-serde`: nil or an empty array is the unit struct.
    fn deserialize_unit_struct<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        v: V,
    ) -> ReadResult<V::Value> {
        match self.head()? {
            Head::Nil => v.visit_unit(),
            Head::Table => match self.in_place(v, |v, d| d.deserialize_unit_struct(name, v)) {
                Ok(r) => r,
                Err(v) => match self.r.shape(self.idx, self.level)? {
                    (TableShape::Array(_), 0) => v.visit_unit(),
                    _ => self.table(v),
                },
            },
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_i128<V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        visit_i128(self.head()?, v)
    }

    fn deserialize_u128<V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        visit_u128(self.head()?, v)
    }

    scalars! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_f32 deserialize_f64
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

impl ValueDe<'_, '_, '_> {
    /// `rmp-serde`'s `any_num`: nil, a boolean or a number; anything else
    /// is a type mismatch.
    #[inline]
    fn scalar<'de, V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        match self.head()? {
            Head::Num(n) => visit_num(n, v),
            Head::Nil => v.visit_unit(),
            Head::Bool(b) => v.visit_bool(b),
            Head::Str | Head::Table => Err(Leave),
        }
    }
}

/// Where a sequence's elements are.
#[derive(Clone, Copy)]
enum Source {
    /// The table at this index: `t[1..=len]`.
    Table(c_int),
    /// The `n` values from `first` on, then nils (the results as a tuple).
    Values { first: c_int, n: u32 },
}

/// `len` elements, read in order.
struct Elements<'r, 'a, 'f> {
    r: &'r mut Reader<'a, 'f>,
    from: Source,
    /// Elements read.
    next: u32,
    len: u32,
    /// The elements' level.
    level: u32,
}

impl Elements<'_, '_, '_> {
    /// Reads the elements with `v`, to the end (`rmp-serde` checks that).
    fn read<'de, V: Visitor<'de>>(mut self, v: V) -> ReadResult<V::Value> {
        let value = v.visit_seq(&mut self)?;
        if self.next != self.len {
            return Err(Leave);
        }
        Ok(value)
    }
}

impl<'de> de::SeqAccess<'de> for Elements<'_, '_, '_> {
    type Error = Leave;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> ReadResult<Option<T::Value>> {
        if self.next >= self.len {
            return Ok(None);
        }
        let i = self.next;
        self.next += 1;
        let t = match self.from {
            Source::Values { first, n } => {
                let idx = if i < n { first + i as c_int } else { 0 };
                return seed.deserialize(self.r.at(idx, self.level)).map(Some);
            }
            Source::Table(t) => t,
        };
        let s = &mut *self.r.s;
        s.ensure(1).map_err(|_| Leave)?;
        let i = c_int::try_from(self.next).map_err(|_| Leave)?;
        // SAFETY: `t` holds the table being read (its shape said so).
        unsafe { s.rawgeti_unchecked(t, i) };
        let idx = s.top();
        let value = seed.deserialize(self.r.at(idx, self.level))?;
        self.r.s.pop(1);
        Ok(Some(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some((self.len - self.next) as usize)
    }
}

/// The pairs of the table at `t`, in `lua_next`'s order (the encoder's).
/// The traversal's key (nil at first) is on top between pairs.
struct Pairs<'r, 'a, 'f> {
    r: &'r mut Reader<'a, 'f>,
    t: c_int,
    left: u32,
    level: u32,
    /// A key was given and its value is on top, not read yet.
    value_due: bool,
}

impl<'de> de::MapAccess<'de> for Pairs<'_, '_, '_> {
    type Error = Leave;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> ReadResult<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        let s = &mut *self.r.s;
        if std::mem::take(&mut self.value_due) {
            s.pop(1);
        }
        s.ensure(2).map_err(|_| Leave)?;
        // SAFETY: the key on top is nil or the one `next` last pushed, kept
        // as it was (serde rule 2).
        if !unsafe { s.next(self.t) } {
            return Err(Leave);
        }
        self.left -= 1;
        self.value_due = true;
        let key = s.top() - 1;
        seed.deserialize(self.r.at(key, self.level)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> ReadResult<V::Value> {
        if !std::mem::take(&mut self.value_due) {
            return Err(Leave);
        }
        let idx = self.r.s.top();
        let value = seed.deserialize(self.r.at(idx, self.level))?;
        self.r.s.pop(1);
        Ok(value)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left as usize)
    }
}

/// A variant as a map of one pair: the key (its name) at `key`, its value
/// above it.
struct Variant<'r, 'a, 'f> {
    r: &'r mut Reader<'a, 'f>,
    key: c_int,
    level: u32,
}

impl<'de, 'r, 'a, 'f> de::EnumAccess<'de> for Variant<'r, 'a, 'f> {
    type Error = Leave;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> ReadResult<(V::Value, Self)> {
        let v = seed.deserialize(self.r.at(self.key, self.level))?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, '_, '_> {
    type Error = Leave;

    /// `rmp-serde` reads a nil there.
    fn unit_variant(self) -> ReadResult<()> {
        match self.r.at(self.key + 1, self.level).head()? {
            Head::Nil => Ok(()),
            _ => Err(Leave),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> ReadResult<T::Value> {
        seed.deserialize(self.r.at(self.key + 1, self.level))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> ReadResult<V::Value> {
        de::Deserializer::deserialize_tuple(self.r.at(self.key + 1, self.level), len, v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> ReadResult<V::Value> {
        de::Deserializer::deserialize_tuple(self.r.at(self.key + 1, self.level), fields.len(), v)
    }
}

/// A value that is not a map of one pair, as an enum: a unit variant's
/// name or index (`rmp-serde`'s `UnitVariantAccess`).
struct UnitVariant<'r, 'a, 'f>(ValueDe<'r, 'a, 'f>);

impl<'de, 'r, 'a, 'f> de::EnumAccess<'de> for UnitVariant<'r, 'a, 'f> {
    type Error = Leave;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> ReadResult<(V::Value, Self)> {
        let ValueDe { r, idx, level } = self.0;
        let v = seed.deserialize(ValueDe {
            r: &mut *r,
            idx,
            level,
        })?;
        Ok((v, UnitVariant(ValueDe { r, idx, level })))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariant<'_, '_, '_> {
    type Error = Leave;

    fn unit_variant(self) -> ReadResult<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> ReadResult<T::Value> {
        Err(Leave)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> ReadResult<V::Value> {
        Err(Leave)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        _: V,
    ) -> ReadResult<V::Value> {
        Err(Leave)
    }
}

/// The results as the array `args::decode` reads a tuple from: `len`
/// elements, the values at `first..first + n` and then nils.
struct Spread<'r, 'a, 'f> {
    r: &'r mut Reader<'a, 'f>,
    first: c_int,
    n: u32,
    len: u32,
}

impl<'de> de::Deserializer<'de> for Spread<'_, '_, '_> {
    type Error = Leave;

    fn is_human_readable(&self) -> bool {
        false
    }

    /// A tuple type asks for a tuple first; a type that asks for
    /// something else of the results (its first request changed since
    /// `de_shape` asked) is left to the MessagePack path.
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> ReadResult<V::Value> {
        Err(Leave)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, v: V) -> ReadResult<V::Value> {
        let seq = Elements {
            r: self.r,
            from: Source::Values {
                first: self.first,
                n: self.n,
            },
            next: 0,
            len: self.len,
            level: 0,
        };
        seq.read(v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple_struct
        map struct enum identifier ignored_any
    }
}
