//! Fiber slices: how long a fiber may run without yielding (Tarantool's
//! `struct fiber_slice`, `fiber_check_slice` and friends in master's
//! `src/lib/core/fiber.{c,h}`).
//!
//! A cord has a default max slice (`{warn = 0.5, err = 1.0}` seconds), a
//! fiber may have its own, and the running fiber has a current slice,
//! reset to its max slice at every switch: past `warn` one warning is
//! logged, past `err` [`check`] fails (`FiberSliceIsExceeded`).
//!
//! The reset costs nothing on the switch path: the state remembers the
//! switch count ([`luafiber_fiber::switch_count`]) its current slice
//! belongs to, and is reset lazily, at the first slice call after a
//! switch. The time of the switch is then the time the [`watchdog`] saw
//! the switch count move (if it watches this cord), else the time of that
//! first call.
//!
//! Beyond Tarantool (which checks only in `fiber.check_slice()` and box
//! iterators), the [`watchdog`] raises the error in a fiber that runs Lua
//! past its limit without yielding. It watches a cord once the cord's Lua
//! code has set a slice ([`watchdog::arm`]): a script that never does is
//! never interrupted, however long its fibers compute.
//!
//! A slice's error is reported once: after `check_slice` or the watchdog
//! raised it, the watchdog raises nothing more in that slice, so a fiber
//! that caught the error can handle it and yield without a second error
//! arriving at some instruction of its handler (a signal the watchdog sent
//! before the first error, landing after it, finds the slice reported). An
//! explicit `check_slice` still fails at every call past `err`, as
//! master's: it is a question, not an event. A new limit the fiber sets
//! for itself (`set_slice`, `extend_slice`, a max slice that applies to
//! it) is a new slice to report; a switch starts a new slice.

pub(crate) mod watchdog;

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Instant;

use crate::cord;
use crate::raw::context::Part;

/// A slice in seconds: past `warn` a warning is logged (once), past `err`
/// the fiber gets `FiberSliceIsExceeded`. Both are `>= 0`;
/// [`TIMEOUT_INFINITY`] means none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    /// Seconds until the warning.
    pub warn: f64,
    /// Seconds until the error.
    pub err: f64,
}

/// Tarantool's `TIMEOUT_INFINITY` (100 years, in seconds): no limit.
pub const TIMEOUT_INFINITY: f64 = 100.0 * 365.0 * 86400.0;

/// A cord's default max slice (master's `default_slice`).
pub const DEFAULT_MAX_SLICE: Slice = Slice {
    warn: 0.5,
    err: 1.0,
};

impl Slice {
    /// Tarantool's `fiber_slice_is_valid`: both limits `>= 0` (NaN is not).
    pub fn is_valid(self) -> bool {
        self.warn >= 0.0 && self.err >= 0.0
    }
}

/// The cord's slice state.
#[derive(Clone, Copy)]
struct State {
    /// The cord's default max slice.
    default: Slice,
    /// The running fiber's current slice.
    cur: Slice,
    /// The switch count `cur` belongs to (`u64::MAX`: none yet).
    epoch: u64,
    /// When that fiber was switched in, in [`now_ns`] nanoseconds.
    start: u64,
    /// `cur`'s error was raised (the watchdog raises it no more).
    reported: bool,
}

/// The state before any slice call.
const INITIAL: State = State {
    default: DEFAULT_MAX_SLICE,
    cur: DEFAULT_MAX_SLICE,
    epoch: u64::MAX,
    start: 0,
    reported: false,
};

/// Per-cord state of the slices (a part of the cord context).
pub(crate) struct Slices(Cell<State>);

impl Default for Slices {
    fn default() -> Slices {
        Slices(Cell::new(INITIAL))
    }
}

/// The cord's slice state (the initial one when the thread has no cord).
fn load() -> State {
    Slices::try_with(|s| s.0.get()).unwrap_or(INITIAL)
}

/// Monotonic nanoseconds since the first call in the process (the
/// [`watchdog`] and the cords share this base).
pub(crate) fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Seconds as nanoseconds, saturating (infinity and 100 years fit).
fn ns(secs: f64) -> u64 {
    (secs * 1e9) as u64
}

/// The running fiber's index in the cord's fibers, if it is a Lua fiber.
fn current_idx() -> Option<usize> {
    luafiber_fiber::current_ext()
        .filter(|&e| e > 0)
        .map(|e| e - 1)
}

