//! Rust futures awaited in fibers: [`block_on_future`] and
//! [`block_on_future_timeout`] park the calling fiber (only it) until a
//! future is ready, so fiber code can await what an async runtime (tokio,
//! smol) or any `Waker`-based library gives.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use luafiber_fiber::{self as fiber, FiberId, Parked, SCHED_FID};

use crate::error::FiberError;
use crate::park::{Parker, Woke};

/// Runs `fut` to completion on the calling fiber: polls it, and while it is
/// pending parks the fiber (other fibers of the cord run) until its
/// [`Waker`](std::task::Waker) is called. Outside any fiber it blocks the
/// calling thread instead. Returns the future's output.
///
/// The waker is `Send + Sync` and may be called from any thread: it posts
/// a wake to the fiber's cord (through the cord's inbox, writing its
/// `eventfd` only when the cord sleeps). A wake that comes after this
/// function returned, from a clone the future left behind, is ignored: it
/// never ends a later wait of the fiber. The future is polled and dropped
/// on the calling fiber, so it need not be `Send`; its `poll` must not
/// block the fiber itself (a `sleep` there would be ended by the next
/// wake).
///
/// A cancellation point: when the fiber is cancelled before the future is
/// ready, the future is dropped (on this fiber's cord) and the cancel is
/// returned.
///
/// # Errors
///
/// [`FiberError::is_cancelled`] when the fiber is cancelled first.
///
/// # Panics
///
/// When the future's `poll` panics (the panic goes on in the caller), or,
/// in a fiber, when the thread's event loop cannot be made.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{block_on_future, Runtime};
/// use std::sync::mpsc;
/// use std::task::{Context, Poll};
///
/// // A future that another thread completes.
/// let (tx, rx) = mpsc::channel::<std::task::Waker>();
/// let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let d = done.clone();
/// let t = std::thread::spawn(move || {
///     let waker = rx.recv().unwrap();
///     d.store(true, std::sync::atomic::Ordering::Release);
///     waker.wake();
/// });
/// let rt = Runtime::new();
/// let v = rt.block_on(move || {
///     let mut tx = Some(tx);
///     block_on_future(std::future::poll_fn(move |cx: &mut Context<'_>| {
///         if done.load(std::sync::atomic::Ordering::Acquire) {
///             return Poll::Ready(42);
///         }
///         if let Some(tx) = tx.take() {
///             tx.send(cx.waker().clone()).unwrap();
///         }
///         Poll::Pending
///     }))
/// });
/// assert_eq!(v.unwrap(), 42);
/// t.join().unwrap();
/// ```
pub fn block_on_future<F: Future>(fut: F) -> Result<F::Output, FiberError> {
    run(fut, None)
}

/// Like [`block_on_future`], waiting at most `timeout`; when it runs out
/// the future is dropped (on this fiber's cord) and the timeout returned.
///
/// # Errors
///
/// [`FiberError::is_timeout`] when `timeout` runs out before the future is
/// ready; [`FiberError::is_cancelled`] when the fiber is cancelled first.
///
/// # Panics
///
/// As [`block_on_future`].
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{block_on_future_timeout, Runtime};
/// use std::time::Duration;
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|| {
///     block_on_future_timeout(std::future::pending::<()>(), Duration::from_millis(5))
/// });
/// assert!(r.unwrap_err().is_timeout());
/// ```
pub fn block_on_future_timeout<F: Future>(
    fut: F,
    timeout: Duration,
) -> Result<F::Output, FiberError> {
    run(fut, Some(timeout))
}

fn run<F: Future>(fut: F, timeout: Option<Duration>) -> Result<F::Output, FiberError> {
    let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far));
    let id = fiber::current().unwrap_or(FiberId(SCHED_FID));
    let mut fut = pin!(fut);
    // Polled with a lent waker while the fiber's resumer lends one (see
    // `lend`): no parker, no wake through the inbox.
    if timeout.is_none() {
        while let Some(waker) = take_loan(id) {
            // SAFETY: the lender's waker lives while its switch to this
            // fiber runs, and this poll is within that switch.
            let mut cx = Context::from_waker(unsafe { &*waker });
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Ok(v);
            }
            if fiber::block_noted(|p| PARKED.set(Some(p))).is_err() {
                return Err(FiberError::cancelled(id));
            }
        }
    }
    let parker = Parker::new().unwrap_or_else(|e| panic!("block_on_future: {e}"));
    let mut cx = Context::from_waker(parker.waker());
    loop {
        // A wake from before this poll is for an earlier state: the poll
        // sees what it announced.
        parker.take_wake();
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Ok(v);
        }
        match parker.wait(deadline, true) {
            Woke::Woken => {}
            Woke::TimedOut => return Err(FiberError::timed_out(id)),
            Woke::Cancelled => return Err(FiberError::cancelled(id)),
        }
    }
}

/// A waker lent to one fiber for one switch to it ([`lend`]).
#[derive(Clone, Copy)]
struct Loan {
    fiber: FiberId,
    waker: *const Waker,
}

thread_local! {
    /// The loan of the switch running now, until its fiber takes it.
    static LOAN: Cell<Option<Loan>> = const { Cell::new(None) };
    /// The wait of the fiber that parked on its loan, for its lender.
    static PARKED: Cell<Option<Parked>> = const { Cell::new(None) };
}

/// The waker lent to fiber `id`, taken (once).
fn take_loan(id: FiberId) -> Option<*const Waker> {
    let loan = LOAN.get()?;
    if loan.fiber != id {
        return None;
    }
    LOAN.set(None);
    Some(loan.waker)
}

/// Runs `switch`, which switches to fiber `fiber` (from outside any fiber,
/// on the fiber's thread), with `waker` lent to that fiber for the
/// switch: a [`block_on_future`] the fiber makes while it runs polls its
/// future with `waker` (once; the loan is then used up) instead of a
/// waker of the fiber's own, and while that future is pending the fiber
/// parks with no wake of its own, until the lender ends the wait with
/// [`fiber::resume_parked`] (lending a waker again) or wakes it with
/// [`fiber::wakeup_parked`] (the fiber then polls with a waker of its own).
/// This is how a future's executor runs a fiber inside its poll, as
/// mlua's `call_async` runs a Lua coroutine: the wake of what the fiber
/// awaits wakes the executor's task straight away.
///
/// Returns what `switch` returned, and the wait the fiber parked in on
/// the loan (`None`: it did not take it, it ended, or it waits on
/// something else). Whoever holds that wait must end it: the fiber has
/// nothing else that will.
pub fn lend<T>(fiber: FiberId, waker: &Waker, switch: impl FnOnce() -> T) -> (T, Option<Parked>) {
    LOAN.set(Some(Loan {
        fiber,
        waker: std::ptr::from_ref(waker),
    }));
    PARKED.set(None);
    let r = switch();
    LOAN.set(None);
    let parked = PARKED.take().filter(|p| p.fiber() == fiber);
    (r, parked)
}

/// A deadline no wait reaches, for timeouts past what `Instant` holds.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86_400)
}
