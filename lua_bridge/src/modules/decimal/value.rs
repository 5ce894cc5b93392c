//! [`Dec`]: Tarantool master's `decimal_t` (`src/lib/core/decimal.c`), its
//! arithmetic, text and MsgPack body; no Lua.
//!
//! The arithmetic is IBM's decNumber, the library Tarantool itself uses,
//! through the `dec` crate (Materialize's safe bindings over
//! `decnumber-sys`, which builds decNumber's C sources): every result, its
//! digits, rounding and exponent, and every text form is the one Tarantool
//! gives, not a lookalike. A pure-Rust decimal crate would not do:
//! `rust_decimal` holds 28 digits, `bigdecimal` has no ln, exp or pow to a
//! context precision, and neither rounds as decNumber's context does.
//!
//! As master: 76 digits ([`MAX_DIGITS`]; Tarantool 2.x had 38), adjusted
//! exponents within ±999999, halves rounded away from zero; an operation
//! whose result is not a finite number, or that over- or underflows past
//! rounding, fails (`None`).

use std::cmp::Ordering;

use dec::{Context, Decimal, Rounding};

/// Digits of a decimal (`DECIMAL_MAX_DIGITS`).
pub(crate) const MAX_DIGITS: i32 = 76;

/// The 3-digit units its coefficient holds (`DECNUMUNITS` for
/// [`MAX_DIGITS`]).
const UNITS: usize = 26;

/// Largest adjusted exponent (`DEC_MAX_MATH`).
const MAX_EXP: i32 = 999_999;

/// Tarantool's `decimal_t`: a decNumber of [`UNITS`] units. Its C
/// declaration, for the FFI, is [`C_DECL`] (master's).
pub(crate) type Dec = Decimal<UNITS>;

/// The C declaration of [`Dec`], as master's `tarantool_lua_decimal_init`.
pub(crate) const C_DECL: &str = "typedef struct { int32_t digits; int32_t exponent; \
    uint8_t bits; uint16_t lsu[26]; } decimal_t;";

/// Master's context: [`MAX_DIGITS`] digits, exponents within
/// ±[`MAX_EXP`], halves away from zero, no traps, no clamping.
fn context() -> Context<Dec> {
    let mut c = Context::<Dec>::default();
    let _ = c.set_precision(MAX_DIGITS as usize);
    let _ = c.set_max_exponent(MAX_EXP as isize);
    let _ = c.set_min_exponent(-MAX_EXP as isize);
    c.set_rounding(Rounding::HalfUp);
    c.set_clamp(false);
    c
}

/// Master's `decimal_check_status`: `d` unless the operation signalled
/// anything but rounding (inexact, rounded, subnormal, underflow, clamped)
/// or gave no finite number.
fn checked(c: &Context<Dec>, d: Dec) -> Option<Dec> {
    let st = c.status();
    let bad = st.conversion_syntax()
        || st.division_by_zero()
        || st.division_impossible()
        || st.division_undefined()
        || st.insufficient_storage()
        || st.invalid_context()
        || st.invalid_operation()
        || st.overflow();
    (!bad && d.is_finite()).then_some(d)
}

/// Parses a number's text (`decimal_from_string`: decNumber's syntax,
/// `1.5`, `-2e3`, ...; rounded to [`MAX_DIGITS`]); `None` for anything
/// else, infinities and NaN included.
pub(crate) fn parse(text: &[u8]) -> Option<Dec> {
    let mut c = context();
    let d = c.parse(text).ok()?;
    checked(&c, d)
}

/// A double as master's `decimal_from_double`: its 15 significant digits
/// (`%.15g`, `DBL_DIG`); `None` for infinities and NaN.
pub(crate) fn from_f64(v: f64) -> Option<Dec> {
    if !v.is_finite() {
        return None;
    }
    let mut buf = [0u8; 40];
    // SAFETY: snprintf writes at most `buf.len()` bytes (NUL included);
    // the format takes an int and a double, which are given.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%.*g".as_ptr(),
            15 as libc::c_int,
            v,
        )
    };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    parse(&buf[..n])
}

/// An integer, exactly.
pub(crate) fn from_i64(v: i64) -> Dec {
    context().from_i64(v)
}

/// An unsigned integer, exactly.
pub(crate) fn from_u64(v: u64) -> Dec {
    context().from_u64(v)
}

/// A binary operation of the Lua metatable.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

/// `a op b` in master's context; `None` when it fails (division by zero,
/// a fractional power of a negative number, overflow, ...).
pub(crate) fn binop(op: BinOp, mut a: Dec, b: &Dec) -> Option<Dec> {
    let mut c = context();
    match op {
        BinOp::Add => c.add(&mut a, b),
        BinOp::Sub => c.sub(&mut a, b),
        BinOp::Mul => c.mul(&mut a, b),
        BinOp::Div => c.div(&mut a, b),
        BinOp::Rem => c.rem(&mut a, b),
        BinOp::Pow => c.pow(&mut a, b),
    }
    checked(&c, a)
}

