//! A thread's fibers driven by a host's executor instead of a cord's own
//! loop: a tokio worker (or any thread) runs what is ready on it with
//! [`run_ready`], which never blocks, and learns through the
//! [`Waker`] it gave to [`Remote::set_driver`] when another thread made
//! one of its fibers ready (a [`block_on_future`](crate::block_on_future)
//! wake, a [`Remote::run`], a timer through [`Remote::drive_at`]), so that
//! it drives again.
//!
//! Fibers stay on the thread that made them (their stacks hold its
//! thread-local addresses): only that thread runs them. The host must
//! poll the work it started there on that thread again (the driver waker
//! is only a hint of when); fd waits of these fibers are seen only when
//! [`run_ready`] runs.

use std::cell::OnceCell;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use luafiber_fiber as fiber;

use crate::io::inbox::{Inbox, Msg};
use crate::io::reactor;

/// The waker a post to a driven thread's inbox wakes (taken by the wake).
#[derive(Default)]
struct DriverSlot {
    waker: Mutex<Option<Waker>>,
    /// The data pointer of the waker in `waker` (0: none), written with
    /// it under the lock: a waker whose data differs is not the driver,
    /// known without the lock ([`Remote::is_driver`]).
    data: AtomicUsize,
}

impl DriverSlot {
    fn lock(&self) -> MutexGuard<'_, Option<Waker>> {
        self.waker.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick(&self) {
        let w = {
            let mut slot = self.lock();
            self.data.store(0, Ordering::Relaxed);
            slot.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
}

thread_local! {
    /// This thread's id.
    static THREAD_ID: ThreadId = thread::current().id();
    /// This thread's driver slot, made (and hooked to its inbox) once.
    static SLOT: OnceCell<Arc<DriverSlot>> = const { OnceCell::new() };
}

/// What other threads hold to reach a thread whose fibers a host's
/// executor drives: post work to it, wake its driver.
/// `Clone + Send + Sync`.
#[derive(Clone)]
pub struct Remote {
    inbox: Arc<Inbox>,
    slot: Arc<DriverSlot>,
    thread: ThreadId,
}

/// The calling thread's [`Remote`]; makes its event loop (and hooks its
/// inbox to the driver slot) on first use.
///
/// # Errors
///
/// When the event loop cannot be made (`epoll_create`, `eventfd`).
pub fn remote() -> io::Result<Remote> {
    let inbox = reactor::with(|r| r.inbox.clone())?;
    let slot = SLOT.with(|s| {
        s.get_or_init(|| {
            let slot = Arc::new(DriverSlot::default());
            let hook = slot.clone();
            inbox.set_driver(Box::new(move || hook.kick()));
            slot
        })
        .clone()
    });
    Ok(Remote {
        inbox,
        slot,
        thread: thread::current().id(),
    })
}

impl Remote {
    /// Whether the calling thread is the one this reaches.
    pub fn is_home(&self) -> bool {
        // The id kept: `thread::current()` clones the thread's handle (two
        // atomic writes) at every look.
        THREAD_ID.with(|id| *id == self.thread)
    }

    /// The waker the next message to this thread wakes (once): the task
    /// that drives it ([`run_ready`]) when polled there.
    pub fn set_driver(&self, w: &Waker) {
        let mut slot = self.slot.lock();
        if !slot.as_ref().is_some_and(|s| s.will_wake(w)) {
            self.slot.data.store(w.data() as usize, Ordering::Relaxed);
            *slot = Some(w.clone());
        }
    }

    /// [`set_driver`](Remote::set_driver) when no driver is set (the
    /// last was woken, or cleared): a cheap look, no lock, when one is.
    pub fn offer_driver(&self, w: &Waker) {
        if self.slot.data.load(Ordering::Relaxed) == 0 {
            self.set_driver(w);
        }
    }

    /// Forgets the driver: the next message wakes nobody (until a
    /// [`set_driver`](Remote::set_driver)).
    pub fn clear_driver(&self) {
        let old = {
            let mut slot = self.slot.lock();
            self.slot.data.store(0, Ordering::Relaxed);
            slot.take()
        };
        drop(old);
    }

    /// Whether `w` is the waker the next message wakes.
    pub fn is_driver(&self, w: &Waker) -> bool {
        // Most wakers asked are not (a call's task that ends while another
        // drives): no lock for them.
        if self.slot.data.load(Ordering::Relaxed) != w.data() as usize {
            return false;
        }
        self.slot.lock().as_ref().is_some_and(|s| s.will_wake(w))
    }

    /// Runs `f` on the thread at its next [`run_ready`], outside any
    /// fiber (a cancel of one of its fibers), and wakes its driver.
    pub fn run(&self, f: impl FnOnce() + Send + 'static) {
        self.inbox.post(Msg::Run(Box::new(f)));
    }
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

/// Runs the calling thread's ready fibers, without blocking: takes what
/// other threads posted (wakes, [`Remote::run`]), polls its fds with a
/// zero timeout, fires due timers, and runs ready fibers until none is,
/// for at most about `budget` fiber switches. Returns whether fibers are
/// still ready (the budget ran out: drive again soon).
///
/// # Panics
///
/// When called from inside a fiber.
pub fn run_ready(budget: usize) -> bool {
    // Nothing to take and nothing ready (most drives of a call's polls):
    // no turn.
    if !reactor::has_events() && !fiber::has_ready() {
        return false;
    }
    let mut left = budget.max(1);
    loop {
        reactor::turn(Some(Duration::ZERO));
        if !fiber::has_ready() {
            return false;
        }
        if left == 0 {
            return true;
        }
        fiber::run_until(|| {
            left = left.saturating_sub(1);
            left == 0 || !fiber::has_ready()
        });
    }
}

thread_local! {
    /// The deadline this thread's drive was last asked for ([`Remote::drive_at`]).
    static ARMED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// The helper thread that wakes the drivers of threads whose fibers sleep
/// on timers ([`Remote::drive_at`]), made on first use.
static TIMERS: OnceLock<Mutex<mpsc::Sender<(Instant, Remote)>>> = OnceLock::new();

impl Remote {
    /// Wakes this thread's driver at `deadline` (a fiber's timer), called
    /// on the thread itself after a [`run_ready`] left fibers sleeping: a
    /// helper thread posts to it then. An earlier request still pending
    /// that comes first covers it.
    pub fn drive_at(&self, deadline: Instant) {
        let now = Instant::now();
        if ARMED.with(|a| a.get().is_some_and(|a| a > now && a <= deadline)) {
            return;
        }
        ARMED.with(|a| a.set(Some(deadline)));
        let tx = TIMERS.get_or_init(|| {
            let (tx, rx) = mpsc::channel();
            let spawned = thread::Builder::new()
                .name("luafiber-local-timers".into())
                .spawn(move || timers(&rx));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "the local timers' thread could not start");
            }
            Mutex::new(tx)
        });
        let sent = tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((deadline, self.clone()));
        if sent.is_err() {
            // No helper: drive again at once rather than never.
            self.run(|| {});
        }
    }
}

/// The helper thread's loop: posts to each thread when its deadline comes.
fn timers(rx: &mpsc::Receiver<(Instant, Remote)>) {
    let mut due: Vec<(Instant, Remote)> = Vec::new();
    loop {
        let next = due.iter().map(|d| d.0).min();
        let got = match next {
            Some(t) => rx.recv_timeout(t.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match got {
            Ok(d) => due.push(d),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        let now = Instant::now();
        due.retain(|(t, r)| {
            if *t <= now {
                r.run(|| {});
            }
            *t > now
        });
    }
}
