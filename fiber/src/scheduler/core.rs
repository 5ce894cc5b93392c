//! This thread's scheduler: its state (slots, ids, the ready FIFO, the
//! timers, the current fiber, the stack pool), the thread-local it lives in
//! and the one way to reach it (`with`), the steps every other file shares
//! (wake, finish), and its settings.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::mem::ManuallyDrop;

use super::error::Error;
use super::id::{FiberId, IdHasher, FIRST_FID};
use super::ready::Ring;
use super::record::{Handle, Slot, Status};
use super::slots::Slots;
use super::timer::Timers;
use crate::stack::pool::{StackPool, StackPoolConfig};

/// Scheduler settings; see [`configure`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// The stack pool, and the default stack size.
    pub stacks: StackPoolConfig,
}

/// One thread's scheduler.
pub(crate) struct Scheduler {
    /// Every fiber's slot (state rule 1).
    pub(super) slots: Slots<Slot>,
    /// The handle of each fiber id that has a slot.
    pub(super) by_fid: HashMap<u64, Handle, BuildHasherDefault<IdHasher>>,
    /// Ready fibers in FIFO order; stale entries (a fiber no longer
    /// `Ready`, or gone) are skipped when popped.
    pub(super) ready: Ring<Handle>,
    /// Deadlines of blocked fibers (state rule 4).
    pub(super) timers: Timers<Handle>,
    /// The running fiber, or `None` outside fibers.
    pub(super) current: Option<Handle>,
    /// The id the next fiber gets.
    pub(super) next_fid: u64,
    /// Switches into and out of fibers so far on this thread.
    pub(super) switches: u64,
    /// Fibers of [`run`](crate::run)'s current batch still to switch to, counting
    /// stale queue entries; a blocking fiber may switch to them itself
    /// while it is not 0 (state rule 6).
    pub(super) budget: usize,
    /// Made on first use (its page rounding is not `const`).
    pub(super) stacks: Option<StackPool>,
    /// See [`set_switch_hook`].
    pub(super) hook: Option<fn()>,
    /// Bytes from a fiber's yielder down to its stack pointer when it last
    /// blocked (any fiber's: they block through the same frames); 0 until
    /// one has. Where the prefetch of the next fiber's frames looks.
    pub(super) depth: usize,
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
pub(super) fn with<R>(f: impl FnOnce(&mut Scheduler) -> R) -> R {
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
    pub(super) const fn new() -> Scheduler {
        Scheduler {
            slots: Slots::new(),
            by_fid: HashMap::with_hasher(BuildHasherDefault::new()),
            ready: Ring::new(),
            timers: Timers::new(),
            current: None,
            next_fid: FIRST_FID,
            switches: 0,
            budget: 0,
            depth: 0,
            stacks: None,
            hook: None,
        }
    }

    pub(super) fn stacks(&mut self) -> &mut StackPool {
        self.stacks
            .get_or_insert_with(|| new_pool(Config::default().stacks))
    }

    pub(super) fn slot(&self, h: Handle) -> Option<&Slot> {
        self.slots.get(h)
    }

    #[inline(always)]
    pub(super) fn handle(&self, id: FiberId) -> Option<Handle> {
        // The running fiber asking about itself (a pool's fiber readying
        // itself for its next request) needs no lookup.
        match self.current {
            Some(h) if h.id == id.0 => Some(h),
            _ => self.by_fid.get(&id.0).copied(),
        }
    }

    #[inline(always)]
    pub(super) fn live(&mut self, id: FiberId) -> Result<(Handle, &mut Slot), Error> {
        let h = self.handle(id).ok_or(Error::Dead(id))?;
        Ok((h, &mut self.slots[h]))
    }

    #[inline(always)]
    pub(super) fn current_slot(&mut self) -> Result<(Handle, &mut Slot), Error> {
        let h = self.current.ok_or(Error::NotInFiber)?;
        Ok((h, &mut self.slots[h]))
    }

    /// Whether `h` is the running fiber or one of its resumers, down to
    /// the loop: a fiber running the loop's batch from its own stack (state
    /// rule 6) is `Suspended` meanwhile, yet its stack is in use under the
    /// running one, so it must not be resumed from there.
    pub(super) fn resumes_current(&self, h: Handle) -> bool {
        let mut at = self.current;
        while let Some(f) = at {
            if f == h {
                return true;
            }
            at = self.slots.get(f).and_then(|slot| slot.resumer);
        }
        false
    }

    /// State rule 3. A stale handle (its fiber is gone, e.g. a joiner that
    /// gave up with an error and ended) is ignored. Returns `false` when the
    /// fiber is gone or has ended.
    #[inline(always)]
    pub(super) fn wake(&mut self, h: Handle) -> bool {
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
    pub(super) fn remove(&mut self, h: Handle) {
        self.slots.discard(h);
        self.by_fid.remove(&h.id);
    }

    /// Ends `h`'s fiber after its last resume returned (state rule 1): its
    /// stack goes back to the pool, its slot goes unless it is joinable, and
    /// its joiner is woken.
    pub(super) fn finish(&mut self, h: Handle) {
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
pub(super) fn run_switch_hook() {
    if let Some(hook) = with(|s| s.hook) {
        hook();
    }
}
