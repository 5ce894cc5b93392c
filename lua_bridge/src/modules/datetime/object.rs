//! The datetime and interval values of a Lua state and the C functions
//! `datetime.lua` builds the module from (its `internal` table): the
//! calendar, text, parsing and zone work, in Rust; the argument checks and
//! the module's shape are in the Lua chunk.
//!
//! Per-cord state: the two value types ([`DatetimeTypes`], a part of the
//! cord context), made when the module is first loaded.

use std::cell::Cell;
use std::ffi::c_int;

use super::civil::{self, Adjust};
use super::value::{Datetime, Interval};
use super::{format, parse, zones};
use crate::modules::ctype::{Slot, ValueType};
use crate::raw::context::Part;
use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};

/// Per-cord state of `datetime` (a part of the cord context): its value
/// types, once the module was loaded.
#[derive(Default)]
pub(crate) struct DatetimeTypes {
    /// The datetime type.
    dt: Cell<Option<ValueType<Datetime>>>,
    /// The interval type.
    iv: Cell<Option<ValueType<Interval>>>,
}

/// This cord's datetime type.
pub(crate) static DT_SLOT: Slot<Datetime> = Slot::in_context(
    || DatetimeTypes::try_with(|t| t.dt.get()).flatten(),
    |v| {
        DatetimeTypes::try_with(|t| t.dt.set(v));
    },
    "datetime",
);
/// This cord's interval type.
pub(crate) static IV_SLOT: Slot<Interval> = Slot::in_context(
    || DatetimeTypes::try_with(|t| t.iv.get()).flatten(),
    |v| {
        DatetimeTypes::try_with(|t| t.iv.set(v));
    },
    "datetime",
);

/// The datetime at `idx`, if the value there is one.
pub(crate) fn get_dt(s: &mut Stack, idx: c_int) -> Option<Datetime> {
    DT_SLOT.value_at(s, idx)
}

/// The interval at `idx`, if the value there is one.
pub(crate) fn get_iv(s: &mut Stack, idx: c_int) -> Option<Interval> {
    IV_SLOT.value_at(s, idx)
}

/// The functions `datetime.lua` is given.
pub(super) const INTERNAL: &[Reg] = &[
    (c"dt_new", dt_new),
    (c"dt_get", dt_get),
    (c"dt_set", dt_set),
    (c"iv_new", iv_new),
    (c"iv_get", iv_get),
    (c"is_dt", is_dt),
    (c"is_iv", is_iv),
    (c"dt_text", dt_text),
    (c"iv_text", iv_text),
    (c"strftime", strftime),
    (c"fields", fields),
    (c"rd_from_ymd", rd_from_ymd),
    (c"days_in_month", days_in_month),
    (c"parse_full", parse_full),
    (c"parse_date", parse_date),
    (c"parse_offset", parse_offset),
    (c"parse_tz", parse_tz),
    (c"strptime", strptime),
    (c"increment", increment),
    (c"now", now),
];

fn num(s: &Stack, idx: c_int) -> f64 {
    s.to_number(idx).unwrap_or(0.0)
}

/// Pushes `n` as an integer when it is one (Lua 5.4 then prints no `.0`,
/// as LuaJIT prints none).
fn push_num(s: &mut Stack, n: f64) {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        s.push_int(n as i64);
    } else {
        s.push_number(n);
    }
}

fn push_dt(s: &mut Stack, d: Datetime) -> LResult<()> {
    DT_SLOT.push(s, d)
}

lua_fn! {
    /// `dt_new(epoch, nsec, tzoffset, tzindex)`: a new datetime.
    fn dt_new(s: &mut Stack) {
        let d = Datetime {
            epoch: num(s, 1),
            nsec: num(s, 2) as i32,
            tzoffset: num(s, 3) as i16,
            tzindex: num(s, 4) as i16,
        };
        push_dt(s, d)?;
        Ok(1)
    }
}