/// The custom max slice of the cord's Lua fiber `idx`, if it has one.
/// `None` too when the cord is busy (a slice call inside a cord borrow:
/// none is made, but the hook must never panic).
fn custom_of(idx: usize) -> Option<Slice> {
    cord::peek_with(|c| c.fibers.get(idx).and_then(|f| f.max_slice)).flatten()
}

/// The state with its current slice reset if a switch came since it was
/// last read (master's `cord_reset_slice` at each switch).
fn state() -> State {
    let mut st = load();
    let epoch = luafiber_fiber::switch_count().unwrap_or(0);
    if st.epoch != epoch {
        st.epoch = epoch;
        st.cur = current_idx().and_then(custom_of).unwrap_or(st.default);
        st.reported = false;
        let now = now_ns();
        st.start = watchdog::moved_at(epoch).map_or(now, |t| t.min(now));
        set(st);
    }
    st
}

/// Stores `st` and tells the watchdog its next deadline (none for the
/// error once it is reported).
fn set(st: State) {
    Slices::try_with(|s| s.0.set(st));
    let err = if st.reported {
        TIMEOUT_INFINITY
    } else {
        st.cur.err
    };
    watchdog::publish(st.epoch, st.start.saturating_add(ns(st.cur.warn.min(err))));
}

/// Tarantool's `fiber_check_slice`: logs the warning once past `warn`;
/// fails past `err` (the caller raises `FiberSliceIsExceeded`), at every
/// call, and marks the slice's error reported.
///
/// # Errors
///
/// `Err(())` when the current slice's `err` is exceeded.
pub(crate) fn check() -> Result<(), ()> {
    check_slice(true)
}

/// [`check`] for the watchdog's hook: fails only if the slice's error has
/// not been reported yet (by [`check`] or by an earlier hook).
///
/// # Errors
///
/// `Err(())` when the current slice's `err` is exceeded and unreported.
pub(crate) fn check_unreported() -> Result<(), ()> {
    check_slice(false)
}

/// The two checks: `again` fails past `err` even when already reported.
fn check_slice(again: bool) -> Result<(), ()> {
    let mut st = state();
    let elapsed = now_ns().saturating_sub(st.start) as f64 / 1e9;
    let mut changed = false;
    if st.cur.warn < elapsed {
        tracing::warn!(
            "fiber has not yielded for more than {:.3} seconds",
            st.cur.warn
        );
        st.cur.warn = TIMEOUT_INFINITY;
        changed = true;
    }
    let exceeded = st.cur.err < elapsed && (again || !st.reported);
    if exceeded && !st.reported {
        st.reported = true;
        changed = true;
    }
    if changed {
        set(st);
    }
    if exceeded {
        Err(())
    } else {
        Ok(())
    }
}

/// Tarantool's `fiber_set_slice`: the running fiber's current slice.
pub(crate) fn set_slice(slice: Slice) {
    let mut st = state();
    st.cur = slice;
    st.reported = false;
    set(st);
}

/// Tarantool's `fiber_extend_slice`: adds to the current slice.
pub(crate) fn extend_slice(slice: Slice) {
    let mut st = state();
    st.cur.warn += slice.warn;
    st.cur.err += slice.err;
    st.reported = false;
    set(st);
}

/// Tarantool's `fiber_set_default_max_slice`: the cord's default, which is
/// also the current slice when the running fiber has none of its own.
pub(crate) fn set_default_max_slice(slice: Slice) {
    let mut st = state();
    st.default = slice;
    if current_idx().and_then(custom_of).is_none() {
        st.cur = slice;
        st.reported = false;
    }
    watchdog::hint(slice);
    set(st);
}

/// Tarantool's `fiber_set_max_slice`: fiber `idx`'s own max slice (the
/// current slice too when it is the running fiber).
pub(crate) fn set_max_slice(idx: usize, slice: Slice) {
    let mut st = state();
    cord::with(|c| {
        if let Some(f) = c.fibers.get_mut(idx) {
            f.max_slice = Some(slice);
        }
    });
    if current_idx() == Some(idx) {
        st.cur = slice;
        st.reported = false;
    }
    watchdog::hint(slice);
    set(st);
}

/// Tarantool's `fiber_get_max_slice`: fiber `idx`'s own max slice, else
/// the cord's default (`None` for `idx`: a fiber that is not a Lua fiber).
pub(crate) fn max_slice_of(idx: Option<usize>) -> Slice {
    idx.and_then(custom_of).unwrap_or_else(|| load().default)
}
