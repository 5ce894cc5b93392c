//! Waking a cord from another thread: [`CordWaker`] (an `eventfd` behind a
//! `mio::Waker`), and [`wait_woken`] for the fibers that wait for it.
//!
//! A wake sets a bit in the cord's shared word; only the wake that finds
//! the word empty writes the `eventfd`, so a burst of wakes costs one
//! syscall on each side. The cord clears the word when it takes the event
//! and acts on each bit: [`WOKEN`] wakes the fibers in [`wait_woken`],
//! [`JOBS`] those waiting for [`run_blocking`](crate::io::run_blocking)
//! jobs; [`INBOX`] only ends the poll (the turn drains the inbox).

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use luafiber_fiber as fiber;

use crate::io::error;
use crate::io::reactor::{self, Reactor};
use crate::io::source::Waiting;

/// A [`CordWaker::wake`] for [`wait_woken`].
pub(crate) const WOKEN: u32 = 1;
/// A job of [`run_blocking`](crate::io::run_blocking) is done.
pub(crate) const JOBS: u32 = 2;
/// A message in the cord's inbox (see [`crate::io::inbox`]), which every
/// turn drains: the bit only ends the poll.
pub(crate) const INBOX: u32 = 4;
/// A [`CordWaker::wake_watchers`] for [`watch`].
pub(crate) const WATCH: u32 = 8;

/// What a cord shares with the threads that wake it.
pub(crate) struct Shared {
    waker: mio::Waker,
    /// Bits set since the cord last took them.
    bits: AtomicU32,
}

impl Shared {
    pub fn new(waker: mio::Waker) -> Shared {
        Shared {
            waker,
            bits: AtomicU32::new(0),
        }
    }

    /// Whether a wake is set that the cord has not taken yet.
    pub fn is_notified(&self) -> bool {
        self.bits.load(Ordering::Relaxed) != 0
    }

    /// Sets `bits`, and writes the `eventfd` unless a write is pending.
    pub fn notify(&self, bits: u32) {
        if self.bits.fetch_or(bits, Ordering::AcqRel) == 0 {
            if let Err(e) = self.waker.wake() {
                tracing::error!(error = %e, "cord wake failed");
            }
        }
    }
}

/// The cord's side of a wake: the bits set since the last one.
pub(crate) fn on_wake(r: &Reactor) {
    let bits = r.shared.bits.swap(0, Ordering::AcqRel);
    if bits & WOKEN != 0 {
        match r.woken.waiters() {
            0 => r.permit.set(true),
            _ => r.woken.broadcast(),
        }
    }
    if bits & JOBS != 0 {
        r.jobs.broadcast();
    }
    if bits & WATCH != 0 {
        r.watch_permit.set(true);
        r.watchers.broadcast();
    }
}

/// A handle that wakes a cord (an OS thread's scheduler) from any thread:
/// `Send + Sync`, cheap to clone. Get one with [`waker`] on the cord's
/// thread.
///
/// [`wake`](CordWaker::wake) wakes every fiber of the cord that waits in
/// [`wait_woken`]; when none waits, the next [`wait_woken`] returns at
/// once. Wakes that come before the cord takes them count as one.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{io, Runtime};
///
/// let rt = Runtime::new();
/// let waker = io::waker().unwrap();
/// let woke = rt.block_on(move || {
///     let t = std::thread::spawn(move || waker.wake());
///     let woke = io::wait_woken(None).unwrap();
///     t.join().unwrap();
///     woke
/// });
/// assert!(woke);
/// ```
#[derive(Clone)]
pub struct CordWaker {
    shared: Arc<Shared>,
}

impl CordWaker {
    /// Wakes the cord's fibers in [`wait_woken`] (see the type's docs).
    /// Never blocks; a cord that has ended ignores it.
    pub fn wake(&self) {
        self.shared.notify(WOKEN);
    }

    /// Wakes the cord's fibers in [`watch`] (a wake that comes while none
    /// watches is kept for the next). Never blocks; async-signal-safe (an
    /// atomic and an `eventfd` write), so a signal handler may call it.
    pub fn wake_watchers(&self) {
        self.shared.notify(WATCH);
    }

