//! Arguments the modules read the same way: timeouts in seconds.

use std::ffi::c_int;
use std::time::Duration;

use super::{LResult, Raise, Stack};

/// A timeout argument in seconds at `idx`, as master's `channel:get`,
/// `channel:put`, `cond:wait` and `fiber:join` read theirs: `None` when
/// absent or nil (wait forever); a number or a numeric string
/// (`lua_isnumber`); negative values, NaN and anything else are refused
/// with `usage` (master lets NaN through to an undefined wait: refused
/// here, see docs/design.md).
///
/// # Errors
///
/// `IllegalParams` with `usage`.
#[inline]
pub fn opt_timeout(s: &Stack, idx: c_int, usage: &str) -> LResult<Option<Duration>> {
    if s.is_none_or_nil(idx) {
        return Ok(None);
    }
    match s.to_number_coerced(idx) {
        Some(t) if t >= 0.0 => Ok(seconds(t)),
        _ => Err(Raise::illegal(usage)),
    }
}

/// Seconds as a `Duration`: negative is zero, beyond what a `Duration` holds
/// (or infinite) is `None` (forever).
pub fn seconds(t: f64) -> Option<Duration> {
    if t <= 0.0 {
        return Some(Duration::ZERO);
    }
    Duration::try_from_secs_f64(t).ok()
}
