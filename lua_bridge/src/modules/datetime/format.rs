//! `strftime` and `strptime` over datetimes, with Tarantool's tzcode
//! extensions (`src/lib/tzcode/strftime.c`, `strptime.c`): `%f` and
//! `%Nf` for the fraction, `%Z` the zone's name, `%z` also reads `Z`,
//! years of up to seven digits with a sign; the C locale's names.

use super::civil;
use super::value::Datetime;
use super::zones::{self, Found};

const WDAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const WEEKDAY: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MON: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const MONTH: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The broken-down local time of a datetime (`struct tnt_tm`).
struct Tm {
    year: i64,
    /// 1..=12.
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    /// 0 Sunday.
    wday: i64,
    /// From 0.
    yday: i64,
    nsec: i32,
    /// Seconds east of UTC.
    gmtoff: i64,
    tzindex: i16,
    /// Local seconds since the epoch.
    epoch: i64,
}

impl Tm {
    fn of(d: &Datetime) -> Tm {
        let secs = d.local_secs();
        let rd = civil::rd_of_secs(secs);
        let (year, mon, mday) = civil::ymd_from_rd(rd);
        let sod = secs.rem_euclid(civil::SECS_PER_DAY);
        Tm {
            year,
            mon,
            mday,
            hour: sod / 3600,
            min: sod / 60 % 60,
            sec: sod % 60,
            wday: civil::dow(rd) % 7,
            yday: civil::doy(rd) - 1,
            nsec: d.nsec,
            gmtoff: i64::from(d.tzoffset) * 60,
            tzindex: d.tzindex,
            epoch: secs,
        }
    }
}

/// `_yconv`: a year's century and two last digits as tzcode writes them.
fn yconv(out: &mut String, year: i64, top: bool, yy: bool) {
    // tm_year (years since 1900) plus the base, split as C divides.
    let a = year - 1900;
    let mut trail = a % 100;
    let mut lead = a / 100 + 19 + trail / 100;
    trail %= 100;
    if trail < 0 && lead > 0 {
        trail += 100;
        lead -= 1;
    } else if lead < 0 && trail > 0 {
        trail -= 100;
        lead += 1;
    }
    if top {
        if lead == 0 && trail < 0 {
            out.push_str("-0");
        } else {
            out.push_str(&format!("{lead:02}"));
        }
    }
    if yy {
        out.push_str(&format!("{:02}", trail.abs()));
    }
}

/// `d` formatted by `fmt` (`tnt_strftime`).
pub(crate) fn strftime(d: &Datetime, fmt: &[u8]) -> Vec<u8> {
    let t = Tm::of(d);
    let mut out = String::new();
    put(&mut out, fmt, &t);
    out.into_bytes()
}

