//! The serializer of [`push_args`](super::push_args): `serde`'s data
//! model onto a Lua stack, as the bridge's MessagePack decoder makes each
//! value from `rmp-serde`'s bytes.

use std::ffi::c_int;

use mlua::ffi;
use serde::ser::{self, Serialize};

use super::cache;
use crate::modules::msgpack::port::{self, Options};
use crate::raw::{api, Raise, Stack};

/// Integers within this magnitude are Lua numbers on LuaJIT, others 64-bit
/// cdata: the decoder's `DBL_INT_MAX` (Tarantool's `utils.c`).
#[cfg(feature = "luajit")]
pub(super) const DBL_INT_MAX: i64 = 100_000_000_000_000 - 1;

/// Why a push failed: its message.
#[derive(Debug)]
pub(super) struct PushError(String);

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PushError {}

impl ser::Error for PushError {
    fn custom<T: std::fmt::Display>(msg: T) -> PushError {
        PushError(msg.to_string())
    }
}

impl From<Raise> for PushError {
    #[cold]
    fn from(r: Raise) -> PushError {
        match r {
            Raise::Error(_, m) | Raise::Message(m) => PushError(m),
            Raise::Top => PushError("a value could not be made".into()),
        }
    }
}

type PushResult<T = ()> = Result<T, PushError>;

/// Slots the pusher asks `lua_checkstack` for at once.
const ROOM: c_int = 40;

/// The serializer: each value it is given becomes one Lua value on top.
///
/// Scalars and tables are pushed and set through the C API directly, with
/// the free slots counted here (serde rule 1): through the [`Stack`]
/// handle, whose every table access checks its operands' types, a push
/// cost about a third more. The rare steps (the cache, the decoder's own
/// values, the end) go through the handle, told of the changes first
/// ([`Pusher::handle`]).
pub(super) struct Pusher<'a, 'f> {
    s: &'a mut Stack<'f>,
    l: *mut ffi::lua_State,
    /// Free slots known above the top.
    room: c_int,
    /// The top before the arguments.
    base: c_int,
    /// Where the cache table is (at `base + 1`, below the arguments), once
    /// a value needed it; 0 before.
    cache: c_int,
    /// The next tuple is the argument list, its elements pushed as they
    /// are (no table).
    spread: bool,
    /// How many arguments are on the stack.
    count: c_int,
}

impl<'a, 'f> Pusher<'a, 'f> {
    /// A pusher onto `s`, whose top is `base`, with the room `s` knows of.
    pub(super) fn new(s: &'a mut Stack<'f>, base: c_int) -> Self {
        Pusher {
            l: s.as_ptr(),
            room: s.room(),
            s,
            base,
            cache: 0,
            spread: false,
            count: 0,
        }
    }

    /// Pushes the elements of the tuple `args`; their count.
    pub(super) fn spread<A: Serialize + ?Sized>(&mut self, args: &A) -> PushResult<c_int> {
        self.spread = true;
        args.serialize(&mut *self)?;
        Ok(self.count)
    }

    /// Pushes `args` as one value.
    pub(super) fn one<A: Serialize + ?Sized>(&mut self, args: &A) -> PushResult<c_int> {
        args.serialize(&mut *self)?;
        Ok(1)
    }

