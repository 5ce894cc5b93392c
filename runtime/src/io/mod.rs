//! The cord's event loop: fiber-blocking waits on file descriptors, wakes
//! from other threads, and blocking calls off the cord.
//!
//! Each OS thread (cord) has one `mio::Poll` (epoll), made on the thread's
//! first I/O and installed as its scheduler's idle wait
//! ([`luafiber_fiber::idle`]): when no fiber is ready, the scheduler loop
//! waits in `epoll_wait` until the next timer; while fibers are ready it
//! polls with a zero timeout once per batch. Fibers parked here keep
//! [`Runtime::run`](crate::Runtime::run), `block_on` and a Lua script's
//! main loop going, as an accept loop keeps a Tarantool process serving.
//! A thread that does no I/O never polls.
//!
//! # The API, for code that builds its own fiber-aware I/O
//!
//! - [`Fd`]: an owned fd, registered once (edge-triggered, both
//!   directions) with ready bits and two wait queues (readers, writers)
//!   whose records live on the waiting fibers' stacks. [`Fd::io`] runs a
//!   non-blocking syscall, and on `EAGAIN` clears the ready bit and parks
//!   the fiber until an event, then retries: the way to read, write,
//!   accept, connect. [`Fd::wait`] waits for readiness itself (Lua's
//!   `s:readable()`). For a caller that makes its own syscalls:
//!   [`Fd::is_ready`] tells whether anything said the fd is not ready since
//!   the last event, [`Fd::clear_ready`] records an `EAGAIN`,
//!   [`Fd::drained`] a short read of a stream socket (so the next read can
//!   skip the syscall that would say `EAGAIN`), and [`Fd::park`] waits for
//!   the next event without a `poll(2)`. [`Fd::close`] deregisters before
//!   `close(2)` and wakes the waiters with `EBADF`; dropping an `Fd` closes
//!   it.
//! - [`wait_fd`], [`wait_readable`], [`wait_writable`]: a wait on any fd
//!   the caller owns (Tarantool's `coio_wait`, Lua's `socket.iowait`),
//!   registered only while fibers wait on it.
//! - [`waker`](fn@waker) gives a [`CordWaker`] (`Send + Sync`) that wakes the cord
//!   from another thread; fibers wait for it in [`wait_woken`], and in
//!   [`watch`] (which does not keep the loop running: a signal watcher).
//! - [`run_blocking`] runs a closure on a small thread pool and parks the
//!   fiber until it returns; [`getaddrinfo`] resolves names on it.
//!
//! Every wait takes a timeout as `Option<Duration>` (`None`: no limit) and
//! is a cancellation point when it parks.
//!
//! # Errors
//!
//! All of them are [`io::Error`](std::io::Error)s:
//!
//! - a timeout: kind [`TimedOut`](std::io::ErrorKind::TimedOut);
//! - a cancel of the waiting fiber: kind [`Other`](std::io::ErrorKind::Other)
//!   with a [`FiberError`](crate::FiberError) inside, which names the fiber;
//!   test for it with [`is_cancelled`]. Not `Interrupted`, which
//!   `read_exact`, `write_all` and `io::copy` retry forever;
//! - an fd closed (by another fiber) before or during the wait: `EBADF`;
//! - the syscall's own error otherwise, read right after the syscall
//!   (`errno` is saved before any yield: a Lua binding must do the same
//!   before it calls back into Lua).
//!
//! # Rules for code on this API
//!
//! - Make fds non-blocking (`SOCK_NONBLOCK`, or [`Fd::new`] does it).
//! - Deregister before `close(2)`: close through [`Fd::close`] (or drop),
//!   never behind the `Fd`'s back; an fd given to [`wait_fd`] must stay open
//!   while a fiber waits on it.
//! - Send on sockets with `MSG_NOSIGNAL` (a write to a reset peer must be
//!   an `EPIPE`, not a `SIGPIPE`).
//! - Never call a blocking syscall (`getaddrinfo`, a blocking `connect`)
//!   on the cord: put it in [`run_blocking`].

//! # For a Lua binding (`socket`)
//!
//! A socket object holds an [`Fd`]; `s:read`/`s:write` and friends are
//! [`Fd::io`] around `recv`/`send` (`lua_bridge`'s `socket` module makes
//! its own syscalls with [`Fd::is_ready`], [`Fd::drained`] and
//! [`Fd::park`] instead, to save the `recv` that says `EAGAIN`);
//! `s:readable(t)`, `s:writable(t)`,
//! `s:wait(t)` are [`Fd::wait`]; `socket.iowait(fd, ev, t)` is [`wait_fd`];
//! `socket.getaddrinfo` is [`getaddrinfo`] (its [`GaiError`] gives the
//! message Tarantool returns). `s:close()` is [`Fd::close`], and so is a
//! `__gc` finalizer: a close never yields. Each wait is a cancellation
//! point: map [`is_cancelled`] to `FiberIsCancelled`, `TimedOut` to
//! `ETIMEDOUT`, and take `raw_os_error()` for `s:errno()` from the error
//! the call returned (it was read before any switch).

mod blocking;
pub(crate) mod error;
mod fd;
pub(crate) mod inbox;
pub(crate) mod reactor;
mod source;
mod waker;

pub use blocking::{getaddrinfo, run_blocking, AddrInfo, GaiError, Hints};
pub use error::is_cancelled;
pub use fd::{set_nonblocking, wait_fd, wait_readable, wait_writable, Fd};
pub use source::{Interest, Ready};
pub use waker::{is_watching, wait_woken, waker, watch, CordWaker};