fn put(out: &mut String, fmt: &[u8], t: &Tm) {
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' || i >= fmt.len() {
            out.push(c as char);
            continue;
        }
        let mut conv = fmt[i];
        i += 1;
        while matches!(conv, b'E' | b'O') && i < fmt.len() {
            conv = fmt[i];
            i += 1;
        }
        let mut width = 0usize;
        if conv.is_ascii_digit() {
            let start = i - 1;
            while i < fmt.len() && fmt[i].is_ascii_digit() {
                i += 1;
            }
            if fmt.get(i) != Some(&b'f') {
                let end = (i + 1).min(fmt.len());
                out.push_str(&String::from_utf8_lossy(&fmt[start..end]));
                i = end;
                continue;
            }
            width = std::str::from_utf8(&fmt[start..i])
                .ok()
                .and_then(|w| w.parse().ok())
                .filter(|w| *w <= 9)
                .unwrap_or(9);
            i += 1;
            conv = b'f';
        }
        let wd = t.wday as usize;
        let mo = (t.mon - 1) as usize;
        match conv {
            b'A' => out.push_str(WEEKDAY[wd]),
            b'a' => out.push_str(WDAY[wd]),
            b'B' => out.push_str(MONTH[mo]),
            b'b' | b'h' => out.push_str(MON[mo]),
            b'C' => yconv(out, t.year, true, false),
            b'c' => put(out, b"%a %b %e %H:%M:%S %Y", t),
            b'D' | b'x' => put(out, b"%m/%d/%y", t),
            b'd' => out.push_str(&format!("{:02}", t.mday)),
            b'e' => out.push_str(&format!("{:2}", t.mday)),
            b'F' => put(out, b"%Y-%m-%d", t),
            b'H' => out.push_str(&format!("{:02}", t.hour)),
            b'I' => out.push_str(&format!(
                "{:02}",
                if t.hour % 12 == 0 { 12 } else { t.hour % 12 }
            )),
            b'j' => out.push_str(&format!("{:03}", t.yday + 1)),
            b'k' => out.push_str(&format!("{:2}", t.hour)),
            b'l' => out.push_str(&format!(
                "{:2}",
                if t.hour % 12 == 0 { 12 } else { t.hour % 12 }
            )),
            b'M' => out.push_str(&format!("{:02}", t.min)),
            b'm' => out.push_str(&format!("{:02}", t.mon)),
            b'n' => out.push('\n'),
            b'p' => out.push_str(if t.hour >= 12 { "PM" } else { "AM" }),
            b'R' => put(out, b"%H:%M", t),
            b'r' => put(out, b"%I:%M:%S %p", t),
            b'S' => out.push_str(&format!("{:02}", t.sec)),
            b's' => out.push_str(&t.epoch.to_string()),
            b'f' => {
                let mut ns = t.nsec;
                if width == 0 {
                    if ns % 1_000_000 == 0 {
                        width = 3;
                        ns /= 1_000_000;
                    } else if ns % 1000 == 0 {
                        width = 6;
                        ns /= 1000;
                    } else {
                        width = 9;
                    }
                } else {
                    ns /= 10i32.pow(9 - width as u32);
                }
                out.push_str(&format!("{ns:0width$}"));
            }
            b'T' | b'X' => put(out, b"%H:%M:%S", t),
            b't' => out.push('\t'),
            b'U' => out.push_str(&format!("{:02}", (t.yday + 7 - t.wday) / 7)),
            b'u' => out.push_str(&format!("{}", if t.wday == 0 { 7 } else { t.wday })),
            b'V' | b'G' | b'g' => {
                let rd = civil::rd_from_ymd(t.year, t.mon, t.mday);
                let (y, w) = civil::iso_week(rd);
                match conv {
                    b'V' => out.push_str(&format!("{w:02}")),
                    b'g' => yconv(out, y, false, true),
                    _ => yconv(out, y, true, true),
                }
            }
            b'v' => put(out, b"%e-%b-%Y", t),
            b'W' => {
                let w = (t.yday + 7 - if t.wday != 0 { t.wday - 1 } else { 6 }) / 7;
                out.push_str(&format!("{w:02}"));
            }
            b'w' => out.push_str(&t.wday.to_string()),
            b'y' => yconv(out, t.year, false, true),
            b'Y' => yconv(out, t.year, true, true),
            b'Z' => {
                if t.tzindex != 0 {
                    out.push_str(zones::name(t.tzindex).unwrap_or(""));
                }
            }
            b'z' => {
                let (sign, a) = if t.gmtoff < 0 {
                    ('-', -t.gmtoff)
                } else {
                    ('+', t.gmtoff)
                };
                let m = a / 60;
                out.push(sign);
                out.push_str(&format!("{:04}", m / 60 * 100 + m % 60));
            }
            b'+' => put(out, b"%a %b %e %H:%M:%S %Z %Y", t),
            other => out.push(other as char),
        }
    }
}

/// What [`strptime`] read.
#[derive(Default)]
struct Parts {
    year: Option<i64>,
    century: Option<i64>,
    yy: Option<i64>,
    mon: Option<i64>,
    mday: Option<i64>,
    yday: Option<i64>,
    hour: i64,
    min: i64,
    sec: i64,
    pm: Option<bool>,
    nsec: i32,
    gmtoff: i64,
    tzindex: i16,
    epoch: Option<i64>,
}

/// Reads up to `n` digits (after an optional `-`) at `s[*i..]`.
fn number(s: &[u8], i: &mut usize, n: usize) -> Option<i64> {
    let neg = s.get(*i) == Some(&b'-');
    let mut j = *i + usize::from(neg);
    let start = j;
    let mut v = 0i64;
    while j < s.len() && j - start < n && s[j].is_ascii_digit() {
        v = v * 10 + i64::from(s[j] - b'0');
        j += 1;
    }
    if j == start {
        return None;
    }
    *i = j;
    Some(if neg { -v } else { v })
}