    /// The stack handle, told of what the pusher changed.
    fn handle(&mut self) -> &mut Stack<'f> {
        // SAFETY: every change since went through the C API (serde rule 1).
        unsafe { self.s.sync() };
        self.room = 0;
        self.s
    }

    /// Pops everything pushed (after an error).
    pub(super) fn unwind(&mut self) {
        let base = self.base;
        self.handle().settop(base);
    }

    /// Room for `n` more values (serde rule 1).
    #[inline(always)]
    fn room(&mut self, n: c_int) -> PushResult {
        if n <= self.room {
            return Ok(());
        }
        self.grow(n)
    }

    #[cold]
    fn grow(&mut self, n: c_int) -> PushResult {
        let want = n.max(ROOM);
        // SAFETY: `l` is valid; `lua_checkstack` only grows the stack, and
        // does not fail on the memory limit here (serde rule 3).
        if unsafe { ffi::lua_checkstack(self.l, want) } == 0 {
            return Err(PushError("nesting too deep for the Lua stack".into()));
        }
        self.room = want;
        Ok(())
    }

    /// The index of the cache table ([`cache`]), pushed the first time a
    /// value needs it, then kept below the arguments: open tables are
    /// reached relative to the top, so moving them up leaves them where
    /// their code looks for them.
    #[inline(always)]
    fn cache(&mut self) -> PushResult<c_int> {
        if self.cache == 0 {
            let base = self.base;
            let s = self.handle();
            cache::push(s)?;
            s.insert(base + 1);
            self.cache = base + 1;
        }
        Ok(self.cache)
    }

    /// Takes the cache table out from under the arguments.
    pub(super) fn drop_cache(&mut self) {
        if self.cache != 0 {
            let c = self.cache;
            self.handle().remove(c);
            self.cache = 0;
        }
    }

    /// Pushes `msgpack.NULL`, the decoder's nil.
    fn nil(&mut self) -> PushResult {
        let c = self.cache()?;
        self.room(1)?;
        self.room -= 1;
        // SAFETY: a free slot; the cache table at `c`.
        unsafe { api::rawgeti_type(self.l, c, cache::NULL) };
        Ok(())
    }

    /// Pushes a new table for `n` elements (or pairs, `map`) with the
    /// decoder's metatable of its kind.
    fn table(&mut self, n: usize, map: bool) -> PushResult {
        let c = self.cache()?;
        // The table, its metatable, and a key and a value above it.
        self.room(4)?;
        self.room -= 1;
        let hint = n.min(1 << 20) as c_int;
        let (narr, nrec) = if map { (0, hint) } else { (hint, 0) };
        let mt = if map { cache::MAP_MT } else { cache::ARRAY_MT };
        // SAFETY: free slots for the table and its metatable; the cache
        // table at `c` holds the metatable (a table).
        unsafe {
            ffi::lua_createtable(self.l, narr, nrec);
            api::rawgeti_type(self.l, c, mt);
            ffi::lua_setmetatable(self.l, -2);
        }
        Ok(())
    }

    /// Pushes an integer as the decoder does.
    #[inline]
    fn int(&mut self, i: i64) -> PushResult {
        #[cfg(feature = "luajit")]
        if !(-DBL_INT_MAX..=DBL_INT_MAX).contains(&i) {
            return self.through_msgpack(&i);
        }
        self.room(1)?;
        self.room -= 1;
        // SAFETY: a free slot (a number on LuaJIT).
        unsafe { ffi::lua_pushinteger(self.l, i as ffi::lua_Integer) };
        Ok(())
    }

    /// Pushes an unsigned integer as the decoder does.
    fn uint(&mut self, u: u64) -> PushResult {
        match i64::try_from(u) {
            Ok(i) => self.int(i),
            #[cfg(feature = "luajit")]
            Err(_) => self.through_msgpack(&u),
            #[cfg(not(feature = "luajit"))]
            Err(_) => self.number(u as f64),
        }
    }

    fn number(&mut self, n: f64) -> PushResult {
        self.room(1)?;
        self.room -= 1;
        // SAFETY: a free slot.
        unsafe { ffi::lua_pushnumber(self.l, n) };
        Ok(())
    }

    fn boolean(&mut self, b: bool) -> PushResult {
        self.room(1)?;
        self.room -= 1;
        // SAFETY: a free slot.
        unsafe { ffi::lua_pushboolean(self.l, c_int::from(b)) };
        Ok(())
    }

    fn bytes(&mut self, b: &[u8]) -> PushResult {
        self.room(1)?;
        self.room -= 1;
        // SAFETY: a free slot; the allocation does not fail on the memory
        // limit (serde rule 3).
        unsafe { api::push_bytes(self.l, b) };
        Ok(())
    }

    /// Pushes `v` encoded by `rmp-serde` (as `args::encode` encodes) and
    /// decoded by the bridge's decoder: the rare values whose Lua form
    /// only the decoder makes (extensions, LuaJIT's 64-bit cdata).
    #[cold]
    fn through_msgpack<T: Serialize + ?Sized>(&mut self, v: &T) -> PushResult {
        let bytes = rmp_serde::to_vec_named(v).map_err(|e| PushError(e.to_string()))?;
        let s = self.handle();
        s.ensure(4)?;
        let top = s.top();
        if let Err(e) = port::decode_value(s, &bytes, Options::Default) {
            let e = match e {
                Raise::Top => PushError(s.describe(-1)),
                e => e.into(),
            };
            s.settop(top);
            return Err(e);
        }
        Ok(())
    }

    /// Sets the value on top as the next element of the array under it.
    #[inline(always)]
    fn set_element(&mut self, i: &mut i64) {
        *i += 1;
        self.room += 1;
        // SAFETY: the array this pusher made under the value on top.
        unsafe { ffi::lua_rawseti(self.l, -2, *i as ffi::lua_Integer) };
    }

    /// Sets the key and value on top into the map under them; a NaN key
    /// is refused (as the decoder refuses it), with nothing set.
    #[inline(always)]
    fn set_pair(&mut self) -> PushResult {
        // SAFETY: a key and a value on top (`lua_tonumber` of a number
        // only reads it).
        let nan = unsafe {
            ffi::lua_type(self.l, -2) == ffi::LUA_TNUMBER && ffi::lua_tonumber(self.l, -2).is_nan()
        };
        if nan {
            return Err(PushError("table index is NaN".into()));
        }
        self.set_field()
    }

    /// [`Pusher::set_pair`] of a key that cannot be NaN (a string; nil is
    /// never pushed: the decoder's nil is `msgpack.NULL`).
    #[inline(always)]
    fn set_field(&mut self) -> PushResult {
        self.room += 2;
        // SAFETY: the map this pusher made under a key that is neither nil
        // nor NaN (so the raw set cannot raise) and a value.
        unsafe { ffi::lua_rawset(self.l, -3) };
        Ok(())
    }

    /// Pushes a new array (or map) for `len` elements (pairs), as the value
    /// of `variant`'s one-pair map when there is one.
    fn compound<'p>(
        &'p mut self,
        variant: Option<&str>,
        len: usize,
        map: bool,
    ) -> PushResult<Compound<'p, 'a, 'f>> {
        if let Some(name) = variant {
            self.variant(name)?;
        }
        self.table(len, map)?;
        Ok(Compound {
            p: self,
            into: if map { Dest::Map } else { Dest::Array(0) },
            variant: variant.is_some(),
        })
    }

    /// Pushes a map of one pair for a variant, and the variant's name.
    fn variant(&mut self, variant: &str) -> PushResult {
        self.table(1, true)?;
        self.bytes(variant.as_bytes())
    }
}

