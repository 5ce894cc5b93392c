//! Typed values straight onto and off a Lua stack, with no MessagePack in
//! between: what a call that runs on the caller's own thread needs
//! (issue 30, case (b)).
//!
//! A typed call crosses as MessagePack ([`args`]): the host
//! encodes the arguments with `rmp-serde`, the cord decodes them with the
//! `msgpack` module's decoder (`cords_unpack`), the results go back through
//! the module's encoder (`cords_reply`) and `rmp-serde`. Between threads
//! the bytes are what crosses; on one thread they are only a detour, about
//! 14% of a local call's CPU. Here `serde` meets the Lua C API directly, as
//! mlua's `IntoLua`/`FromLua` do, with the mapping of the bridge's
//! MessagePack path kept exactly, so a call gives the same values and the
//! same errors either way:
//!
//! - [`push_args`] pushes what `cords_unpack` would push for the bytes
//!   [`args::encode`](super::args) makes: the outer shape of
//!   `args::encode` (a tuple is the arguments, `()` none, anything else
//!   one), then the decoder's Lua values: nil as `msgpack.NULL`; integers
//!   as Lua integers (5.4), as numbers within ±(10^14 - 1) and 64-bit
//!   cdata past that (LuaJIT), an unsigned one past `i64::MAX` as a float
//!   (5.4); binary strings (`serde_bytes`) and `i128`/`u128` (16 big-endian
//!   bytes) as strings; sequences and tuples as tables with
//!   `msgpack.array_mt`; maps and structs (field names as keys) as tables
//!   with `msgpack.map_mt`; a unit struct as an empty array; enums in
//!   serde's externally tagged form (a unit variant is its name, the
//!   others `{name = value}`). MessagePack extensions (`_ExtStruct`) and
//!   the integers LuaJIT keeps as cdata go through the encoder and decoder
//!   themselves, value by value.
//! - [`read_results`] reads `R` as [`args::decode`](super::args) reads it
//!   from the bytes `cords_reply` would encode: `rmp-serde`'s rules (which
//!   `visit_*` each integer's MessagePack form calls, options, enums, unit
//!   structs, the check that a sequence was read to its end) over the
//!   encoder's mapping (Tarantool's array-or-map rule for tables,
//!   `__serialize` hints, `msgpack.NULL` as nil, integral floats as
//!   integers, the nesting limit). What it does not read itself (a
//!   `__serialize` function, cdata other than `msgpack.NULL`, userdata, a
//!   function, any error) it leaves to the MessagePack path for the whole
//!   value list, so the result, and the error, is always that path's. On
//!   LuaJIT a table among the values is read by `rmp-serde` from the bytes
//!   the encoder's in-place walk writes of it (LuaJIT's table layout, no
//!   C API call per key or value: cheaper than any walk through the C
//!   API); the reader walks tables itself on Lua 5.4, and where the
//!   encoder leaves a table to its C API path.
//!
//! Between threads the MessagePack path stays: the bytes are what crosses.
//!
//! - `cache.rs`: the `msgpack` module's values both need, per Lua state;
//! - `push.rs`: the serializer that pushes;
//! - `read.rs`: the deserializer that reads (and leaves);
//! - `scalar.rs`: the fast path of one scalar read as one value (a number,
//!   a boolean, nil or a string: the usual answer and argument), read with
//!   no reader, the same `visit_*` calls made.
//!
//! # Cost
//!
//! Measured 2026-12-07 by `tests.rs`'s `bench`: one call's arguments
//! pushed and one result read back, from and to the same Lua values, the
//! MessagePack round trip (`args::encode`, the port's decode, the port's
//! encode, `args::decode`) beside the direct one. Instructions per round
//! trip by `valgrind --tool=callgrind` (`--profile ci`, the difference of a
//! 1,000- and a 3,000-iteration run, `LUA_SERDE_BENCH=<case>
//! LUA_SERDE_ITERS=<n>`); time by `cargo test --release -p luafiber-lua
//! --lib lua_serde::tests::bench -- --ignored --nocapture` (with
//! `--no-default-features --features lua54` for Lua 5.4; best of 5 per
//! case, nine side-by-side runs on LuaJIT and six on Lua 5.4 on the shared
//! 2-core VM, load 4 to 5: the range of the runs):
//!
//! | case | engine | MessagePack | direct | ratio |
//! |---|---|---|---|---|
//! | `(i64,)` args, `i64` result | LuaJIT | 2,448 instr, 92-99 ns | 786 instr, 33-36 ns | 3.1x instr, 2.7-2.9x time |
//! | `(i64,)` args, `i64` result | Lua 5.4 | 2,398 instr, 96-153 ns | 746 instr, 32-61 ns | 3.2x instr, 1.9-4.7x time (mostly 3.0-3.5x) |
//! | 10-field struct both ways | LuaJIT | 19,726 instr, 1,138-1,239 ns | 15,045 instr, 839-1,036 ns | 1.31x instr, 1.13-1.39x time |
//! | 10-field struct both ways | Lua 5.4 | 26,158 instr, 1,561-1,808 ns | 20,204 instr, 1,127-1,650 ns | 1.29x instr, 1.10-1.50x time |
//!
//! Most of a struct's cost is on both sides: interning its strings on the
//! push, `rmp-serde`'s reading and the Rust values' allocations on the
//! read (on LuaJIT the direct read of a table is the encoder's in-place
//! walk plus `rmp-serde`, so the gain there is the push's and the outer
//! array's).
//!
//! The scalar fast paths (`scalar.rs`), measured the same way later that
//! day beside the build they came after (ae5178a): the direct `(i64,)`
//! round trip (its tuple still pushed by the pusher, its `i64` read by the
//! fast path) 554 -> 407 instructions on LuaJIT, 599 -> 428 on Lua 5.4.
//!
//! # Rules
//!
//! Cited as "serde rule N":
//!
//! 1. Only raw table accesses and pushes, each after room was made (by
//!    [`Stack::ensure`], or `lua_checkstack` for the pusher's own count),
//!    on tables known to be tables, with keys known to be neither nil nor
//!    NaN: no Lua error can be raised, no push panics, and nothing runs Lua
//!    code but the MessagePack path (its `__serialize` calls and cdata
//!    constructors run under `lua_pcall`).
//! 2. A table is read with `lua_next` only while nothing assigns to it and
//!    its key stays on the stack unconverted (no `lua_tolstring` of a
//!    number key): the visitors are Rust code that cannot reach the Lua
//!    state.
//! 3. Both functions work through [`Stack::outside`] (or in an [`Exempt`]
//!    scope, where they ask nothing of the heap's count): their allocations do
//!    not fail on the memory limit, as a C function body's do not (raw
//!    rule 3), so they are safe inside a body and outside any. (As after
//!    `cords_unpack`, a caller that runs Lua code with what `push_args`
//!    pushed may ask the limit first:
//!    [`Outside::over_limit`](crate::raw::Outside::over_limit).)

