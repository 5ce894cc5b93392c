//! The decimal values of a Lua state ([`ValueType`] of [`Dec`]), their
//! metamethods and the module's functions (master's `src/lua/decimal.c`).
//!
//! Errors are `luaL_error`'s strings, with the position of the calling Lua
//! code ([`located`]).
//!
//! Per-cord state: the value type, made when the module is first loaded
//! and cleared for a new Lua state (`reset`).

use std::cell::Cell;
use std::cmp::Ordering;
use std::ffi::c_int;

use mlua::ffi;

use super::value::{self, BinOp, Dec, Func};
use crate::luajit::cdata::Scalar;
use crate::luajit::obj::LUA_TCDATA;
use crate::modules::ctype::{Slot, ValueType};
use crate::raw::context::Part;
use crate::raw::error::located;
use crate::raw::{lua_fn, LResult, Reg, Stack};

/// Per-cord state of `decimal` (a part of the cord context): this cord's
/// decimal type, once `decimal` was loaded.
#[derive(Default)]
pub(crate) struct DecimalType(Cell<Option<ValueType<Dec>>>);

/// This cord's decimal type.
pub(crate) static SLOT: Slot<Dec> = Slot::in_context(
    || DecimalType::try_with(|t| t.0.get()).flatten(),
    |v| {
        DecimalType::try_with(|t| t.0.set(v));
    },
    "decimal",
);

/// The decimal at `idx`, if the value there is one.
pub(crate) fn get(s: &mut Stack, idx: c_int) -> Option<Dec> {
    SLOT.value_at(s, idx)
}

/// Pushes a new decimal value holding `v`.
///
/// # Errors
///
/// Out of memory, or the module was not loaded.
pub(crate) fn push(s: &mut Stack, v: Dec) -> LResult<()> {
    SLOT.push(s, v)
}

/// Master's `luaT_todecimal`: the decimal the value at `idx` (argument
/// number `idx`) reads as: a decimal, a number (its 15 significant digits;
/// on Lua 5.4 an integer exactly), a number's text, an integer or float
/// cdata.
fn to_dec(s: &mut Stack, idx: c_int) -> LResult<Dec> {
    let bad = |s: &Stack| {
        located(
            s,
            &format!("incorrect value to convert to decimal as {idx} argument"),
        )
    };
    let other = |s: &Stack| {
        located(
            s,
            &format!("expected decimal, number or string as {idx} argument"),
        )
    };
    match s.type_of(idx) {
        ffi::LUA_TNUMBER => {
            if cfg!(not(feature = "luajit")) && s.is_integer(idx) {
                if let Some(i) = s.to_integer(idx) {
                    return Ok(value::from_i64(i));
                }
            }
            value::from_f64(s.to_number(idx).unwrap_or(f64::NAN)).ok_or_else(|| bad(s))
        }
        ffi::LUA_TSTRING => {
            let d = s.to_str(idx).and_then(value::parse);
            d.ok_or_else(|| bad(s))
        }
        ffi::LUA_TUSERDATA | LUA_TCDATA => {
            if let Some(d) = get(s, idx) {
                return Ok(d);
            }
            let ctypes = crate::luajit::layout().ctypes;
            match ctypes.and_then(|ct| ct.read_at(s, idx)) {
                Some(Scalar::Int(i)) => Ok(value::from_i64(i)),
                Some(Scalar::Uint(u)) => Ok(value::from_u64(u)),
                Some(Scalar::F32(f)) => value::from_f64(f.into()).ok_or_else(|| bad(s)),
                Some(Scalar::F64(f)) => value::from_f64(f).ok_or_else(|| bad(s)),
                _ => Err(other(s)),
            }
        }
        _ => Err(other(s)),
    }
}

/// Master's `luaT_checkdecimal`: the decimal at `idx`, else an error.
fn check_dec(s: &mut Stack, idx: c_int) -> LResult<Dec> {
    if let Some(d) = get(s, idx) {
        return Ok(d);
    }
    match s.type_of(idx) {
        ffi::LUA_TUSERDATA | LUA_TCDATA => {
            Err(located(s, &format!("expected decimal as {idx} argument")))
        }
        _ => Err(located(s, &format!("expected cdata as {idx} argument"))),
    }
}

