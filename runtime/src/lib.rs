//! The cord layer of luafiber, with no Lua: a fiber runtime for Rust
//! programs, its event loop and sockets, clocks and per-cord buffers over
//! the fibers of [`luafiber_fiber`] (re-exported as [`fiber`]).
//!
//! Fibers are stackful coroutines on one OS thread, scheduled cooperatively:
//! a fiber runs until it yields, sleeps or blocks on a [`Channel`] or a
//! [`Cond`], so plain (non-`async`) Rust code can wait without blocking the
//! thread. The API follows tokio's names where the concept is the same:
//!
//! - [`Runtime`] and its [`Builder`] (stack size, stack pool size);
//!   [`Runtime::block_on`] runs a function as a fiber until it ends;
//! - [`spawn`] (and [`spawn_now`], [`task::Builder`]) start fibers and give
//!   a [`JoinHandle`]: [`join`](JoinHandle::join),
//!   [`join_timeout`](JoinHandle::join_timeout),
//!   [`cancel`](JoinHandle::cancel);
//! - [`yield_now`], [`sleep`], [`current`], [`testcancel`] act on the
//!   calling fiber;
//! - [`FiberError`] tells a cancel, a Lua error, a panic and a timeout apart
//!   and carries the fiber id. A panic in a fiber is caught in that fiber
//!   and reported by its join.
//!
//! - [`net`] has TCP and UDP sockets whose calls block only the calling
//!   fiber, and [`io`] the cord's event loop under them (waits on any fd,
//!   a [`CordWaker`](io::CordWaker) for other threads, blocking calls on
//!   a thread pool).
//!
//! - [`cord`] runs several cords (OS threads, each with its own scheduler
//!   and event loop): `Runtime::builder().cords(n)`, `Send` work given to
//!   any cord ([`cord::Runtime::spawn`], through a `crossbeam_deque`
//!   injector) or to one ([`cord::Runtime::spawn_on`], through its inbox),
//!   `Send` join handles, and [`cord::Channel`] between fibers of any
//!   cords and plain threads. Its module docs give the threading model:
//!   what is `Send`, what stays on a cord, how wakes travel.
//! - [`block_on_future`] awaits a Rust future (tokio's, say) on the
//!   calling fiber: its `Waker` wakes the fiber from any thread.
//!
//! A fiber never leaves its thread: a fiber, its [`JoinHandle`], the
//! per-thread [`Channel`] and [`Cond`], and sockets are not `Send`. What
//! crosses threads is work not yet started and wakes ([`cord`]).
//!
//! ```
//! use luafiber_runtime::{sleep, spawn, Channel, Runtime};
//! use std::time::Duration;
//!
//! let rt = Runtime::new();
//! let total = rt.block_on(|| {
//!     let ch = Channel::new(0);
//!     let tx = ch.clone();
//!     let producer = spawn(move || {
//!         for i in 1..=3u32 {
//!             sleep(Duration::from_millis(1)).unwrap();
//!             tx.put(i, None).unwrap();
//!         }
//!         tx.close();
//!     });
//!     let mut sum = 0;
//!     while let Ok(v) = ch.get(None) {
//!         println!("got {v}");
//!         sum += v;
//!     }
//!     producer.join().unwrap();
//!     sum
//! });
//! println!("sum = {total}");
//! # assert_eq!(total, 6);
//! ```
//!
//! prints
//!
//! ```text
//! got 1
//! got 2
//! got 3
//! sum = 6
//! ```
//!
//! With a `tracing` subscriber at trace level, every fiber runs inside a
//! `fiber` span (fields `id`, `name`) entered on resume and exited on yield,
//! and the scheduler logs spawns, wakeups, cancels and ends.

mod builder;
pub mod clock;
pub mod cord;
mod error;
mod future;
pub mod ibuf;
pub mod io;
mod join;
pub mod local;
pub mod net;
mod park;
mod runtime;
pub mod task;
mod this_fiber;
pub mod uri;

pub use builder::Builder;
pub use error::{ErrorKind, FiberError};
pub use future::{block_on_future, block_on_future_timeout, lend};
pub use join::JoinHandle;
pub use luafiber_fiber as fiber;
pub use luafiber_fiber::{Channel, Cond, FiberId, GetError, PutError, StackError};
pub use runtime::Runtime;
pub use task::{spawn, spawn_now};
pub use this_fiber::{current, sleep, testcancel, yield_now};