mod cache;
mod push;
mod read;
mod scalar;
#[cfg(test)]
mod tests;

use std::ffi::c_int;

use mlua::ffi;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::args::{self, Shape};
use super::{Error, ErrorKind};
use crate::modules::msgpack::port;
use crate::modules::serializer::Config;
use crate::raw::memory::Exempt;
use crate::raw::{Raise, Stack};
use push::Pusher;
use read::{Leave, Reader};

/// Pushes the arguments `args` onto `l`'s stack, as `cords_unpack` would
/// push them from [`args::encode`](super::args)'s bytes (see the module
/// doc), and returns how many it pushed: a tuple's elements, none for
/// `()`, else one value.
///
/// # Errors
///
/// [`ErrorKind::Convert`] naming "arguments" when `args` does not
/// serialize (its `Serialize` failed), when a value cannot be a Lua value
/// (a map key that is NaN, a MessagePack extension the bridge does not
/// know), or when the Lua stack cannot take the values. The stack is then
/// as it was.
///
/// # Safety
///
/// `l` is a valid Lua state of this thread, no Lua code runs on it while
/// this does, and nothing else uses its stack meanwhile. The `msgpack`
/// module is open on the thread's cord (its port state gives the nil,
/// the metatables and the cdata constructors).
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the callers push onto their handle: push_args_onto"
    )
)]
pub(crate) unsafe fn push_args<A: Serialize + ?Sized>(
    l: *mut ffi::lua_State,
    args: &A,
) -> Result<c_int, Error> {
    // SAFETY: the caller's contract.
    unsafe { push_args_onto(&mut Stack::from_state(l), args) }
}

