//! The per-thread scheduler: fiber slots, the ready FIFO, the timer heap, and
//! the switches between fibers.
//!
//! Every OS thread has one scheduler (a `thread_local`), reached only through
//! short `with` borrows that never span a switch (state rule 1). Fibers are
//! resumed from the thread's own stack by [`run`], or from their creator's
//! stack by [`Builder::spawn_now`]; a fiber's yield returns to whoever resumed
//! it.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use corosensei::{Coroutine, CoroutineResult};

use crate::context::{self, count_switch};
use crate::error::Error;
use crate::pool::{StackPool, StackPoolConfig};
use crate::queue::Ring;
use crate::slots::Slots;
use crate::stack::overflow;
use crate::state::{Coro, FiberYielder, Handle, Resume, Slot, Status};
use crate::timer::Timers;

/// Longest fiber name, in bytes (Tarantool's `FIBER_NAME_MAX` less the NUL).
pub const MAX_NAME_LEN: usize = 255;
/// First fiber id handed out; ids up to 100 are reserved, as in Tarantool.
pub const FIRST_FID: u64 = 101;
/// The id reported for code that runs outside any fiber (Tarantool's
/// scheduler fiber).
pub const SCHED_FID: u64 = 1;
/// Switches [`run`] makes at least between two polls of the timers, when
/// fibers keep waking each other.
const MIN_BATCH: usize = 64;

/// A fiber's id: unique in the process run, growing, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiberId(pub u64);

impl std::fmt::Display for FiberId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Hashes sequential ids by one multiplication.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Scheduler settings; see [`configure`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// The stack pool, and the default stack size.
    pub stacks: StackPoolConfig,
}

pub(crate) struct Scheduler {
    slots: Slots,
    by_fid: HashMap<u64, Handle, BuildHasherDefault<IdHasher>>,
    ready: Ring<Handle>,
    timers: Timers,
    current: Option<Handle>,
    next_fid: u64,
    /// Switches into and out of fibers so far on this thread.
    switches: u64,
    /// Fibers of [`run`]'s current batch still to switch to, counting
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
        // SAFETY: as in `with`.
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
                    trace_wakeup(h.fid);
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

    fn remove(&mut self, h: Handle) {
        self.slots.remove(h);
        self.by_fid.remove(&h.fid);
    }

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

    /// Drops the timers whose fiber was woken before them (or is gone).
    #[cold]
    fn prune_timers(&mut self) {
        let slots = &self.slots;
        self.timers.prune(|t| {
            matches!(slots.get(t.handle), Some(s) if s.wait == t.token && s.status == Status::Suspended)
        });
    }

    fn finish(&mut self, h: Handle) {
        tracing::trace!(id = h.fid, "finish");
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

fn run_switch_hook() {
    if let Some(hook) = with(|s| s.hook) {
        hook();
    }
}

/// Options for a new fiber; see [`Builder::spawn_now`] and
/// [`Builder::spawn_ready`].
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<Cow<'static, str>>,
    stack_size: Option<usize>,
    joinable: bool,
    ext: usize,
}

impl Builder {
    /// Default options: named "lua", the configured stack size, not joinable.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the fiber (at most [`MAX_NAME_LEN`] bytes; longer names are cut).
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Builder {
        let mut name = name.into();
        if name.len() > MAX_NAME_LEN {
            name = Cow::Owned(truncate(&name).to_owned());
        }
        self.name = Some(name);
        self
    }

    /// Usable stack size in bytes (rounded up to pages, at least 16 KiB).
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Whether the fiber stays after its end until joined.
    pub fn joinable(mut self, joinable: bool) -> Builder {
        self.joinable = joinable;
        self
    }

    /// The embedder's word for this fiber (see [`ext`]).
    pub fn ext(mut self, ext: usize) -> Builder {
        self.ext = ext;
        self
    }

