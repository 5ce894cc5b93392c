//! What Tarantool's serializers share (`src/lua/serializer.c`): the options
//! ([`Config`], `cfg{...}`) and the rules that decide what a Lua table is
//! encoded as: its `__serialize` hint, else the array-or-map rule with the
//! sparse-array options. `msgpack` and `json` both encode through these, so
//! a table is an array or a map for both alike.

pub(crate) mod config;

use std::ffi::c_int;

pub(crate) use config::Config;

use crate::raw::Stack;

/// Machine stack a table level of an encoder or decoder must leave free:
/// the levels above it, and raising the error, need it (a fiber's stack is
/// 512 KiB by default). On a stack of less than 128 KiB, half of it
/// instead ([`luafiber_fiber::stack_room`]): more than the C stack check
/// keeps (a quarter), so the codec's own "too deep" error comes first.
const STACK_MARGIN: usize = 64 * 1024;

/// Whether the fiber's machine stack has room for one more table level of
/// `msgpack` or `json` (encoding or decoding).
#[inline(always)]
pub(crate) fn stack_ok() -> bool {
    luafiber_fiber::stack_room(STACK_MARGIN, 2)
}

/// What a table is encoded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// An array of this many elements, read as `t[1..=n]`.
    Array(u64),
    /// A map of every key.
    Map,
}

/// A `__serialize` string's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    /// `'seq'`, `'sequence'`, `'array'`.
    Array,
    /// `'map'`, `'mapping'`.
    Map,
}

/// The error of a `__serialize` value that is neither a known string nor
/// a function.
pub(crate) const BAD_SERIALIZE: &str = "invalid __serialize value";

/// The hint a `__serialize` string gives, or `None` for an unknown one
/// (an error: [`BAD_SERIALIZE`]).
#[inline]
pub(crate) fn hint(name: &[u8]) -> Option<Hint> {
    match name {
        b"seq" | b"sequence" | b"array" => Some(Hint::Array),
        b"map" | b"mapping" => Some(Hint::Map),
        _ => None,
    }
}

/// Tarantool's rule for a table of `size` keys, all positive integers, the
/// largest `max`: an array of `max` elements unless it is "excessively
/// sparse" (`max > size * encode_sparse_ratio` and `max >
/// encode_sparse_safe`), then a map, or an error when
/// `encode_sparse_convert` is off.
#[inline]
pub(crate) fn sparse_rule(size: f64, max: f64, cfg: &Config) -> Result<Shape, &'static str> {
    let ratio = f64::from(cfg.encode_sparse_ratio);
    if ratio > 0.0 && max > size * ratio && max > f64::from(cfg.encode_sparse_safe) {
        if !cfg.encode_sparse_convert {
            return Err("excessively sparse array");
        }
        return Ok(Shape::Map);
    }
    Ok(Shape::Array(max as u64))
}

/// Tarantool's default rule (`lua_field_inspect_table`) for the table at
/// `t`: an array when every key is a positive integer (or equals the count
/// so far) and the array is not excessively sparse ([`sparse_rule`]); its
/// length is the largest key.
///
/// # Errors
///
/// "excessively sparse array" (see [`sparse_rule`]).
///
/// # Panics
///
/// Panics when `t` holds no table.
pub(crate) fn inspect(s: &mut Stack, t: c_int, cfg: &Config) -> Result<Shape, &'static str> {
    let t = s.abs(t);
    let (mut size, mut max) = (0f64, 0f64);
    s.push_nil();
    // SAFETY: the key on top is nil, then the one `next` pushed; nothing
    // assigns to the table meanwhile.
    while unsafe { s.next(t) } {
        size += 1.0;
        s.pop(1);
        let k = s.to_number(-1).unwrap_or(f64::NAN);
        if k != size && !(k >= 1.0 && k.floor() == k) {
            s.pop(1);
            return Ok(Shape::Map);
        }
        max = max.max(k);
    }
    sparse_rule(size, max, cfg)
}

/// The largest positive integer key of the table at `t`, 0 if none: the
/// length of an array by `__serialize` (Tarantool's `luaL_arrlen`, not `#`,
/// which may stop at a hole).
///
/// # Panics
///
/// Panics when `t` holds no table.
pub(crate) fn max_key(s: &mut Stack, t: c_int) -> u64 {
    let t = s.abs(t);
    let mut max = 0f64;
    s.push_nil();
    // SAFETY: as in `inspect`.
    while unsafe { s.next(t) } {
        s.pop(1);
        if let Some(k) = s.to_number(-1) {
            if k > max && k.floor() == k {
                max = k;
            }
        }
    }
    max as u64
}
