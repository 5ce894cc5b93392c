//! `fiber.top()`, `fiber.top_enable()`, `fiber.top_disable()`: each
//! fiber's share of the cord's time (master's `src/lua/fiber.c`
//! `lbox_fiber_top` over `clock_stat` and `cpu_stat` in
//! `src/lib/core/fiber.c`).
//!
//! While enabled, the clock is read at every switch out of a fiber (the
//! fiber layer's switch hook, [`fiber::set_switch_hook`], and before a
//! fiber resumes another, [`note_switch`]), and the time since the last
//! reading is charged to the fiber that ran. An event loop iteration is
//! what runs between two calls of the cord's idle-wait hook (wrapped while
//! enabled): at its end the scheduler is charged the rest, each fiber's
//! moving average (1/16 per iteration), last share and CPU time (the
//! iteration's share of the thread's CPU time) are updated, as master's
//! `loop_on_iteration_end`. While disabled nothing is read and the hooks
//! are the ones that were there before.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_int;

use luafiber_fiber::{self as fiber, FiberId, IdleHook, SCHED_FID};

use crate::raw::context::Part;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// Master's `struct clock_stat` (clock deltas in nanoseconds).
#[derive(Clone, Copy, Default)]
struct ClockStat {
    /// Moving average of the per-iteration deltas.
    acc: u64,
    /// This iteration's delta so far.
    delta: u64,
    /// The last iteration's delta.
    prev_delta: u64,
    /// CPU time so far, in nanoseconds.
    cputime: u64,
}

impl ClockStat {
    /// Master's `clock_stat_update`, at the end of an iteration.
    fn update(&mut self, nsec_per_clock: f64) {
        self.acc = self.delta / 16 + 15 * self.acc / 16;
        self.prev_delta = self.delta;
        self.cputime += (self.delta as f64 * nsec_per_clock) as u64;
        self.delta = 0;
    }
}

#[derive(Default)]
struct Top {
    enabled: bool,
    /// The last clock reading, and the thread's CPU time at the iteration
    /// start (nanoseconds).
    prev_clock: u64,
    prev_cputime: u64,
    /// The cord's totals, and each fiber's (by fiber id) that ran.
    cord: ClockStat,
    fibers: HashMap<u64, ClockStat>,
    /// The hooks that were there before ours (ours call them).
    prev_switch: Option<fn()>,
    prev_idle: Option<IdleHook>,
}

/// Per-cord state of `fiber.top` (a part of the cord context). Dropping
/// it (with its runtime) takes its hooks off the scheduler.
#[derive(Default)]
pub(crate) struct TopState(RefCell<Top>);

impl Drop for TopState {
    fn drop(&mut self) {
        disable(self.0.get_mut());
    }
}

/// Stops the accounting: our hooks give way to the previous ones (when
/// another was set on top of ours, ours stays, idle).
fn disable(t: &mut Top) {
    if !t.enabled {
        return;
    }
    t.enabled = false;
    let ours: fn() = on_switch;
    match fiber::set_switch_hook(t.prev_switch) {
        Some(h) if h as usize == ours as usize => t.prev_switch = None,
        other => {
            fiber::set_switch_hook(other);
        }
    }
    let ours: IdleHook = on_idle;
    match fiber::set_idle_hook(t.prev_idle) {
        Some(h) if h as usize == ours as usize => t.prev_idle = None,
        other => {
            fiber::set_idle_hook(other);
        }
    }
}

/// Nanoseconds of the monotonic clock.
fn monotonic_ns() -> u64 {
    luafiber_runtime::clock::monotonic64() as u64
}

/// Nanoseconds of this thread's CPU time.
fn thread_cpu_ns() -> u64 {
    luafiber_runtime::clock::thread64() as u64
}

impl Top {
    /// Charges the time since the last reading to fiber `fid`.
    fn charge(&mut self, fid: u64) {
        let now = monotonic_ns();
        let delta = now.saturating_sub(self.prev_clock);
        self.prev_clock = now;
        self.cord.delta += delta;
        self.fibers.entry(fid).or_default().delta += delta;
    }

    /// Master's `loop_on_iteration_end`.
    fn iteration_end(&mut self) {
        self.charge(SCHED_FID);
        let cpu = thread_cpu_ns();
        let mut nsec_per_clock = 0.0;
        if cpu > self.prev_cputime && self.cord.delta > 0 {
            nsec_per_clock = (cpu - self.prev_cputime) as f64 / self.cord.delta as f64;
        }
        self.cord.update(nsec_per_clock);
        self.fibers
            .retain(|&fid, _| fid == SCHED_FID || fiber::exists(FiberId(fid)));
        for st in self.fibers.values_mut() {
            st.update(nsec_per_clock);
        }
    }

    /// Master's `loop_on_iteration_start` (`cpu_stat_start`).
    fn iteration_start(&mut self) {
        self.prev_clock = monotonic_ns();
        self.prev_cputime = thread_cpu_ns();
    }
}