    fn build(self, body: impl FnOnce() + 'static) -> Result<Handle, Error> {
        overflow::install();
        let stack = with(|s| s.stacks().take(self.stack_size))?;
        let stack_size = stack.size();
        let limit = corosensei::stack::Stack::limit(&stack).get();
        let guard = (limit - crate::stack::GUARD_SIZE, limit);
        let coro = Coroutine::with_stack(stack, move |y: &FiberYielder, _: Resume| {
            with(|s| {
                let (_, slot) = s.current_slot().expect("a fiber runs as current");
                slot.yielder = y;
            });
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(body)) {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                let (fid, name) = with(|s| {
                    let (h, slot) = s.current_slot().expect("a fiber runs as current");
                    (h.fid, slot.name.to_string())
                });
                eprintln!("fiber {fid} ({name}) panicked: {msg}");
            }
            run_switch_hook();
        });
        Ok(with(|s| {
            let fid = s.next_fid;
            s.next_fid += 1;
            let name = self.name.unwrap_or(Cow::Borrowed("lua"));
            // The bytes stay where they are when the slot moves.
            let name_bytes = (name.as_ptr(), name.len());
            let h = s.slots.insert(Slot {
                status: Status::Suspended,
                coro: Some(coro),
                resumer: None,
                yielder: std::ptr::null(),
                name,
                cancelled: false,
                joinable: self.joinable,
                timed_out: false,
                wait: 0,
                joiner: None,
                csw: 0,
                stack_size,
                running: context::Running {
                    guard,
                    fid,
                    name: name_bytes,
                    ext: self.ext,
                    word: Cell::new(0),
                },
            });
            s.by_fid.insert(fid, h);
            tracing::trace!(id = fid, name = &*s.slots[h].name, "spawn");
            h
        }))
    }

    /// Creates the fiber and runs it at once, until its first yield or its
    /// end; then returns to the caller (Tarantool's `fiber.create`).
    ///
    /// # Errors
    ///
    /// [`Error::Stack`] when no stack can be made.
    pub fn spawn_now(self, body: impl FnOnce() + 'static) -> Result<FiberId, Error> {
        let h = self.build(body)?;
        switch_to(h);
        Ok(FiberId(h.fid))
    }

    /// Creates the fiber and appends it to the ready queue (Tarantool's
    /// `fiber.new`): it runs when the caller yields, or in [`run`].
    ///
    /// # Errors
    ///
    /// [`Error::Stack`] when no stack can be made.
    pub fn spawn_ready(self, body: impl FnOnce() + 'static) -> Result<FiberId, Error> {
        let h = self.build(body)?;
        with(|s| s.wake(h));
        Ok(FiberId(h.fid))
    }
}

