//! Several cords: a [`Runtime`] of OS threads that each run their own fiber
//! scheduler and event loop, with `Send` work given to them from any
//! thread, [`JoinHandle`]s to wait for it, and a [`Channel`] between fibers
//! (and plain threads) anywhere.
//!
//! # The threading model
//!
//! A cord is one OS thread with its own scheduler, event loop (`epoll`)
//! and, in the Lua bridge, its own Lua state. **Fibers never move between
//! cords**: their stacks hold thread-local addresses. What moves is work
//! not yet started and wakes:
//!
//! - [`Runtime::spawn`] queues a `Send` closure on the runtime's
//!   `crossbeam_deque::Injector`. A cord takes work at each turn of its
//!   loop (once per batch of fibers, and whenever it is idle): from its own
//!   `Worker`, else a batch from the injector into its `Worker`, else,
//!   when idle, a batch stolen from another cord's `Worker`; it starts at
//!   most 32 jobs a turn as new fibers, so what it has not started stays
//!   stealable. A cord busy in a long computation thus holds back only what
//!   it had started; the rest goes to the others.
//! - [`Runtime::spawn_on`] posts the closure to one cord's inbox.
//! - A wake of a fiber from another thread (a task that ended, a channel
//!   value, a future's [`Waker`](std::task::Waker)) is a message posted to
//!   the fiber's cord's inbox; the cord handles its inbox at every turn,
//!   outside any fiber, and wakes the fiber if it still waits (a wake that
//!   comes after the wait ended is ignored).
//! - **No syscall per message while a cord is awake** (Tarantool's cbus
//!   rule): a post is a lock and a push, and only the post that finds the
//!   inbox empty while the cord sleeps in `epoll_wait` writes its
//!   `eventfd`; a spawn writes one only when a cord sleeps. An awake cord
//!   sees the message at its next turn.
//!
//! `Send` (and `Sync`): [`Runtime`], [`Handle`], [`JoinHandle<T>`] and
//! [`Channel<T>`] for `T: Send`, the closures given to the cords and their
//! results, the wakers of [`block_on_future`](crate::block_on_future).
//! Stays on its thread: every fiber, a fiber's
//! [`crate::JoinHandle`], the per-thread [`crate::Channel`] and
//! [`crate::Cond`], sockets and [`Fd`](crate::io::Fd)s, a cord's Lua state,
//! a future awaited with `block_on_future` (which need not be `Send`).
//!
//! The thread that builds the runtime is not one of its cords: it and every
//! other thread are clients. A client joins a [`JoinHandle`] or blocks on a
//! [`Channel`] from a fiber (parking only that fiber; its own thread's
//! event loop gets the wake) or from outside any fiber (blocking the
//! thread). Code run on each cord as it starts
//! ([`Builder::on_cord_start`]) makes per-cord state such as a Lua state.
//!
//! A panic in a fiber of one cord ends that fiber only: it is caught and
//! given to the task's join; the other cords go on.
//! [`Runtime::shutdown_timeout`] cancels every fiber on every cord and
//! joins the threads.
//!
//! ```
//! use luafiber_runtime::{cord, Runtime};
//! use std::time::Duration;
//!
//! let rt = Runtime::builder().cords(2).build().unwrap();
//! let ch = cord::Channel::new(0);
//! let tx = ch.clone();
//! // A producer on cord 0, a consumer on cord 1.
//! let producer = rt.spawn_on(0, move || {
//!     for i in 1..=3u32 {
//!         tx.put(i, None).unwrap();
//!     }
//!     tx.close();
//! });
//! let consumer = rt.spawn_on(1, move || {
//!     let mut sum = 0;
//!     while let Ok(v) = ch.get(None) {
//!         sum += v;
//!     }
//!     (cord::current(), sum)
//! });
//! producer.join().unwrap();
//! assert_eq!(consumer.join().unwrap(), (Some(1), 6));
//! rt.shutdown_timeout(Duration::from_secs(1));
//! ```

mod builder;
mod channel;
mod join;
mod runtime;
mod shared;
mod task;
mod worker;

pub use builder::Builder;
pub use channel::Channel;
pub use join::JoinHandle;
pub use runtime::{Handle, Runtime};

/// The index of the calling thread's cord in its runtime (`0..cords()`),
/// or `None` on any other thread.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{cord, Runtime};
///
/// let rt = Runtime::builder().cords(3).build().unwrap();
/// assert_eq!(cord::current(), None);
/// assert_eq!(rt.spawn_on(2, cord::current).join().unwrap(), Some(2));
/// ```
pub fn current() -> Option<usize> {
    worker::index()
}

/// Whether the calling thread is a cord that has been told to stop (its
/// runtime shuts down): its fibers were cancelled and it ends once they
/// are done or its deadline passes. `false` on any other thread.
pub fn is_stopping() -> bool {
    worker::stopping()
}

/// Wakes `w` at the calling cord's next turn (once the batch of fibers
/// that runs now is done), or at once on any other thread: what a task's
/// end does for its joiner. A client waiting for several answers of one
/// batch is then woken once, after the batch, and finds them all, instead
/// of being woken (a syscall when it sleeps) once per answer (Tarantool's
/// cbus flushes at the end of an event loop iteration the same way). A
/// cord whose loop has ended (its stop code runs) wakes at once.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{block_on_future, cord, Runtime};
/// use std::sync::{Arc, Mutex};
/// use std::task::{Poll, Waker};
///
/// let rt = Runtime::builder().cords(1).build().unwrap();
/// let slot: Arc<Mutex<(Option<u32>, Option<Waker>)>> = Arc::default();
/// let s = slot.clone();
/// let _ = rt.spawn(move || {
///     let w = {
///         let mut g = s.lock().unwrap();
///         g.0 = Some(7);
///         g.1.take()
///     };
///     if let Some(w) = w {
///         cord::wake_later(w);
///     }
/// });
/// let v = block_on_future(std::future::poll_fn(|cx| {
///     let mut g = slot.lock().unwrap();
///     match g.0 {
///         Some(v) => Poll::Ready(v),
///         None => {
///             g.1 = Some(cx.waker().clone());
///             Poll::Pending
///         }
///     }
/// }))
/// .unwrap();
/// assert_eq!(v, 7);
/// ```
pub fn wake_later(w: std::task::Waker) {
    worker::wake_later(w)
}
