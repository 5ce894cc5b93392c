//! State rule 6: a fiber that blocks or yields while the loop is its
//! resumer runs the rest of the loop's batch itself, from its own stack, so
//! a wakeup of a fiber that waits for the one running costs one switch
//! each way instead of two through the loop. Also the plain switch out of a
//! fiber that has just blocked ([`suspend`]).

use std::ptr::NonNull;

use corosensei::CoroutineResult;

use super::core::{with, Scheduler};
use super::record::{Coro, FiberYielder, Handle, Resume, Slot, Status};
use crate::context::{self, count_switch};

/// Switches out of the current fiber, which has just blocked or queued
/// itself and whose yielder is `y`; with `hub`, it first runs the loop's
/// batch itself (state rule 6). It comes back when it is switched in again,
/// with the flags read from its slot.
#[inline(always)]
pub(super) fn suspend(b: Blocked) -> Resume {
    if let Some(hook) = b.hook {
        hook();
    }
    if b.hub {
        run_batch(b.y)
    } else {
        // SAFETY: state rule 2: `y` is the current fiber's yielder, set by
        // it when it started; it points into its own stack, the one running
        // now.
        unsafe { (*b.y).suspend(b.back) }
    }
}

/// What a fiber that has just blocked or queued itself switches out with.
pub(super) struct Blocked {
    /// Its yielder (state rule 2).
    y: *const FiberYielder,
    /// Whether it runs the loop's batch itself (state rule 6).
    hub: bool,
    /// Set when its resumer runs the batch and is switched in again already
    /// (state rule 6): the resumer's flags, yielded to it.
    back: Option<Resume>,
    /// The switch hook, called first (before any other fiber is made
    /// current: the hook looks at the current fiber).
    hook: Option<fn()>,
}

/// What a blocked fiber that runs the loop's batch (state rule 6) does next.
enum Step {
    /// Resume this fiber of the batch, already switched in.
    Run(NonNull<Coro>, Resume),
    /// Go on: the fiber itself is next, already switched in again.
    Back(Resume),
    /// Yield to the loop: the batch is done.
    Yield,
}

/// State rule 6: the current fiber, blocked or queued, and resumed by the
/// loop (whose yielder is `y`), runs the fibers of the loop's batch from its
/// own stack, as the loop would, until it comes to itself in the ready queue
/// or the batch runs out (then it yields to the loop).
fn run_batch(y: *const FiberYielder) -> Resume {
    let (hub, step) = with(|s| {
        let hub = s.current.expect("a fiber runs the batch");
        (hub, s.next_of_batch(hub))
    });
    // The common case first: one fiber runs and hands the thread back.
    let Step::Run(coro, input) = step else {
        return batch_step(y, step);
    };
    match run_in_batch(coro, input) {
        CoroutineResult::Yield(Some(back)) => back,
        ran => batch_loop(y, hub, ran),
    }
}

/// Resumes a fiber of the batch, switched in by `next_of_batch`.
#[inline(always)]
fn run_in_batch(coro: NonNull<Coro>, input: Resume) -> CoroutineResult<Option<Resume>, ()> {
    // SAFETY: state rule 1, as in `resume`.
    unsafe { (*coro.as_ptr()).resume(input) }
}

/// [`run_batch`] after a fiber of the batch yielded without handing the
/// thread back, or ended (`ran`): the hub takes the next steps itself.
#[inline(never)]
fn batch_loop(
    y: *const FiberYielder,
    hub: Handle,
    mut ran: CoroutineResult<Option<Resume>, ()>,
) -> Resume {
    loop {
        let ended = match ran {
            CoroutineResult::Yield(Some(back)) => return back,
            CoroutineResult::Yield(None) => false,
            CoroutineResult::Return(()) => true,
        };
        let step = with(|s| {
            // The hub's thread-local record is set again when it goes on
            // (in between only this code runs, on its stack).
            let h = s.current.replace(hub).expect("a fiber of the batch ran");
            if ended {
                // State rule 7: the record must not point into a freed slot.
                context::set_running(&s.slots[hub].running);
                s.finish(h);
            }
            s.next_of_batch(hub)
        });
        ran = match step {
            Step::Run(coro, input) => run_in_batch(coro, input),
            step => return batch_step(y, step),
        };
    }
}

/// [`run_batch`]'s end: the hub goes on, or yields to the loop.
fn batch_step(y: *const FiberYielder, step: Step) -> Resume {
    match step {
        Step::Back(input) => input,
        // SAFETY: state rule 2, as in `suspend`; the loop resumes it with
        // its flags.
        Step::Yield => unsafe { (*y).suspend(None) },
        Step::Run(..) => unreachable!("a fiber to run is resumed by the caller"),
    }
}

impl Scheduler {
    /// [`run_batch`]'s next step: the next ready fiber of the batch, which
    /// `me` resumes.
    #[inline(always)]
    fn next_of_batch(&mut self, me: Handle) -> Step {
        while self.budget > 0 {
            self.budget -= 1;
            let Some(n) = self.ready.pop_front() else {
                break;
            };
            self.prefetch_next();
            let Some(slot) = self.slots.get_mut(n) else {
                continue;
            };
            if slot.status != Status::Ready {
                continue;
            }
            count_switch(&mut self.switches, true);
            if n != me {
                self.current = Some(n);
                let (coro, input) = slot.enter(Some(me));
                return Step::Run(coro, input);
            }
            // It is `current` already.
            return Step::Back(slot.go_on());
        }
        Step::Yield
    }

    /// Makes `hub`, the resumer of the current fiber, current again when it
    /// is the batch's next fiber (state rule 6); returns its flags, which
    /// the current fiber, just blocked, yields to it. `None` when `hub` is
    /// not next (a fiber in `spawn_now` never is: it is never ready).
    #[inline(always)]
    fn hand_back(&mut self, hub: Handle) -> Option<Resume> {
        if self.budget == 0 || self.ready.front() != Some(hub) {
            return None;
        }
        let slot = self.slots.get_mut(hub)?;
        if slot.status != Status::Ready {
            return None;
        }
        self.ready.pop_front();
        self.budget -= 1;
        self.current = Some(hub);
        count_switch(&mut self.switches, true);
        Some(slot.go_on())
    }

    /// Whether a fiber the loop resumed may run the loop's batch itself
    /// (state rule 6): the loop is `run`'s, its batch is not done, and no
    /// subscriber traces fibers (the loop enters each fiber's span).
    #[inline(always)]
    pub(super) fn may_run_batch(&self) -> bool {
        self.budget > 0 && !tracing::level_enabled!(tracing::Level::TRACE)
    }

    /// What the current fiber `me`, resumed by `resumer`, switches out with
    /// now that it has blocked or queued itself.
    #[inline(always)]
    pub(super) fn blocked(&mut self, y: *const FiberYielder, resumer: Option<Handle>) -> Blocked {
        self.depth = (y as usize).wrapping_sub(super::prefetch::stack_pointer());
        let (hub, back) = match resumer {
            None => (self.may_run_batch(), None),
            Some(r) if self.hook.is_none() => (false, self.hand_back(r)),
            Some(_) => (false, None),
        };
        Blocked {
            y,
            hub,
            back,
            hook: self.hook,
        }
    }
}

impl Slot {
    /// Marks this fiber, `current` already, running again and publishes it
    /// to the thread-locals; returns its flags.
    #[inline(always)]
    pub(super) fn go_on(&mut self) -> Resume {
        self.status = Status::Running;
        self.csw += 1;
        context::set_running(&self.running);
        Resume {
            timed_out: self.timed_out,
            cancelled: self.cancelled,
        }
    }
}
