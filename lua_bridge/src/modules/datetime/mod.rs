//! The Lua `datetime` module: Tarantool master's `src/lua/datetime.lua`
//! (with `src/lib/core/datetime.c`, `mp_datetime.c`, `mp_interval.c` and
//! `src/lib/tzcode/`), see docs/lua/datetime.md.
//!
//! - `datetime.new{year, month, day, hour, min, sec, nsec|usec|msec,
//!   timestamp, tzoffset, tz}`, `datetime.now()`, `datetime.parse(text
//!   [, {format, tzoffset, tz}])`, `datetime.parse_date(text)`,
//!   `datetime.is_datetime(v)`, `datetime.TZ` (zone ids and names).
//! - A datetime's fields (`epoch`, `nsec`, `tzoffset`, `tzindex`,
//!   `timestamp`, `year` .. `sec`, `yday`, `wday`, `isdst`, `tz`) and
//!   methods (`format`, `totable`, `set`, `add`, `sub`); `tostring`,
//!   comparisons, `+`/`-` with intervals and datetimes.
//! - `datetime.interval.new{year, month, week, day, hour, min, sec,
//!   nsec|usec|msec, adjust}`, `datetime.interval.is_interval(v)`; an
//!   interval's `totable`, `tostring`, comparisons and arithmetic.
//!
//! A datetime is on LuaJIT a `struct datetime` cdata and an interval a
//! `struct interval` cdata, as in Tarantool; on Lua 5.4 userdata whose
//! fields read the same. `msgpack` encodes them as MsgPack extensions 4 and
//! 6 and decodes those back; `json` and `yaml` write their text.
//!
//! Layout: [`civil`] the calendar, [`value`] the two values with their
//! MsgPack bodies and text, [`parse`] ISO 8601, [`format`](mod@format) strftime and
//! strptime, [`zones`] Tarantool's zone table and jiff's tz database,
//! [`object`] the C functions `datetime.lua` is built from.

mod civil;
mod format;
mod object;
mod parse;
pub(crate) mod value;
mod zones;

pub(crate) use object::{get_dt, get_iv, DatetimeTypes, DT_SLOT, IV_SLOT};

use crate::modules::ctype::ValueType;
use crate::raw::{lua_fn, LResult, Raise, Stack};
use value::{Datetime, Interval, DT_DECL, IV_DECL};

const CHUNK: &str = include_str!("datetime.lua");

/// `d` formatted by `fmt` (for the C export `tnt_datetime_strftime`).
pub(crate) fn strftime(d: &Datetime, fmt: &[u8]) -> Vec<u8> {
    format::strftime(d, fmt)
}

/// Declares the exported functions to the FFI, as Tarantool's
/// `datetime.lua` does (after the struct, which `ValueType::new` declares);
/// nothing without the FFI.
const CDEF: &str = r#"
local ok, ffi = pcall(require, 'ffi')
if not ok or type(ffi) ~= 'table' or not ffi.cdef then return end
pcall(ffi.cdef, [[
size_t tnt_datetime_to_string(const struct datetime *date, char *buf, ssize_t len);
size_t tnt_datetime_strftime(const struct datetime *date, char *buf, uint32_t len,
                             const char *fmt);
]])
"#;

/// Forgets the value types (a new Lua state on this thread).
pub(crate) fn reset() {
    DT_SLOT.reset();
    IV_SLOT.reset();
}

/// Pushes a new datetime.
///
/// # Errors
///
/// Out of memory, or the module was not loaded.
pub(crate) fn push_dt(s: &mut Stack, d: Datetime) -> LResult<()> {
    DT_SLOT.push(s, d)
}

/// Pushes a new interval.
///
/// # Errors
///
/// Out of memory, or the module was not loaded.
pub(crate) fn push_iv(s: &mut Stack, iv: Interval) -> LResult<()> {
    IV_SLOT.push(s, iv)
}

/// Pushes `datetime.TZ`: each zone's id by name and name by id.
fn push_tz(s: &mut Stack) -> LResult<()> {
    let t = s.new_table(1024, 1100);
    for z in zones::all() {
        s.push_str(z.name);
        s.push_int(z.id.into());
        s.rawset(t)?;
        if zones::name(z.id) == Some(z.name) {
            s.push_str(z.name);
            s.rawseti(t, z.id.into());
        }
    }
    Ok(())
}

lua_fn! {
    /// The `datetime` module's loader (`package.preload.datetime`): makes
    /// the datetime and interval types of this Lua state and the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(12)?;
        let internal = s.new_table(0, object::INTERNAL.len() as i32);
        s.set_funcs(internal, object::INTERNAL);
        let dt_mt = s.new_table(0, 8);
        let iv_mt = s.new_table(0, 8);
        s.load(CHUNK, c"@builtin/datetime.lua").map_err(|()| Raise::Top)?;
        s.push_value(internal);
        s.push_value(dt_mt);
        s.push_value(iv_mt);
        push_tz(s)?;
        s.pcall(4, 1).map_err(|()| Raise::Top)?;
        let dt = ValueType::<Datetime>::new(s, DT_DECL, c"struct datetime", dt_mt)?;
        let iv = ValueType::<Interval>::new(s, IV_DECL, c"struct interval", iv_mt)?;
        DT_SLOT.install(dt);
        IV_SLOT.install(iv);
        s.load(CDEF, c"=datetime.cdef").map_err(|()| Raise::Top)?;
        s.pcall(0, 0).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
