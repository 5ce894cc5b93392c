//! The cord's inbox: what other threads hand to this cord (wakes of its
//! fibers, work to start as fibers, closures to run on it), drained by the
//! event loop at every turn.
//!
//! Tarantool's cbus rule holds: a message costs a lock and a push, and the
//! cord's `eventfd` is written only by the message that finds the inbox
//! empty while the cord sleeps (or is about to) in `epoll_wait`. A cord
//! that is awake sees the message at its next turn, once per batch of
//! fibers, with no syscall on either side.
//!
//! # The sleep handshake
//!
//! A poster sets `queued` (under the queue's lock), then, after a `SeqCst`
//! fence, reads `sleeping`. The cord sets `sleeping`, then, after a `SeqCst`
//! fence, reads `queued` (and whatever else other threads fill without
//! waking it, through [`Inbox::sleep`]'s `pending`). One of the two sees the
//! other's write: either the poster writes the `eventfd`, or the cord does
//! not block.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Wake;

use luafiber_fiber::{self as fiber, FiberId};

use crate::io::waker::{Shared, INBOX};

/// Work that a cord starts as a new fiber.
pub(crate) trait Runnable: Send + Sync {
    /// Runs the work, in its new fiber.
    fn run(self: Arc<Self>);
    /// The work will never run (its job was dropped unstarted).
    fn drop_unstarted(&self);
}

/// Work not yet started, as it waits in an inbox or a deque. Dropped
/// unstarted, it tells its work (a task then completes with a cancel).
pub(crate) struct Job(Option<Arc<dyn Runnable>>);

impl Job {
    pub fn new(work: Arc<dyn Runnable>) -> Job {
        Job(Some(work))
    }

    /// Runs the work, in the current fiber.
    fn run(mut self) {
        if let Some(work) = self.0.take() {
            work.run();
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(work) = self.0.take() {
            work.drop_unstarted();
        }
    }
}

/// What another thread hands to a cord.
pub(crate) enum Msg {
    /// Wake the fiber of this wait, if it still waits.
    Wake(Arc<FiberWake>),
    /// Start this job as a new fiber.
    Start(Job),
    /// Run this closure on the cord, outside any fiber (it must not block).
    Run(Box<dyn FnOnce() + Send>),
}

impl Msg {
    /// Acts on the message, on its cord, outside any fiber; a job is
    /// dropped unstarted when the cord refuses jobs.
    fn handle(self, refuse_jobs: bool) {
        match self {
            // State rule 3 of the fiber layer: only a suspended fiber is
            // made ready. `live` is cleared by the fiber (on this thread)
            // when its wait ends, so a stale wake never ends another wait.
            Msg::Wake(w) => {
                if w.live.load(Ordering::Relaxed) {
                    let _ = fiber::wakeup(w.fiber);
                }
            }
            Msg::Start(job) if refuse_jobs => drop(job),
            Msg::Start(job) => start(job),
            Msg::Run(f) => f(),
        }
    }
}

/// Starts `job` as a new fiber of this thread, appended to the ready queue.
/// When no stack can be made the job is dropped (what it owns reports the
/// failure: a remote task's handle gets a cancel).
pub(crate) fn start(job: Job) {
    if let Err(e) = fiber::Builder::new()
        .name("rust")
        .spawn_ready(move || job.run())
    {
        tracing::error!(error = %e, "a job could not start on its cord");
    }
}

struct Queue {
    msgs: Vec<Msg>,
    /// Set when the cord has ended: messages are dropped, not queued.
    closed: bool,
    /// Set when the cord stops: jobs are dropped unstarted.
    refuse_jobs: bool,
}

/// A cord's inbox (see the [module docs](self)); shared (`Arc`) by the
/// cord's reactor and every handle that reaches the cord.
pub(crate) struct Inbox {
    queue: Mutex<Queue>,
    /// Messages wait in `queue`: set by the poster that found it empty,
    /// cleared by the drain that takes them.
    queued: AtomicBool,
    /// Set while the cord waits (or is about to wait) in `epoll_wait`.
    sleeping: AtomicBool,
    waker: Arc<Shared>,
    /// Called on the first message since the last drain, for a thread
    /// that a host's executor drives ([`crate::local`]): set once.
    driver: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Inbox {
    pub fn new(waker: Arc<Shared>) -> Inbox {
        Inbox {
            queue: Mutex::new(Queue {
                msgs: Vec::new(),
                closed: false,
                refuse_jobs: false,
            }),
            queued: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            waker,
            driver: OnceLock::new(),
        }
    }

    /// Queues `msg` for the cord, and wakes the cord when the message is
    /// the first since its last drain and the cord sleeps. On a cord that
    /// has ended, `msg` is dropped.
    pub fn post(&self, msg: Msg) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.closed {
            drop(q);
            drop(msg);
            return;
        }
        q.msgs.push(msg);
        let first = !self.queued.load(Ordering::Relaxed);
        if first {
            self.queued.store(true, Ordering::Relaxed);
        }
        drop(q);
        if first {
            if let Some(drive) = self.driver.get() {
                drive();
            }
            self.wake_if_sleeping();
        }
    }

