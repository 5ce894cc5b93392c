//! ISO 8601 text into datetimes, as Tarantool's `c-dt` parsers and
//! `datetime_parse_full` read it: dates (`2012-12-24`, `20121224`,
//! `2012-359`, `2012-W52-1`, `2012-Q4-85`, signed and long years in the
//! extended forms), times (`23:59:59.123`, `235959`), zone offsets (`Z`,
//! `+03`, `+0300`, `+03:00`) and zone names.

use super::civil::{self, MAX_RD, MIN_RD};
use super::value::Datetime;
use super::zones::{self, Found};

/// Digits at the start of `s`.
fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The number written by `s` (all digits).
fn num(s: &[u8]) -> i64 {
    s.iter().fold(0i64, |n, c| {
        n.saturating_mul(10).saturating_add(i64::from(c - b'0'))
    })
}

/// Whether the byte at `i` of `s` is a digit.
fn digit_at(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// A date at the start of `s`: its day number and length
/// (`dt_parse_iso_date`); `None` when there is none or it is invalid.
pub(crate) fn date(s: &[u8]) -> Option<(i64, usize)> {
    let signed = matches!(s.first(), Some(b'-' | b'+'));
    let start = usize::from(signed);
    let n = digits(&s[start..]);
    let ydigits = &s[start..start + n];
    let after = start + n;
    if !signed && s.get(after) != Some(&b'-') {
        // The basic forms.
        let (rd, len) = match (n, s.get(after)) {
            (8, _) => (
                civil::rd_checked(num(&s[..4]), num(&s[4..6]), num(&s[6..8]))?,
                8,
            ),
            (7, _) => (civil::rd_from_yd(num(&s[..4]), num(&s[4..7]))?, 7),
            (4, Some(b'W')) if digits(&s[5..]) == 3 => (
                civil::rd_from_ywd(num(&s[..4]), num(&s[5..7]), num(&s[7..8]))?,
                8,
            ),
            (4, Some(b'Q')) if digits(&s[5..]) == 3 => (
                civil::rd_from_yqd(num(&s[..4]), num(&s[5..6]), num(&s[6..8]))?,
                8,
            ),
            _ => return None,
        };
        return in_range(rd, len);
    }
    if !(3..=7).contains(&n) || (!signed && n < 4) || s.get(after) != Some(&b'-') {
        return None;
    }
    let year = if s[0] == b'-' {
        -num(ydigits)
    } else {
        num(ydigits)
    };
    let rest = &s[after + 1..];
    let base = after + 1;
    let (rd, len) = match rest.first() {
        Some(b'W') => {
            if digits(&rest[1..]) != 2 || rest.get(3) != Some(&b'-') || digits(&rest[4..]) != 1 {
                return None;
            }
            (
                civil::rd_from_ywd(year, num(&rest[1..3]), num(&rest[4..5]))?,
                base + 5,
            )
        }
        Some(b'Q') => {
            if digits(&rest[1..]) != 1 || rest.get(2) != Some(&b'-') || digits(&rest[3..]) != 2 {
                return None;
            }
            (
                civil::rd_from_yqd(year, num(&rest[1..2]), num(&rest[3..5]))?,
                base + 5,
            )
        }
        _ => match digits(rest) {
            2 if rest.get(2) == Some(&b'-') && digits(&rest[3..]) == 2 => (
                civil::rd_checked(year, num(&rest[..2]), num(&rest[3..5]))?,
                base + 5,
            ),
            3 => (civil::rd_from_yd(year, num(&rest[..3]))?, base + 3),
            _ => return None,
        },
    };
    in_range(rd, len)
}

fn in_range(rd: i64, len: usize) -> Option<(i64, usize)> {
    (MIN_RD..=MAX_RD).contains(&rd).then_some((rd, len))
}

/// A time of day at the start of `s`: seconds of the day, nanoseconds and
/// length (`dt_parse_iso_time`): `hh[:mm[:ss]]` or `hh[mm[ss]]`, then a
/// fraction after `.` or `,` (digits past the ninth are read and dropped).
pub(crate) fn time(s: &[u8]) -> Option<(i64, i32, usize)> {
    if digits(s) < 2 {
        return None;
    }
    let h = num(&s[..2]);
    // How many of hh, mm, ss were read: a fraction is one of the last.
    let (mut m, mut sec, mut i, mut parts) = (0, 0, 2, 1);
    if s.get(2) == Some(&b':') {
        if digits(&s[3..]) != 2 {
            return None;
        }
        m = num(&s[3..5]);
        (i, parts) = (5, 2);
        if s.get(5) == Some(&b':') {
            if digits(&s[6..]) != 2 {
                return None;
            }
            sec = num(&s[6..8]);
            (i, parts) = (8, 3);
        }
    } else {
        match digits(s) {
            2 => {}
            4 => (m, i, parts) = (num(&s[2..4]), 4, 2),
            6 => (m, sec, i, parts) = (num(&s[2..4]), num(&s[4..6]), 6, 3),
            _ => return None,
        }
    }
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let mut nsec = 0i64;
    if matches!(s.get(i), Some(b'.' | b',')) && digit_at(s, i + 1) {
        let n = digits(&s[i + 1..]);
        let frac = &s[i + 1..i + 1 + n.min(9)];
        // The fraction of the last unit read, in nanoseconds.
        let unit: i64 = [3600, 60, 1][parts - 1];
        let ns = num(frac) * 10i64.pow(9 - frac.len() as u32) * unit;
        let extra = ns / 1_000_000_000;
        nsec = ns % 1_000_000_000;
        sec += extra;
        i += 1 + n;
    }
    Some((h * 3600 + m * 60 + sec, nsec as i32, i))
}

/// A zone offset at the start of `s`: minutes and length
/// (`dt_parse_iso_zone_lenient`): `Z`, `z`, `+hh`, `+hhmm`, `+hh:mm`.
pub(crate) fn offset(s: &[u8]) -> Option<(i32, usize)> {
    let sign = match s.first()? {
        b'Z' | b'z' => return Some((0, 1)),
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let n = digits(&s[1..]);
    let (h, m, len) = match n {
        2 if s.get(3) == Some(&b':') => {
            if digits(&s[4..]) != 2 {
                return None;
            }
            (num(&s[1..3]), num(&s[4..6]), 6)
        }
        2 => (num(&s[1..3]), 0, 3),
        4 => (num(&s[1..3]), num(&s[3..5]), 5),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some((sign * (h * 60 + m) as i32, len))
}

/// Why a zone was refused: the `-TZ_*` codes of Tarantool's parsers.
pub(crate) type Code = i32;

/// A zone suffix (a name, else an offset) of `s` for the local second
/// `base`: offset in minutes, zone id and length (`parse_tz_suffix`).
/// `Err(code)`: a name refused (`-TZ_AMBIGUOUS`, `-TZ_NYI`) or unknown
/// (-1), or an offset out of range (-1). Length 0: nothing recognised.
pub(crate) fn tz_suffix(s: &[u8], base: i64) -> Result<(i16, i16, usize), Code> {
    match zones::lookup(s) {
        Found::Refused(flags) => return Err(-i32::from(flags)),
        Found::Zone(z, len) => {
            let (secs, _) = zones::offset_at(z, base).ok_or(-1)?;
            return Ok(((secs / 60) as i16, z.id, len));
        }
        Found::None if s.first().is_some_and(u8::is_ascii_alphabetic) => return Err(-1),
        Found::None => {}
    }
    match offset(s) {
        Some((off, _)) if !(-12 * 60..=14 * 60).contains(&off) => Err(-1),
        Some((off, len)) => Ok((off as i16, 0, len)),
        None => Ok((0, 0, 0)),
    }
}

/// A whole datetime at the start of `s` and its length
/// (`datetime_parse_full`): date, then `T`, `t` or a space and a time,
/// then an optional space and a zone. `Err(0)`: not a datetime;
/// `Err(code)`: a zone refused (see [`tz_suffix`]).
pub(crate) fn full(s: &[u8]) -> Result<(Datetime, usize), Code> {
    let (rd, mut i) = date(s).ok_or(0)?;
    let (mut sod, mut nsec, mut off, mut tzindex) = (0, 0, 0i16, 0i16);
    'parse: {
        if i >= s.len() {
            break 'parse;
        }
        if !matches!(s[i], b'T' | b't' | b' ') {
            return Err(0);
        }
        i += 1;
        if i >= s.len() {
            break 'parse;
        }
        let (t, ns, n) = time(&s[i..]).ok_or(0)?;
        (sod, nsec) = (t, ns);
        i += n;
        if s.get(i) == Some(&b' ') {
            i += 1;
        }
        if i >= s.len() {
            break 'parse;
        }
        let (o, idx, n) = tz_suffix(&s[i..], civil::secs_of_rd(rd) + sod)?;
        (off, tzindex) = (o, idx);
        i += n;
    }
    let d = Datetime {
        epoch: (civil::secs_of_rd(rd) + sod - i64::from(off) * 60) as f64,
        nsec,
        tzoffset: off,
        tzindex,
    };
    Ok((d, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let rd = civil::rd_from_ymd(2012, 12, 24);
        for (s, len) in [
            ("20121224  Foo", 8),
            ("2012-12-24T00", 10),
            ("2012359", 7),
            ("2012-359", 8),
            ("2012W521", 8),
            ("2012-W52-1", 10),
            ("2012Q485", 8),
            ("2012-Q4-85", 10),
        ] {
            assert_eq!(date(s.as_bytes()), Some((rd, len)), "{s}");
        }
        for s in [
            "20121232",
            "2012-12-310",
            "2012-12",
            "2012W12",
            "2012-1234",
            "5879612-01-01",
        ] {
            assert_eq!(date(s.as_bytes()), None, "{s}");
        }
        assert_eq!(date(b"-5879610-06-22"), Some((MIN_RD, 14)));
        assert_eq!(date(b"-2000"), None);
        assert_eq!(date(b"+12345"), None);
    }

    #[test]
    fn full_forms() {
        let (d, n) = full(b"1970-01-01T02:00:00+0200").unwrap();
        assert_eq!((d.epoch, d.tzoffset, n), (0.0, 120, 24));
        let (d, _) = full(b"19700101 00:00:30.528").unwrap();
        assert_eq!((d.epoch, d.nsec), (30.0, 528_000_000));
        let (d, _) = full(b"1970-01-01T03:00 MSK").unwrap();
        assert_eq!((d.epoch, d.tzindex), (0.0, 238));
    }
}