/// A function of one decimal of the module.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Func {
    Log10,
    Ln,
    Exp,
    Sqrt,
    Abs,
    Minus,
}

/// `f(a)` in master's context; `None` when it fails (the logarithm of a
/// number that is not positive, the root of a negative one, overflow).
pub(crate) fn func(f: Func, mut a: Dec) -> Option<Dec> {
    let mut c = context();
    match f {
        Func::Log10 => c.log10(&mut a),
        Func::Ln => {
            // As master: a lower emin, so that ln(1 + 10^-75) converges,
            // then the result rounded back to 75 decimal places.
            let _ = c.set_min_exponent(-MAX_DIGITS as isize);
            c.ln(&mut a);
            let _ = c.set_min_exponent(-MAX_EXP as isize);
            let d = checked(&c, a)?;
            return Some(round(d, MAX_DIGITS - 1));
        }
        Func::Exp => c.exp(&mut a),
        Func::Sqrt => c.sqrt(&mut a),
        Func::Abs => c.abs(&mut a),
        Func::Minus => c.minus(&mut a),
    }
    checked(&c, a)
}

/// `decimal_compare`: the order of two finite decimals.
pub(crate) fn compare(a: &Dec, b: &Dec) -> Ordering {
    context().partial_cmp(a, b).unwrap_or(Ordering::Equal)
}

/// `decimal_precision`: the digits of its value, those left of the point
/// included (`0.001` has 3, `1E+5` has 6).
pub(crate) fn precision(d: &Dec) -> i32 {
    let (digits, e) = (d.digits() as i32, d.exponent());
    if e <= 0 {
        digits.max(-e)
    } else {
        digits + e
    }
}

/// `decimal_scale`: the digits after the point.
pub(crate) fn scale(d: &Dec) -> i32 {
    (-d.exponent()).max(0)
}

/// `decimal_round`: rounded (halves away from zero) to `places` digits
/// after the point; the same number for `places` out of `0..=76` or not
/// below its scale.
pub(crate) fn round(mut d: Dec, places: i32) -> Dec {
    if !(0..=MAX_DIGITS).contains(&places) || places >= scale(&d) {
        return d;
    }
    let ndig = (precision(&d) - scale(&d) + places).max(1);
    let mut c = Context::<Dec>::default();
    let _ = c.set_precision(ndig as usize);
    let _ = c.set_max_exponent(ndig as isize);
    let _ = c.set_min_exponent(if places != 0 { -1 } else { 0 });
    c.set_rounding(Rounding::HalfUp);
    c.set_clamp(false);
    c.plus(&mut d);
    d
}

/// `decimal_trim`: without the trailing zeros of its fraction.
pub(crate) fn trim(mut d: Dec) -> Dec {
    d.trim();
    d
}

/// `decimal_rescale`: with exactly `places` digits after the point
/// (rounded when fewer than it has); the same number when `places` is
/// negative or the digits would not fit.
pub(crate) fn rescale(mut d: Dec, places: i32) -> Dec {
    if places < 0 {
        return d;
    }
    if places <= scale(&d) {
        return round(d, places);
    }
    let delta = places + d.exponent();
    if places > MAX_DIGITS || d.digits() as i32 + delta > MAX_DIGITS {
        return d;
    }
    let mut c = context();
    let e = c.from_i64(-i64::from(places));
    c.rescale(&mut d, &e);
    d
}

/// Its text: decNumber's scientific string (`decimal_to_string`: `1.5`,
/// `1E+5`, `1.0E+2`, `-0.001`).
pub(crate) fn to_text(d: &Dec) -> String {
    d.to_string()
}

/// Appends its MsgPack extension 1 body (`decimal_pack`): the scale, as a
/// MsgPack integer, then the packed BCD digits and sign.
pub(crate) fn pack(d: &Dec, out: &mut Vec<u8>) {
    let scale = -d.exponent();
    let mut w = Vec::with_capacity(9);
    if scale < 0 {
        let _ = rmp::encode::write_sint(&mut w, i64::from(scale));
    } else {
        let _ = rmp::encode::write_uint(&mut w, scale as u64);
    }
    out.extend_from_slice(&w);
    let mut d = *d;
    if let Some((bcd, _)) = d.to_packed_bcd() {
        out.extend_from_slice(&bcd);
    }
}

