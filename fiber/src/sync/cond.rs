//! A condition variable for fibers (Tarantool's `fiber.cond`).
//!
//! A [`Cond`] is a FIFO queue of waiting fibers. [`Cond::signal`] takes the
//! first waiter off the queue and wakes it; [`Cond::broadcast`] does so for
//! every waiter. Because the waker removes the waiter and marks it woken
//! before the waiter runs again, a signal is never lost: a waiter whose timer
//! fires at the same moment still reports the signal, and a waiter that was
//! cancelled passes its signal on to the next one. A waiter that gives up
//! (timeout, cancel) removes itself, so no later signal goes to a fiber that is
//! not waiting any more.
//!
//! There is no mutex: fibers of one thread never run at the same time, so the
//! predicate a cond guards is checked and changed between yields. Like every
//! condition variable, a cond is used in a loop that re-checks the predicate.

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, Instant};

use super::waitlist;
use crate::scheduler::error::Error;
use crate::scheduler::{self, Handle, Resume};

type Link = waitlist::Link<Handle>;
type WaitList = waitlist::WaitList<Handle>;

/// How a waiter left the queue, set by the waker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Woken {
    /// Not queued yet.
    Out,
    /// Still queued (or left on its own: timeout, cancel).
    No,
    /// Taken off by [`Cond::signal`]: if the waiter does not report it, it
    /// must pass it on.
    Signal,
    /// Taken off by [`Cond::broadcast`].
    Broadcast,
}

/// A waiter's record: it lives in the frame of its `wait` and is linked
/// into the cond's queue while it waits (state rule 5).
#[repr(C)]
struct Waiter {
    /// First, so a pointer to it is a pointer to the record.
    link: Link,
    /// Set by the waker that took the record off the queue.
    woken: Cell<Woken>,
}

impl Waiter {
    /// The record whose link `l` is.
    ///
    /// # Safety
    ///
    /// `l` is the link of a live `Waiter` (a cond's queue links no other).
    unsafe fn of(l: *const Link) -> *const Waiter {
        l.cast()
    }
}

/// A condition variable for the fibers of one thread (Tarantool's
/// `fiber.cond()`).
///
/// Not `Send`: it belongs to the thread whose fibers use it. Share it between
/// fibers with an `Rc`.
///
/// # Examples
///
/// ```
/// use luafiber_fiber as fiber;
/// use std::{cell::Cell, rc::Rc, time::Duration};
///
/// let cond = Rc::new(fiber::Cond::new());
/// let ready = Rc::new(Cell::new(false));
/// let (c, r) = (cond.clone(), ready.clone());
/// fiber::Builder::new()
///     .spawn_ready(move || {
///         while !r.get() {
///             c.wait(None).unwrap();
///         }
///         println!("ready");
///     })
///     .unwrap();
/// fiber::Builder::new()
///     .spawn_ready(move || {
///         fiber::sleep(Duration::from_millis(1)).unwrap();
///         ready.set(true);
///         cond.signal();
///     })
///     .unwrap();
/// fiber::run();
/// ```
pub struct Cond {
    /// The waiter records, in wait order.
    waiters: WaitList,
}

impl Cond {
    /// A cond with no waiters.
    pub fn new() -> Cond {
        Cond {
            waiters: WaitList::new(),
        }
    }

    /// Unlinks the record that has waited longest; returns its fiber and
    /// the record (state rule 5, see `WaitList::pop_front`).
    fn pop_front(&self) -> Option<(Handle, *const Waiter)> {
        // SAFETY: state rule 5: a cond's queue links `Waiter` records only.
        self.waiters
            .pop_front()
            .map(|(fiber, l)| (fiber, unsafe { Waiter::of(l) }))
    }

