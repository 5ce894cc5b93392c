//! The `datetime` and `interval` values (Tarantool's `struct datetime` and
//! `struct interval`, `src/lib/core/datetime.h`), their MsgPack bodies
//! (`mp_datetime.c`, `mp_interval.c`) and their text (`datetime_snprint`,
//! `interval_snprint`).

use super::civil::{self, Adjust, MAX_EPOCH, MIN_EPOCH};
use super::zones;

/// A moment: seconds since the epoch (UTC), nanoseconds, the offset of
/// its zone in minutes and the zone's id (0: a bare offset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Datetime {
    pub epoch: f64,
    pub nsec: i32,
    pub tzoffset: i16,
    pub tzindex: i16,
}

/// Its C declaration, for the FFI.
pub(crate) const DT_DECL: &str =
    "struct datetime { double epoch; int32_t nsec; int16_t tzoffset; int16_t tzindex; };";

/// A duration in calendar units; `adjust` is an [`Adjust`] number.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Interval {
    pub sec: f64,
    pub min: f64,
    pub hour: f64,
    pub day: f64,
    pub week: i32,
    pub month: i32,
    pub year: i32,
    pub nsec: i32,
    pub adjust: i32,
}

/// Its C declaration, for the FFI.
pub(crate) const IV_DECL: &str = "struct interval { double sec; double min; double hour; \
    double day; int32_t week; int32_t month; int32_t year; int32_t nsec; int32_t adjust; };";

/// The largest zone id a MsgPack datetime may carry (`MAX_TZINDEX`).
const MAX_TZINDEX: i16 = 1024;

impl Datetime {
    /// Seconds since the epoch in its own zone.
    pub(crate) fn local_secs(&self) -> i64 {
        self.epoch as i64 + i64::from(self.tzoffset) * 60
    }

    /// Whether it is in the range a MsgPack datetime may hold
    /// (`datetime_validate`).
    pub(crate) fn is_valid(&self) -> bool {
        self.epoch >= MIN_EPOCH as f64
            && self.epoch <= MAX_EPOCH as f64
            && (0..2_000_000_000).contains(&self.nsec)
            && (-12 * 60..=14 * 60).contains(&self.tzoffset)
            && (0..=MAX_TZINDEX).contains(&self.tzindex)
    }

    /// Its MsgPack extension body: 8 bytes of seconds, then nsec, tzoffset
    /// and tzindex when any is not zero (little-endian, as Tarantool).
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.epoch as i64).to_le_bytes());
        if self.nsec != 0 || self.tzoffset != 0 || self.tzindex != 0 {
            out.extend_from_slice(&self.nsec.to_le_bytes());
            out.extend_from_slice(&self.tzoffset.to_le_bytes());
            out.extend_from_slice(&self.tzindex.to_le_bytes());
        }
    }

    /// The datetime of a MsgPack extension body, if valid.
    pub(crate) fn unpack(b: &[u8]) -> Option<Datetime> {
        let epoch = i64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        let mut d = Datetime {
            epoch: epoch as f64,
            ..Datetime::default()
        };
        match b.len() {
            8 => {}
            16 => {
                d.nsec = i32::from_le_bytes(b[8..12].try_into().ok()?);
                d.tzoffset = i16::from_le_bytes(b[12..14].try_into().ok()?);
                d.tzindex = i16::from_le_bytes(b[14..16].try_into().ok()?);
            }
            _ => return None,
        }
        d.is_valid().then_some(d)
    }

    /// Its ISO 8601 text (`datetime_snprint`): `1970-01-01T00:00:00Z`,
    /// with `.mmm`, `.uuuuuu` or `.nnnnnnnnn` for a fraction, and `Z`,
    /// `+hhmm` or the zone's name.
    pub(crate) fn text(&self) -> String {
        let secs = self.local_secs();
        let (y, m, d) = civil::ymd_from_rd(civil::rd_of_secs(secs));
        let sod = secs.rem_euclid(civil::SECS_PER_DAY);
        let mut s = format!(
            "{}-{:02}-{:02}T{:02}:{:02}:{:02}",
            year4(y),
            m,
            d,
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        );
        let ns = self.nsec;
        if ns != 0 {
            if ns % 1_000_000 == 0 {
                s += &format!(".{:03}", ns / 1_000_000);
            } else if ns % 1000 == 0 {
                s += &format!(".{:06}", ns / 1000);
            } else {
                s += &format!(".{ns:09}");
            }
        }
        if self.tzindex != 0 {
            let name = zones::name(self.tzindex).unwrap_or("");
            if name.len() > 1 {
                s.push(' ');
            }
            s += name;
        } else if self.tzoffset == 0 {
            s.push('Z');
        } else {
            s += &offset_text(self.tzoffset, false);
        }
        s
    }
}