lua_fn! {
    /// `dt_get(d)`: its epoch, nsec, tzoffset and tzindex; nothing for a
    /// value that is no datetime.
    fn dt_get(s: &mut Stack) {
        let Some(d) = get_dt(s, 1) else { return Ok(0) };
        push_num(s, d.epoch);
        s.push_int(d.nsec.into());
        s.push_int(d.tzoffset.into());
        s.push_int(d.tzindex.into());
        Ok(4)
    }
}

lua_fn! {
    /// `dt_set(d, epoch, nsec, tzoffset, tzindex)`: changes the datetime in
    /// place.
    fn dt_set(s: &mut Stack) {
        let Some(t) = DT_SLOT.get() else { return Ok(0) };
        let Some((p, konst)) = t.ptr(s, 1) else { return Ok(0) };
        if konst {
            return Err(Raise::illegal("datetime: the value is constant"));
        }
        let d = Datetime {
            epoch: num(s, 2),
            nsec: num(s, 3) as i32,
            tzoffset: num(s, 4) as i16,
            tzindex: num(s, 5) as i16,
        };
        // SAFETY: `p` is the payload of the value at index 1, which stays on
        // the stack (raw rule 6); nothing else holds a reference to it.
        unsafe { p.write(d) };
        Ok(0)
    }
}

lua_fn! {
    /// `iv_new(year, month, week, day, hour, min, sec, nsec, adjust)`.
    fn iv_new(s: &mut Stack) {
        let iv = Interval {
            year: num(s, 1) as i32,
            month: num(s, 2) as i32,
            week: num(s, 3) as i32,
            day: num(s, 4),
            hour: num(s, 5),
            min: num(s, 6),
            sec: num(s, 7),
            nsec: num(s, 8) as i32,
            adjust: num(s, 9) as i32,
        };
        IV_SLOT.push(s, iv)?;
        Ok(1)
    }
}

lua_fn! {
    /// `iv_get(iv)`: its fields in `iv_new`'s order; nothing for a value
    /// that is no interval.
    fn iv_get(s: &mut Stack) {
        let Some(iv) = get_iv(s, 1) else { return Ok(0) };
        for n in [iv.year.into(), iv.month.into(), iv.week.into(), iv.day, iv.hour, iv.min,
                  iv.sec, iv.nsec.into(), iv.adjust.into()] {
            push_num(s, n);
        }
        Ok(9)
    }
}

lua_fn! {
    /// `is_dt(v)`: whether `v` is a datetime.
    fn is_dt(s: &mut Stack) {
        let is = get_dt(s, 1).is_some();
        s.push_bool(is);
        Ok(1)
    }
}

lua_fn! {
    /// `is_iv(v)`: whether `v` is an interval.
    fn is_iv(s: &mut Stack) {
        let is = get_iv(s, 1).is_some();
        s.push_bool(is);
        Ok(1)
    }
}

lua_fn! {
    /// `dt_text(d)`: its ISO 8601 text.
    fn dt_text(s: &mut Stack) {
        let d = get_dt(s, 1).unwrap_or_default();
        s.push_str(&d.text());
        Ok(1)
    }
}

lua_fn! {
    /// `iv_text(iv)`: its text.
    fn iv_text(s: &mut Stack) {
        let iv = get_iv(s, 1).unwrap_or_default();
        s.push_str(&iv.text());
        Ok(1)
    }
}

