//! Spawning Rust fibers: [`spawn`], [`spawn_now`], and [`Builder`] for a
//! fiber's name and stack size.
//!
//! The fiber's function runs under `catch_unwind`: a panic ends the fiber,
//! never unwinds into the scheduler (or into a Lua frame of another fiber),
//! and its payload is kept for the [`JoinHandle`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use luafiber_fiber::{self as fiber, StackError};

use crate::error::FiberError;
use crate::join::{JoinHandle, ResultCell};

/// Options for one fiber (tokio's `task::Builder`): its name and its stack
/// size. The defaults are the name "rust" and the runtime's stack size.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{task, Runtime};
///
/// let rt = Runtime::new();
/// let h = task::Builder::new()
///     .name("worker")
///     .stack_size(64 * 1024)
///     .spawn(|| luafiber_runtime::fiber::name(luafiber_runtime::current().unwrap()).unwrap())
///     .unwrap();
/// assert_eq!(h.join().unwrap(), b"worker");
/// # drop(rt);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<Cow<'static, str>>,
    stack_size: Option<usize>,
}

impl Builder {
    /// Default options.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the fiber (at most [`fiber::MAX_NAME_LEN`] bytes; a longer
    /// name is cut on a character boundary).
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Usable stack size in bytes, rounded up to whole pages and to at least
    /// 16 KiB. A size other than the runtime's gets a fresh stack, not a
    /// pooled one.
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Starts `f` on a new fiber, appended to the ready queue (Tarantool's
    /// `fiber.new`): it runs when the caller yields or blocks, or, outside
    /// any fiber, when the scheduler runs ([`Runtime::block_on`],
    /// [`Runtime::run`], or [`JoinHandle::join`]).
    ///
    /// [`Runtime::block_on`]: crate::Runtime::block_on
    /// [`Runtime::run`]: crate::Runtime::run
    ///
    /// # Errors
    ///
    /// [`StackError`] when no stack can be made (out of memory, or the
    /// process is at `vm.max_map_count`).
    pub fn spawn<F, T>(self, f: F) -> Result<JoinHandle<T>, StackError>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let (builder, result, body) = self.prepare(f);
        let id = builder.spawn_ready(body).map_err(into_stack_error)?;
        Ok(JoinHandle::new(id, result))
    }

    /// Starts `f` on a new fiber and runs it at once, until its first yield
    /// or its end; then returns to the caller (Tarantool's `fiber.create`).
    ///
    /// # Errors
    ///
    /// As [`spawn`](Builder::spawn).
    pub fn spawn_now<F, T>(self, f: F) -> Result<JoinHandle<T>, StackError>
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let (builder, result, body) = self.prepare(f);
        let id = builder.spawn_now(body).map_err(into_stack_error)?;
        Ok(JoinHandle::new(id, result))
    }

    fn prepare<F, T>(self, f: F) -> (fiber::Builder, ResultCell<T>, impl FnOnce() + 'static)
    where
        F: FnOnce() -> T + 'static,
        T: 'static,
    {
        let mut b = fiber::Builder::new()
            .name(self.name.unwrap_or(Cow::Borrowed("rust")))
            .joinable(true);
        if let Some(size) = self.stack_size {
            b = b.stack_size(size);
        }
        let result: ResultCell<T> = Rc::new(RefCell::new(None));
        let cell = result.clone();
        let body = move || {
            let id = fiber::current().expect("a fiber body runs in its fiber");
            let outcome = if fiber::testcancel().is_err() {
                // Cancelled before it first ran: the function never runs.
                drop(f);
                Err(FiberError::cancelled(id))
            } else {
                panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| FiberError::panic(id, p))
            };
            *cell.borrow_mut() = Some(outcome);
        };
        (b, result, body)
    }
}

fn into_stack_error(e: fiber::Error) -> StackError {
    match e {
        fiber::Error::Stack(e) => e,
        e => unreachable!("spawning fails only for want of a stack: {e}"),
    }
}

/// Starts `f` on a new fiber of this thread, appended to the ready queue;
/// see [`Builder::spawn`]. Works inside a fiber and outside any fiber.
///
/// # Panics
///
/// When no stack can be made (use [`Builder::spawn`] to get the error).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn, Runtime};
///
/// let rt = Runtime::new();
/// let sum = rt.block_on(|| {
///     let hs: Vec<_> = (1..=4u64).map(|i| spawn(move || i * i)).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
/// });
/// assert_eq!(sum, 30);
/// ```
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    Builder::new()
        .spawn(f)
        .unwrap_or_else(|e| panic!("spawn: {e}"))
}

/// Starts `f` on a new fiber and runs it at once until its first yield or
/// its end; see [`Builder::spawn_now`].
///
/// # Panics
///
/// When no stack can be made (use [`Builder::spawn_now`] to get the error).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{spawn_now, Runtime};
/// use std::{cell::Cell, rc::Rc};
///
/// let rt = Runtime::new();
/// let ran = Rc::new(Cell::new(false));
/// let r = ran.clone();
/// let h = spawn_now(move || r.set(true));
/// assert!(ran.get()); // already ran, before any scheduler loop
/// h.join().unwrap();
/// # drop(rt);
/// ```
pub fn spawn_now<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    Builder::new()
        .spawn_now(f)
        .unwrap_or_else(|e| panic!("spawn_now: {e}"))
}