/// A year as `%04d` writes it.
pub(crate) fn year4(y: i64) -> String {
    format!("{y:04}")
}

/// `+hhmm` (or `+hh:mm` when `colon`) of an offset in minutes.
pub(crate) fn offset_text(off: i16, colon: bool) -> String {
    let (sign, a) = if off < 0 {
        ('-', -i32::from(off))
    } else {
        ('+', i32::from(off))
    };
    if colon {
        format!("{sign}{:02}:{:02}", a / 60, a % 60)
    } else {
        format!("{sign}{:02}{:02}", a / 60, a % 60)
    }
}

/// The MsgPack interval's field numbers (`enum interval_fields`).
const FIELDS: usize = 9;

impl Interval {
    /// The fields in MsgPack order: year, month, week, day, hour, minute,
    /// second, nanosecond, adjust.
    fn fields(&self) -> [i64; FIELDS] {
        [
            self.year.into(),
            self.month.into(),
            self.week.into(),
            self.day as i64,
            self.hour as i64,
            self.min as i64,
            self.sec as i64,
            self.nsec.into(),
            self.adjust.into(),
        ]
    }

    /// Its MsgPack extension body: a count, then each non-zero field as
    /// its number and a MsgPack integer (`interval_pack`).
    pub(crate) fn pack(&self, out: &mut Vec<u8>) {
        let f = self.fields();
        out.push(f.iter().filter(|v| **v != 0).count() as u8);
        for (i, v) in f.iter().enumerate() {
            if *v == 0 {
                continue;
            }
            out.push(i as u8);
            if *v > 0 {
                let _ = rmp::encode::write_uint(out, *v as u64);
            } else {
                let _ = rmp::encode::write_sint(out, *v);
            }
        }
    }

    /// The interval of a MsgPack extension body, if valid
    /// (`interval_unpack`).
    pub(crate) fn unpack(mut b: &[u8]) -> Option<Interval> {
        let (&count, rest) = b.split_first()?;
        b = rest;
        let mut iv = Interval::default();
        for _ in 0..count {
            let (&field, rest) = b.split_first()?;
            b = rest;
            let v: i64 = rmp::decode::read_int(&mut b).ok()?;
            let i32v = || i32::try_from(v).ok();
            match field {
                0 => iv.year = i32v()?,
                1 => iv.month = i32v()?,
                2 => iv.week = i32v()?,
                3 => iv.day = v as f64,
                4 => iv.hour = v as f64,
                5 => iv.min = v as f64,
                6 => iv.sec = v as f64,
                7 => iv.nsec = i32v()?,
                8 => iv.adjust = Adjust::from_i64(v)? as i32,
                _ => return None,
            }
        }
        b.is_empty().then_some(iv)
    }

    /// Its text (`interval_snprint`): `+1 years, 2 months, 0 seconds`...
    pub(crate) fn text(&self) -> String {
        let mut s = String::new();
        let put = |s: &mut String, v: i64, unit: &str| {
            if s.is_empty() {
                *s += &format!("{v:+} {unit}");
            } else {
                *s += &format!(", {v} {unit}");
            }
        };
        let f = self.fields();
        let units = ["years", "months", "weeks", "days", "hours", "minutes"];
        for (v, unit) in f.iter().zip(units) {
            if *v != 0 {
                put(&mut s, *v, unit);
            }
        }
        if f[6] != 0 || s.is_empty() {
            put(&mut s, f[6], "seconds");
        }
        if f[7] != 0 {
            put(&mut s, f[7], "nanoseconds");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_body() {
        let iv = Interval {
            year: 1,
            day: 127.0,
            min: 15.0,
            adjust: 1,
            ..Interval::default()
        };
        let mut b = Vec::new();
        iv.pack(&mut b);
        assert_eq!(b, b"\x04\x00\x01\x03\x7f\x05\x0f\x08\x01");
        assert_eq!(Interval::unpack(&b), Some(iv));
        assert_eq!(iv.text(), "+1 years, 127 days, 15 minutes");
    }

    #[test]
    fn datetime_text() {
        let d = Datetime {
            epoch: 0.0,
            nsec: 123_000_000,
            tzoffset: 180,
            tzindex: 0,
        };
        assert_eq!(d.text(), "1970-01-01T03:00:00.123+0300");
    }
}