/// Cuts a name to at most [`MAX_NAME_LEN`] bytes on a character boundary.
pub fn truncate(name: &str) -> &str {
    let mut end = name.len().min(MAX_NAME_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// What the resumer takes out of the scheduler, in one borrow, to switch to
/// a fiber. Two words, so it comes back in registers.
struct SwitchIn {
    coro: NonNull<Coro>,
    input: Resume,
    /// Whether a subscriber wants the fiber's span.
    traced: bool,
}

impl Slot {
    /// Marks this fiber running, resumed by `resumer`, and publishes its
    /// record (ext, stack guard) to the thread-local; returns its coroutine and what
    /// it is resumed with (state rule 1).
    #[inline(always)]
    fn enter(&mut self, resumer: Option<Handle>) -> (NonNull<Coro>, Resume) {
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
    fn switch_in(&mut self, h: Handle) -> SwitchIn {
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
        context::set_running(outer);
        if ended {
            self.finish(h);
        }
    }
}

/// Resumes `h` from the current context and handles its yield or end.
fn switch_to(h: Handle) {
    resume(h, with(|s| s.switch_in(h)));
}

/// Runs the fiber `h`, made current by `switch_in`, until it yields or ends.
fn resume(h: Handle, sw: SwitchIn) {
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
#[inline(never)]
fn trace_wakeup(fid: u64) {
    tracing::trace!(id = fid, "wakeup");
}

#[cold]
fn fiber_span(h: Handle) -> Option<tracing::Span> {
    with(|s| {
        s.slot(h)
            .map(|slot| tracing::trace_span!("fiber", id = slot.running.fid, name = &*slot.name))
    })
}

/// Switches out of the current fiber, which has just blocked or queued
/// itself and whose yielder is `y`; with `hub`, it first runs the loop's
/// batch itself (state rule 6). It comes back when it is switched in again,
/// with the flags read from its slot.
#[inline(always)]
fn suspend(b: Blocked) -> Resume {
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
struct Blocked {
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
                // The record must not point into a freed slot.
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
        // SAFETY: as in `suspend`; the loop resumes it with its flags.
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

    /// What the current fiber `me`, resumed by `resumer`, switches out with
    /// now that it has blocked or queued itself.
    #[inline(always)]
    fn blocked(&mut self, y: *const FiberYielder, resumer: Option<Handle>) -> Blocked {
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
    fn go_on(&mut self) -> Resume {
        self.status = Status::Running;
        self.csw += 1;
        context::set_running(&self.running);
        Resume {
            timed_out: self.timed_out,
            cancelled: self.cancelled,
        }
    }
}

/// Runs ready fibers and fires timers until no fiber is ready or sleeping.
///
/// Ready fibers run in FIFO order; timers are polled between batches (the
/// fibers ready when the batch began, or 64 switches when fibers keep waking
/// each other), so a sleeper is never starved by fibers that keep yielding.
/// A fiber that blocks switches straight to the next ready one, without a
/// round trip through this loop.
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
        if batch == 0 {
            // Idle: stacks pooled past the watermark give their pages back.
            with(|s| s.stacks.as_mut().map(StackPool::trim));
            match next {
                Some(deadline) => {
                    let now = Instant::now();
                    if deadline > now {
                        std::thread::sleep(deadline - now);
                    }
                    continue;
                }
                None => return,
            }
        }
        // With hand-overs, a fiber woken in this batch is switched to in it
        // too (FIFO order is the same), up to the floor.
        let batch = if hand_over {
            batch.max(MIN_BATCH)
        } else {
            batch
        };
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

/// The current fiber, or `None` outside any fiber.
pub fn current() -> Option<FiberId> {
    with(|s| s.current.map(|h| FiberId(h.fid)))
}

/// Whether a fiber is ready or sleeping on a timer on this thread.
pub fn has_pending() -> bool {
    with(|s| s.fire_timers(Instant::now()).is_some() || !s.ready.is_empty())
}

/// Yields the current fiber: it goes to the back of the ready queue
/// (Tarantool's `fiber.yield()`, which is `sleep(0)`). A cancellation point.
///
/// # Errors
///
/// [`Error::NotInFiber`] outside a fiber; [`Error::Cancelled`] after the
/// yield when the fiber is cancelled.
pub fn yield_now() -> Result<(), Error> {
    let blocked = with(|s| {
        let (h, slot) = s.current_slot()?;
        slot.status = Status::Ready;
        let (y, resumer) = (slot.yielder, slot.resumer);
        s.ready.push_back(h);
        Ok::<_, Error>(s.blocked(y, resumer))
    })?;
    match suspend(blocked).cancelled {
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

impl Scheduler {
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

    /// Whether a fiber the loop resumed may run the loop's batch itself
    /// (state rule 6): the loop is `run`'s, its batch is not done, and no
    /// subscriber traces fibers (the loop enters each fiber's span).
    #[inline(always)]
    fn may_run_batch(&self) -> bool {
        self.budget > 0 && !tracing::level_enabled!(tracing::Level::TRACE)
    }
}

fn far_future() -> Instant {
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

/// The current fiber and its cancel flag, in one borrow; `None` outside a
/// fiber.
pub(crate) fn current_fiber() -> Option<(Handle, bool)> {
    with(|s| s.current_slot().ok().map(|(h, slot)| (h, slot.cancelled)))
}

/// Makes the fiber ready if it is suspended (as [`wakeup`] does, by handle,
/// with no id lookup). Returns `false` when it has ended or is gone.
#[inline(always)]
pub(crate) fn wake_fiber(h: Handle) -> bool {
    with(|s| s.wake(h))
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

/// Makes a suspended fiber ready. A no-op on a running, ready or calling
/// fiber, and on the caller itself.
///
/// # Errors
///
/// [`Error::Dead`] when the fiber has ended.
pub fn wakeup(id: FiberId) -> Result<(), Error> {
    with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            return Err(Error::Dead(id));
        }
        s.wake(h);
        Ok(())
    })
}

/// Sets the fiber's cancel flag and wakes it; it sees the cancel at its next
/// cancellation point. A no-op on a finished joinable fiber. Cancelling the
/// caller itself only sets the flag: call [`testcancel`] after.
///
/// # Errors
///
/// [`Error::Dead`] when the fiber has ended (and is not waiting for a join).
pub fn cancel(id: FiberId) -> Result<(), Error> {
    with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            return Ok(());
        }
        slot.cancelled = true;
        tracing::trace!(id = id.0, "cancel");
        s.wake(h);
        Ok(())
    })
}

/// Makes a fiber joinable (it keeps its slot after its end until joined) or
/// not.
///
/// # Errors
///
/// [`Error::Dead`] when the fiber has ended (Tarantool panics there).
pub fn set_joinable(id: FiberId, joinable: bool) -> Result<(), Error> {
    with(|s| {
        let (_, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            return Err(Error::Dead(id));
        }
        slot.joinable = joinable;
        Ok(())
    })
}

/// Waits for a joinable fiber to end, then frees its slot and returns its
/// embedder word ([`ext`]). Not a cancellation point: a cancelled joiner
/// keeps waiting.
///
/// # Errors
///
/// [`Error::NotInFiber`] when the fiber has not ended and the caller is not a
/// fiber; [`Error::JoinSelf`]; [`Error::Dead`] when there is no such fiber
/// (or it was joined); [`Error::NotJoinable`]; [`Error::JoinedConcurrently`]
/// when another fiber waits for it; [`Error::TimedOut`] when `timeout` runs
/// out first (the fiber stays joinable).
pub fn join(id: FiberId, timeout: Option<Duration>) -> Result<usize, Error> {
    let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far_future));
    loop {
        let me = with(|s| {
            let me = s.current;
            if me.map(|h| h.fid) == Some(id.0) {
                return Err(Error::JoinSelf);
            }
            let (h, slot) = s.live(id)?;
            if !slot.joinable {
                // A joiner made to give up (set_joinable(false) + wakeup)
                // leaves no trace, so a later join is not refused.
                if slot.joiner.is_some() && slot.joiner == me {
                    slot.joiner = None;
                }
                return Err(Error::NotJoinable(id));
            }
            if slot.status == Status::Dead {
                let ext = slot.running.ext;
                s.remove(h);
                return Ok(Err(ext));
            }
            match (slot.joiner, me) {
                (Some(j), Some(me)) if j != me => Err(Error::JoinedConcurrently(id)),
                (_, None) => Err(Error::NotInFiber),
                (_, Some(me)) => {
                    slot.joiner = Some(me);
                    Ok(Ok(h))
                }
            }
        })?;
        let target = match me {
            Err(ext) => return Ok(ext),
            Ok(target) => target,
        };
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) || block(left)? {
            let gave_up = with(|s| match s.slot(target) {
                Some(slot) if slot.status != Status::Dead => {
                    s.slots[target].joiner = None;
                    true
                }
                _ => false,
            });
            if gave_up {
                return Err(Error::TimedOut);
            }
        }
    }
}

/// Whether the fiber exists: running, ready, blocked, or ended and waiting
/// for its join.
pub fn exists(id: FiberId) -> bool {
    with(|s| s.handle(id).is_some())
}

/// The fiber's status, or `None` when it no longer exists (Tarantool then says
/// "dead").
pub fn status(id: FiberId) -> Option<Status> {
    with(|s| s.live(id).ok().map(|(_, slot)| slot.status))
}

/// The fiber's name.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn name(id: FiberId) -> Result<String, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.name.to_string()))
}

