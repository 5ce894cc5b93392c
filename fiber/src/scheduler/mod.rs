//! The per-thread scheduler: fiber slots, the ready FIFO, the timer heap, and
//! the switches between fibers.
//!
//! Every OS thread has one scheduler (a `thread_local`), reached only through
//! short `with` borrows that never span a switch (state rule 1). Fibers are
//! resumed from the thread's own stack by [`run()`], from their creator's
//! stack by [`Builder::spawn_now`], or from the stack of whoever hands a
//! waiting one work by [`resume_now`]; a fiber's yield returns to whoever
//! resumed it.
//!
//! The files, each importing only files listed before it (this one only
//! declares them and re-exports what the crate offers):
//!
//! - `slots`, `ready`, `timer`: generic leaves that know nothing of fibers
//!   (a slab whose entries never move, with generation-tagged handles; a
//!   FIFO ring; a deadline heap); `idle`: the idle-wait hook, a leaf too;
//! - `id`, `error`, `record`: fiber ids; the error type; a fiber's slot
//!   (status, flags, name);
//! - `core`: the scheduler's state, the thread-local it lives in and the one
//!   way to reach it (`with`), the steps the other files share (wake,
//!   finish), and its settings;
//! - `switch`: switching into a fiber and back;
//! - `handoff`: a blocked fiber running the loop's batch itself (state
//!   rule 6);
//! - `park`: blocking the current fiber (yield, sleep, block, the queued
//!   waits of `Cond` and `Channel`);
//! - `prefetch`: with many fibers ready, the cache lines of the next ones
//!   asked for while one runs;
//! - `builder`: making fibers; `info`: what can be asked about fibers; `run`:
//!   the loop; `control`: wakeup, cancel, join, renaming, abandoning.
//!
//! # State rules
//!
//! The unsafe code relies on these and cites them as "state rule N"; so does
//! every other file of the crate (the waiter records of `crate::sync`, the
//! record read by `crate::context` and the overflow handler).
//!
//! 1. A fiber's coroutine stays in its slot, and slots never move (`Slots`
//!    keeps them in fixed chunks; the thread's one slab lives as long as the
//!    thread's scheduler, and a handle is only ever used with it). The
//!    resumer gets a pointer to the coroutine in the borrow that switches
//!    to the fiber, drops that borrow and resumes through the pointer: no
//!    `RefCell` borrow or slot reference is held across a switch, and slots
//!    may be added meanwhile (a nested spawn). While the fiber runs, nothing else touches its coroutine: the
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
//!    its creator, as in a fiber. Such a fiber is `Suspended` while its
//!    stack runs the batch, so `resume_now` walks the running fiber's
//!    resumers and refuses one of them (`Scheduler::resumes_current`).
//! 7. The thread-local record pointer ([`crate::context`]) points at the
//!    `running` record in the slot of the fiber that runs, or is null
//!    outside fibers: whatever makes a fiber current publishes its record
//!    (`Slot::enter`, `Slot::go_on`) before the fiber runs, and
//!    `switch_out` publishes the resumer's (or null). A slot is freed only
//!    after its fiber's last switch, once the pointer has moved off it
//!    (`switch_out` and `batch_loop` set it before they call `finish`), so
//!    the record it points at is valid until the next switch. The record's
//!    name bytes are replaced new-first (`set_name` points the record at the
//!    new bytes before the old ones are freed).

mod builder;
mod control;
mod core;
pub mod error;
mod handoff;
mod id;
pub mod idle;
mod info;
mod park;
mod prefetch;
mod ready;
mod record;
mod run;
mod slots;
mod switch;
mod timer;

pub use self::core::{config, configure, set_switch_hook, Config};
pub use builder::Builder;
pub(crate) use control::wake_fiber;
pub use control::{
    abandon, cancel, join, join_state, resume_now, resume_parked, set_joinable, set_name, wakeup,
    wakeup_parked, wakeup_uncancelled,
};
pub use id::{FiberId, FIRST_FID, SCHED_FID};
pub(crate) use info::current_fiber;
pub use info::{
    all, clear_stack_pool, csw, current, current_flags, exists, ext, is_cancelled, is_joinable,
    name, stack_size, stats, status, with_name, CurrentFlags, Stats,
};
pub use park::{block, block_cancellable, block_noted, sleep, testcancel, yield_now, Parked};
pub(crate) use park::{park, park_enqueued, park_queued};
pub use record::{truncate, DisplayName, Status, MAX_NAME_LEN};
pub(crate) use record::{Handle, Resume};
pub use run::{has_pending, has_ready, next_timer, poll_soon, run, run_until, serve};