    pub(crate) fn notify(&self, bits: u32) {
        self.shared.notify(bits);
    }
}

impl std::fmt::Debug for CordWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CordWaker").finish_non_exhaustive()
    }
}

/// A [`CordWaker`] for this thread's cord (its event loop is made on first
/// use).
///
/// # Errors
///
/// When the event loop cannot be made (no fds left for `epoll_create` or
/// `eventfd`).
pub fn waker() -> io::Result<CordWaker> {
    reactor::with(|r| CordWaker {
        shared: r.shared.clone(),
    })
}

/// Parks the calling fiber until a [`CordWaker::wake`] from any thread
/// (one that came since the last `wait_woken` returns at once), or until
/// `timeout` runs out (`None`: no limit). Returns `true` when woken,
/// `false` on timeout. A cancellation point. While a fiber waits here, the
/// scheduler loop ([`Runtime::run`](crate::Runtime::run)) goes on.
///
/// # Errors
///
/// A cancel (see [`is_cancelled`](crate::io::is_cancelled)); the event loop
/// cannot be made.
///
/// # Panics
///
/// When called outside any fiber.
pub fn wait_woken(timeout: Option<Duration>) -> io::Result<bool> {
    assert!(
        fiber::current().is_some(),
        "wait_woken called outside any fiber"
    );
    let (woken, cond) = reactor::with(|r| {
        let taken = r.shared.bits.fetch_and(!WOKEN, Ordering::AcqRel) & WOKEN != 0;
        (r.permit.replace(false) || taken, r.woken.clone())
    })?;
    if woken {
        return Ok(true);
    }
    let _waiting = Waiting::new(None);
    match cond.wait(timeout) {
        Ok(woken) => Ok(woken),
        Err(fiber::Error::Cancelled) => Err(error::cancelled()),
        Err(e) => Err(io::Error::other(e)),
    }
}

/// Parks the calling fiber until a [`CordWaker::wake_watchers`] from any
/// thread or signal handler (one that came since the last `watch` returns
/// at once), or until `timeout` runs out (`None`: no limit). Returns
/// `true` when woken, `false` on timeout. Unlike [`wait_woken`], a
/// watching fiber does not keep the scheduler loop running: with nothing
/// else to do, [`Runtime::run`](crate::Runtime::run) returns and leaves it
/// parked (a signal watcher for the life of a program). While it watches,
/// the loop's idle sleeps (timers only) wait in the event loop, so a wake
/// is seen at once. A cancellation point.
///
/// # Errors
///
/// A cancel (see [`is_cancelled`](crate::io::is_cancelled)); the event loop
/// cannot be made.
///
/// # Panics
///
/// When called outside any fiber.
pub fn watch(timeout: Option<Duration>) -> io::Result<bool> {
    assert!(fiber::current().is_some(), "watch called outside any fiber");
    let (woken, cond) = reactor::with(|r| {
        let taken = r.shared.bits.fetch_and(!WATCH, Ordering::AcqRel) & WATCH != 0;
        (r.watch_permit.replace(false) || taken, r.watchers.clone())
    })?;
    if woken {
        return Ok(true);
    }
    let me = fiber::current().expect("checked above");
    let _ = reactor::with(|r| r.watching.borrow_mut().push(me));
    let r = cond.wait(timeout);
    let _ = reactor::with(|r| r.watching.borrow_mut().retain(|&id| id != me));
    match r {
        Ok(woken) => Ok(woken),
        Err(fiber::Error::Cancelled) => Err(error::cancelled()),
        Err(e) => Err(io::Error::other(e)),
    }
}

/// Whether fiber `id` of this thread waits in [`watch`] now (such a fiber
/// waits for a signal, not for the others: reports of blocked fibers
/// leave it out).
pub fn is_watching(id: fiber::FiberId) -> bool {
    reactor::with_existing(|r| r.watching.borrow().contains(&id)).unwrap_or(false)
}
