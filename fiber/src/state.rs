//! A fiber's state: its status and flags, each with when it is set and cleared.
//!
//! Rules the scheduler relies on (the unsafe code cites them by number):
//!
//! 1. A fiber's coroutine stays in its slot, and slots never move (`Slots`
//!    keeps them in fixed chunks). The resumer gets a pointer to the
//!    coroutine in the borrow that switches to the fiber, drops that borrow
//!    and resumes through the pointer: no `RefCell` borrow or slot reference
//!    is held across a switch, and slots may be added meanwhile (a nested
//!    spawn). While the fiber runs, nothing else touches its coroutine: the
//!    slot of a running fiber is never removed (only an ended one's is),
//!    `finish` takes the coroutine out only after its last resume returned,
//!    and the scheduler's drop (which can run inside a fiber, when `exit()`
//!    runs thread-local destructors) skips `Running` and `Calling` fibers.
//! 2. `yielder` is set by the fiber itself when it starts, and points into
//!    the fiber's own stack; it is used only by that fiber while it runs.
//! 3. Only a `Suspended` fiber is made ready by a wakeup; `Running`,
//!    `Calling` and `Ready` fibers ignore it, and `Dead` ones are an error.
//! 4. A timer entry counts only while its token equals the slot's `wait`:
//!    every block and every wakeup bumps `wait`, so stale entries are ignored.
//! 5. A blocked fiber's waiter record (in `Cond` and `Channel`) lives in the
//!    frame of its `wait`, `get` or `put`, and the queue holds a raw pointer
//!    to it, next to the fiber's handle. The frame takes its entry off the
//!    queue before it returns or unwinds (a drop guard), unless a waker took
//!    it off first; a waker pops the entry and writes the record only after
//!    `wake_fiber` said the fiber lives, with no switch in between. A
//!    suspended fiber's stack is never freed (a suspended coroutine is never
//!    dropped; see `Scheduler::drop`), so a queued record stays valid.
//! 6. A fiber that blocks or yields while the scheduler loop is its resumer
//!    runs the rest of the loop's current batch itself, from its own stack
//!    (`run_batch`): it takes the ready fibers in FIFO order, as the loop
//!    would, and resumes each; they yield back to it. It keeps the status
//!    its block (or wakeups) gave it meanwhile, not `Calling`. When it comes
//!    to itself in the ready queue it goes on without a switch; when the
//!    batch runs out it yields to the loop, which polls the timers. So FIFO
//!    order, the batch and the timer polls stay as if the loop had switched,
//!    and a wakeup of a fiber that waits for the one running costs one
//!    switch each way instead of two through the loop. Outside the loop's
//!    batches (before and after `run`, and in `run_until`'s `done`) no
//!    batch is left, so a fiber started there by `spawn_now` yields back to
//!    its creator, as in a fiber.

use std::borrow::Cow;
use std::ptr::NonNull;

use corosensei::{Coroutine, Yielder};

use crate::stack::FiberStack;

/// The coroutine type of every fiber: resumed with its flags; yields, when
/// it made its resumer current again itself (state rule 6), that resumer's
/// flags.
pub(crate) type Coro = Coroutine<Resume, Option<Resume>, (), FiberStack>;

/// A fiber's yielder (state rule 2).
pub(crate) type FiberYielder = Yielder<Resume, Option<Resume>>;

/// What a fiber is resumed with: its slot's flags, read by the resumer in
/// the borrow that switches to it, so the fiber needs no borrow of its own
/// to learn why it woke.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Resume {
    /// The slot's `timed_out`.
    pub timed_out: bool,
    /// The slot's `cancelled`.
    pub cancelled: bool,
}

/// Where a fiber is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// In the ready queue. Set by a wakeup or a yield; cleared when switched to.
    Ready,
    /// The current fiber. Set on switch-in; cleared on switch-out.
    Running,
    /// Waiting for a wakeup or a timer. Set by the fiber before it blocks.
    Suspended,
    /// Waiting for a fiber it started with `spawn_now` to yield or end: it
    /// is resumed by that return, never by a wakeup (rule 3).
    Calling,
    /// The function has returned. A joinable fiber stays in this state, with
    /// its slot, until it is joined.
    Dead,
}

impl Status {
    /// The name Tarantool's `fiber.status()` gives: "running", "suspended"
    /// or "dead".
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Dead => "dead",
            Status::Ready | Status::Suspended | Status::Calling => "suspended",
        }
    }
}

/// One fiber's slot in the scheduler's `Slots`.
pub(crate) struct Slot {
    pub status: Status,
    /// Rule 1. `None` once the fiber has ended.
    pub coro: Option<Coro>,
    /// Who resumed the fiber while it runs: the fiber that called
    /// `spawn_now`, or `None` for the scheduler loop.
    pub resumer: Option<Handle>,
    /// Rule 2.
    pub yielder: *const FiberYielder,
    pub name: Cow<'static, str>,
    /// Set by `cancel`, never cleared (the flag is sticky).
    pub cancelled: bool,
    /// Set and cleared by `set_joinable`; read when the function returns.
    pub joinable: bool,
    /// Set when a timer made the fiber ready; cleared when it blocks again.
    pub timed_out: bool,
    /// Rule 4.
    pub wait: u64,
    /// The fiber blocked in `join` on this one, if any.
    pub joiner: Option<Handle>,
    /// Context switches into this fiber.
    pub csw: u64,
    /// Usable stack size.
    pub stack_size: usize,
    /// The fiber's id (also the generation tag of handles to this slot),
    /// what the stack overflow handler reports, and the embedder's word
    /// (`ext`; the Lua bridge keeps its index there): the thread-local
    /// record of the running fiber points here.
    pub running: crate::context::Running,
}

/// A fiber's slot entry with the fiber id as its generation tag: the slot
/// is the fiber's while the entry holds that id (see `slots`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    pub entry: NonNull<crate::slots::Entry>,
    pub fid: u64,
}
