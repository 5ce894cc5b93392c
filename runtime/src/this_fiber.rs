//! Functions for the calling fiber: [`yield_now`], [`sleep`], [`current`],
//! [`testcancel`].

use std::time::Duration;

use luafiber_fiber::{self as fiber, FiberId};

use crate::error::FiberError;

/// The calling fiber's id, or `None` outside any fiber.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{current, spawn, Runtime};
///
/// let rt = Runtime::new();
/// assert_eq!(current(), None);
/// let h = spawn(|| current());
/// let id = h.id();
/// assert_eq!(h.join().unwrap(), Some(id));
/// # drop(rt);
/// ```
pub fn current() -> Option<FiberId> {
    fiber::current()
}

fn in_fiber(what: &str) -> FiberId {
    fiber::current().unwrap_or_else(|| panic!("{what} called outside any fiber"))
}

fn cancelled(id: FiberId, e: fiber::Error) -> FiberError {
    match e {
        fiber::Error::Cancelled => FiberError::cancelled(id),
        e => unreachable!("only a cancel fails a sleep or a yield: {e}"),
    }
}

/// Yields the calling fiber to the back of the ready queue; it runs again
/// after every fiber that is ready now (Tarantool's `fiber.yield()`). A
/// cancellation point.
///
/// # Errors
///
/// [`FiberError::is_cancelled`] when the fiber is cancelled (checked after
/// the yield); the error carries the caller's id.
///
/// # Panics
///
/// When called outside any fiber.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn, yield_now, Runtime};
/// use std::{cell::RefCell, rc::Rc};
///
/// let rt = Runtime::new();
/// let log = Rc::new(RefCell::new(Vec::new()));
/// let hs: Vec<_> = ["a", "b"]
///     .into_iter()
///     .map(|name| {
///         let log = log.clone();
///         spawn(move || {
///             for i in 0..2 {
///                 log.borrow_mut().push(format!("{name}{i}"));
///                 yield_now().unwrap();
///             }
///         })
///     })
///     .collect();
/// rt.run();
/// assert_eq!(*log.borrow(), ["a0", "b0", "a1", "b1"]);
/// # drop(hs);
/// ```
pub fn yield_now() -> Result<(), FiberError> {
    let id = in_fiber("yield_now");
    fiber::yield_now().map_err(|e| cancelled(id, e))
}

/// Sleeps the calling fiber for `duration`; other fibers run meanwhile.
/// `Duration::ZERO` is a plain [`yield_now`]. A wakeup of the fiber ends the
/// sleep early without error. A cancellation point (Tarantool's
/// `fiber.sleep`).
///
/// # Errors
///
/// [`FiberError::is_cancelled`] when the fiber is cancelled before or during
/// the sleep.
///
/// # Panics
///
/// When called outside any fiber.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{sleep, Runtime};
/// use std::time::{Duration, Instant};
///
/// let rt = Runtime::new();
/// let start = Instant::now();
/// rt.block_on(|| sleep(Duration::from_millis(5)).unwrap());
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Result<(), FiberError> {
    let id = in_fiber("sleep");
    fiber::sleep(duration).map_err(|e| cancelled(id, e))
}

/// Fails when the calling fiber is cancelled (Tarantool's
/// `fiber.testcancel()`); a loop that never blocks calls it to stay
/// cancellable. Outside any fiber it never fails.
///
/// # Errors
///
/// [`FiberError::is_cancelled`] when the fiber's cancel flag is set.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn_now, testcancel, Runtime};
///
/// let rt = Runtime::new();
/// let h = spawn_now(|| {
///     luafiber_runtime::fiber::cancel(luafiber_runtime::current().unwrap()).unwrap();
///     testcancel()
/// });
/// assert!(h.join().unwrap().unwrap_err().is_cancelled());
/// # drop(rt);
/// ```
pub fn testcancel() -> Result<(), FiberError> {
    match fiber::current() {
        Some(id) => fiber::testcancel().map_err(|e| cancelled(id, e)),
        None => Ok(()),
    }
}