/// The switch hook while enabled: charges the fiber that switches out.
fn on_switch() {
    let prev = TopState::try_with(|t| {
        let mut t = t.0.borrow_mut();
        if t.enabled {
            if let Some(id) = fiber::current() {
                t.charge(id.0);
            }
        }
        t.prev_switch
    })
    .flatten();
    if let Some(prev) = prev {
        prev();
    }
}

/// Charges the running fiber before it resumes another (`fiber.create`),
/// a switch out that the switch hook does not see. A thread-local read
/// while disabled.
pub(super) fn note_switch() {
    TopState::try_with(|t| {
        let Ok(mut t) = t.0.try_borrow_mut() else {
            return;
        };
        if t.enabled {
            if let Some(id) = fiber::current() {
                t.charge(id.0);
            }
        }
    });
}

/// The idle-wait hook while enabled: an iteration ends before the wait and
/// the next starts after it.
fn on_idle(timeout: Option<std::time::Duration>) -> bool {
    let prev = TopState::try_with(|t| {
        let mut t = t.0.borrow_mut();
        if t.enabled {
            t.iteration_end();
        }
        t.prev_idle
    })
    .flatten();
    let more = match prev {
        Some(prev) => prev(timeout),
        None => {
            // The loop's own wait (`fiber::idle`): sleep to the next timer.
            if let Some(d) = timeout {
                std::thread::sleep(d);
            }
            false
        }
    };
    TopState::try_with(|t| t.0.borrow_mut().iteration_start());
    more
}

lua_fn! {
    /// `fiber.top_enable()`: starts the accounting, all counts reset.
    pub(super) fn fiber_top_enable(_s: &mut Stack) {
        TopState::with(|t| {
            let mut t = t.0.borrow_mut();
            if t.enabled {
                return;
            }
            t.enabled = true;
            t.cord = ClockStat::default();
            t.fibers.clear();
            t.iteration_start();
            t.prev_switch = fiber::set_switch_hook(Some(on_switch));
            t.prev_idle = fiber::set_idle_hook(Some(on_idle));
        });
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.top_disable()`: stops it; our hooks give way to the previous
    /// ones (when another was set on top of ours, ours stays, idle).
    pub(super) fn fiber_top_disable(_s: &mut Stack) {
        TopState::with(|t| disable(&mut t.0.borrow_mut()));
        Ok(0)
    }
}

/// Sets `"fid/name" = {average, instant, time}` in the table at `t`.
fn push_entry(s: &mut Stack, t: c_int, top: &Top, fid: u64, name: &[u8]) -> LResult<()> {
    let st = top.fibers.get(&fid).copied().unwrap_or_default();
    let share = |part: u64, whole: u64| {
        if whole != 0 {
            part as f64 / whole as f64 * 100.0
        } else {
            0.0
        }
    };
    let mut key = format!("{fid}/").into_bytes();
    key.extend_from_slice(name);
    s.push_bytes(&key);
    let e = s.new_table(0, 3);
    s.push_number(share(st.acc, top.cord.acc));
    s.set_field(e, c"average");
    s.push_number(share(st.prev_delta, top.cord.prev_delta));
    s.set_field(e, c"instant");
    s.push_number(st.cputime as f64 / 1e9);
    s.set_field(e, c"time");
    s.rawset(t)
}

lua_fn! {
    /// `fiber.top()`: `{cpu_misses = 0, cpu = {["fid/name"] = {average,
    /// instant, time}}}`, the scheduler as `"1/sched"`; `average` and
    /// `instant` in percent of the cord's time, `time` in CPU seconds.
    /// Raises while disabled, as master.
    pub(super) fn fiber_top(s: &mut Stack) {
        let enabled = TopState::with(|t| t.0.borrow().enabled);
        if !enabled {
            return Err(Raise::illegal(
                "fiber.top() is disabled. Enable it with fiber.top_enable() first",
            ));
        }
        let r = s.new_table(0, 2);
        s.push_number(0.0);
        s.set_field(r, c"cpu_misses");
        let cpu = s.new_table(0, 0);
        let mut names = vec![(SCHED_FID, b"sched".to_vec())];
        for id in fiber::all() {
            if let Ok(name) = fiber::with_name(id, <[u8]>::to_vec) {
                names.push((id.0, name));
            }
        }
        TopState::with(|t| {
            let t = t.0.borrow();
            names
                .iter()
                .try_for_each(|(fid, name)| push_entry(s, cpu, &t, *fid, name))
        })?;
        s.set_field(r, c"cpu");
        Ok(1)
    }
}

/// A fiber's CPU time so far in seconds (`fiber.info()`'s `time`; 0 unless
/// `fiber.top` counted it).
pub(super) fn cputime(id: FiberId) -> f64 {
    TopState::try_with(|t| {
        t.0.borrow()
            .fibers
            .get(&id.0)
            .map_or(0.0, |st| st.cputime as f64 / 1e9)
    })
    .unwrap_or(0.0)
}