/// Calls `f` with the fiber's name, without copying it.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn with_name<R>(id: FiberId, f: impl FnOnce(&str) -> R) -> Result<R, Error> {
    with(|s| s.live(id).map(|(_, slot)| f(&slot.name)))
}

/// Renames a fiber.
///
/// # Errors
///
/// [`Error::Dead`]; [`Error::NameTooLong`] past [`MAX_NAME_LEN`] bytes (use
/// [`truncate`] first to cut instead).
pub fn set_name(id: FiberId, name: &str) -> Result<(), Error> {
    if name.len() > MAX_NAME_LEN {
        return Err(Error::NameTooLong);
    }
    with(|s| {
        let (_, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            return Err(Error::Dead(id));
        }
        let old = std::mem::replace(&mut slot.name, Cow::Owned(name.to_owned()));
        // The record points at the new bytes before the old ones are freed.
        slot.running.name = (slot.name.as_ptr(), slot.name.len());
        drop(old);
        Ok(())
    })
}

/// Context switches into the fiber so far.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn csw(id: FiberId) -> Result<u64, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.csw))
}

/// The fiber's usable stack size, in bytes.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn stack_size(id: FiberId) -> Result<usize, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.stack_size))
}

/// Whether the fiber is joinable.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn is_joinable(id: FiberId) -> Result<bool, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.joinable))
}

/// Whether the fiber's cancel flag is set.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn is_cancelled(id: FiberId) -> Result<bool, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.cancelled))
}

/// The embedder's word for the fiber (set with [`Builder::ext`]).
///
/// # Errors
///
/// [`Error::Dead`].
pub fn ext(id: FiberId) -> Result<usize, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.running.ext))
}

/// The ids of every fiber on this thread, in no particular order.
pub fn all() -> Vec<FiberId> {
    with(|s| {
        s.slots
            .iter()
            .map(|slot| FiberId(slot.running.fid))
            .collect()
    })
}

/// Counters of this thread's scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Fibers with a slot (running, ready, blocked, or ended unjoined).
    pub fibers: usize,
    /// Entries in the ready queue.
    pub ready: usize,
    /// Entries in the timer heap (stale ones included).
    pub timers: usize,
    /// Stacks in the pool.
    pub pooled_stacks: usize,
}

/// This thread's scheduler counters.
pub fn stats() -> Stats {
    with(|s| Stats {
        fibers: s.slots.len(),
        ready: s.ready.len(),
        timers: s.timers.len(),
        pooled_stacks: s.stacks.as_ref().map_or(0, StackPool::len),
    })
}

/// Unmaps every pooled stack of this thread.
pub fn clear_stack_pool() {
    with(|s| s.stacks().clear());
}
