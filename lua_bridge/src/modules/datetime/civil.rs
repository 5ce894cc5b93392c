//! The proleptic Gregorian calendar on Rata Die day numbers (day 1 is
//! 0001-01-01, a Monday), as Tarantool's `c-dt` counts them: the range is
//! that of an `int` day number, -5879610-06-22 ..= 5879611-07-11.
//!
//! Everything here is plain integer arithmetic on `i64`, so no value in
//! that range overflows.

/// The Rata Die number of 1970-01-01 (`DT_EPOCH_1970_OFFSET`).
pub(crate) const EPOCH_RD: i64 = 719_163;
/// Seconds in a day.
pub(crate) const SECS_PER_DAY: i64 = 86_400;
/// The smallest day number (`INT_MIN`), -5879610-06-22.
pub(crate) const MIN_RD: i64 = i32::MIN as i64;
/// The largest day number (`INT_MAX`), 5879611-07-11.
pub(crate) const MAX_RD: i64 = i32::MAX as i64;
/// The smallest epoch second (`MIN_EPOCH_SECS_VALUE`).
pub(crate) const MIN_EPOCH: i64 = MIN_RD * SECS_PER_DAY - EPOCH_RD * SECS_PER_DAY;
/// The largest epoch second (`MAX_EPOCH_SECS_VALUE`).
pub(crate) const MAX_EPOCH: i64 = MAX_RD * SECS_PER_DAY - EPOCH_RD * SECS_PER_DAY;

/// How a day of month that the target month lacks is handled when months
/// are added (`dt_adjust_t`; its numbers are the MsgPack interval's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Adjust {
    /// `excess`: the extra days spill into the next month (`DT_EXCESS`).
    Excess = 0,
    /// `none`: the last day of the target month (`DT_LIMIT`).
    Limit = 1,
    /// `last`: the last day of the month stays the last day (`DT_SNAP`).
    Snap = 2,
}

impl Adjust {
    /// The mode numbered `n`, if any.
    pub(crate) fn from_i64(n: i64) -> Option<Adjust> {
        match n {
            0 => Some(Adjust::Excess),
            1 => Some(Adjust::Limit),
            2 => Some(Adjust::Snap),
            _ => None,
        }
    }
}

/// Whether `y` is a leap year.
pub(crate) fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// Days in month `m` (1..=12) of year `y`.
pub(crate) fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days in year `y`.
pub(crate) fn days_in_year(y: i64) -> i64 {
    if is_leap(y) {
        366
    } else {
        365
    }
}

/// The day number of `y-m-d` (no range check; `d` may exceed the month).
pub(crate) fn rd_from_ymd(y: i64, m: i64, d: i64) -> i64 {
    // Days from 1970-01-01 by the era method (400-year cycles from March).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 + EPOCH_RD
}

