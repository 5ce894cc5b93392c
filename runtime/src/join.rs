//! [`JoinHandle`]: the owner's side of a fiber started by
//! [`spawn`](crate::spawn).
//!
//! The fiber and its handle share one result cell. The fiber fills it when
//! its function ends (with the value, or the caught panic); the handle takes
//! it after the fiber layer's join. A fiber with a live handle is joinable in
//! the fiber layer, so its slot stays after its end until the handle joins
//! it; a handle dropped unjoined detaches the fiber (or frees the slot of a
//! fiber that already ended), so nothing is kept.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use luafiber_fiber::{self as fiber, FiberId, Status};

use crate::error::FiberError;

/// What a fiber's function gave: its value, or how it failed.
pub(crate) type Outcome<T> = Result<T, FiberError>;

/// The cell a fiber and its [`JoinHandle`] share.
pub(crate) type ResultCell<T> = Rc<RefCell<Option<Outcome<T>>>>;

/// An owned permission to join a fiber and take its value, returned by
/// [`spawn`](crate::spawn) (tokio's `JoinHandle`).
///
/// Dropping the handle without joining detaches the fiber: it runs on, and
/// its value is dropped when it ends. Not `Send`: the fiber belongs to this
/// thread's scheduler.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{sleep, spawn, Runtime};
/// use std::time::Duration;
///
/// let rt = Runtime::new();
/// let h = spawn(|| {
///     sleep(Duration::from_millis(1)).unwrap();
///     6 * 7
/// });
/// // Joining from outside any fiber runs the scheduler until the fiber ends.
/// assert_eq!(h.join().unwrap(), 42);
/// # drop(rt);
/// ```
pub struct JoinHandle<T> {
    id: FiberId,
    result: ResultCell<T>,
    /// Set once the fiber layer's join succeeded (the slot is freed).
    joined: Cell<bool>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(id: FiberId, result: ResultCell<T>) -> JoinHandle<T> {
        JoinHandle {
            id,
            result,
            joined: Cell::new(false),
        }
    }

    /// The fiber's id.
    pub fn id(&self) -> FiberId {
        self.id
    }

    /// Whether the fiber's function has ended (returned, panicked, or was
    /// skipped because of a cancel); [`join`](JoinHandle::join) then
    /// returns without waiting.
    pub fn is_finished(&self) -> bool {
        self.result.borrow().is_some()
    }

