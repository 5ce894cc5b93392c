//! What can be asked about fibers: the current one, any one by id (status,
//! name, switches, stack size, flags), all of them, and the scheduler's
//! counters.

use super::core::with;
use super::error::Error;
use super::id::FiberId;
use super::record::{Handle, Status};
use crate::stack::pool::StackPool;

/// The current fiber, or `None` outside any fiber.
pub fn current() -> Option<FiberId> {
    with(|s| s.current.map(|h| FiberId(h.id)))
}

/// The current fiber and its cancel flag, in one borrow; `None` outside a
/// fiber.
pub(crate) fn current_fiber() -> Option<(Handle, bool)> {
    with(|s| s.current_slot().ok().map(|(h, slot)| (h, slot.cancelled)))
}

/// The current fiber's flags, read from its slot (no lookup by id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CurrentFlags {
    /// Its id.
    pub id: FiberId,
    /// Whether it is joinable ([`is_joinable`]).
    pub joinable: bool,
    /// Whether it is cancelled ([`is_cancelled`]).
    pub cancelled: bool,
}

/// The current fiber's id, joinable and cancel flags in one borrow; `None`
/// outside a fiber. What [`current`], [`is_joinable`] and [`is_cancelled`]
/// give for it, without looking its id up.
pub fn current_flags() -> Option<CurrentFlags> {
    with(|s| {
        s.current_slot().ok().map(|(h, slot)| CurrentFlags {
            id: FiberId(h.id),
            joinable: slot.joinable,
            cancelled: slot.cancelled,
        })
    })
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

/// The fiber's name: bytes, not necessarily UTF-8 (print it with
/// [`DisplayName`](crate::DisplayName)).
///
/// # Errors
///
/// [`Error::Dead`].
pub fn name(id: FiberId) -> Result<Vec<u8>, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.name.to_vec()))
}

/// Calls `f` with the fiber's name, without copying it.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn with_name<R>(id: FiberId, f: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
    with(|s| s.live(id).map(|(_, slot)| f(&slot.name)))
}

/// Context switches out of the fiber so far (Tarantool's `fiber->csw`,
/// counted when a fiber yields or resumes another): a fiber that has not
/// yielded yet has 0. The slot counts switches in; the running fiber's
/// last one is not matched by a switch out yet.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn csw(id: FiberId) -> Result<u64, Error> {
    with(|s| {
        s.live(id)
            .map(|(_, slot)| slot.csw - u64::from(slot.status == Status::Running))
    })
}

/// The fiber's usable stack size, in bytes.
///
/// # Errors
///
/// [`Error::Dead`].
pub fn stack_size(id: FiberId) -> Result<usize, Error> {
    with(|s| s.live(id).map(|(_, slot)| slot.running.stack_size))
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

/// The embedder's word for the fiber (set with [`Builder::ext`](crate::Builder::ext)).
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