/// The year, month and day of day number `rd`.
pub(crate) fn ymd_from_rd(rd: i64) -> (i64, i64, i64) {
    let z = rd - EPOCH_RD + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The day number of `y-m-d` when that is a valid date in range.
pub(crate) fn rd_checked(y: i64, m: i64, d: i64) -> Option<i64> {
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    let rd = rd_from_ymd(y, m, d);
    (MIN_RD..=MAX_RD).contains(&rd).then_some(rd)
}

/// ISO day of week of `rd`: 1 Monday ..= 7 Sunday.
pub(crate) fn dow(rd: i64) -> i64 {
    (rd - 1).rem_euclid(7) + 1
}

/// Day of year of `rd`, from 1.
pub(crate) fn doy(rd: i64) -> i64 {
    let (y, _, _) = ymd_from_rd(rd);
    rd - rd_from_ymd(y, 1, 1) + 1
}

/// The day number of day `d` (1..) of year `y`, when valid.
pub(crate) fn rd_from_yd(y: i64, d: i64) -> Option<i64> {
    (d >= 1 && d <= days_in_year(y)).then(|| rd_from_ymd(y, 1, 1) + d - 1)
}

/// The day number of ISO week `w`, weekday `d` (1 Monday) of ISO year `y`,
/// when valid.
pub(crate) fn rd_from_ywd(y: i64, w: i64, d: i64) -> Option<i64> {
    if !(1..=7).contains(&d) || w < 1 || w > weeks_in_year(y) {
        return None;
    }
    Some(week1_monday(y) + (w - 1) * 7 + d - 1)
}

/// The Monday of ISO week 1 of year `y`.
fn week1_monday(y: i64) -> i64 {
    let jan4 = rd_from_ymd(y, 1, 4);
    jan4 - (dow(jan4) - 1)
}

/// ISO weeks in year `y` (52 or 53).
pub(crate) fn weeks_in_year(y: i64) -> i64 {
    (week1_monday(y + 1) - week1_monday(y)) / 7
}

/// The ISO year and week of `rd`.
pub(crate) fn iso_week(rd: i64) -> (i64, i64) {
    let (mut y, _, _) = ymd_from_rd(rd);
    if rd >= week1_monday(y + 1) {
        y += 1;
    } else if rd < week1_monday(y) {
        y -= 1;
    }
    (y, (rd - week1_monday(y)) / 7 + 1)
}

/// The day number of day `d` of quarter `q` of year `y`, when valid.
pub(crate) fn rd_from_yqd(y: i64, q: i64, d: i64) -> Option<i64> {
    if !(1..=4).contains(&q) || d < 1 {
        return None;
    }
    let first = rd_from_ymd(y, q * 3 - 2, 1);
    let next = if q == 4 {
        rd_from_ymd(y + 1, 1, 1)
    } else {
        rd_from_ymd(y, q * 3 + 1, 1)
    };
    (d <= next - first).then_some(first + d - 1)
}

/// `rd` moved by `delta` months, its day of month kept as `adjust` says
/// (`dt_add_months`).
pub(crate) fn add_months(rd: i64, delta: i64, adjust: Adjust) -> i64 {
    let (y0, m0, mut d) = ymd_from_rd(rd);
    let n = y0 * 12 + m0 - 1 + delta;
    let y = n.div_euclid(12);
    let m = n.rem_euclid(12) + 1;
    if adjust != Adjust::Excess {
        let len = days_in_month(y, m);
        if d > len || (adjust == Adjust::Snap && d == days_in_month(y0, m0)) {
            d = len;
        }
    }
    rd_from_ymd(y, m, d)
}

/// The day number of local second `secs` since the epoch.
pub(crate) fn rd_of_secs(secs: i64) -> i64 {
    secs.div_euclid(SECS_PER_DAY) + EPOCH_RD
}

/// The epoch second of midnight of day `rd`.
pub(crate) fn secs_of_rd(rd: i64) -> i64 {
    (rd - EPOCH_RD) * SECS_PER_DAY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(rd_from_ymd(1, 1, 1), 1);
        assert_eq!(rd_from_ymd(1970, 1, 1), EPOCH_RD);
        assert_eq!(ymd_from_rd(MIN_RD), (-5_879_610, 6, 22));
        assert_eq!(ymd_from_rd(MAX_RD), (5_879_611, 7, 11));
        assert_eq!(dow(EPOCH_RD), 4);
        for rd in [MIN_RD, -1000, 0, 1, EPOCH_RD, MAX_RD] {
            let (y, m, d) = ymd_from_rd(rd);
            assert_eq!(rd_from_ymd(y, m, d), rd);
        }
        assert_eq!(rd_from_ywd(2012, 52, 1), Some(rd_from_ymd(2012, 12, 24)));
        assert_eq!(rd_from_yqd(2012, 4, 85), Some(rd_from_ymd(2012, 12, 24)));
        assert_eq!(rd_from_ywd(0, 1, 1), Some(rd_from_ymd(0, 1, 3)));
        let jan31 = rd_from_ymd(2013, 1, 31);
        assert_eq!(
            ymd_from_rd(add_months(jan31, 1, Adjust::Limit)),
            (2013, 2, 28)
        );
        assert_eq!(
            ymd_from_rd(add_months(jan31, 1, Adjust::Excess)),
            (2013, 3, 3)
        );
    }
}