lua_fn! {
    /// `strftime(d, fmt)`: `d` formatted.
    fn strftime(s: &mut Stack) {
        let d = get_dt(s, 1).unwrap_or_default();
        let out = format::strftime(&d, s.to_str(2).unwrap_or_default());
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `fields(d)`: its local year, month, day, hour, min, sec, yday, wday
    /// (1 Sunday) and isdst.
    fn fields(s: &mut Stack) {
        let d = get_dt(s, 1).unwrap_or_default();
        let secs = d.local_secs();
        let rd = civil::rd_of_secs(secs);
        let (y, m, day) = civil::ymd_from_rd(rd);
        let sod = secs.rem_euclid(civil::SECS_PER_DAY);
        let dst = d.tzindex != 0
            && zones::offset_of_id(d.tzindex, d.epoch as i64).is_some_and(|(_, dst)| dst);
        for n in [y, m, day, sod / 3600, sod / 60 % 60, sod % 60, civil::doy(rd),
                  civil::dow(rd) % 7 + 1] {
            s.push_int(n);
        }
        s.push_bool(dst);
        Ok(9)
    }
}

lua_fn! {
    /// `rd_from_ymd(y, m, d)`: the Rata Die day number, or nil when the
    /// date is invalid or out of range.
    fn rd_from_ymd(s: &mut Stack) {
        let (y, m, d) = (num(s, 1) as i64, num(s, 2) as i64, num(s, 3) as i64);
        match civil::rd_checked(y, m, d) {
            Some(rd) => s.push_int(rd),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `days_in_month(y, m)`.
    fn days_in_month(s: &mut Stack) {
        let n = civil::days_in_month(num(s, 1) as i64, num(s, 2) as i64);
        s.push_int(n);
        Ok(1)
    }
}

lua_fn! {
    /// `parse_full(str)`: the datetime and its length, or nil and the
    /// error code (0, -1, `-TZ_AMBIGUOUS`, `-TZ_NYI`).
    fn parse_full(s: &mut Stack) {
        let r = parse::full(s.to_str(1).unwrap_or_default());
        match r {
            Ok((d, len)) => {
                push_dt(s, d)?;
                s.push_int(len as i64);
            }
            Err(code) => {
                s.push_nil();
                s.push_int(code.into());
            }
        }
        Ok(2)
    }
}

lua_fn! {
    /// `parse_date(str)`: the day number of the date at its start and the
    /// date's length, or nil.
    fn parse_date(s: &mut Stack) {
        match parse::date(s.to_str(1).unwrap_or_default()) {
            Some((rd, len)) => {
                s.push_int(rd);
                s.push_int(len as i64);
                Ok(2)
            }
            None => {
                s.push_nil();
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `parse_offset(str)`: the offset in minutes and its length; length 0
    /// when there is none.
    fn parse_offset(s: &mut Stack) {
        let (off, len) = parse::offset(s.to_str(1).unwrap_or_default()).unwrap_or((0, 0));
        s.push_int(off.into());
        s.push_int(len as i64);
        Ok(2)
    }
}

lua_fn! {
    /// `parse_tz(name, base)`: length (or the error code), offset in
    /// minutes and zone id of a zone at local second `base`.
    fn parse_tz(s: &mut Stack) {
        let base = num(s, 2) as i64;
        let r = parse::tz_suffix(s.to_str(1).unwrap_or_default(), base);
        match r {
            Ok((off, id, len)) => {
                s.push_int(len as i64);
                s.push_int(off.into());
                s.push_int(id.into());
                Ok(3)
            }
            Err(code) => {
                s.push_int(code.into());
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `strptime(str, fmt)`: the datetime and the length read, or nil.
    fn strptime(s: &mut Stack) {
        let fmt = s.to_str(2).unwrap_or_default().to_vec();
        let r = format::strptime(s.to_str(1).unwrap_or_default(), &fmt);
        match r {
            Some((d, len)) => {
                push_dt(s, d)?;
                s.push_int(len as i64);
                Ok(2)
            }
            None => {
                s.push_nil();
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `increment(d, direction, iv)`: `d` moved by `iv` (`direction` 1 or
    /// -1) in place (`datetime_increment_by`); 0, or -1/1 when the result
    /// would be out of range below/above.
    fn increment(s: &mut Stack) {
        let (Some(d), Some(iv)) = (get_dt(s, 1), get_iv(s, 3)) else { return Ok(0) };
        let dir = num(s, 2) as i64;
        match increment_by(&d, dir, &iv) {
            Ok(nd) => {
                if let Some((p, false)) = DT_SLOT.get().and_then(|t| t.ptr(s, 1)) {
                    // SAFETY: `p` is the payload of the value at index 1,
                    // on the stack (raw rule 6), referenced by nothing else.
                    unsafe { p.write(nd) };
                }
                s.push_int(0);
            }
            Err(rc) => s.push_int(rc),
        }
        Ok(1)
    }
}

/// -1, 0 or 1 as `v` is below, in or above `lo..=hi`.
fn verify(v: i64, lo: i64, hi: i64) -> i64 {
    if v < lo {
        -1
    } else if v > hi {
        1
    } else {
        0
    }
}

/// Checks `v` against the range of day numbers.
fn verify_rd(v: f64) -> Result<(), i64> {
    match verify(v as i64, civil::MIN_RD, civil::MAX_RD) {
        0 => Ok(()),
        rc => Err(rc),
    }
}

/// `d` moved by `dir` times `iv` (`datetime_increment_by`).
fn increment_by(d: &Datetime, dir: i64, iv: &Interval) -> Result<Datetime, i64> {
    let mut secs = d.local_secs();
    let mut rd = civil::rd_of_secs(secs);
    let adjust = Adjust::from_i64(iv.adjust.into()).unwrap_or(Adjust::Limit);
    let mut ymd = false;
    let fdir = dir as f64;
    if iv.year != 0 {
        verify_rd(rd as f64 + fdir * f64::from(iv.year) * 365.25)?;
        rd = civil::add_months(rd, dir * i64::from(iv.year) * 12, adjust);
        ymd = true;
    }
    if iv.month != 0 {
        verify_rd(rd as f64 + fdir * f64::from(iv.month) * 365.25 / 12.0)?;
        rd = civil::add_months(rd, dir * i64::from(iv.month), adjust);
        ymd = true;
    }
    if iv.week != 0 {
        verify_rd(rd as f64 + fdir * f64::from(iv.week) * 7.0)?;
        rd += dir * i64::from(iv.week) * 7;
        ymd = true;
    }
    if iv.day as i64 != 0 {
        verify_rd(rd as f64 + fdir * (iv.day as i64) as f64)?;
        rd += dir * iv.day as i64;
        ymd = true;
    }
    if ymd {
        // C's `%` keeps the sign of the dividend.
        secs = civil::secs_of_rd(rd) + secs % civil::SECS_PER_DAY;
    }
    for (n, unit) in [
        (iv.hour as i64, 3600),
        (iv.min as i64, 60),
        (iv.sec as i64, 1),
    ] {
        if n != 0 {
            let next = secs.saturating_add(dir.saturating_mul(n).saturating_mul(unit));
            match verify(next, civil::MIN_EPOCH, civil::MAX_EPOCH) {
                0 => secs = next,
                rc => return Err(rc),
            }
        }
    }
    let mut nsec = i64::from(d.nsec) + dir * i64::from(iv.nsec);
    secs += nsec.div_euclid(1_000_000_000);
    nsec = nsec.rem_euclid(1_000_000_000);
    // C's division truncates toward zero.
    match verify(
        (secs + civil::EPOCH_RD * civil::SECS_PER_DAY) / civil::SECS_PER_DAY,
        civil::MIN_RD,
        civil::MAX_RD,
    ) {
        0 => {}
        rc => return Err(rc),
    }
    let mut offset = i64::from(d.tzoffset);
    if d.tzindex != 0 {
        if let Some((off, _)) = zones::offset_of_id(d.tzindex, secs) {
            offset = i64::from(off) / 60;
        }
    }
    Ok(Datetime {
        epoch: (secs - offset * 60) as f64,
        nsec: nsec as i32,
        tzoffset: offset as i16,
        tzindex: d.tzindex,
    })
}

lua_fn! {
    /// `now()`: the current time with the local zone's offset
    /// (`datetime_now`).
    fn now(s: &mut Stack) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let secs = t.as_secs() as libc::time_t;
        // SAFETY: `tm` is a plain C struct that `localtime_r` fills.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live locals.
        let ok = !unsafe { libc::localtime_r(&secs, &mut tm) }.is_null();
        let d = Datetime {
            epoch: secs as f64,
            nsec: (t.subsec_micros() * 1000) as i32,
            tzoffset: if ok { (tm.tm_gmtoff / 60) as i16 } else { 0 },
            tzindex: 0,
        };
        push_dt(s, d)?;
        Ok(1)
    }
}