    /// Sets the driver called on each first message since a drain
    /// ([`crate::local`]); `false` when one was set already.
    pub fn set_driver(&self, drive: Box<dyn Fn() + Send + Sync>) -> bool {
        self.driver.set(drive).is_ok()
    }

    /// The poster's half of the sleep handshake, for work another thread
    /// left where the cord looks before it sleeps (the runtime's injector).
    /// Returns whether the cord was asleep (and so is being woken).
    pub fn wake_if_sleeping(&self) -> bool {
        fence(Ordering::SeqCst);
        let asleep = self.sleeping.load(Ordering::Relaxed);
        if asleep {
            self.notify();
        }
        asleep
    }

    /// Whether the cord sleeps (or is about to) in `epoll_wait`.
    pub fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed)
    }

    /// Whether the cord is awake: it runs, spins, or was woken and has not
    /// yet taken the wake (a hint, for another cord deciding to spin).
    pub fn is_awake(&self) -> bool {
        !self.sleeping.load(Ordering::Relaxed) || self.waker.is_notified()
    }

    /// The cord's half of the sleep handshake, before a blocking poll:
    /// marks the cord asleep and says whether it may block (no message is
    /// queued and `pending` says no other work waits). When it may not,
    /// the mark is taken back.
    pub fn sleep(&self, pending: impl FnOnce() -> bool) -> bool {
        self.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.queued.load(Ordering::Relaxed) || pending() {
            self.sleeping.store(false, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// After a blocking poll: the cord is awake.
    pub fn woke(&self) {
        self.sleeping.store(false, Ordering::Relaxed);
    }

    /// Whether messages are queued (a load, for the cord's turns).
    #[inline]
    pub fn has_msgs(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    /// Takes every queued message and acts on each, on the cord outside
    /// any fiber; `spare` is an empty vector whose capacity is reused (it
    /// is left empty).
    pub fn drain(&self, spare: &mut Vec<Msg>) {
        if !self.has_msgs() {
            return;
        }
        let refuse_jobs = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            self.queued.store(false, Ordering::Relaxed);
            std::mem::swap(&mut q.msgs, spare);
            q.refuse_jobs
        };
        for msg in spare.drain(..) {
            msg.handle(refuse_jobs);
        }
    }

    /// The cord stops: jobs posted from now on (and those queued) are
    /// dropped unstarted; other messages are still handled.
    pub fn refuse_jobs(&self) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .refuse_jobs = true;
    }

    /// Wakes the cord from a blocking poll (or its next one).
    pub fn notify(&self) {
        self.waker.notify(INBOX);
    }

    /// The cord has ended: drops what is queued (on this thread) and every
    /// message posted from now on.
    pub fn close(&self) {
        let msgs = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.closed = true;
            std::mem::take(&mut q.msgs)
        };
        drop(msgs);
    }
}

/// One wait of a fiber for a [`std::task::Waker`] that any thread may call:
/// the waker's data. A wake sets `notified` and, when it was clear, posts a
/// [`Msg::Wake`] to the fiber's cord, which wakes the fiber if the wait is
/// still `live`.
pub(crate) struct FiberWake {
    inbox: Arc<Inbox>,
    fiber: FiberId,
    /// Set by a wake, cleared by the waiting fiber when it takes it.
    pub notified: AtomicBool,
    /// Cleared by the fiber, on its own cord, when the wait ends; read only
    /// there, so a wake handled after the end is ignored.
    pub live: AtomicBool,
}

impl FiberWake {
    /// A live wait of fiber `fiber` of the cord of `inbox`, not notified.
    pub fn new(inbox: Arc<Inbox>, fiber: FiberId) -> FiberWake {
        FiberWake {
            inbox,
            fiber,
            notified: AtomicBool::new(false),
            live: AtomicBool::new(true),
        }
    }

    /// Makes a wait that nobody else holds (its `Arc` unique) a new live
    /// wait of fiber `fiber`, not notified: a wait's allocation reused by
    /// the next wait of its thread.
    pub fn renew(&mut self, fiber: FiberId) {
        self.fiber = fiber;
        *self.notified.get_mut() = false;
        *self.live.get_mut() = true;
    }

    /// Whether this wait posts to `inbox`.
    pub fn posts_to(&self, inbox: &Inbox) -> bool {
        std::ptr::eq(&*self.inbox, inbox)
    }
}

impl Wake for FiberWake {
    fn wake(self: Arc<Self>) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            let inbox = self.inbox.clone();
            inbox.post(Msg::Wake(self));
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            self.inbox.post(Msg::Wake(self.clone()));
        }
    }
}
