//! The `fiber` module's slice functions (master's `src/lua/fiber.c`:
//! `lbox_fiber_set_max_slice`, `set_slice`, `extend_slice`,
//! `check_slice`) over [`crate::slice`]. Setting a slice also has the
//! cord watched ([`watchdog::arm`]): from then on a fiber that runs Lua
//! past its `err` limit without yielding gets `FiberSliceIsExceeded`
//! raised in it, without calling `check_slice`.

use std::ffi::c_int;

use luafiber_fiber::{self as fiber, FiberId};
use mlua::ffi;

use super::object::{lua_index, to_fiber};
use crate::raw::{lua_fn, LResult, Raise, Stack};
use crate::slice::{self, watchdog, Slice, TIMEOUT_INFINITY};

const BAD_SLICE: &str = "slice must be a number or a table {warn = <number>, err = <number>}";

/// Master's `lbox_fiber_slice_parse`: a number (the `err` limit, no
/// warning) or `{warn = <number>, err = <number>}` (numeric strings
/// count, as `lua_isnumber`).
fn parse(s: &mut Stack, idx: c_int) -> LResult<Slice> {
    let slice = match s.type_of(idx) {
        ffi::LUA_TTABLE => {
            let mut field = |name| {
                s.rawget_field(idx, name);
                let v = s.to_number(-1);
                s.pop(1);
                v.ok_or_else(|| Raise::illegal(BAD_SLICE))
            };
            let warn = field(c"warn")?;
            Slice {
                warn,
                err: field(c"err")?,
            }
        }
        _ => Slice {
            warn: TIMEOUT_INFINITY,
            err: s.to_number(idx).ok_or_else(|| Raise::illegal(BAD_SLICE))?,
        },
    };
    if !slice.is_valid() {
        return Err(Raise::illegal("slice value must be >= 0"));
    }
    Ok(slice)
}

/// The fiber at `idx` for `set_max_slice` (an object or an id, as
/// master's `lbox_checkfiber`), as its index in the cord's fibers.
fn lua_fiber_at(s: &mut Stack, idx: c_int) -> LResult<usize> {
    let id = match s.type_of(idx) {
        ffi::LUA_TNUMBER => s.to_number(idx).map(|n| FiberId(n as u64)),
        _ => to_fiber(s, idx),
    }
    .ok_or_else(|| Raise::illegal("fiber.set_max_slice([id,] slice): bad arguments"))?;
    match fiber::status(id) {
        Some(st) if st != fiber::Status::Dead => {}
        _ => return Err(Raise::illegal("the fiber is dead")),
    }
    lua_index(id).ok_or_else(|| Raise::illegal("fiber.set_max_slice: not a Lua fiber"))
}

lua_fn! {
    /// `fiber.set_max_slice([fiber,] slice)`: the cord's default max slice,
    /// or that fiber's own (`f:set_max_slice(slice)`). Master's
    /// `lbox_fiber_set_max_slice`, same errors.
    pub(super) fn fiber_set_max_slice(s: &mut Stack) {
        let top = s.top();
        if top != 1 && top != 2 {
            return Err(Raise::illegal("fiber.set_max_slice([id,] slice): bad arguments"));
        }
        let slice = parse(s, top)?;
        watchdog::arm();
        if top == 1 {
            slice::set_default_max_slice(slice);
        } else {
            let idx = lua_fiber_at(s, 1)?;
            slice::set_max_slice(idx, slice);
        }
        Ok(0)
    }
}

/// The body of `set_slice` and `extend_slice`: one slice argument, given
/// to `apply` once the cord is watched; `usage` is the error for any other
/// argument count.
fn one_slice(s: &mut Stack, usage: &str, apply: fn(Slice)) -> LResult {
    if s.top() != 1 {
        return Err(Raise::illegal(usage));
    }
    let slice = parse(s, 1)?;
    watchdog::arm();
    apply(slice);
    Ok(0)
}

lua_fn! {
    /// `fiber.set_slice(slice)`: the running fiber's current slice, until
    /// it yields. Master's `lbox_fiber_set_slice`.
    pub(super) fn fiber_set_slice(s: &mut Stack) {
        one_slice(s, "fiber.set_slice(slice): bad arguments", slice::set_slice)
    }
}

lua_fn! {
    /// `fiber.extend_slice(slice)`: adds to the running fiber's current
    /// slice. Master's `lbox_fiber_extend_slice`.
    pub(super) fn fiber_extend_slice(s: &mut Stack) {
        one_slice(s, "fiber.extend_slice(slice): bad arguments", slice::extend_slice)
    }
}

lua_fn! {
    /// `fiber.check_slice()`: raises `FiberSliceIsExceeded` past the current
    /// slice's `err` (and logs "fiber has not yielded for more than N
    /// seconds" once past `warn`). Master's `lbox_check_slice`.
    pub(super) fn fiber_check_slice(s: &mut Stack) {
        if s.top() != 0 {
            return Err(Raise::illegal("fiber.check_slice(): bad arguments"));
        }
        slice::check().map_err(|()| watchdog::exceeded())?;
        Ok(0)
    }
}

/// Sets `max_slice` in the info table at `t` for the fiber `id`, as
/// master's `lbox_fiber_statof_map`: the limits that are not infinite,
/// and no field when neither is.
pub(super) fn push_max_slice(s: &mut Stack, t: c_int, id: FiberId) -> LResult<()> {
    let slice = slice::max_slice_of(lua_index(id));
    if slice.warn >= TIMEOUT_INFINITY && slice.err >= TIMEOUT_INFINITY {
        return Ok(());
    }
    let m = s.new_table(0, 2);
    for (name, v) in [(c"warn", slice.warn), (c"err", slice.err)] {
        if v < TIMEOUT_INFINITY {
            s.push_number(v);
            s.set_field(m, name);
        }
    }
    s.set_field(t, c"max_slice");
    Ok(())
}
