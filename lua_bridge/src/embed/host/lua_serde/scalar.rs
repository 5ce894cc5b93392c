//! The fast paths of one scalar.
//!
//! - [`one`], of [`read_results`](super::read_results): one scalar (a
//!   number, a boolean, nil or a string) read as a type of one value
//!   (`Shape::One`): its head read once, then handed to the type's visitor
//!   as the reader's `ValueDe` hands it, with no [`Reader`] (no probe of
//!   the layout per value, no cache, no count of values). Anything else,
//!   and any error, goes to the reader (which gives the same value, or the
//!   error, as the MessagePack path).
//! - [`push`], of [`push_args_onto`](super::push_args_onto): arguments
//!   that are one boolean, number or string pushed through the caller's
//!   handle as the [`Pusher`](super::push::Pusher) pushes them, with no
//!   pusher (its shape probe, its own count of the room, a `sync` of the
//!   handle after). Anything else goes to the pusher.
//!
//! [`Reader`]: super::read::Reader

use std::ffi::c_int;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::ser::{self, Impossible, Serialize};

use super::args::{self, Shape};
use super::read::{
    newtype, scalar_head, visit_i128, visit_num, visit_string, visit_u128, Head, Leave, ReadResult,
};
use crate::raw::memory::Exempt;
use crate::raw::Stack;

/// `R` from the scalar at `idx` (absolute) of `s`, when `R` is one value
/// and the value is a scalar that makes an `R`; `None` otherwise (the
/// reader then reads it, and gives the error).
#[inline]
pub(super) fn one<R: DeserializeOwned>(s: &Stack, idx: c_int) -> Option<R> {
    if args::de_shape::<R>() != Shape::One {
        return None;
    }
    let entry = crate::luajit::layout().entry;
    let head = scalar_head(s, entry, idx).ok()?;
    R::deserialize(ScalarDe { s, idx, head }).ok()
}

/// A scalar on the stack as a `serde` deserializer: what `ValueDe` does
/// for one, its head already read. What it leaves (an enum, a MessagePack
/// extension, a type mismatch) the reader reads again.
struct ScalarDe<'s, 'f> {
    s: &'s Stack<'f>,
    idx: c_int,
    head: Head,
}

/// The deserializers `rmp-serde` reads through `any_num`:
/// [`ScalarDe::number`].
macro_rules! numbers {
    ($($f:ident)*) => {$(
        #[inline]
        fn $f<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
            self.number(v)
        }
    )*};
}

impl ScalarDe<'_, '_> {
    /// `rmp-serde`'s `any_num`: nil, a boolean or a number; a string is a
    /// type mismatch.
    #[inline]
    fn number<'de, V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        match self.head {
            Head::Num(n) => visit_num(n, v),
            Head::Nil => v.visit_unit(),
            Head::Bool(b) => v.visit_bool(b),
            Head::Str | Head::Table => Err(Leave),
        }
    }
}

impl<'de> de::Deserializer<'de> for ScalarDe<'_, '_> {
    type Error = Leave;

    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        match self.head {
            Head::Str => visit_string(self.s, self.idx, v),
            _ => self.number(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        match self.head {
            Head::Nil => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    /// Left to the reader (its unit variants).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> ReadResult<V::Value> {
        Err(Leave)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> ReadResult<V::Value> {
        newtype(self, name, v)
    }

    fn deserialize_i128<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        visit_i128(self.head, v)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, v: V) -> ReadResult<V::Value> {
        visit_u128(self.head, v)
    }

    numbers! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_f32 deserialize_f64
    }

    // `rmp-serde`'s unit struct is nil (or an empty array: a table, not
    // here), else what any value gives.
    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct
        map struct identifier ignored_any
    }
}

/// Pushes `args` onto `s` when they are one boolean, number or string (or
/// such a value in a `Some` or a newtype) that the pusher would push as
/// it is: `Some(1)`, the handle told. `None`, with nothing pushed, for
/// anything else (and for a number LuaJIT keeps as 64-bit cdata).
#[inline]
pub(super) fn push<A: Serialize + ?Sized>(s: &mut Stack, args: &A) -> Option<c_int> {
    let mut p = ScalarPush { s, pushed: false };
    match args.serialize(&mut p) {
        Ok(()) if p.pushed => Some(1),
        // A `Serialize` that returned without a value, or failed after
        // one: the pusher does what it did.
        r => {
            if r.is_err() && p.pushed {
                p.s.pop(1);
            }
            None
        }
    }
}

