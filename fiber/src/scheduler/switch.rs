//! Switching into a fiber and back: the resumer makes the fiber current in
//! one borrow, drops it, resumes the coroutine in place (state rule 1), and
//! undoes the switch when the fiber yields or ends.

use std::ptr::NonNull;

use corosensei::CoroutineResult;

use super::core::{with, Scheduler};
use super::record::{Coro, DisplayName, Handle, Resume, Slot, Status};
use crate::context::{self, count_switch};

/// What the resumer takes out of the scheduler, in one borrow, to switch to
/// a fiber. Two words, so it comes back in registers.
pub(super) struct SwitchIn {
    coro: NonNull<Coro>,
    input: Resume,
    /// Whether a subscriber wants the fiber's span.
    traced: bool,
}

impl Slot {
    /// Marks this fiber running, resumed by `resumer`, and publishes its
    /// record (ext, stack guard) to the thread-local (state rule 7); returns
    /// its coroutine and what it is resumed with (state rule 1).
    #[inline(always)]
    pub(super) fn enter(&mut self, resumer: Option<Handle>) -> (NonNull<Coro>, Resume) {
        self.status = Status::Running;
        self.resumer = resumer;
        self.csw += 1;
        context::set_running(&self.running);
        let coro = NonNull::from(
            self.coro
                .as_mut()
                .expect("a switched-to fiber has its coroutine"),
        );
        let input = Resume {
            timed_out: self.timed_out,
            cancelled: self.cancelled,
        };
        (coro, input)
    }
}

impl Scheduler {
    /// Makes `h` current, resumed by the current fiber if any; hands out
    /// its coroutine (state rule 1). A running resumer is `Calling` until
    /// `h` yields; a blocked one (state rule 6) keeps its status.
    #[inline(always)]
    pub(super) fn switch_in(&mut self, h: Handle) -> SwitchIn {
        let prev = self.current.replace(h);
        if let Some(p) = prev {
            let slot = &mut self.slots[p];
            if slot.status == Status::Running {
                slot.status = Status::Calling;
            }
        }
        count_switch(&mut self.switches, true);
        let (coro, input) = self.slots[h].enter(prev);
        SwitchIn {
            coro,
            input,
            // One relaxed load unless a subscriber listens at trace level.
            traced: tracing::enabled!(tracing::Level::TRACE),
        }
    }

    /// Undoes `switch_in` after the current fiber yielded or ended (an
    /// ended fiber's stack goes back to the pool).
    fn switch_out(&mut self, ended: bool) {
        let h = self.current.expect("a fiber was switched in");
        let prev = self.slots[h].resumer;
        self.current = prev;
        count_switch(&mut self.switches, prev.is_some());
        let outer: *const context::Running = match prev {
            Some(p) => {
                let slot = &mut self.slots[p];
                if slot.status == Status::Calling {
                    slot.status = Status::Running;
                }
                &slot.running
            }
            None => std::ptr::null(),
        };
        // State rule 7: off the slot before `finish` may free it.
        context::set_running(outer);
        if ended {
            self.finish(h);
        }
    }
}

/// Resumes `h` from the current context and handles its yield or end.
pub(super) fn switch_to(h: Handle) {
    resume(h, with(|s| s.switch_in(h)));
}

/// Runs the fiber `h`, made current by `switch_in`, until it yields or ends.
pub(super) fn resume(h: Handle, sw: SwitchIn) {
    // Entered by the resumer, on its own stack: exited when the fiber yields
    // or ends, so no guard is ever held across a switch inside the fiber.
    let span = if sw.traced { fiber_span(h) } else { None };
    let entered = span.as_ref().map(tracing::Span::enter);
    // SAFETY: state rule 1: the coroutine stays in its slot, which does not
    // move and is not removed while its fiber runs; nothing else touches it
    // meanwhile, and no borrow of the scheduler is held here.
    let ended = match unsafe { (*sw.coro.as_ptr()).resume(sw.input) } {
        CoroutineResult::Yield(_) => false,
        CoroutineResult::Return(()) => true,
    };
    drop(entered);
    with(|s| s.switch_out(ended));
}

#[cold]
fn fiber_span(h: Handle) -> Option<tracing::Span> {
    with(|s| {
        s.slot(h).map(|slot| {
            let name = DisplayName(&slot.name);
            tracing::trace_span!("fiber", id = slot.running.fid, name = %name)
        })
    })
}