/// The decimal of a MsgPack extension 1 body (`decimal_unpack`): `None`
/// for a body that is not a scale and packed digits within 76 digits and
/// the exponent range.
pub(crate) fn unpack(body: &[u8]) -> Option<Dec> {
    let mut r = body;
    let m = rmp::decode::read_marker(&mut r).ok()?;
    use rmp::Marker as M;
    let scale: i64 = match m {
        M::FixPos(v) => v.into(),
        M::FixNeg(v) => v.into(),
        M::U8 => take::<1>(&mut r)?[0].into(),
        M::U16 => u16::from_be_bytes(take(&mut r)?).into(),
        M::U32 => u32::from_be_bytes(take(&mut r)?).into(),
        M::U64 => i64::try_from(u64::from_be_bytes(take(&mut r)?)).ok()?,
        M::I8 => i8::from_be_bytes(take(&mut r)?).into(),
        M::I16 => i16::from_be_bytes(take(&mut r)?).into(),
        M::I32 => i32::from_be_bytes(take(&mut r)?).into(),
        M::I64 => i64::from_be_bytes(take(&mut r)?),
        _ => return None,
    };
    // Master keeps the scale in an int32_t.
    let scale = scale as i32;
    if r.is_empty() || r.len() > (UNITS * 3).div_ceil(2) {
        return None;
    }
    let d = Dec::from_packed_bcd(r, scale).ok()?;
    let digits = d.digits() as i32;
    let adj = d.exponent() + digits - 1;
    let emin_sub = -MAX_EXP - MAX_DIGITS + 1;
    let fits = digits <= MAX_DIGITS
        && adj <= MAX_EXP
        && (adj >= -MAX_EXP || (adj >= emin_sub && digits <= adj - emin_sub + 1));
    fits.then_some(d)
}

fn take<const N: usize>(r: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = r.split_at_checked(N)?;
    *r = rest;
    head.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        parse(s.as_bytes()).unwrap()
    }

    fn t(x: Option<Dec>) -> String {
        to_text(&x.unwrap())
    }

    #[test]
    fn results_are_master_s() {
        // Each from test/app/decimal.result of Tarantool master.
        let (a, b) = (d("10"), d("0.1"));
        assert_eq!(t(binop(BinOp::Mul, a, &b)), "1.0");
        assert_eq!(t(binop(BinOp::Div, a, &b)), "1.0E+2");
        assert_eq!(
            t(binop(BinOp::Pow, a, &b)),
            "1.258925411794167210423954106395800606093617409466931069107923019526647615783"
        );
        assert_eq!(t(binop(BinOp::Pow, b, &a)), "1E-10");
        assert_eq!(
            t(func(Func::Ln, a)),
            "2.302585092994045684017991454684364207601101488628772976033327900967572609677"
        );
        assert_eq!(t(func(Func::Log10, a)), "1");
        assert_eq!(
            t(func(Func::Exp, d("87"))),
            "60760302250568721495223289381302760752.61375325962121014840857614538080439681"
        );
        assert!(func(Func::Ln, d("0")).is_none() && func(Func::Sqrt, d("-5")).is_none());
        assert!(binop(BinOp::Div, d("1"), &d("0")).is_none());
        assert!(binop(BinOp::Pow, d("-13"), &d("2.5")).is_none());
        assert_eq!(t(from_f64(2f64.powi(64))), "1.84467440737096E+19");
        assert_eq!(t(from_f64(2f64.powi(-20))), "9.5367431640625E-7");
        assert!(parse(b"inf").is_none() && parse(b"NaN").is_none() && parse(b"1x").is_none());
        let x = d("1.1234567891234567891234567891234567891");
        assert_eq!((precision(&x), scale(&x)), (38, 37));
        assert_eq!(to_text(&round(x, 7)), "1.1234568");
        assert_eq!(to_text(&round(d("9.9"), 0)), "1E+1");
        assert_eq!(to_text(&round(d("99.9"), 0)), "1.0E+2");
        let e5 = d("1e5");
        assert_eq!(to_text(&rescale(e5, 10)), "100000.0000000000");
        assert_eq!(to_text(&rescale(e5, 71)), "1E+5");
        assert_eq!(to_text(&trim(rescale(e5, 10))), "100000");
        let m = d("172.51");
        assert_eq!(t(binop(BinOp::Rem, m, &d("0.13"))), "0.00");
        assert_eq!(t(binop(BinOp::Rem, d("720"), &m)), "29.96");
        let nines = d(&"9".repeat(76));
        assert_eq!(precision(&nines), 76);
        assert_eq!(t(binop(BinOp::Add, nines, &d("0.4"))), "9".repeat(76));
    }

    #[test]
    fn msgpack_bodies_round_trip() {
        for s in [
            "1",
            "-1",
            "0.1234567",
            "1e37",
            "1e-38",
            "123.4567",
            "-0",
            "1E+5",
        ] {
            let x = d(s);
            let mut body = Vec::new();
            pack(&x, &mut body);
            let y = unpack(&body).unwrap();
            assert_eq!(to_text(&y), to_text(&x), "{s}");
        }
        // 12.5: scale 1, digits 125 and the plus sign.
        let mut body = Vec::new();
        pack(&d("12.5"), &mut body);
        assert_eq!(body, [1, 0x12, 0x5c]);
        assert!(unpack(&[0xc0, 0, 0, 0]).is_none() && unpack(&[1]).is_none());
    }
}