/// The serializer of [`push`]: one scalar through the handle, or `Err`
/// before anything is pushed.
struct ScalarPush<'a, 'f> {
    s: &'a mut Stack<'f>,
    pushed: bool,
}

type PushResult<T = ()> = Result<T, Leave>;

impl ScalarPush<'_, '_> {
    /// A slot for the value (as the pusher's room, but through the handle,
    /// which keeps its top known).
    #[inline(always)]
    fn slot(&mut self) -> PushResult {
        self.s.ensure(1).map_err(|_| Leave)?;
        self.pushed = true;
        Ok(())
    }

    /// The pusher's `int`: a Lua integer (a number on LuaJIT within
    /// ±`DBL_INT_MAX`; past that, cdata: the pusher's).
    #[inline]
    fn int(&mut self, i: i64) -> PushResult {
        #[cfg(feature = "luajit")]
        if !(-super::push::DBL_INT_MAX..=super::push::DBL_INT_MAX).contains(&i) {
            return Err(Leave);
        }
        self.slot()?;
        self.s.push_int(i);
        Ok(())
    }

    #[inline]
    fn number(&mut self, n: f64) -> PushResult {
        self.slot()?;
        self.s.push_number(n);
        Ok(())
    }

    #[inline]
    fn bytes(&mut self, b: &[u8]) -> PushResult {
        self.slot()?;
        // Serde rule 3: the string's allocation does not fail on the limit.
        let _exempt = Exempt::enter();
        self.s.push_bytes(b);
        Ok(())
    }
}

/// The integer serializers that fit an `i64`: [`ScalarPush::int`].
macro_rules! push_ints {
    ($($f:ident($t:ty);)*) => {$(
        #[inline]
        fn $f(self, v: $t) -> PushResult {
            self.int(v.into())
        }
    )*};
}

/// The serializers of what [`push`] leaves to the pusher.
macro_rules! not_scalar {
    ($($f:ident($($t:ty),*) -> $r:ty;)*) => {$(
        fn $f(self, $(_: $t),*) -> PushResult<$r> {
            Err(Leave)
        }
    )*};
}

impl ser::Serializer for &mut ScalarPush<'_, '_> {
    type Ok = ();
    type Error = Leave;
    type SerializeSeq = Impossible<(), Leave>;
    type SerializeTuple = Impossible<(), Leave>;
    type SerializeTupleStruct = Impossible<(), Leave>;
    type SerializeTupleVariant = Impossible<(), Leave>;
    type SerializeMap = Impossible<(), Leave>;
    type SerializeStruct = Impossible<(), Leave>;
    type SerializeStructVariant = Impossible<(), Leave>;

    /// As the pusher's.
    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> PushResult {
        self.slot()?;
        self.s.push_bool(v);
        Ok(())
    }

    push_ints! {
        serialize_i8(i8); serialize_i16(i16); serialize_i32(i32); serialize_i64(i64);
        serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
    }

    /// The pusher's `uint`: past `i64::MAX` a float on Lua 5.4, cdata on
    /// LuaJIT (the pusher's).
    #[inline]
    fn serialize_u64(self, v: u64) -> PushResult {
        match i64::try_from(v) {
            Ok(i) => self.int(i),
            #[cfg(feature = "luajit")]
            Err(_) => Err(Leave),
            #[cfg(not(feature = "luajit"))]
            Err(_) => self.number(v as f64),
        }
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> PushResult {
        self.number(v.into())
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> PushResult {
        self.number(v)
    }

    fn serialize_char(self, v: char) -> PushResult {
        self.bytes(v.encode_utf8(&mut [0; 4]).as_bytes())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> PushResult {
        self.bytes(v.as_bytes())
    }

    fn serialize_bytes(self, v: &[u8]) -> PushResult {
        self.bytes(v)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> PushResult {
        v.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> PushResult {
        if name == rmp_serde::MSGPACK_EXT_STRUCT_NAME {
            return Err(Leave);
        }
        v.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> PushResult {
        Err(Leave)
    }

    not_scalar! {
        serialize_i128(i128) -> ();
        serialize_u128(u128) -> ();
        serialize_none() -> ();
        serialize_unit() -> ();
        serialize_unit_struct(&'static str) -> ();
        serialize_unit_variant(&'static str, u32, &'static str) -> ();
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct(&'static str, usize) -> Self::SerializeStruct;
        serialize_struct_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeStructVariant;
    }
}