    /// Cancels the fiber: sets its cancel flag and wakes it (Tarantool's
    /// `fiber:cancel()`). Cancelling is cooperative: the fiber sees the
    /// cancel as an error at its next cancellation point ([`sleep`],
    /// [`yield_now`], [`testcancel`], blocking channel and cond waits) and
    /// decides what to do. A fiber cancelled before it first runs never
    /// runs its function, and its join gives [`FiberError::is_cancelled`].
    /// A no-op on a fiber that has ended.
    ///
    /// [`sleep`]: crate::sleep
    /// [`yield_now`]: crate::yield_now
    /// [`testcancel`]: crate::testcancel
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_runtime::{sleep, spawn, Runtime};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::new();
    /// rt.block_on(|| {
    ///     let h = spawn(|| sleep(Duration::from_secs(3600)));
    ///     sleep(Duration::from_millis(1)).unwrap(); // let it start sleeping
    ///     h.cancel();
    ///     let slept = h.join().unwrap(); // the function ran and returned
    ///     assert!(slept.unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn cancel(&self) {
        if !self.joined.get() {
            // Only `Dead` can come back, and an ended fiber needs no cancel.
            let _ = fiber::cancel(self.id);
        }
    }

    /// Waits for the fiber to end and returns its value. Inside a fiber this
    /// blocks the caller only; outside any fiber it runs this thread's
    /// scheduler (every ready and sleeping fiber) until the fiber ends. Not
    /// a cancellation point: a cancelled joiner keeps waiting.
    ///
    /// # Errors
    ///
    /// [`FiberError`] with [`is_panic`](FiberError::is_panic) when the
    /// fiber's function panicked (the payload is kept:
    /// [`into_panic`](FiberError::into_panic)), or
    /// [`is_cancelled`](FiberError::is_cancelled) when it was cancelled
    /// before it ran.
    ///
    /// # Panics
    ///
    /// Outside any fiber, when the fiber can never end (it waits and no
    /// fiber is ready or sleeping: a deadlock). Inside a fiber, when it is
    /// the caller itself. After an earlier
    /// [`join_timeout`](JoinHandle::join_timeout) that returned anything but
    /// a timeout.
    pub fn join(self) -> Result<T, FiberError> {
        self.wait(None)
    }

    /// Like [`join`](JoinHandle::join), waiting at most `timeout`. On a
    /// timeout the handle stays valid: join again, cancel, or drop it (which
    /// detaches the fiber). After any other result the handle is spent.
    ///
    /// # Errors
    ///
    /// As [`join`](JoinHandle::join), and [`FiberError::is_timeout`] when
    /// `timeout` runs out before the fiber ends.
    ///
    /// # Panics
    ///
    /// As [`join`](JoinHandle::join); also when called again after a result
    /// other than a timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_runtime::{sleep, spawn, Runtime};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::new();
    /// rt.block_on(|| {
    ///     let mut h = spawn(|| sleep(Duration::from_millis(50)).is_ok());
    ///     let err = h.join_timeout(Duration::from_millis(1)).unwrap_err();
    ///     assert!(err.is_timeout());
    ///     assert_eq!(err.fiber_id(), h.id());
    ///     assert!(h.join().unwrap()); // the handle is still good
    /// });
    /// ```
    pub fn join_timeout(&mut self, timeout: Duration) -> Result<T, FiberError> {
        self.wait(Some(timeout))
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<T, FiberError> {
        assert!(
            !self.joined.get(),
            "fiber {}: JoinHandle joined after it gave its result",
            self.id
        );
        let r = if fiber::current().is_some() {
            fiber::join(self.id, timeout)
        } else {
            join_outside(self.id, timeout)
        };
        match r {
            Ok(_) => {}
            Err(fiber::Error::TimedOut) => return Err(FiberError::timed_out(self.id)),
            Err(fiber::Error::JoinSelf) => panic!("fiber {}: cannot join itself", self.id),
            // `Dead`/`NotJoinable`: joined or detached behind the handle's
            // back; `Stack`: no stack for the helper of `join_outside`.
            Err(e) => panic!("fiber {}: join failed: {e}", self.id),
        }
        self.joined.set(true);
        self.result
            .borrow_mut()
            .take()
            .expect("a joined fiber has stored its result")
    }
}

/// Joins from outside any fiber: runs the scheduler until the fiber ends,
/// or (with a timeout) until a helper fiber's join gives up.
fn join_outside(id: FiberId, timeout: Option<Duration>) -> Result<usize, fiber::Error> {
    let dead = || fiber::status(id).is_none_or(|s| s == Status::Dead);
    if timeout.is_none() || dead() {
        fiber::run_until(dead);
        if !dead() {
            panic!("fiber {id} can never end: it waits and no fiber is ready or sleeping");
        }
        return fiber::join(id, None);
    }
    let out = Rc::new(Cell::new(None));
    let o = out.clone();
    fiber::Builder::new()
        .name("join")
        .spawn_ready(move || o.set(Some(fiber::join(id, timeout))))?;
    fiber::run_until(|| {
        let r = out.take();
        let done = r.is_some();
        out.set(r);
        done
    });
    out.take().unwrap_or_else(|| {
        panic!("fiber {id} can never end: it waits and no fiber is ready or sleeping")
    })
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if self.joined.get() {
            return;
        }
        match fiber::status(self.id) {
            // Ended: free the slot now (joining an ended fiber never waits).
            Some(Status::Dead) => drop(fiber::join(self.id, Some(Duration::ZERO))),
            // Still running: the slot goes away when the function ends.
            Some(_) => drop(fiber::set_joinable(self.id, false)),
            None => {}
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .finish()
    }
}
