//! [`Runtime`]: this thread's fiber scheduler, driven from outside any
//! fiber.

use std::marker::PhantomData;
use std::panic;

use luafiber_fiber as fiber;

use crate::builder::Builder;
use crate::join::JoinHandle;
use crate::task;

/// A handle to this thread's fiber scheduler, to drive it from outside any
/// fiber (tokio's current-thread `Runtime`).
///
/// Every OS thread has one scheduler; a `Runtime` applies its
/// [`Builder`]'s settings to it and runs it. Several `Runtime` values on
/// one thread share that scheduler. Not `Send`: fibers never leave their
/// thread. Dropping a runtime does not touch the fibers: unfinished ones run
/// the next time the scheduler runs, and what is still suspended when the
/// thread ends is leaked (never unwound).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{sleep, spawn, Runtime};
/// use std::time::Duration;
///
/// let rt = Runtime::new();
/// let v = rt.block_on(|| {
///     let h = spawn(|| {
///         sleep(Duration::from_millis(1)).unwrap();
///         "done"
///     });
///     h.join().unwrap()
/// });
/// assert_eq!(v, "done");
/// ```
#[derive(Debug)]
pub struct Runtime {
    _not_send: PhantomData<*const ()>,
}

impl Runtime {
    /// A runtime with this thread's current settings (the defaults unless a
    /// [`Builder`] changed them): `Builder::new().build()`.
    pub fn new() -> Runtime {
        Builder::new().build()
    }

    /// A [`Builder`]: `Runtime::builder().stack_size(..).build()` for this
    /// thread, `Runtime::builder().cords(n).build()` for `n` cords.
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn new_configured() -> Runtime {
        Runtime {
            _not_send: PhantomData,
        }
    }

    /// The default usable fiber stack size, in bytes.
    pub fn stack_size(&self) -> usize {
        fiber::config().stacks.stack_size
    }

    /// Runs `f` on a new fiber, and this thread's scheduler (every ready and
    /// sleeping fiber) until `f` ends; returns its value. Fibers still
    /// unfinished then stay: they run on the next call.
    ///
    /// # Panics
    ///
    /// When called inside a fiber. When `f` panics: the panic is caught in
    /// the fiber and resumed here with its payload. When `f` can never end
    /// (it waits and no fiber is ready or sleeping: a deadlock), or its
    /// fiber is cancelled before it runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_runtime::Runtime;
    ///
    /// let rt = Runtime::new();
    /// let r = std::panic::catch_unwind(|| rt.block_on(|| panic!("oops")));
    /// assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "oops");
    /// ```
    pub fn block_on<F, T>(&self, f: F) -> T
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        assert!(
            fiber::current().is_none(),
            "Runtime::block_on called inside a fiber"
        );
        let h = task::Builder::new()
            .name("block_on")
            .spawn(f)
            .unwrap_or_else(|e| panic!("block_on: {e}"));
        match h.join() {
            Ok(v) => v,
            Err(e) => match e.try_into_panic() {
                Ok(payload) => panic::resume_unwind(payload),
                Err(e) => panic!("block_on: {e}"),
            },
        }
    }

    /// Starts `f` on a new fiber; the same as [`spawn`](crate::spawn).
    ///
    /// # Panics
    ///
    /// When no stack can be made.
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        task::spawn(f)
    }

    /// A handle that wakes this thread's fibers in
    /// [`io::wait_woken`](crate::io::wait_woken) from any thread (see
    /// [`io::waker`](crate::io::waker)).
    ///
    /// # Errors
    ///
    /// When the event loop cannot be made.
    pub fn waker(&self) -> std::io::Result<crate::io::CordWaker> {
        crate::io::waker()
    }

    /// Runs this thread's scheduler until no fiber is ready, sleeping or
    /// parked in the event loop ([`io`](crate::io): a socket wait keeps it
    /// going, as an accept loop keeps a server serving); fibers blocked
    /// with no timeout, waiting for a wakeup that nothing can give any
    /// more, stay suspended.
    ///
    /// # Panics
    ///
    /// When called inside a fiber.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_runtime::{sleep, spawn, Runtime};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::new();
    /// let h = spawn(|| sleep(Duration::from_millis(1)));
    /// rt.run();
    /// assert!(h.is_finished());
    /// ```
    pub fn run(&self) {
        fiber::run();
    }
}

impl Default for Runtime {
    fn default() -> Runtime {
        Runtime::new()
    }
}