/// Pushes `d`, or raises "decimal operation failed" for `None`.
fn push_result(s: &mut Stack, d: Option<Dec>) -> LResult {
    match d {
        Some(d) => {
            push(s, d)?;
            Ok(1)
        }
        None => Err(located(s, "decimal operation failed")),
    }
}

/// The metamethods (master's `ldecimal_mt`).
pub(super) const META: &[Reg] = &[
    (c"__unm", dec_unm),
    (c"__add", dec_add),
    (c"__sub", dec_sub),
    (c"__mul", dec_mul),
    (c"__div", dec_div),
    (c"__mod", dec_mod),
    (c"__pow", dec_pow),
    (c"__eq", dec_eq),
    (c"__lt", dec_lt),
    (c"__le", dec_le),
    (c"__tostring", dec_tostring),
];

/// The module's functions (master's `ldecimal_lib`).
pub(super) const FUNCS: &[Reg] = &[
    (c"log10", dec_log10),
    (c"ln", dec_ln),
    (c"exp", dec_exp),
    (c"sqrt", dec_sqrt),
    (c"round", dec_round),
    (c"scale", dec_scale),
    (c"trim", dec_trim),
    (c"rescale", dec_rescale),
    (c"precision", dec_precision),
    (c"abs", dec_abs),
    (c"new", dec_new),
    (c"is_decimal", dec_is_decimal),
];

/// A binary metamethod: both operands converted, then `op`.
fn binop(s: &mut Stack, op: BinOp) -> LResult {
    let a = to_dec(s, 1)?;
    let b = to_dec(s, 2)?;
    push_result(s, value::binop(op, a, &b))
}

lua_fn! {
    /// `-d`.
    fn dec_unm(s: &mut Stack) {
        let a = to_dec(s, 1)?;
        push_result(s, value::func(Func::Minus, a))
    }
}

lua_fn! {
    /// `a + b`.
    fn dec_add(s: &mut Stack) {
        binop(s, BinOp::Add)
    }
}

lua_fn! {
    /// `a - b`.
    fn dec_sub(s: &mut Stack) {
        binop(s, BinOp::Sub)
    }
}

lua_fn! {
    /// `a * b`.
    fn dec_mul(s: &mut Stack) {
        binop(s, BinOp::Mul)
    }
}

lua_fn! {
    /// `a / b`.
    fn dec_div(s: &mut Stack) {
        binop(s, BinOp::Div)
    }
}

lua_fn! {
    /// `a % b`: the remainder of the integer division (its sign `a`'s).
    fn dec_mod(s: &mut Stack) {
        binop(s, BinOp::Rem)
    }
}

lua_fn! {
    /// `a ^ b`.
    fn dec_pow(s: &mut Stack) {
        binop(s, BinOp::Pow)
    }
}

lua_fn! {
    /// `a == b`: false against nil or a NULL pointer; otherwise both
    /// converted and compared by value (`1.0 == 1`).
    fn dec_eq(s: &mut Stack) {
        let null = |s: &mut Stack, i| {
            s.is_none_or_nil(i)
                || crate::luajit::layout()
                    .ctypes
                    .and_then(|ct| ct.read_at(s, i))
                    == Some(Scalar::Nil)
        };
        if null(s, 1) || null(s, 2) {
            s.push_bool(false);
            return Ok(1);
        }
        let a = to_dec(s, 1)?;
        let b = to_dec(s, 2)?;
        s.push_bool(value::compare(&a, &b) == Ordering::Equal);
        Ok(1)
    }
}

/// `a < b` or `a <= b`.
fn order(s: &mut Stack, ok: fn(Ordering) -> bool) -> LResult {
    if s.is_none_or_nil(1) || s.is_none_or_nil(2) {
        return Err(located(s, "attempt to compare decimal with nil"));
    }
    let a = to_dec(s, 1)?;
    let b = to_dec(s, 2)?;
    s.push_bool(ok(value::compare(&a, &b)));
    Ok(1)
}

