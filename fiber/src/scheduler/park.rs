//! Blocking the current fiber: yield, sleep, block with or without a
//! timeout, and the queued waits of `Cond` and `Channel`; all switch out
//! through [`suspend`] (state rule 6 when the loop resumed the fiber).

use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use super::core::{with, Scheduler};
use super::error::Error;
use super::handoff::{suspend, Blocked};
use super::id::FiberId;
use super::record::{Handle, Resume, Slot, Status};
use crate::context::count_switch;

/// Yields the current fiber: it goes to the back of the ready queue
/// (Tarantool's `fiber.yield()`, which is `sleep(0)`). A cancellation point.
///
/// # Errors
///
/// [`Error::NotInFiber`] outside a fiber; [`Error::Cancelled`] after the
/// yield when the fiber is cancelled.
pub fn yield_now() -> Result<(), Error> {
    let blocked = with(|s| {
        if let Some(flags) = s.yield_alone() {
            return Ok(Err(flags));
        }
        let (h, slot) = s.current_slot()?;
        slot.status = Status::Ready;
        let (y, resumer) = (slot.yielder, slot.resumer);
        s.ready.push_back(h);
        Ok::<_, Error>(Ok(s.blocked(y, resumer)))
    })?;
    let flags = match blocked {
        Ok(blocked) => suspend(blocked),
        Err(flags) => flags,
    };
    match flags.cancelled {
        true => Err(Error::Cancelled),
        false => Ok(()),
    }
}

/// Blocks the current fiber until a wakeup, or until `timeout` runs out.
/// Returns `true` when the timeout ran out. Not a cancellation point: a
/// cancel wakes the fiber, and the caller decides.
///
/// # Errors
///
/// [`Error::NotInFiber`] outside a fiber.
pub fn block(timeout: Option<Duration>) -> Result<bool, Error> {
    park(timeout).map(|r| r.timed_out)
}

/// [`block`], returning both flags the fiber was resumed with.
pub(crate) fn park(timeout: Option<Duration>) -> Result<Resume, Error> {
    let blocked = with(|s| s.block_current(timeout, |_, _| true))?;
    Ok(suspend(blocked.expect("a block that nothing refuses")))
}

/// [`park`] for a fiber that joins a wait queue: in the one borrow that
/// blocks the current fiber, `enqueue` gets its handle to queue its waiter
/// record. A cancelled fiber is neither queued nor blocked: `Ok(None)`.
///
/// # Errors
///
/// [`Error::NotInFiber`] outside a fiber.
#[inline(always)]
pub(crate) fn park_queued(
    timeout: Option<Duration>,
    enqueue: impl FnOnce(Handle),
) -> Result<Option<Resume>, Error> {
    let blocked = with(|s| {
        s.block_current(timeout, |h, slot| {
            if slot.cancelled {
                return false;
            }
            enqueue(h);
            true
        })
    })?;
    Ok(blocked.map(suspend))
}

/// [`park_queued`] for a cancelled fiber too: it is queued and blocks like
/// any other (master's `fiber_cond_wait_timeout`, which looks at the
/// cancel flag only after the wait).
///
/// # Errors
///
/// [`Error::NotInFiber`] outside a fiber.
pub(crate) fn park_enqueued(
    timeout: Option<Duration>,
    enqueue: impl FnOnce(Handle),
) -> Result<Resume, Error> {
    let blocked = with(|s| {
        s.block_current(timeout, |h, _| {
            enqueue(h);
            true
        })
    })?;
    Ok(suspend(blocked.expect("a block that nothing refuses")))
}

impl Scheduler {
    /// A yield of the current fiber when it would be the next fiber of the
    /// loop's batch anyway (nothing else ready, resumed by the loop, the
    /// batch not done, no switch hook): the switch to itself without the
    /// queue's push and pop, counted as that switch is (state rule 6).
    /// Returns its flags, or `None` when the yield must go through the
    /// queue.
    #[inline(always)]
    fn yield_alone(&mut self) -> Option<Resume> {
        if !self.ready.is_empty() || self.hook.is_some() || !self.may_run_batch() {
            return None;
        }
        let h = self.current?;
        let slot = &mut self.slots[h];
        if slot.resumer.is_some() {
            return None;
        }
        self.budget -= 1;
        count_switch(&mut self.switches, true);
        Some(slot.go_on())
    }

