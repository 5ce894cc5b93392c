//! A cord's thread: its context, its turn (the idle-wait hook that starts
//! work from its `Worker`, the injector and the other cords, then runs the
//! event loop), its stop, and its main function.
//!
//! A cord starts at most [`START_PER_TURN`] jobs a turn (once per batch of
//! fibers): the rest of a batch taken from the injector stays unstarted in
//! its `Worker`, where idle cords can steal it, so a cord that then blocks
//! in a long computation holds back only the work it had started.

use std::cell::{Cell, OnceCell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use crossbeam_deque::{Steal, Worker};
use luafiber_fiber::{self as fiber, Status};
use slab::Slab;

use super::shared::Shared;
use super::task::Abandon;
use crate::io::inbox::{self, Inbox, Job};
use crate::io::reactor;

/// Jobs a cord starts at most in one turn.
pub(crate) const START_PER_TURN: usize = 64;

/// Code run on each cord as it starts or stops, given the cord's index.
pub(crate) type CordFn = Arc<dyn Fn(usize) + Send + Sync>;

/// This thread's cord.
struct Cord {
    index: usize,
    shared: Arc<Shared>,
    inbox: Arc<Inbox>,
    worker: Worker<Job>,
    /// Set when the cord is told to stop: the deadline of its fibers.
    stop: Cell<Option<Instant>>,
    /// Tasks whose fibers run now (see [`Abandon`]).
    tasks: RefCell<Slab<Arc<dyn Abandon>>>,
    /// Joiners of tasks that ended in this batch, woken at the next turn
    /// (see [`wake_later`]).
    wakes: RefCell<Vec<Waker>>,
    /// Whether the loop still turns (and so flushes `wakes`); after it
    /// ended, [`wake_later`] wakes at once.
    turning: Cell<bool>,
}

thread_local! {
    static CORD: OnceCell<Cord> = const { OnceCell::new() };
}

fn with_cord<R>(f: impl FnOnce(&Cord) -> R) -> Option<R> {
    CORD.try_with(|c| c.get().map(f)).ok().flatten()
}

/// The index of the calling thread's cord and its inbox, on a cord.
pub(crate) fn here() -> Option<(usize, Arc<Inbox>)> {
    with_cord(|c| (c.index, c.inbox.clone()))
}

/// The index of the calling thread's cord, on a cord.
pub(crate) fn index() -> Option<usize> {
    with_cord(|c| c.index)
}

/// Whether the calling thread's cord was told to stop.
pub(crate) fn stopping() -> bool {
    with_cord(|c| c.stop.get().is_some()).unwrap_or(false)
}

/// The calling thread's cord index and runtime, on a cord.
pub(crate) fn current() -> Option<(usize, Arc<Shared>)> {
    with_cord(|c| (c.index, c.shared.clone()))
}

/// Tracks a running task of this cord, to abandon it if the cord ends
/// first; returns the key for [`untrack`].
pub(crate) fn track(task: Arc<dyn Abandon>) -> usize {
    with_cord(|c| c.tasks.borrow_mut().insert(task)).unwrap_or(usize::MAX)
}

/// The tracked task ended.
pub(crate) fn untrack(key: usize) {
    with_cord(|c| c.tasks.borrow_mut().try_remove(key));
}

/// Wakes `w` at this cord's next turn (the end of the batch of fibers
/// that runs now), or at once off a cord. A client that waits for several
/// tasks is then woken once for all those of a batch, not once for each
/// (cbus's flush at the end of an event loop iteration). Once the cord's
/// loop has ended (its stop code runs), at once too.
pub(crate) fn wake_later(w: Waker) {
    let mut w = Some(w);
    with_cord(|c| {
        if c.turning.get() {
            c.wakes.borrow_mut().push(w.take().expect("taken once"));
        }
    });
    if let Some(w) = w {
        w.wake();
    }
}

/// The idle-wait hook of a cord (see [`luafiber_fiber::idle`]): starts
/// work, then turns the event loop. Always has "waiters" (the cord's loop
/// ends only through [`fiber::serve`]'s stop), but for a zero timeout says
/// whether fibers wait for events of the poll (fds, jobs), as the
/// single-thread hook does.
fn turn(timeout: Option<Duration>) -> bool {
    with_cord(|c| c.turn(timeout));
    timeout != Some(Duration::ZERO) || reactor::waiters() > 0
}

impl Cord {
    fn turn(&self, timeout: Option<Duration>) {
        self.shared.turns(self.index);
        self.flush_wakes();
        // First, as it may start work or stop the cord.
        let drained = reactor::drain_inbox();
        if self.should_stop() {
            return;
        }
        let stop = self.stop.get();
        let idle = timeout != Some(Duration::ZERO);
        let started = match stop {
            None => self.intake(idle),
            Some(_) => 0,
        };
        let timeout = match (started, stop) {
            // What the inbox or the intake made ready runs first.
            _ if drained => Some(Duration::ZERO),
            (1.., _) => Some(Duration::ZERO),
            (0, Some(deadline)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                Some(timeout.map_or(left, |t| t.min(left)))
            }
            (0, None) => timeout,
        };
        let pending = || stop.is_none() && self.shared.has_work(self.index);
        if timeout.is_none() && stop.is_none() && reactor::all_waiters() == 0 {
            // It blocks, and nothing of its own could wake it: only work
            // from another thread (`Handle::wait_quiet`).
            self.shared.set_quiet(self.index);
        }
        let peers_awake = || self.shared.peers_awake(self.index);
        reactor::turn_cord(timeout, pending, peers_awake);
    }

    /// Wakes the joiners of the tasks that ended since the last turn.
    fn flush_wakes(&self) {
        let wakes = std::mem::take(&mut *self.wakes.borrow_mut());
        if wakes.is_empty() {
            return;
        }
        let mut wakes = wakes;
        for w in wakes.drain(..) {
            w.wake();
        }
        // The vector goes back for its capacity, unless a wake refilled it.
        let mut mine = self.wakes.borrow_mut();
        if mine.is_empty() {
            *mine = wakes;
        }
    }

    /// Starts up to [`START_PER_TURN`] jobs as fibers: from this cord's
    /// `Worker`, else a batch from the injector, else (when `idle`) a batch
    /// stolen from another cord. Returns how many.
    fn intake(&self, idle: bool) -> usize {
        let mut n = 0;
        while n < START_PER_TURN {
            let Some(job) = self.worker.pop().or_else(|| self.steal(idle)) else {
                break;
            };
            inbox::start(job);
            n += 1;
        }
        // What is left here, or in the injector, is another cord's to
        // take, if one sleeps.
        if n > 0 && !(self.worker.is_empty() && self.shared.injector.is_empty()) {
            self.shared.wake_one(Some(self.index));
        }
        n
    }

    fn steal(&self, idle: bool) -> Option<Job> {
        let from_injector = || {
            let inj = &self.shared.injector;
            inj.steal_batch_with_limit_and_pop(&self.worker, START_PER_TURN)
        };
        if let Some(job) = retry(from_injector) {
            return Some(job);
        }
        if !idle {
            return None;
        }
        let cords = &self.shared.cords;
        (1..cords.len())
            .map(|i| &cords[(self.index + i) % cords.len()].stealer)
            .find_map(|s| retry(|| s.steal_batch_and_pop(&self.worker)))
    }

    /// Stops the cord: its unstarted work is dropped (each task completes
    /// with a cancel), every fiber is cancelled, and the loop ends once no
    /// fiber lives or `deadline` passes.
    fn begin_stop(&self, deadline: Instant) {
        self.stop.set(Some(deadline));
        self.inbox.refuse_jobs();
        while let Some(job) = self.worker.pop() {
            drop(job);
        }
        for id in fiber::all() {
            let _ = fiber::cancel(id);
        }
    }

    fn should_stop(&self) -> bool {
        match self.stop.get() {
            None => false,
            Some(deadline) => {
                Instant::now() >= deadline
                    || fiber::all()
                        .into_iter()
                        .all(|id| fiber::status(id).is_none_or(|s| s == Status::Dead))
            }
        }
    }
}

/// A steal, retried while it says so (a bounded number of times).
fn retry(mut steal: impl FnMut() -> Steal<Job>) -> Option<Job> {
    for _ in 0..64 {
        match steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
    None
}

/// Tells this thread's cord to stop (see `Cord::begin_stop`); run from its
/// inbox.
pub(crate) fn stop(deadline: Instant) {
    with_cord(|c| c.begin_stop(deadline));
}

/// What a cord's thread is given at its start.
pub(crate) struct Start {
    pub index: usize,
    pub worker: Worker<Job>,
    pub config: fiber::Config,
    pub on_start: Option<CordFn>,
    pub on_stop: Option<CordFn>,
    /// Where the cord sends its inbox (or why it has none).
    pub inbox_tx: mpsc::Sender<(usize, Result<Arc<Inbox>, String>)>,
    /// Where the runtime comes from (none: the start was abandoned).
    pub shared_rx: mpsc::Receiver<Arc<Shared>>,
    /// Where the cord reports its init code's end (an error: it panicked).
    pub init_tx: mpsc::Sender<(usize, Result<(), String>)>,
}

/// The main function of a cord's thread.
pub(crate) fn main(start: Start) {
    let Start {
        index,
        worker,
        config,
        on_start,
        on_stop,
        inbox_tx,
        shared_rx,
        init_tx,
    } = start;
    let _ = fiber::configure(config);
    let inbox = reactor::with(|r| r.inbox.clone()).map_err(|e| e.to_string());
    let made = inbox.is_ok();
    let _ = inbox_tx.send((index, inbox.clone()));
    drop(inbox_tx);
    let (Ok(inbox), Ok(shared)) = (inbox, shared_rx.recv()) else {
        return;
    };
    debug_assert!(made);
    let cord = Cord {
        index,
        shared: shared.clone(),
        inbox: inbox.clone(),
        worker,
        stop: Cell::new(None),
        tasks: RefCell::new(Slab::new()),
        wakes: RefCell::new(Vec::new()),
        turning: Cell::new(true),
    };
    let fresh = CORD.with(|c| c.set(cord).is_ok());
    assert!(fresh, "a thread is one cord");
    // After the reactor is made (which installs its own hook).
    fiber::set_idle_hook(Some(turn));
    let init = match &on_start {
        Some(f) => panic::catch_unwind(AssertUnwindSafe(|| f(index))).map_err(panic_text),
        None => Ok(()),
    };
    let _ = init_tx.send((index, init));
    drop(init_tx);
    tracing::debug!(cord = index, "cord serving");
    fiber::serve(|| with_cord(Cord::should_stop).unwrap_or(true));
    with_cord(|c| c.turning.set(false));
    shared.cord_ended(index);
    // Fibers still suspended stay so (their stacks are leaked, never
    // unwound): their tasks complete with a cancel.
    let left: Vec<_> = with_cord(|c| c.tasks.borrow_mut().drain().collect()).unwrap_or_default();
    for task in left {
        task.abandon();
    }
    inbox.close();
    with_cord(Cord::flush_wakes);
    if let Some(f) = &on_stop {
        if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| f(index))) {
            tracing::error!(cord = index, "on_cord_stop panicked: {}", panic_text(p));
        }
    }
    tracing::debug!(cord = index, "cord ended");
}

/// A panic payload's message.
pub(crate) fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}