lua_fn! {
    /// `a < b`.
    fn dec_lt(s: &mut Stack) {
        order(s, Ordering::is_lt)
    }
}

lua_fn! {
    /// `a <= b`.
    fn dec_le(s: &mut Stack) {
        order(s, Ordering::is_le)
    }
}

lua_fn! {
    /// `tostring(d)`: decNumber's scientific string.
    fn dec_tostring(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.tostring(decimal)"));
        }
        let d = check_dec(s, 1)?;
        s.push_str(&value::to_text(&d));
        Ok(1)
    }
}

/// A function of one value (master's `LDECIMAL_FUNC`).
fn func(s: &mut Stack, f: Func, name: &str) -> LResult {
    if s.top() < 1 {
        return Err(located(s, &format!("usage: decimal.{name}(decimal)")));
    }
    let a = to_dec(s, 1)?;
    push_result(s, value::func(f, a))
}

lua_fn! {
    /// `decimal.log10(d)`.
    fn dec_log10(s: &mut Stack) {
        func(s, Func::Log10, "log10")
    }
}

lua_fn! {
    /// `decimal.ln(d)`.
    fn dec_ln(s: &mut Stack) {
        func(s, Func::Ln, "ln")
    }
}

lua_fn! {
    /// `decimal.exp(d)`.
    fn dec_exp(s: &mut Stack) {
        func(s, Func::Exp, "exp")
    }
}

lua_fn! {
    /// `decimal.sqrt(d)`.
    fn dec_sqrt(s: &mut Stack) {
        func(s, Func::Sqrt, "sqrt")
    }
}

lua_fn! {
    /// `decimal.abs(d)`.
    fn dec_abs(s: &mut Stack) {
        func(s, Func::Abs, "abs")
    }
}

/// `lua_tointeger` of the value at `idx`: a number truncated, a numeric
/// string read, else 0.
fn to_int(s: &Stack, idx: c_int) -> i32 {
    let n = s.to_number_coerced(idx).unwrap_or(0.0);
    n.clamp(i32::MIN.into(), i32::MAX.into()) as i32
}

lua_fn! {
    /// `decimal.round(d, places)`: rounded to `places` digits after the
    /// point (halves away from zero); the same number for `places` out of
    /// 0..=76.
    fn dec_round(s: &mut Stack) {
        if s.top() < 2 {
            return Err(located(s, "usage: decimal.round(decimal, scale)"));
        }
        let d = check_dec(s, 1)?;
        let n = to_int(s, 2);
        push(s, value::round(d, n))?;
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.trim(d)`: without the trailing zeros of its fraction.
    fn dec_trim(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.trim(decimal)"));
        }
        let d = check_dec(s, 1)?;
        push(s, value::trim(d))?;
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.rescale(d, places)`: with exactly `places` digits after the
    /// point; the same number when that cannot be.
    fn dec_rescale(s: &mut Stack) {
        if s.top() < 2 {
            return Err(located(s, "usage: decimal.rescale(decimal, scale)"));
        }
        let d = check_dec(s, 1)?;
        let n = to_int(s, 2);
        push(s, value::rescale(d, n))?;
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.scale(d)`: the digits after the point.
    fn dec_scale(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.scale(decimal)"));
        }
        let d = check_dec(s, 1)?;
        s.push_number(value::scale(&d).into());
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.precision(d)`: the digits of its value.
    fn dec_precision(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.precision(decimal)"));
        }
        let d = check_dec(s, 1)?;
        s.push_number(value::precision(&d).into());
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.new(v)`: the decimal of a number, a number's text, an
    /// integer or float cdata, or a decimal (a copy).
    fn dec_new(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.new(value)"));
        }
        let d = to_dec(s, 1)?;
        push(s, d)?;
        Ok(1)
    }
}

lua_fn! {
    /// `decimal.is_decimal(v)`.
    fn dec_is_decimal(s: &mut Stack) {
        if s.top() < 1 {
            return Err(located(s, "usage: decimal.is_decimal(value)"));
        }
        let is = get(s, 1).is_some();
        s.push_bool(is);
        Ok(1)
    }
}
