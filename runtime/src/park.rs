//! Parking the caller until a [`Waker`] wakes it from any thread: a fiber
//! parks in its scheduler and is woken through its cord's inbox
//! ([`crate::io::inbox`]); a plain thread (outside any fiber) parks in
//! [`std::thread::park`].
//!
//! Every wait that another thread ends goes through a [`Parker`]: the joins
//! of remote tasks, the blocked readers and writers of a
//! [`cord::Channel`](crate::cord::Channel), [`block_on_future`](crate::block_on_future).
//! The caller's pattern is a loop: check the condition, hand
//! [`Parker::waker`] to whoever will change it, [`Parker::wait`]. A wake
//! that comes between the hand-over and the wait is kept (`notified`), so
//! none is lost; a spurious one only costs a re-check.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use luafiber_fiber as fiber;

use crate::io::inbox::FiberWake;
use crate::io::reactor;

/// How a [`Parker::wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woke {
    /// A wake came (since the last wait).
    Woken,
    /// The deadline passed first.
    TimedOut,
    /// The fiber was cancelled (cancellable waits only).
    Cancelled,
}

/// A plain thread's wake: set the flag, unpark the thread.
struct ThreadWake {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notified.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

thread_local! {
    /// Each thread's wake, made once: waits re-check their condition, so a
    /// wake left over from an earlier wait only costs a re-check.
    static THREAD_WAKE: Arc<ThreadWake> = Arc::new(ThreadWake {
        thread: thread::current(),
        notified: AtomicBool::new(false),
    });
}

/// Keeps the thread's scheduler loop going (and waiting in the event loop
/// when idle) while a fiber waits for a wake through the inbox.
struct RemoteWaiting;

impl RemoteWaiting {
    fn new() -> RemoteWaiting {
        reactor::add_remote_waiter(true);
        RemoteWaiting
    }
}

impl Drop for RemoteWaiting {
    fn drop(&mut self) {
        reactor::add_remote_waiter(false);
    }
}

enum Kind {
    Fiber {
        wake: Arc<FiberWake>,
        _waiting: RemoteWaiting,
    },
    Thread(Arc<ThreadWake>),
    /// Taken by the drop.
    Gone,
}

/// The caller's side of a wait that any thread may end (see the
/// [module docs](self)). Made by the fiber (or thread) that waits, and used
/// only there.
pub(crate) struct Parker {
    kind: Kind,
    waker: Waker,
}

impl Parker {
    /// A parker for the calling fiber, or for the calling thread outside
    /// any fiber.
    ///
    /// # Errors
    ///
    /// In a fiber, when the thread's event loop cannot be made.
    pub fn new() -> io::Result<Parker> {
        match fiber::current() {
            Some(id) => {
                let wake = match spare_wake(id) {
                    Some(w) => w,
                    None => {
                        let inbox = reactor::with(|r| r.inbox.clone())?;
                        Arc::new(FiberWake::new(inbox, id))
                    }
                };
                let waker = Waker::from(wake.clone());
                Ok(Parker {
                    kind: Kind::Fiber {
                        wake,
                        _waiting: RemoteWaiting::new(),
                    },
                    waker,
                })
            }
            None => {
                let wake = THREAD_WAKE.with(Arc::clone);
                let waker = Waker::from(wake.clone());
                Ok(Parker {
                    kind: Kind::Thread(wake),
                    waker,
                })
            }
        }
    }

    /// The waker that ends this parker's waits, from any thread.
    pub fn waker(&self) -> &Waker {
        &self.waker
    }

    /// Takes a wake that came since the last wait, without waiting.
    pub fn take_wake(&self) -> bool {
        match &self.kind {
            Kind::Fiber { wake, .. } => wake.notified.swap(false, Ordering::Acquire),
            Kind::Thread(wake) => wake.notified.swap(false, Ordering::Acquire),
            Kind::Gone => true,
        }
    }

    /// Waits until a wake (one that came since the last wait returns at
    /// once), or until `deadline` passes (`None`: no limit). With
    /// `cancellable`, a fiber's wait is a cancellation point: a cancelled
    /// fiber yields once and returns [`Woke::Cancelled`] (a plain thread is
    /// never cancelled).
    pub fn wait(&self, deadline: Option<Instant>, cancellable: bool) -> Woke {
        loop {
            if self.take_wake() {
                return Woke::Woken;
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Woke::TimedOut;
            }
            match &self.kind {
                Kind::Fiber { .. } if cancellable => {
                    if fiber::block_cancellable(left).is_err() {
                        return Woke::Cancelled;
                    }
                }
                Kind::Fiber { .. } => {
                    let _ = fiber::block(left);
                }
                Kind::Thread(_) => match left {
                    Some(left) => thread::park_timeout(left),
                    None => thread::park(),
                },
                // `take_wake` answered.
                Kind::Gone => return Woke::Woken,
            }
        }
    }
}

impl Drop for Parker {
    fn drop(&mut self) {
        if let Kind::Fiber { wake, .. } = &self.kind {
            // On the fiber's own cord, where wakes are handled: a wake
            // handled from now on is stale and ignored.
            wake.live.store(false, Ordering::Relaxed);
        }
        // The waker first: a wait whose waker nobody else kept (the
        // future dropped it, no wake is in the inbox) gives its wake to the
        // next wait of this thread.
        self.waker = Waker::noop().clone();
        if let Kind::Fiber { wake, .. } = std::mem::replace(&mut self.kind, Kind::Gone) {
            keep_wake(wake);
        }
    }
}

/// Most spare wakes a thread keeps.
const SPARE_MAX: usize = 64;

thread_local! {
    /// Wakes of ended waits that nobody else holds, for the next waits.
    static SPARE: std::cell::RefCell<Vec<Arc<FiberWake>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps `wake` for a next wait when nothing else holds it.
fn keep_wake(mut wake: Arc<FiberWake>) {
    if Arc::get_mut(&mut wake).is_none() {
        return;
    }
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < SPARE_MAX {
                s.push(wake);
            }
        }
    });
}

/// A spare wake made a live wait of fiber `id`, when one of this thread's
/// inbox is kept.
fn spare_wake(id: fiber::FiberId) -> Option<Arc<FiberWake>> {
    let mut wake = SPARE.try_with(|s| s.try_borrow_mut().ok()?.pop()).ok()??;
    let same = reactor::with(|r| wake.posts_to(&r.inbox)).unwrap_or(false);
    let w = Arc::get_mut(&mut wake).filter(|_| same)?;
    w.renew(id);
    Some(wake)
}