    /// Blocks the current fiber (with a timer when `timeout` is set) unless
    /// `admit`, given its handle and slot, refuses; returns its yielder and
    /// whether it runs the loop's batch itself (state rule 6).
    #[inline(always)]
    fn block_current(
        &mut self,
        timeout: Option<Duration>,
        admit: impl FnOnce(Handle, &Slot) -> bool,
    ) -> Result<Option<Blocked>, Error> {
        let (h, slot) = self.current_slot()?;
        if !admit(h, slot) {
            return Ok(None);
        }
        slot.status = Status::Suspended;
        slot.timed_out = false;
        slot.wait += 1;
        let (token, y, resumer) = (slot.wait, slot.yielder, slot.resumer);
        if let Some(t) = timeout {
            let deadline = Instant::now().checked_add(t).unwrap_or_else(far_future);
            if self.timers.crowded() {
                self.prune_timers();
            }
            self.timers.push(deadline, h, token);
        }
        Ok(Some(self.blocked(y, resumer)))
    }

    /// Drops the timers whose fiber was woken before them (or is gone).
    #[cold]
    fn prune_timers(&mut self) {
        let slots = &self.slots;
        self.timers.prune(|t| {
            matches!(slots.get(t.handle), Some(s) if s.wait == t.token && s.status == Status::Suspended)
        });
    }
}

/// A deadline no wait reaches, for timeouts past what `Instant` holds.
pub(super) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86_400)
}

/// Blocks like [`block`], as a cancellation point: a cancelled fiber yields
/// once (so a loop that catches the error cannot starve the others) and gets
/// [`Error::Cancelled`] without waiting; so does one cancelled while blocked.
///
/// # Errors
///
/// [`Error::NotInFiber`], [`Error::Cancelled`].
pub fn block_cancellable(timeout: Option<Duration>) -> Result<bool, Error> {
    if current_cancelled()? {
        return yield_now().and(Err(Error::Cancelled));
    }
    match park(timeout)? {
        Resume {
            cancelled: true, ..
        } => Err(Error::Cancelled),
        r => Ok(r.timed_out),
    }
}

/// One wait of a fiber, as [`block_noted`] names it: the fiber and the
/// count of its waits (state rule 4), so that [`resume_parked`](super::control::resume_parked) and
/// [`wakeup_parked`](super::control::wakeup_parked) end that wait and no later one. `Copy + Send`: a
/// value only, acted on by the fiber's own thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parked {
    id: FiberId,
    /// The count after the block (at least 1: `Option<Parked>` is no
    /// bigger than a `Parked`).
    wait: NonZeroU64,
}

impl Parked {
    /// The fiber that waits.
    pub fn fiber(&self) -> FiberId {
        self.id
    }

    /// Whether a fiber whose wait count is `wait` is still in this wait.
    pub(super) fn is(&self, wait: u64) -> bool {
        self.wait.get() == wait
    }
}

/// [`block_cancellable`] with no timeout that first gives `note` the wait
/// it enters (before the switch out; `note` must not touch the
/// scheduler): whoever is handed it can end that wait, and only that one,
/// with [`resume_parked`](super::control::resume_parked) or [`wakeup_parked`](super::control::wakeup_parked). Any other wakeup ends it
/// too (`Ok`), as it ends a [`block`].
///
/// # Errors
///
/// [`Error::NotInFiber`], [`Error::Cancelled`] (a cancelled fiber yields
/// once and does not wait, as in [`block_cancellable`]).
pub fn block_noted(note: impl FnOnce(Parked)) -> Result<(), Error> {
    if current_cancelled()? {
        return yield_now().and(Err(Error::Cancelled));
    }
    let blocked = with(|s| {
        s.block_current(None, |_, slot| {
            note(Parked {
                id: FiberId(slot.running.fid),
                wait: NonZeroU64::MIN.saturating_add(slot.wait),
            });
            true
        })
    })?;
    match suspend(blocked.expect("a block that nothing refuses")) {
        Resume {
            cancelled: true, ..
        } => Err(Error::Cancelled),
        _ => Ok(()),
    }
}

/// Sleeps the current fiber for `d` (0: a plain yield). A wakeup ends the
/// sleep early without error. A cancellation point.
///
/// # Errors
///
/// [`Error::NotInFiber`], [`Error::Cancelled`].
pub fn sleep(d: Duration) -> Result<(), Error> {
    if d.is_zero() {
        return yield_now();
    }
    block_cancellable(Some(d)).map(drop)
}

fn current_cancelled() -> Result<bool, Error> {
    with(|s| s.current_slot().map(|(_, slot)| slot.cancelled))
}

/// Fails when the current fiber is cancelled (Tarantool's `fiber.testcancel`).
///
/// # Errors
///
/// [`Error::Cancelled`]; outside a fiber it never fails.
pub fn testcancel() -> Result<(), Error> {
    match current_cancelled() {
        Ok(true) => Err(Error::Cancelled),
        _ => Ok(()),
    }
}