/// Reads one of `names` (either form, any case) at `s[*i..]`: its index.
fn name(s: &[u8], i: &mut usize, long: &[&str], short: &[&str]) -> Option<i64> {
    for names in [long, short] {
        for (k, n) in names.iter().enumerate() {
            let end = *i + n.len();
            if end <= s.len() && s[*i..end].eq_ignore_ascii_case(n.as_bytes()) {
                *i = end;
                return Some(k as i64);
            }
        }
    }
    None
}

/// `s` read by `fmt` (`datetime_strptime`): the datetime and how many
/// bytes were read, or `None`.
pub(crate) fn strptime(s: &[u8], fmt: &[u8]) -> Option<(Datetime, usize)> {
    let mut p = Parts::default();
    let i = scan(s, fmt, 0, &mut p)?;
    let year = match (p.year, p.century, p.yy) {
        (Some(y), _, _) => y,
        (None, Some(c), yy) => c * 100 + yy.unwrap_or(0),
        (None, None, Some(yy)) => yy + if yy < 69 { 2000 } else { 1900 },
        _ => 1970,
    };
    let rd = match (p.mon, p.yday, p.mday) {
        (None, Some(yd), _) => civil::rd_from_yd(year, yd)?,
        (Some(m), Some(yd), None) => {
            // The day of the month from the day of the year, which must
            // fall in the month's first 31 days.
            let mday = yd - (civil::rd_from_ymd(year, m, 1) - civil::rd_from_ymd(year, 1, 1));
            if !(1..=31).contains(&mday) {
                return None;
            }
            civil::rd_checked(year, m, mday)?
        }
        _ => civil::rd_checked(year, p.mon.unwrap_or(1), p.mday.unwrap_or(1))?,
    };
    let mut hour = p.hour;
    if let Some(pm) = p.pm {
        hour = hour % 12 + if pm { 12 } else { 0 };
    }
    let local = match p.epoch {
        Some(e) => e + p.gmtoff,
        None => civil::secs_of_rd(rd) + hour * 3600 + p.min * 60 + p.sec,
    };
    let d = Datetime {
        epoch: (local - p.gmtoff) as f64,
        nsec: p.nsec,
        tzoffset: (p.gmtoff / 60) as i16,
        tzindex: p.tzindex,
    };
    Some((d, i))
}