/// What a compound value's elements go into.
enum Dest {
    /// The arguments themselves (the outer tuple): on the stack.
    Spread,
    /// The array on top; the last index set.
    Array(i64),
    /// The map on top (pairs; a struct's fields).
    Map,
}

/// A sequence, tuple, map or struct being pushed; `variant`: it is the
/// value of a variant's one-pair map, set into it at the end.
pub(super) struct Compound<'p, 'a, 'f> {
    p: &'p mut Pusher<'a, 'f>,
    into: Dest,
    variant: bool,
}

impl Compound<'_, '_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> PushResult {
        v.serialize(&mut *self.p)?;
        match &mut self.into {
            Dest::Spread => self.p.count += 1,
            Dest::Array(i) => self.p.set_element(i),
            Dest::Map => return Err(PushError("an element in a map".into())),
        }
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> PushResult {
        self.p.bytes(key.as_bytes())?;
        v.serialize(&mut *self.p)?;
        self.p.set_field()
    }

    fn end(self) -> PushResult {
        if self.variant {
            self.p.set_field()?;
        }
        Ok(())
    }
}

/// The `serde` compound traits over [`Compound`]: elements, or fields
/// with their names.
macro_rules! compound {
    ($($tr:ident::$f:ident(elements);)*) => {$(
        impl ser::$tr for Compound<'_, '_, '_> {
            type Ok = ();
            type Error = PushError;
            fn $f<T: Serialize + ?Sized>(&mut self, v: &T) -> PushResult {
                self.element(v)
            }
            fn end(self) -> PushResult {
                Compound::end(self)
            }
        }
    )*};
    ($($tr:ident::$f:ident(fields);)*) => {$(
        impl ser::$tr for Compound<'_, '_, '_> {
            type Ok = ();
            type Error = PushError;
            fn $f<T: Serialize + ?Sized>(&mut self, k: &'static str, v: &T) -> PushResult {
                self.field(k, v)
            }
            fn end(self) -> PushResult {
                Compound::end(self)
            }
        }
    )*};
}

compound! {
    SerializeSeq::serialize_element(elements);
    SerializeTuple::serialize_element(elements);
    SerializeTupleStruct::serialize_field(elements);
    SerializeTupleVariant::serialize_field(elements);
}

compound! {
    SerializeStruct::serialize_field(fields);
    SerializeStructVariant::serialize_field(fields);
}

