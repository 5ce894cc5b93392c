//! Typed values onto and off a Lua stack, for a call that runs on the
//! thread that holds the values (a local call, [`super::LocalCall`]): the
//! arguments pushed onto the call's fiber, the results read from it.
//!
//! The seam of the direct path: for now each goes through MessagePack (the
//! arguments encoded by [`args::encode`] and decoded onto the stack by the
//! `msgpack` module's decoder; the results encoded by its encoder and
//! decoded by [`args::decode`]), as values that cross between threads do.
//! A serializer straight into Lua values (and a deserializer out of them)
//! takes their place with the same signatures and the same shapes (a tuple
//! is the list of values, anything else one value; missing results are
//! nil, extra ones dropped).

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi::lua_State;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{args, Error, ErrorKind};
use crate::modules::msgpack::port;
use crate::raw::{Raise, Stack};

/// Pushes the arguments `args` onto `l` (a tuple's elements, none for
/// `()`, else `args` as one value) and returns how many it pushed.
///
/// # Errors
///
/// [`ErrorKind::Convert`] when `args` does not serialize; [`ErrorKind::Lua`]
/// when the stack cannot take them (too many, out of memory); values
/// pushed before that are left on the stack.
///
/// # Safety
///
/// `l` is a valid state of this thread that runs no Lua code while this
/// runs, with nothing else using its stack; its allocations are exempt
/// from the memory limit meanwhile (`Stack::outside`'s scope), since an
/// allocation error here has no `lua_pcall` to land in.
pub(crate) unsafe fn push_args<A: Serialize + ?Sized>(
    l: *mut lua_State,
    args: &A,
) -> Result<c_int, Error> {
    // One buffer per thread, taken while in use (kept when it is small).
    let mut bytes = BUF.take();
    bytes.clear();
    let r = args::encode_into(args, &mut bytes).and_then(|()| {
        // SAFETY: the caller's contract.
        let s = &mut unsafe { Stack::from_state(l) };
        port::push_array(s, &bytes, "decode").map_err(|e| raise_error(ErrorKind::Lua, e))
    });
    if bytes.capacity() <= BUF_KEEP {
        BUF.set(bytes);
    }
    r
}

/// The largest argument buffer kept for the next call.
const BUF_KEEP: usize = 4096;

thread_local! {
    /// The arguments' MessagePack, reused from call to call.
    static BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// `R` from the `n` values of `l` from index `first` on (the top of the
/// stack is the last), as [`args::decode`] makes it from an array.
///
/// # Errors
///
/// [`ErrorKind::Refused`] when a value has no MessagePack form (a
/// function, a userdata); [`ErrorKind::Convert`] when the values do not
/// make an `R`.
///
/// # Safety
///
/// As [`push_args`]; `first..first + n` are valid indices of `l` and
/// `first + n - 1` is its top.
pub(crate) unsafe fn read_results<R: DeserializeOwned>(
    l: *mut lua_State,
    first: c_int,
    n: c_int,
) -> Result<R, Error> {
    // SAFETY: the caller's contract.
    let s = &mut unsafe { Stack::from_state(l) };
    debug_assert_eq!(s.top(), first + n - 1, "the results end at the top");
    port::encode_array_with(s, first, "call", "result", args::decode)
        .map_err(|e| raise_error(ErrorKind::Refused, e))?
}

/// The bridge's error `e` as an [`Error`] of `kind`.
fn raise_error(kind: ErrorKind, e: Raise) -> Error {
    let message = match e {
        Raise::Error(_, m) | Raise::Message(m) => m,
        Raise::Top => "a value could not be converted".to_owned(),
    };
    Error::new(kind, message)
}