fn scan(s: &[u8], fmt: &[u8], mut i: usize, p: &mut Parts) -> Option<usize> {
    let mut f = 0;
    while f < fmt.len() {
        let c = fmt[f];
        f += 1;
        if c.is_ascii_whitespace() {
            while s.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            continue;
        }
        if c != b'%' {
            if s.get(i) != Some(&c) {
                return None;
            }
            i += 1;
            continue;
        }
        let mut conv = *fmt.get(f)?;
        f += 1;
        while matches!(conv, b'E' | b'O') {
            conv = *fmt.get(f)?;
            f += 1;
        }
        // `%Nf`: the width is read and ignored (all digits are taken).
        while conv.is_ascii_digit() {
            conv = *fmt.get(f)?;
            f += 1;
        }
        if !matches!(conv, b'n' | b't' | b'%' | b'Z' | b'z' | b'f') {
            while s.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
        }
        match conv {
            b'%' => {
                if s.get(i) != Some(&b'%') {
                    return None;
                }
                i += 1;
            }
            b'c' => i = scan(s, b"%a %b %e %H:%M:%S %Y", i, p)?,
            b'D' | b'x' => i = scan(s, b"%m/%d/%y", i, p)?,
            b'F' => i = scan(s, b"%Y-%m-%d", i, p)?,
            b'R' => i = scan(s, b"%H:%M", i, p)?,
            b'r' => i = scan(s, b"%I:%M:%S %p", i, p)?,
            b'T' | b'X' => i = scan(s, b"%H:%M:%S", i, p)?,
            b'v' => i = scan(s, b"%e-%b-%Y", i, p)?,
            b'+' => i = scan(s, b"%a %b %e %H:%M:%S %Z %Y", i, p)?,
            b'A' | b'a' => {
                name(s, &mut i, &WEEKDAY, &WDAY)?;
            }
            b'B' | b'b' | b'h' => p.mon = Some(name(s, &mut i, &MONTH, &MON)? + 1),
            b'C' => p.century = Some(number(s, &mut i, 2)?),
            b'd' | b'e' => p.mday = Some(number(s, &mut i, 2).filter(|d| (1..=31).contains(d))?),
            b'H' | b'k' => p.hour = number(s, &mut i, 2).filter(|h| (0..=23).contains(h))?,
            b'I' | b'l' => p.hour = number(s, &mut i, 2).filter(|h| (1..=12).contains(h))?,
            b'j' => p.yday = Some(number(s, &mut i, 3).filter(|d| (1..=366).contains(d))?),
            b'M' => p.min = number(s, &mut i, 2).filter(|m| (0..=59).contains(m))?,
            b'm' => p.mon = Some(number(s, &mut i, 2).filter(|m| (1..=12).contains(m))?),
            b'S' => p.sec = number(s, &mut i, 2).filter(|s| (0..=60).contains(s))?,
            b'p' => p.pm = Some(name(s, &mut i, &["PM", "AM"], &[]).map(|k| k == 0)?),
            b's' => p.epoch = Some(number(s, &mut i, 20).filter(|n| *n != 0)?),
            b'f' => {
                let start = i;
                while s.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                let frac = &s[start..(start + 9).min(i)];
                let v = frac.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0'));
                p.nsec = (v * 10i64.pow(9 - frac.len() as u32)) as i32;
            }
            b'Y' | b'G' => {
                if s.get(i).is_none_or(u8::is_ascii_whitespace) {
                    continue;
                }
                p.year = Some(number(s, &mut i, 7)?);
            }
            b'y' | b'g' => p.yy = Some(number(s, &mut i, 2)?),
            b'u' | b'w' | b'U' | b'W' | b'V' => {
                number(s, &mut i, 2)?;
            }
            b'n' | b't' => {
                while s.get(i).is_some_and(u8::is_ascii_whitespace) {
                    i += 1;
                }
            }
            b'Z' => {
                let len = s[i..].iter().take_while(|c| c.is_ascii_uppercase()).count();
                if len > 64 {
                    return None;
                }
                if len > 0 {
                    let Found::Zone(z, _) = zones::lookup(&s[i..i + len]) else {
                        return None;
                    };
                    let (off, _) = zones::offset_at(z, 0)?;
                    p.gmtoff = i64::from(off);
                    p.tzindex = z.id;
                    i += len;
                }
            }
            b'z' => i = zone_offset(s, i, p)?,
            _ => return None,
        }
    }
    Some(i)
}

/// `%z`: `Z`, or a sign and `hh` or `hhmm`.
fn zone_offset(s: &[u8], mut i: usize, p: &mut Parts) -> Option<usize> {
    let sign = match s.get(i)? {
        b'Z' => {
            p.gmtoff = 0;
            return Some(i + 1);
        }
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    i += 1;
    let mut v = 0i64;
    let mut len = 4;
    while len > 0 {
        match s.get(i) {
            Some(c) if c.is_ascii_digit() => {
                v = v * 10 + i64::from(c - b'0');
                i += 1;
            }
            _ if len == 2 => {
                v *= 100;
                break;
            }
            _ => return None,
        }
        len -= 1;
    }
    if v % 100 >= 60 {
        return None;
    }
    let off = sign * (v / 100 * 3600 + v % 100 * 60);
    if !(-12 * 3600..=14 * 3600).contains(&off) {
        return None;
    }
    p.gmtoff = off;
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let (d, n) = strptime(b"1970-01-01T03:00:00.125+0300", b"%Y-%m-%dT%H:%M:%S.%f%z").unwrap();
        assert_eq!(n, 28);
        assert_eq!((d.epoch, d.nsec, d.tzoffset), (0.0, 125_000_000, 180));
        assert_eq!(strftime(&d, b"%FT%T.%f%z"), b"1970-01-01T03:00:00.125+0300");
        let (d, _) = strptime(b"Thu Jan  1 03:00:00 1970", b"%c").unwrap();
        assert_eq!(d.epoch, 10800.0);
        assert_eq!(strftime(&d, b"%c"), b"Thu Jan  1 03:00:00 1970");
    }
}
