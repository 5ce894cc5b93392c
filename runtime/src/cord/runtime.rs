//! [`Runtime`]: several cords (OS threads, each with its own scheduler and
//! event loop) and [`Handle`], its `Send` part that gives them work.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::join::JoinHandle;
use super::shared::Shared;

/// What a shutdown waits at most past its deadline for cords whose loop
/// has just stopped there.
const GRACE: Duration = Duration::from_millis(100);

/// A cloneable, `Send + Sync` handle that gives work to a runtime's cords:
/// what the [`Runtime`] does, minus the shutdown. Get one with
/// [`Runtime::handle`], or on a cord with [`Handle::current`].
///
/// After the runtime's shutdown, work given here is dropped unstarted: its
/// join gives [`FiberError::is_cancelled`](crate::FiberError::is_cancelled).
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Handle {
    /// The handle of the runtime whose cord the calling thread is, or
    /// `None` on any other thread.
    pub fn current() -> Option<Handle> {
        super::worker::current().map(|(_, shared)| Handle { shared })
    }

    /// Starts `f` on a new fiber of whichever cord takes it first: it is
    /// queued, unstarted, on the runtime's injector, from which idle cords
    /// take batches (and steal from each other), so a busy cord does not
    /// get it. Wakes a sleeping cord when one sleeps (one `eventfd`
    /// write); a cord that is awake finds it at its next turn.
    ///
    /// `f` runs under `catch_unwind`: a panic ends its fiber only, and is
    /// given to the join.
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        JoinHandle::new(self.shared.spawn(f))
    }

    /// Starts `f` on a new fiber of cord `cord` (`0..cords()`), through
    /// that cord's inbox only: it runs there even when the cord is busy
    /// (after the fibers ready before it). Tarantool's cbus rule: the
    /// cord's `eventfd` is written only when its inbox was empty and it
    /// sleeps.
    ///
    /// # Panics
    ///
    /// When `cord >= cords()`.
    pub fn spawn_on<F, T>(&self, cord: usize, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        JoinHandle::new(self.shared.spawn_on(cord, f))
    }

    /// How many cords the runtime has.
    pub fn cords(&self) -> usize {
        self.shared.cords.len()
    }

    /// Whether `self` and `other` reach the same runtime (a call from one
    /// of its own cords can then run there without crossing threads).
    pub fn same_runtime(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Whether the runtime is quiet: no fiber of any cord is ready,
    /// sleeping, or waiting on I/O or on another thread, and no work waits
    /// to start. Then only new work given from outside (or a fiber blocked
    /// on a channel, which only such work could wake) would ever run.
    pub fn is_quiet(&self) -> bool {
        self.shared.is_quiet()
    }

    /// `Some(n)` when the runtime [is quiet](Handle::is_quiet), `n` the
    /// count of its cords' wakes from quiet so far: two equal stamps taken
    /// one after the other mean that nothing ran in between (a view across
    /// several runtimes, which may give each other work).
    pub fn quiet_stamp(&self) -> Option<u64> {
        self.shared.quiet_stamp()
    }

    /// Blocks the calling thread until the runtime [is quiet](Handle::is_quiet)
    /// or shuts down: how a process that gave its cords work (servers,
    /// sleeping fibers) knows that it may end without dropping any.
    pub fn wait_quiet(&self) {
        self.shared.wait_quiet();
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("cord::Handle")
            .field("cords", &self.cords())
            .finish()
    }
}

/// Several cords: OS threads that each run their own fiber scheduler and
/// event loop, fed with `Send` work by [`spawn`](Runtime::spawn) (any
/// cord) and [`spawn_on`](Runtime::spawn_on) (one cord). Made by
/// [`Runtime::builder().cords(n)`](crate::Builder::cords). The calling
/// thread is not a cord: it (and any other thread) is a client, which may
/// also run its own single-thread [`crate::Runtime`].
///
/// `Send + Sync`. Dropping it is [`shutdown_timeout`](Runtime::shutdown_timeout)
/// with one second.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{cord, sleep, Runtime};
/// use std::time::Duration;
///
/// let rt = Runtime::builder().cords(2).build().unwrap();
/// let hs: Vec<_> = (0..8u64)
///     .map(|i| {
///         rt.spawn(move || {
///             sleep(Duration::from_millis(1)).unwrap(); // parks this fiber only
///             i * i
///         })
///     })
///     .collect();
/// let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
/// assert_eq!(sum, 140);
/// rt.shutdown_timeout(Duration::from_secs(1));
/// ```
pub struct Runtime {
    handle: Handle,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Runtime {
    pub(crate) fn new(shared: Arc<Shared>, threads: Vec<thread::JoinHandle<()>>) -> Runtime {
        Runtime {
            handle: Handle { shared },
            threads,
        }
    }

    /// A handle to give work to the cords from anywhere.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// How many cords the runtime has.
    pub fn cords(&self) -> usize {
        self.handle.cords()
    }

    /// Starts `f` on whichever cord takes it first; see [`Handle::spawn`].
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.spawn(f)
    }

    /// Starts `f` on cord `cord`; see [`Handle::spawn_on`].
    ///
    /// # Panics
    ///
    /// When `cord >= cords()`.
    pub fn spawn_on<F, T>(&self, cord: usize, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.spawn_on(cord, f)
    }

    /// Shuts the cords down: work not yet started is dropped (its joins
    /// give a cancel), every fiber on every cord is cancelled (a flag and a
    /// wakeup, seen at its next cancellation point), and each cord runs
    /// until none of its fibers lives or `timeout` runs out; then its
    /// tasks still suspended complete with a cancel, its
    /// [`on_cord_stop`](super::Builder::on_cord_stop) code runs, and its
    /// thread is joined. A cord that cannot stop in time (a fiber in a
    /// loop that never yields) is left running, detached.
    ///
    /// Must not be called on one of the runtime's own cords (it would wait
    /// for itself).
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.shutdown(timeout);
    }

    fn shutdown(&mut self, timeout: Duration) {
        if self.threads.is_empty() {
            return;
        }
        let shared = &self.handle.shared;
        let now = Instant::now();
        let deadline = now
            .checked_add(timeout)
            .unwrap_or(now + Duration::from_secs(86_400));
        shared.stop(deadline);
        let ended = shared.wait_ended(deadline + GRACE);
        for (i, t) in std::mem::take(&mut self.threads).into_iter().enumerate() {
            if ended[i] {
                // Its `on_cord_stop` code may still run: wait for it.
                let _ = t.join();
            } else {
                tracing::warn!(
                    cord = i,
                    "a cord still busy after the shutdown's timeout is left running"
                );
            }
        }
        shared.drop_injected();
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shutdown(Duration::from_secs(1));
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("cord::Runtime")
            .field("cords", &self.cords())
            .finish()
    }
}
