//! The Lua `decimal` module: Tarantool master's `src/lua/decimal.c`, exact
//! decimal numbers of up to 76 digits.
//!
//! - `decimal.new(v)`: the decimal of a number (its 15 significant digits,
//!   as master's `decimal_from_double`), of a number's text (`'1.5'`,
//!   `'-2e3'`), of an integer or float cdata, or of a decimal.
//! - Arithmetic with `+ - * / % ^` and unary `-`, comparisons `== < <=`
//!   (the other operand a decimal, number, text or integer cdata; `== nil`
//!   is false, `< nil` raises), `tostring(d)` (decNumber's scientific
//!   string: `1.5`, `1E+5`, `1.0E+2`).
//! - `decimal.abs`, `exp`, `ln`, `log10`, `sqrt` (of anything `new`
//!   takes), `round(d, places)`, `trim(d)`, `rescale(d, places)`,
//!   `scale(d)`, `precision(d)`, `is_decimal(v)`.
//!
//! A failing operation (division by zero, ln of 0, overflow) raises
//! "decimal operation failed"; bad arguments raise master's messages
//! ("expected decimal, number or string as N argument", "incorrect value
//! to convert to decimal as N argument", "usage: decimal.round(decimal,
//! scale)"); all are strings, as master's `luaL_error` gives them.
//!
//! A decimal is on LuaJIT a `decimal_t` cdata, as in Tarantool (its fields
//! `digits`, `exponent`, `bits`, `lsu` are decNumber's), and on Lua 5.4 a
//! userdata. `msgpack` encodes it as MsgPack extension 1 and decodes that
//! back; `json` writes its text as a string and `yaml` as a plain scalar.
//!
//! The arithmetic is decNumber's, the library Tarantool uses ([`value`]
//! says why the `dec` crate).
//!
//! Differences from Tarantool: on Lua 5.4 an integer converts exactly (a
//! LuaJIT number is a double: 15 digits), `d == 1` is false (Lua 5.4 calls
//! `__eq` only for two userdata: `d == decimal.new(1)` works), and a
//! decimal has no fields.

pub(crate) mod object;
pub(crate) mod value;

pub(crate) use object::{get, push, SLOT};

use crate::modules::ctype::ValueType;
use crate::raw::lua_fn;
use value::{Dec, C_DECL};

lua_fn! {
    /// The `decimal` module's loader (`package.preload.decimal`): makes
    /// the decimal type of this Lua state and the module table.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        let mt = s.new_table(0, object::META.len() as i32);
        s.set_funcs(mt, object::META);
        let t = ValueType::<Dec>::new(s, C_DECL, c"decimal_t", mt)?;
        SLOT.install(t);
        let module = s.new_table(0, object::FUNCS.len() as i32);
        s.set_funcs(module, object::FUNCS);
        Ok(1)
    }
}
