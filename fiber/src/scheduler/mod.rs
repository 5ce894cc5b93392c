//! The per-thread scheduler: fiber slots, the ready FIFO, the timer heap, and
//! the switches between fibers.
//!
//! Every OS thread has one scheduler (a `thread_local`), reached only through
//! short `with` borrows that never span a switch (state rule 1). Fibers are
//! resumed from the thread's own stack by [`run()`], or from their creator's
//! stack by [`Builder::spawn_now`]; a fiber's yield returns to whoever resumed
//! it.
//!
//! The files, each importing only those listed before it:
//!
//! - `slots`, `ready`, `timer`: generic leaves (a slab whose entries never
//!   move, a FIFO ring, a deadline heap);
//! - `id`, `error`, `record`: fiber ids, the error type, a fiber's slot;
//! - this file: the scheduler, its thread-local, the steps every other file
//!   shares (wake, finish), and its settings;
//! - `switch`: switching into a fiber and back;
//! - `handoff`: a blocked fiber running the loop's batch itself (state
//!   rule 6);
//! - `park`: blocking the current fiber (yield, sleep, block, queued waits);
//! - `builder`: making fibers; `run`: the loop; `control`: wakeup, cancel,
//!   join, renaming; `info`: what can be asked about fibers.
//!
//! # State rules
//!
//! The unsafe code relies on these and cites them as "state rule N"; so does
//! every other file of the crate (the waiter records of `crate::sync`, the
//! record read by `crate::context` and the overflow handler).
//!
//! 1. A fiber's coroutine stays in its slot, and slots never move (`Slots`
//!    keeps them in fixed chunks, and the thread's one slab lives as long as
//!    the thread's scheduler: a handle is only ever used with it). The resumer gets a pointer to the
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
//! 7. The thread-local record pointer ([`crate::context`]) points at the
//!    `running` record in the slot of the fiber that runs, or is null
//!    outside fibers: every switch in (`enter`, `go_on`) sets it to the
//!    fiber's record and every switch out sets it to the resumer's (or
//!    null), before anything else runs on the thread. A slot is freed only
//!    after its fiber switched out for the last time, and the pointer is
//!    moved off it first (`switch_out`, and `batch_loop` before `finish`),
//!    so the record it points at is valid. The record's name bytes are
//!    replaced new-first (`set_name` points the record at the new bytes
//!    before the old ones are freed).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::mem::ManuallyDrop;

use crate::stack::pool::{StackPool, StackPoolConfig};

mod builder;
mod control;
pub mod error;
mod handoff;
mod id;
mod info;
mod park;
mod ready;
mod record;
mod run;
mod slots;
mod switch;
mod timer;

pub use builder::Builder;
pub(crate) use control::wake_fiber;
pub use control::{cancel, join, set_joinable, set_name, wakeup};
use error::Error;
use id::IdHasher;
pub use id::{FiberId, FIRST_FID, SCHED_FID};
pub(crate) use info::current_fiber;
pub use info::{
    all, clear_stack_pool, csw, current, exists, ext, is_cancelled, is_joinable, name, stack_size,
    stats, status, with_name, Stats,
};
pub use park::{block, block_cancellable, sleep, testcancel, yield_now};
pub(crate) use park::{park, park_queued};
use ready::Ring;
use record::Slot;
pub use record::{truncate, Status, MAX_NAME_LEN};
pub(crate) use record::{Handle, Resume};
pub use run::{has_pending, run, run_until};
use slots::Slots;
use timer::Timers;

/// Scheduler settings; see [`configure`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// The stack pool, and the default stack size.
    pub stacks: StackPoolConfig,
}

pub(crate) struct Scheduler {
    slots: Slots<Slot>,
    by_fid: HashMap<u64, Handle, BuildHasherDefault<IdHasher>>,
    ready: Ring<Handle>,
    timers: Timers<Handle>,
    current: Option<Handle>,
    next_fid: u64,
    /// Switches into and out of fibers so far on this thread.
    switches: u64,
    /// Fibers of [`run()`]'s current batch still to switch to, counting
    /// stale queue entries; a blocking fiber may switch to them itself
    /// while it is not 0 (state rule 6).
    budget: usize,
    /// Made on first use (its page rounding is not `const`).
    stacks: Option<StackPool>,
    /// See [`set_switch_hook`].
    hook: Option<fn()>,
}

thread_local! {
    // `const`: every access is a plain thread-local address, with no lazy
    // initialisation check on the switch path.
    // `ManuallyDrop`: with no destructor of its own, an access is not
    // preceded by the check of the thread-local's destructor state;
    // `SCHED_DROP` drops what it holds instead.
    static SCHED: ManuallyDrop<RefCell<Scheduler>> =
        const { ManuallyDrop::new(RefCell::new(Scheduler::new())) };
    /// Registered when the thread's stack pool is made (see [`new_pool`]).
    static SCHED_DROP: DropSched = const { DropSched };
}

/// Drops what the thread's scheduler holds when the thread ends, leaving an
/// empty scheduler in its place: one that a later access (from another
/// thread-local's destructor) finds valid, and that holds no memory.
struct DropSched;

impl Drop for DropSched {
    fn drop(&mut self) {
        let cell: *const RefCell<Scheduler> = SCHED.with(|s| &**s as *const _);
        // SAFETY: as in `with`: a thread-local lives until its own
        // destructor has run, and this is that destructor.
        if let Ok(mut s) = unsafe { &*cell }.try_borrow_mut() {
            drop(std::mem::replace(&mut *s, Scheduler::new()));
        }
    }
}