/// [`push_args`] onto the stack of `s`, using the room `s` knows of (a
/// scalar argument after a [`Stack::ensure`] asks `lua_checkstack`
/// nothing); `s` reads its top again after.
///
/// # Errors
///
/// As [`push_args`].
///
/// # Safety
///
/// As [`push_args`], for `s`'s state.
pub(crate) unsafe fn push_args_onto<A: Serialize + ?Sized>(
    s: &mut Stack,
    args: &A,
) -> Result<c_int, Error> {
    // One scalar, the usual argument: through the handle (`scalar`).
    if let Some(n) = scalar::push(s, args) {
        return Ok(n);
    }
    // Serde rule 3 without `Stack::outside`'s count of the heap, which a
    // push never asks.
    let _exempt = Exempt::enter();
    let base = s.top();
    let mut p = Pusher::new(s, base);
    let r = match args::ser_shape(args) {
        Shape::Unit => Ok(0),
        Shape::Tuple(_) => p.spread(args),
        Shape::One => p.one(args),
    };
    let r = match r {
        Ok(n) => {
            p.drop_cache();
            Ok(n)
        }
        Err(e) => {
            p.unwind();
            Err(Error::convert("arguments", e))
        }
    };
    // SAFETY: the pusher changed the stack through the C API only.
    unsafe { s.sync() };
    r
}

/// `R` from the `n` Lua values at `first..first + n` of `l`'s stack, as
/// [`args::decode`](super::args) reads it from the MessagePack array
/// `cords_reply` would encode of them: a tuple from the values (missing
/// ones nil, extra ones dropped), `()` from anything, else from the first
/// value (nil when there is none). The stack is as it was after.
///
/// # Errors
///
/// [`ErrorKind::Convert`] naming `results as <type>` when the values do not
/// make an `R`; [`ErrorKind::Refused`] when a value has no MessagePack form
/// (a function, a userdata or cdata without `__serialize`, tables nested
/// past the encoder's limit, a `__serialize` function that raised), as the
/// MessagePack path refuses it: the values are all checked, as the
/// encoder encodes them all.
///
/// # Safety
///
/// As [`push_args`]; `first..first + n` are values on the stack (`first`
/// absolute, or `n` 0).
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the callers read off their handle: read_results_on"
    )
)]
pub(crate) unsafe fn read_results<R: DeserializeOwned>(
    l: *mut ffi::lua_State,
    first: c_int,
    n: c_int,
) -> Result<R, Error> {
    // SAFETY: the caller's contract.
    unsafe { read_results_on(&mut Stack::from_state(l), first, n) }
}

/// [`read_results`] off the stack of `s`, which is told of what it
/// changed (one scalar read as one value, the usual answer, changes
/// nothing: `s` keeps its top and room).
///
/// # Errors
///
/// As [`read_results`].
///
/// # Safety
///
/// As [`read_results`], for `s`'s state.
pub(crate) unsafe fn read_results_on<R: DeserializeOwned>(
    s: &mut Stack,
    first: c_int,
    n: c_int,
) -> Result<R, Error> {
    if n == 1 {
        // One scalar: read where it is, with no reader (`scalar`). It
        // pushes nothing and allocates no Lua object, so no exemption, no
        // reading of the top before and no reset of it after. A value
        // that is no `R` goes the whole way below (which gives the error).
        let first = if first < 0 { s.abs(first) } else { first };
        if let Some(v) = scalar::one::<R>(s, first) {
            return Ok(v);
        }
    }
    // SAFETY: the caller's contract (serde rule 3).
    let mut out = unsafe { Stack::outside(s.as_ptr()) };
    let o: &mut Stack = &mut out;
    let n = n.max(0);
    let first = if n > 0 { o.abs(first) } else { first };
    let top = o.top();
    let r = Reader::new(o, Config::default()).results::<R>(first, n);
    // What the reader pushed (the cache table; more when it left).
    o.settop(top);
    let r = match r {
        Ok(v) => Ok(v),
        Err(Leave) => via_msgpack(o, first, n),
    };
    drop(out);
    // SAFETY: changed through another handle of the same state, which
    // keeps the C API's invariants.
    unsafe { s.sync() };
    r
}

/// [`read_results`] through MessagePack: the values encoded as
/// `cords_reply` encodes a CALL's results (its errors name "call", as
/// that path's do), decoded by [`args::decode`](super::args).
fn via_msgpack<R: DeserializeOwned>(s: &mut Stack, first: c_int, n: c_int) -> Result<R, Error> {
    let top = s.top();
    let from = if n == 0 {
        top + 1
    } else if first + n - 1 == top {
        first
    } else {
        if s.ensure(n + 4).is_err() {
            return Err(Error::new(ErrorKind::Refused, "call: too many results"));
        }
        for i in 0..n {
            s.push_value(first + i);
        }
        top + 1
    };
    let bytes = port::encode_array(s, from, "call", "result");
    s.settop(top);
    match bytes {
        Ok(b) => args::decode(&b),
        Err(Raise::Error(_, m) | Raise::Message(m)) => Err(Error::new(ErrorKind::Refused, m)),
        Err(Raise::Top) => Err(Error::new(
            ErrorKind::Refused,
            "call: a result could not be encoded",
        )),
    }
}