    /// Blocks the current fiber until it is signalled, or until `timeout`
    /// runs out (`None`: no limit; `Some(ZERO)` yields once). A cancellation
    /// point, like Tarantool master's `cond:wait([timeout])`.
    ///
    /// Returns `Ok(true)` when signalled (by [`signal`](Cond::signal) or
    /// [`broadcast`](Cond::broadcast)) and `Ok(false)` when the timeout ran
    /// out. A wakeup of the fiber by other means (such as
    /// [`wakeup`](crate::wakeup)) does not end the wait. A signal that
    /// arrives together with the timeout wins: the result is `Ok(true)`.
    ///
    /// # Errors
    ///
    /// [`Error::NotInFiber`] outside a fiber. [`Error::Cancelled`] when the
    /// fiber is cancelled before the call (it yields once first) or during
    /// the wait. A signal given to a waiter that is cancelled before it runs
    /// again is passed on to the next waiter, so it is not lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_fiber::{self as fiber, Cond};
    /// use std::time::Duration;
    ///
    /// fiber::Builder::new()
    ///     .spawn_ready(|| {
    ///         let cond = Cond::new();
    ///         assert!(!cond.wait(Some(Duration::from_millis(1))).unwrap());
    ///     })
    ///     .unwrap();
    /// fiber::run();
    /// ```
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool, Error> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        // Declared before `_queued`, so it outlives its place in the queue.
        let waiter = Waiter {
            link: Link::new(),
            woken: Cell::new(Woken::Out),
        };
        let _queued = Queued {
            cond: self,
            waiter: &waiter,
        };
        // Queued in the borrow that blocks the fiber.
        let first = scheduler::park_queued(timeout, |me| {
            waiter.woken.set(Woken::No);
            self.waiters.push_back(&waiter.link, me);
        })?;
        let Some(r) = first else {
            // Cancelled, not queued: yields once, then fails.
            scheduler::block_cancellable(Some(Duration::ZERO))?;
            return Err(Error::Cancelled);
        };
        // The common case first: signalled.
        match (waiter.woken.get(), r.cancelled) {
            (Woken::Signal | Woken::Broadcast, false) => Ok(true),
            _ => self.wait_on(&waiter, r, deadline),
        }
    }

    /// The rest of [`wait`](Cond::wait) once the fiber woke up, with `r`,
    /// queued (or taken off by a waker) as `waiter`.
    #[inline(never)]
    fn wait_on(
        &self,
        waiter: &Waiter,
        mut r: Resume,
        deadline: Option<Instant>,
    ) -> Result<bool, Error> {
        loop {
            match (waiter.woken.get(), r.cancelled) {
                (Woken::Signal, true) => {
                    self.signal();
                    return Err(Error::Cancelled);
                }
                (_, true) => return Err(Error::Cancelled),
                (Woken::Signal | Woken::Broadcast, false) => return Ok(true),
                (Woken::No | Woken::Out, false) => {}
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if r.timed_out || left == Some(Duration::ZERO) {
                return Ok(false);
            }
            r = scheduler::park(left)?;
        }
    }

    /// Wakes the fiber that has waited longest, if any; a no-op when no
    /// fiber waits (the signal is not kept for a later waiter).
    pub fn signal(&self) {
        let Some((fiber, w)) = self.pop_front() else {
            return;
        };
        if scheduler::wake_fiber(fiber) {
            // SAFETY: state rule 5, as in `signal_next`.
            unsafe { (*w).woken.set(Woken::Signal) };
            return;
        }
        self.signal_next();
    }

    /// [`signal`](Cond::signal) after the first waiter's fiber was gone.
    #[cold]
    #[inline(never)]
    fn signal_next(&self) {
        while let Some((fiber, w)) = self.pop_front() {
            // A waiter always leaves the queue before its fiber ends, so this
            // fails only for a fiber that ended without unwinding its wait.
            if scheduler::wake_fiber(fiber) {
                // SAFETY: state rule 5: the record was queued and its fiber
                // lives (and has not run since), so its frame is still there.
                unsafe { (*w).woken.set(Woken::Signal) };
                return;
            }
        }
    }

    /// Wakes every waiting fiber, in the order they began to wait.
    pub fn broadcast(&self) {
        while let Some((fiber, w)) = self.pop_front() {
            if scheduler::wake_fiber(fiber) {
                // SAFETY: state rule 5, as in `signal`.
                unsafe { (*w).woken.set(Woken::Broadcast) };
            }
        }
    }

    /// How many fibers wait now.
    pub fn waiters(&self) -> usize {
        self.waiters.len()
    }
}

impl Default for Cond {
    fn default() -> Cond {
        Cond::new()
    }
}

impl fmt::Debug for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cond")
            .field("waiters", &self.waiters())
            .finish()
    }
}

/// A waiter's place in the queue; leaving it (return or unwind) takes the
/// waiter off unless a waker already did (state rule 5).
struct Queued<'a> {
    cond: &'a Cond,
    waiter: &'a Waiter,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.waiter.woken.get() == Woken::No {
            self.cond.waiters.unlink(&self.waiter.link);
        }
    }
}
