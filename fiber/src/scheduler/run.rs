//! The scheduler loop: ready fibers in FIFO order, in batches, with the
//! timers polled between batches.

use std::time::{Duration, Instant};

use super::core::{with, Scheduler};
use super::idle;
use super::info::current;
use super::record::Status;
use super::switch::resume;
use crate::stack::pool::StackPool;

/// Switches [`run`] makes at least between two polls of the timers, when
/// fibers keep waking each other.
const MIN_BATCH: usize = 64;

/// [`MIN_BATCH`] while fibers wait in the idle hook (the cord's event
/// loop): a fiber that keeps yielding (`fiber.sleep(0)` loops) sees their
/// events within this many yields, as in Tarantool, where each yield turns
/// the event loop. Set once per batch from the hook's answer: nothing is
/// added to the yield path.
const MIN_BATCH_POLLED: usize = 4;

/// Runs ready fibers and fires timers until no fiber is ready or sleeping.
///
/// Ready fibers run in FIFO order; timers are polled between batches (the
/// fibers ready when the batch began, or 64 switches when fibers keep waking
/// each other; 4 while fibers wait in the idle hook, so that a fiber that
/// keeps yielding sees their events within a few yields), so a sleeper is
/// never starved by fibers that keep yielding.
/// A fiber that blocks switches straight to the next ready one, without a
/// round trip through this loop. With an idle-wait hook (the cord's event
/// loop, see [`idle`]), the loop waits in the hook instead of
/// sleeping, polls it once per batch, and goes on while the hook has
/// waiters.
///
/// # Panics
///
/// Panics when called from inside a fiber.
pub fn run() {
    run_loop(true, || false);
}

/// Like [`run`], but returns as soon as `done()` is true (checked between
/// fibers).
///
/// # Panics
///
/// Panics when called from inside a fiber.
pub fn run_until(done: impl FnMut() -> bool) {
    run_loop(false, done);
}

/// Like [`run`] (hand-overs included, state rule 6), but also returns as
/// soon as `stop()` is true, checked each time the loop gets the thread
/// back: between batches, or between fibers that yield to it. The loop of a
/// thread that serves fibers until told to stop (a cord of
/// `luafiber-runtime`'s several-cord runtime, whose idle-wait hook never
/// lets [`run`] end).
///
/// # Panics
///
/// Panics when called from inside a fiber.
pub fn serve(stop: impl FnMut() -> bool) {
    run_loop(true, stop);
}

/// [`run_until`]; with `hand_over`, a fiber that blocks may switch straight
/// to the next one of the batch (state rule 6), and `done` is checked only
/// when the loop gets the thread back.
fn run_loop(hand_over: bool, mut done: impl FnMut() -> bool) {
    assert!(
        current().is_none(),
        "the scheduler loop runs outside any fiber"
    );
    loop {
        if done() {
            return;
        }
        let (batch, next) = with(|s| {
            // Reading the clock costs as much as a switch: only with timers.
            let next = if s.timers.len() == 0 {
                None
            } else {
                s.fire_timers(Instant::now())
            };
            (s.ready.len(), next)
        });
        let hook = idle::idle_hook();
        if batch == 0 {
            // Idle: stacks pooled past the watermark give their pages back.
            with(|s| s.stacks.as_mut().map(StackPool::trim));
            let left = next.map(|d| d.saturating_duration_since(Instant::now()));
            if let Some(hook) = hook {
                // The event loop waits; fibers waiting on it keep us going.
                if !hook(left) && next.is_none() && with(|s| s.ready.is_empty()) {
                    return;
                }
                continue;
            }
            match left {
                Some(left) => {
                    if !left.is_zero() {
                        std::thread::sleep(left);
                    }
                    continue;
                }
                None => return,
            }
        }
        // Fibers are ready: events are polled once per batch, without
        // blocking, so neither starves the other.
        let (batch, floor) = match hook {
            Some(hook) => {
                let waited_on = hook(Some(Duration::ZERO));
                let floor = match waited_on {
                    true => MIN_BATCH_POLLED,
                    false => MIN_BATCH,
                };
                (with(|s| s.ready.len()), floor)
            }
            None => (batch, MIN_BATCH),
        };
        // With hand-overs, a fiber woken in this batch is switched to in it
        // too (FIFO order is the same), up to the floor.
        let batch = if hand_over { batch.max(floor) } else { batch };
        with(|s| s.budget = batch);
        loop {
            let next = with(|s| {
                while s.budget > 0 {
                    s.budget -= 1;
                    let Some(h) = s.ready.pop_front() else {
                        // The batch ends with the queue: none is left for
                        // a fiber resumed outside the loop (state rule 6).
                        s.budget = 0;
                        return None;
                    };
                    s.prefetch_next();
                    if matches!(s.slot(h), Some(slot) if slot.status == Status::Ready) {
                        if !hand_over {
                            // Kept from fibers, which hand over only in `run`.
                            let left = std::mem::take(&mut s.budget);
                            return Some((h, s.switch_in(h), left));
                        }
                        return Some((h, s.switch_in(h), 0));
                    }
                }
                None
            });
            let Some((h, sw, left)) = next else { break };
            resume(h, sw);
            // `done` runs outside any fiber with no batch to give away: a
            // fiber it starts with `spawn_now` yields back to it.
            if done() {
                with(|s| s.budget = 0);
                return;
            }
            if left > 0 {
                with(|s| s.budget = left);
            }
        }
    }
}

/// Asks the scheduler loop to poll its idle hook within a few switches:
/// caps the running batch at 4 more switches (see [`run`]). For the idle
/// hook's owner, when a fiber starts waiting for its events in the middle
/// of a batch that began with none waiting (whose floor is 64 switches):
/// a fiber that keeps yielding then lets the hook poll within a few yields.
pub fn poll_soon() {
    with(|s| s.budget = s.budget.min(MIN_BATCH_POLLED));
}

/// Whether a fiber is ready or sleeping on a timer on this thread.
pub fn has_pending() -> bool {
    with(|s| s.fire_timers(Instant::now()).is_some() || !s.ready.is_empty())
}

/// Whether a fiber is ready on this thread, once the due timers have
/// made theirs ready: what a host that drives the scheduler from its own
/// loop ([`run_until`]) asks before it runs a round.
pub fn has_ready() -> bool {
    with(|s| {
        if s.timers.len() > 0 {
            s.fire_timers(Instant::now());
        }
        !s.ready.is_empty()
    })
}

/// The earliest deadline of a fiber sleeping on a timer on this thread,
/// once the due timers have made theirs ready.
pub fn next_timer() -> Option<Instant> {
    with(|s| match s.timers.len() {
        0 => None,
        _ => s.fire_timers(Instant::now()),
    })
}

impl Scheduler {
    /// Makes ready every fiber whose live timer is due; returns the earliest
    /// live deadline still pending.
    fn fire_timers(&mut self, now: Instant) -> Option<Instant> {
        while let Some(t) = self.timers.peek() {
            let (h, token, deadline) = (t.handle, t.token, t.deadline);
            let live =
                matches!(self.slot(h), Some(s) if s.wait == token && s.status == Status::Suspended);
            if live && deadline > now {
                return Some(deadline);
            }
            self.timers.pop();
            if live {
                self.slots[h].timed_out = true;
                self.wake(h);
            }
        }
        None
    }
}