impl ser::SerializeMap for Compound<'_, '_, '_> {
    type Ok = ();
    type Error = PushError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> PushResult {
        k.serialize(&mut *self.p)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> PushResult {
        v.serialize(&mut *self.p)?;
        self.p.set_pair()
    }
    fn end(self) -> PushResult {
        Compound::end(self)
    }
}

/// The integer serializers that fit an `i64`: [`Pusher::int`].
macro_rules! ints {
    ($($f:ident($t:ty);)*) => {$(
        fn $f(self, v: $t) -> PushResult {
            self.int(v.into())
        }
    )*};
}

impl<'p, 'a, 'f> ser::Serializer for &'p mut Pusher<'a, 'f> {
    type Ok = ();
    type Error = PushError;
    type SerializeSeq = Compound<'p, 'a, 'f>;
    type SerializeTuple = Compound<'p, 'a, 'f>;
    type SerializeTupleStruct = Compound<'p, 'a, 'f>;
    type SerializeTupleVariant = Compound<'p, 'a, 'f>;
    type SerializeMap = Compound<'p, 'a, 'f>;
    type SerializeStruct = Compound<'p, 'a, 'f>;
    type SerializeStructVariant = Compound<'p, 'a, 'f>;

    /// As `rmp-serde`'s default: the compact forms.
    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_bool(self, v: bool) -> PushResult {
        self.boolean(v)
    }

    ints! {
        serialize_i8(i8); serialize_i16(i16); serialize_i32(i32); serialize_i64(i64);
        serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
    }

    /// `rmp-serde`: 16 big-endian bytes, a binary string.
    fn serialize_i128(self, v: i128) -> PushResult {
        self.bytes(&v.to_be_bytes())
    }

    fn serialize_u64(self, v: u64) -> PushResult {
        self.uint(v)
    }

    fn serialize_u128(self, v: u128) -> PushResult {
        self.bytes(&v.to_be_bytes())
    }

    fn serialize_f32(self, v: f32) -> PushResult {
        self.serialize_f64(v.into())
    }

    fn serialize_f64(self, v: f64) -> PushResult {
        self.number(v)
    }

    fn serialize_char(self, v: char) -> PushResult {
        self.bytes(v.encode_utf8(&mut [0; 4]).as_bytes())
    }

    fn serialize_str(self, v: &str) -> PushResult {
        self.bytes(v.as_bytes())
    }

    fn serialize_bytes(self, v: &[u8]) -> PushResult {
        self.bytes(v)
    }

    fn serialize_none(self) -> PushResult {
        self.nil()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> PushResult {
        v.serialize(self)
    }

    fn serialize_unit(self) -> PushResult {
        self.nil()
    }

    /// `rmp-serde`: an empty array.
    fn serialize_unit_struct(self, _: &'static str) -> PushResult {
        self.table(0, false)
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> PushResult {
        self.bytes(variant.as_bytes())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> PushResult {
        if name == rmp_serde::MSGPACK_EXT_STRUCT_NAME {
            return self.through_msgpack(&ExtStruct(v));
        }
        v.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> PushResult {
        self.variant(variant)?;
        v.serialize(&mut *self)?;
        self.set_field()
    }

    fn serialize_seq(self, len: Option<usize>) -> PushResult<Compound<'p, 'a, 'f>> {
        self.compound(None, len.unwrap_or(0), false)
    }

    fn serialize_tuple(self, len: usize) -> PushResult<Compound<'p, 'a, 'f>> {
        if std::mem::take(&mut self.spread) {
            return Ok(Compound {
                p: self,
                into: Dest::Spread,
                variant: false,
            });
        }
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> PushResult<Compound<'p, 'a, 'f>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> PushResult<Compound<'p, 'a, 'f>> {
        self.compound(Some(variant), len, false)
    }

    fn serialize_map(self, len: Option<usize>) -> PushResult<Compound<'p, 'a, 'f>> {
        self.compound(None, len.unwrap_or(0), true)
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> PushResult<Compound<'p, 'a, 'f>> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> PushResult<Compound<'p, 'a, 'f>> {
        self.compound(Some(variant), len, true)
    }
}

/// A value of `rmp-serde`'s extension newtype, serialized again under its
/// name (so `rmp-serde` writes the extension).
struct ExtStruct<'v, T: ?Sized>(&'v T);

impl<T: Serialize + ?Sized> Serialize for ExtStruct<'_, T> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(rmp_serde::MSGPACK_EXT_STRUCT_NAME, self.0)
    }
}
