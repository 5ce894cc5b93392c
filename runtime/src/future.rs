//! Rust futures awaited in fibers: [`block_on_future`] and
//! [`block_on_future_timeout`] park the calling fiber (only it) until a
//! future is ready, so fiber code can await what an async runtime (tokio,
//! smol) or any `Waker`-based library gives.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use luafiber_fiber::{self as fiber, FiberId, SCHED_FID};

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
    let parker = Parker::new().unwrap_or_else(|e| panic!("block_on_future: {e}"));
    let mut fut = pin!(fut);
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

/// A deadline no wait reaches, for timeouts past what `Instant` holds.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86_400)
}
