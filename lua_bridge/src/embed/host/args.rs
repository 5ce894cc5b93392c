//! Typed arguments and results: Rust values to and from the MessagePack
//! arrays that cross between threads, through `serde` and `rmp-serde`.
//!
//! Why `rmp-serde`: it is the MessagePack format of the `serde` ecosystem
//! (maintained with `rmp`, which the bridge already uses for its own
//! encoder), so any `Serialize`/`Deserialize` type works as an argument or
//! a result without a conversion trait of ours; the bytes it makes are
//! what Tarantool's `msgpack` module decodes (and the reverse): nil,
//! booleans, integers to 64 bits, floats, strings, binary strings
//! (`serde_bytes`), arrays and maps. Structs go as maps (field names as
//! keys: Lua tables), enums as serde's externally tagged form. The cost is
//! off the hot path: one encode on the caller, one decode on the cord.
//!
//! A call has several arguments and a Lua function returns several values,
//! so the outer level follows mlua's `IntoLuaMulti`/`FromLuaMulti`: a tuple
//! is the list (`(1, "x")` is two arguments, `()` none), anything else is
//! one value (a `Vec` is one array: a Lua table). Which is which is asked
//! of the type itself by a probe serializer (deserializer) that stops at
//! its first call.

use serde::de::{self, DeserializeOwned, IgnoredAny, Visitor};
use serde::ser::{self, Impossible, Serialize};
use serde::Deserialize;

use super::Error;

/// The outer shape of a value, as its `Serialize`/`Deserialize` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// `()`: no values.
    Unit,
    /// A tuple of this many values.
    Tuple(usize),
    /// One value.
    One,
}

/// The MessagePack array of the arguments `args`: a tuple's elements, no
/// element for `()`, else `[args]`.
///
/// # Errors
///
/// [`ErrorKind::Convert`](super::ErrorKind::Convert) when `args` does not
/// serialize.
pub(crate) fn encode<A: Serialize + ?Sized>(args: &A) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(16);
    encode_into(args, &mut out)?;
    Ok(out)
}

/// [`encode`] appending to `out` (a buffer kept for reuse).
///
/// # Errors
///
/// As [`encode`]; `out` may then hold part of the arguments.
pub(crate) fn encode_into<A: Serialize + ?Sized>(args: &A, out: &mut Vec<u8>) -> Result<(), Error> {
    let mut ser = rmp_serde::Serializer::new(&mut *out).with_struct_map();
    match ser_shape(args) {
        Shape::Unit => out.push(0x90),
        Shape::Tuple(_) => args
            .serialize(&mut ser)
            .map_err(|e| Error::convert("arguments", e))?,
        Shape::One => {
            rmp::encode::write_array_len(ser.get_mut(), 1)
                .map_err(|e| Error::convert("arguments", e))?;
            args.serialize(&mut ser)
                .map_err(|e| Error::convert("arguments", e))?;
        }
    }
    Ok(())
}

/// `R` from the MessagePack array of results `data`: a tuple from the
/// values (missing ones are nil, extra ones are dropped: Lua's rule for
/// assignments), `()` from anything, else from the first value (nil when
/// there is none).
///
/// # Errors
///
/// [`ErrorKind::Convert`](super::ErrorKind::Convert) when the values do not
/// make an `R` (naming the type), or `data` is not an array.
pub(crate) fn decode<R: DeserializeOwned>(data: &[u8]) -> Result<R, Error> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::convert(&format!("results as {}", std::any::type_name::<R>()), e)
    };
    let mut rest = data;
    let n = rmp::decode::read_array_len(&mut rest).map_err(|e| bad(&e))? as usize;
    match de_shape::<R>() {
        Shape::Unit => rmp_serde::from_slice(&[0xc0]).map_err(|e| bad(&e)),
        Shape::One if n == 0 => rmp_serde::from_slice(&[0xc0]).map_err(|e| bad(&e)),
        Shape::One => {
            // Over the slice itself: no read buffer of its own to allocate.
            let mut de = rmp_serde::Deserializer::from_read_ref(rest);
            R::deserialize(&mut de).map_err(|e| bad(&e))
        }
        Shape::Tuple(len) if len == n => rmp_serde::from_slice(data).map_err(|e| bad(&e)),
        Shape::Tuple(len) => {
            // Cut or pad to the tuple's length.
            let mut items = rest;
            for _ in 0..n.min(len) {
                let mut de = rmp_serde::Deserializer::new(&mut items);
                IgnoredAny::deserialize(&mut de).map_err(|e| bad(&e))?;
            }
            let used = rest.len() - items.len();
            let mut fixed = Vec::with_capacity(used + 8);
            rmp::encode::write_array_len(&mut fixed, len as u32).map_err(|e| bad(&e))?;
            fixed.extend_from_slice(&rest[..used]);
            fixed.resize(fixed.len() + len.saturating_sub(n), 0xc0);
            rmp_serde::from_slice(&fixed).map_err(|e| bad(&e))
        }
    }
}

