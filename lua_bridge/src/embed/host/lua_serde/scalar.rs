//! The fast path of [`read_results`](super::read_results) for one scalar
//! (a number, a boolean, nil or a string) read as a type of one value
//! (`Shape::One`): its head read once, then handed to the type's visitor
//! as the reader's [`ValueDe`](super::read) hands it, with no [`Reader`]
//! (no probe of the layout per value, no cache, no count of values).
//! Anything else, and any error, goes to the reader (which gives the same
//! value, or the error, as the MessagePack path).
//!
//! [`Reader`]: super::read::Reader

use std::ffi::c_int;

use serde::de::{self, DeserializeOwned, Visitor};

use super::args::{self, Shape};
use super::read::{
    newtype, scalar_head, visit_i128, visit_num, visit_string, visit_u128, Head, Leave, ReadResult,
};
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