/// The thread's stack pool; registers [`DropSched`] first, since the
/// scheduler holds nothing to drop before it has a pool (every fiber's stack
/// comes from it).
fn new_pool(config: StackPoolConfig) -> StackPool {
    SCHED_DROP.with(|_| ());
    StackPool::new(config)
}

/// Runs `f` on this thread's scheduler.
#[inline(always)]
fn with<R>(f: impl FnOnce(&mut Scheduler) -> R) -> R {
    // Only the address is taken inside `LocalKey::with`: that closure is
    // small enough to inline, so `f` runs inline too (inside it, a large
    // `f` made the whole `with` out of line, called through the key's
    // accessor).
    let cell: *const RefCell<Scheduler> = SCHED.with(|s| &**s as *const _);
    // SAFETY: a thread-local lives until the thread's destructors run, and
    // `LocalKey::with` panics once they have; the reference does not
    // outlive this call.
    f(&mut unsafe { &*cell }.borrow_mut())
}

impl Scheduler {
    const fn new() -> Scheduler {
        Scheduler {
            slots: Slots::new(),
            by_fid: HashMap::with_hasher(BuildHasherDefault::new()),
            ready: Ring::new(),
            timers: Timers::new(),
            current: None,
            next_fid: FIRST_FID,
            switches: 0,
            budget: 0,
            stacks: None,
            hook: None,
        }
    }

    fn stacks(&mut self) -> &mut StackPool {
        self.stacks
            .get_or_insert_with(|| new_pool(Config::default().stacks))
    }

    fn slot(&self, h: Handle) -> Option<&Slot> {
        self.slots.get(h)
    }

    fn handle(&self, id: FiberId) -> Option<Handle> {
        self.by_fid.get(&id.0).copied()
    }

    fn live(&mut self, id: FiberId) -> Result<(Handle, &mut Slot), Error> {
        let h = self.handle(id).ok_or(Error::Dead(id))?;
        Ok((h, &mut self.slots[h]))
    }

    #[inline(always)]
    fn current_slot(&mut self) -> Result<(Handle, &mut Slot), Error> {
        let h = self.current.ok_or(Error::NotInFiber)?;
        Ok((h, &mut self.slots[h]))
    }

    /// State rule 3. A stale handle (its fiber is gone, e.g. a joiner that
    /// gave up with an error and ended) is ignored. Returns `false` when the
    /// fiber is gone or has ended.
    #[inline(always)]
    fn wake(&mut self, h: Handle) -> bool {
        let Some(slot) = self.slots.get_mut(h) else {
            return false;
        };
        match slot.status {
            Status::Suspended => {
                // Only a load and a compare here: no frame for the event.
                if tracing::level_enabled!(tracing::Level::TRACE) {
                    trace_wakeup(h.id);
                }
                slot.status = Status::Ready;
                slot.wait += 1;
                self.ready.push_back(h);
                true
            }
            Status::Dead => false,
            _ => true,
        }
    }

    /// Frees `h`'s slot and forgets its id.
    fn remove(&mut self, h: Handle) {
        self.slots.remove(h);
        self.by_fid.remove(&h.id);
    }

    /// Ends `h`'s fiber after its last resume returned (state rule 1): its
    /// stack goes back to the pool, its slot goes unless it is joinable, and
    /// its joiner is woken.
    fn finish(&mut self, h: Handle) {
        tracing::trace!(id = h.id, "finish");
        let slot = &mut self.slots[h];
        let coro = slot
            .coro
            .take()
            .expect("a fiber that ends has its coroutine");
        slot.status = Status::Dead;
        let stack = coro.into_stack();
        let slot = &mut self.slots[h];
        let joiner = slot.joiner;
        if !slot.joinable {
            self.remove(h);
        }
        self.stacks().put(stack);
        if let Some(j) = joiner {
            self.wake(j);
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        // A suspended coroutine must never be dropped: corosensei would force
        // an unwind through its Lua frames. What is still suspended when the
        // thread ends is leaked on purpose.
        // The thread can end inside a fiber (`exit()` runs thread-local
        // destructors on the caller's stack): the running fiber and those
        // that resumed it are inside `resume`, and theirs never return.
        for slot in self.slots.iter_mut() {
            let inside = matches!(slot.status, Status::Running | Status::Calling);
            if let Some(coro) = slot.coro.take() {
                if inside || coro.started() && !coro.done() {
                    std::mem::forget(coro);
                }
            }
        }
    }
}

#[cold]
#[inline(never)]
fn trace_wakeup(fid: u64) {
    tracing::trace!(id = fid, "wakeup");
}

/// Replaces this thread's scheduler settings.
///
/// # Errors
///
/// Fails (returning `false`) when fibers already exist on this thread.
pub fn configure(config: Config) -> bool {
    with(|s| {
        if !s.slots.is_empty() || s.current.is_some() {
            return false;
        }
        s.stacks = Some(new_pool(config.stacks));
        true
    })
}

/// This thread's scheduler settings.
pub fn config() -> Config {
    with(|s| Config {
        stacks: s.stacks().config(),
    })
}

/// Sets the function called on the current fiber right before it yields and
/// when its function ends (the cord's buffers use it to take back what the
/// fiber held). Returns the previous hook, which the new one should call.
pub fn set_switch_hook(hook: Option<fn()>) -> Option<fn()> {
    with(|s| std::mem::replace(&mut s.hook, hook))
}

/// Calls the switch hook, if one is set.
fn run_switch_hook() {
    if let Some(hook) = with(|s| s.hook) {
        hook();
    }
}