/// The probe's answer, carried as its "error".
#[derive(Debug)]
struct Probe(Shape);

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Probe {}

impl ser::Error for Probe {
    fn custom<T: std::fmt::Display>(_: T) -> Probe {
        Probe(Shape::One)
    }
}

impl de::Error for Probe {
    fn custom<T: std::fmt::Display>(_: T) -> Probe {
        Probe(Shape::One)
    }
}

/// The outer shape of the arguments `args`, as [`encode`] reads it.
pub(super) fn ser_shape<A: Serialize + ?Sized>(args: &A) -> Shape {
    match args.serialize(ShapeSer) {
        Err(Probe(s)) => s,
        Ok(()) => Shape::One,
    }
}

/// The outer shape of the results type `R`, as [`decode`] reads it.
pub(super) fn de_shape<R: DeserializeOwned>() -> Shape {
    match R::deserialize(ShapeDe) {
        Err(Probe(s)) => s,
        Ok(_) => Shape::One,
    }
}

/// A serializer that answers its first call with the shape it names.
struct ShapeSer;

macro_rules! one {
    ($($f:ident($($t:ty),*);)*) => {$(
        fn $f(self, $(_: $t),*) -> Result<(), Probe> {
            Err(Probe(Shape::One))
        }
    )*};
}

impl ser::Serializer for ShapeSer {
    type Ok = ();
    type Error = Probe;
    type SerializeSeq = Impossible<(), Probe>;
    type SerializeTuple = Impossible<(), Probe>;
    type SerializeTupleStruct = Impossible<(), Probe>;
    type SerializeTupleVariant = Impossible<(), Probe>;
    type SerializeMap = Impossible<(), Probe>;
    type SerializeStruct = Impossible<(), Probe>;
    type SerializeStructVariant = Impossible<(), Probe>;

    one! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16);
        serialize_i32(i32); serialize_i64(i64); serialize_u8(u8);
        serialize_u16(u16); serialize_u32(u32); serialize_u64(u64);
        serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_unit(self) -> Result<(), Probe> {
        Err(Probe(Shape::Unit))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Probe> {
        Err(Probe(Shape::Tuple(len)))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Probe> {
        Err(Probe(Shape::One))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Probe> {
        Err(Probe(Shape::One))
    }
}

/// A deserializer that answers the first request of a type with the shape
/// it names.
struct ShapeDe;

impl<'de> de::Deserializer<'de> for ShapeDe {
    type Error = Probe;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probe> {
        Err(Probe(Shape::One))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probe> {
        Err(Probe(Shape::Unit))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, _: V) -> Result<V::Value, Probe> {
        Err(Probe(Shape::Tuple(len)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit_struct newtype_struct seq
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(encode(&()).unwrap(), [0x90]);
        assert_eq!(encode(&(1, 2)).unwrap(), [0x92, 1, 2]);
        assert_eq!(encode(&7).unwrap(), [0x91, 7]);
        assert_eq!(encode(&vec![1, 2]).unwrap(), [0x91, 0x92, 1, 2]);
        assert_eq!(decode::<i64>(&[0x92, 3, 4]).unwrap(), 3);
        assert_eq!(decode::<Option<i64>>(&[0x90]).unwrap(), None);
        assert_eq!(decode::<(i64, i64)>(&[0x92, 3, 4]).unwrap(), (3, 4));
        assert_eq!(decode::<(i64, Option<i64>)>(&[0x91, 3]).unwrap(), (3, None));
        assert_eq!(decode::<(i64,)>(&[0x93, 3, 4, 5]).unwrap(), (3,));
        decode::<()>(&[0x91, 1]).unwrap();
    }
}
