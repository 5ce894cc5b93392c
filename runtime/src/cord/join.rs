//! [`JoinHandle`]: the owner's side of a task given to the cords by
//! [`Runtime::spawn`](super::Runtime::spawn) or
//! [`spawn_on`](super::Runtime::spawn_on).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::task::{Completion, Joinable, Outcome};
use crate::error::FiberError;
use crate::park::{Parker, Woke};

/// An owned permission to wait for a task given to the cords and take its
/// value (tokio's `JoinHandle`). `Send` and `Sync` when `T` is `Send`:
/// join it from any fiber of any thread, or from a plain thread.
///
/// Dropping the handle detaches the task: it runs on, and its value is
/// dropped when it ends.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{cord, Runtime};
///
/// let rt = Runtime::builder().cords(2).build().unwrap();
/// let h = rt.spawn(|| 6 * 7);
/// // From a plain thread, a join blocks the thread.
/// assert_eq!(h.join().unwrap(), 42);
/// let on1 = rt.spawn_on(1, || cord::current());
/// assert_eq!(on1.join().unwrap(), Some(1));
/// rt.shutdown_timeout(std::time::Duration::from_secs(1));
/// ```
pub struct JoinHandle<T> {
    task: Arc<dyn Joinable<T>>,
    /// Set once the outcome was taken.
    spent: bool,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(task: Arc<dyn Joinable<T>>) -> JoinHandle<T> {
        JoinHandle { task, spent: false }
    }

    fn done(&self) -> &Completion<T> {
        self.task.completion()
    }

    /// Whether the task has ended (returned, panicked, or was cancelled or
    /// dropped unstarted); [`join`](JoinHandle::join) then returns without
    /// waiting.
    pub fn is_finished(&self) -> bool {
        self.done().lock().finished
    }

    /// The index of the cord the task runs (or ran) on, once it started.
    pub fn cord(&self) -> Option<usize> {
        self.done().lock().running.as_ref().map(|r| r.cord)
    }

    /// Cancels the task: before it began, its closure never runs (its join
    /// gives [`FiberError::is_cancelled`]); while it runs, its fiber's
    /// cancel flag is set and it is woken, on its own cord (it sees the
    /// cancel at its next cancellation point, as with
    /// [`crate::JoinHandle::cancel`]). A no-op on a task that has ended.
    pub fn cancel(&self) {
        self.done().cancel();
    }

    /// Waits for the task to end and returns its value. In a fiber this
    /// parks the fiber only (other fibers of its thread run); outside any
    /// fiber it blocks the thread. Not a cancellation point.
    ///
    /// # Errors
    ///
    /// [`FiberError`] with [`is_panic`](FiberError::is_panic) when the
    /// closure panicked (the payload is kept), or
    /// [`is_cancelled`](FiberError::is_cancelled) when the task was
    /// cancelled before it began, dropped unstarted by a shutdown, or left
    /// suspended when its cord ended.
    ///
    /// # Panics
    ///
    /// After a [`join_timeout`](JoinHandle::join_timeout) that returned
    /// anything but a timeout; in a fiber, when the thread's event loop
    /// cannot be made.
    pub fn join(mut self) -> Result<T, FiberError> {
        self.wait(None)
    }

    /// Like [`join`](JoinHandle::join), waiting at most `timeout`. On a
    /// timeout the handle stays valid: join again, cancel, or drop it.
    ///
    /// # Errors
    ///
    /// As [`join`](JoinHandle::join), and [`FiberError::is_timeout`] when
    /// `timeout` runs out first.
    ///
    /// # Panics
    ///
    /// As [`join`](JoinHandle::join).
    pub fn join_timeout(&mut self, timeout: Duration) -> Result<T, FiberError> {
        let deadline = Instant::now().checked_add(timeout);
        self.wait(Some(deadline.unwrap_or_else(|| {
            Instant::now() + Duration::from_secs(100 * 365 * 86_400)
        })))
    }

    fn wait(&mut self, deadline: Option<Instant>) -> Result<T, FiberError> {
        assert!(
            !self.spent,
            "cord::JoinHandle joined after it gave its result"
        );
        if let Some(o) = self.take() {
            return o;
        }
        let parker = Parker::new().unwrap_or_else(|e| panic!("cord::JoinHandle::join: {e}"));
        let task = self.task.clone();
        let done = task.completion();
        loop {
            {
                let mut st = done.lock();
                if let Some(o) = st.outcome.take() {
                    self.spent = true;
                    return o;
                }
                if !st
                    .joiner
                    .as_ref()
                    .is_some_and(|w| w.will_wake(parker.waker()))
                {
                    st.joiner = Some(parker.waker().clone());
                }
            }
            if parker.wait(deadline, false) == Woke::TimedOut {
                let mut st = done.lock();
                if let Some(o) = st.outcome.take() {
                    self.spent = true;
                    return o;
                }
                st.joiner = None;
                return Err(FiberError::timed_out(Completion::fiber_id(&st)));
            }
        }
    }

    /// The outcome, if it is there.
    fn take(&mut self) -> Option<Outcome<T>> {
        let o = self.done().lock().outcome.take();
        self.spent = o.is_some();
        o
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.done().lock();
        f.debug_struct("cord::JoinHandle")
            .field("cord", &st.running.as_ref().map(|r| r.cord))
            .field("fiber", &st.running.as_ref().map(|r| r.fiber))
            .field("finished", &st.finished)
            .finish()
    }
}
