//! What the cords of a runtime and its handles share: the injector of
//! unstarted work, each cord's inbox and stealer, and the count of cords
//! that have ended.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crossbeam_deque::{Injector, Stealer};

use super::task::{Joinable, Task};
use crate::io::inbox::{Inbox, Job, Msg};

/// One cord, as the others and the handles reach it.
pub(crate) struct CordRef {
    pub inbox: Arc<Inbox>,
    pub stealer: Stealer<Job>,
    /// Set by the cord before it blocks with nothing of its own that could
    /// wake it (no fiber ready, sleeping, or waiting on I/O or on another
    /// thread); cleared, and `wakes` counted, at its next turn, before it
    /// takes any work ([`Shared::is_quiet`]).
    pub quiet: AtomicBool,
    /// How many times the cord woke from quiet.
    pub wakes: AtomicU64,
}

impl CordRef {
    pub fn new(inbox: Arc<Inbox>, stealer: Stealer<Job>) -> CordRef {
        CordRef {
            inbox,
            stealer,
            quiet: AtomicBool::new(false),
            wakes: AtomicU64::new(0),
        }
    }
}

pub(crate) struct Shared {
    /// Work for any cord (`spawn`).
    pub injector: Injector<Job>,
    pub cords: Box<[CordRef]>,
    /// Set by the shutdown: new work is refused.
    stopping: AtomicBool,
    /// Which cords' loops have ended, and the shutdown waiting for them.
    ended: Mutex<Vec<bool>>,
    ended_cv: Condvar,
    /// Notified when a cord goes quiet ([`Shared::wait_quiet`]).
    quiet_lock: Mutex<()>,
    quiet_cv: Condvar,
}

impl Shared {
    pub fn new(cords: Box<[CordRef]>) -> Shared {
        Shared {
            injector: Injector::new(),
            ended: Mutex::new(vec![false; cords.len()]),
            cords,
            stopping: AtomicBool::new(false),
            ended_cv: Condvar::new(),
            quiet_lock: Mutex::new(()),
            quiet_cv: Condvar::new(),
        }
    }

    /// Cord `index` is about to block with nothing of its own that could
    /// wake it.
    pub fn set_quiet(&self, index: usize) {
        self.cords[index].quiet.store(true, Ordering::SeqCst);
        let _g = self.quiet_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.quiet_cv.notify_all();
    }

    /// Cord `index` turns: no longer quiet. Called at the start of each
    /// turn, before the cord takes any work; costs a load unless it was
    /// quiet.
    #[inline]
    pub fn turns(&self, index: usize) {
        let c = &self.cords[index];
        if c.quiet.load(Ordering::Relaxed) {
            c.quiet.store(false, Ordering::SeqCst);
            c.wakes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Whether every cord is quiet and no work waits for any (the
    /// injector, the cords' queues and inboxes are empty), as one
    /// consistent view: no cord woke while it was taken. Then nothing but
    /// a new call from outside can make a fiber of the runtime run again.
    pub fn is_quiet(&self) -> bool {
        self.quiet_stamp().is_some()
    }

    /// [`Shared::is_quiet`], with the count of the cords' wakes from quiet.
    pub fn quiet_stamp(&self) -> Option<u64> {
        let wakes = || -> u64 {
            self.cords
                .iter()
                .map(|c| c.wakes.load(Ordering::SeqCst))
                .sum()
        };
        let before = wakes();
        let quiet =
            self.cords.iter().all(|c| {
                c.quiet.load(Ordering::SeqCst) && c.stealer.is_empty() && !c.inbox.has_msgs()
            }) && self.injector.is_empty();
        (quiet && wakes() == before).then_some(before)
    }

    /// Waits until [`Shared::is_quiet`], or the runtime stops.
    pub fn wait_quiet(&self) {
        let mut g = self.quiet_lock.lock().unwrap_or_else(|e| e.into_inner());
        while !self.is_quiet() && !self.stopping.load(Ordering::SeqCst) {
            // Bounded: a cord that went quiet between the check and the
            // wait notified before this thread waited.
            g = self
                .quiet_cv
                .wait_timeout(g, std::time::Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Queues `f` on the injector and wakes a sleeping cord, if any.
    pub fn spawn<F, T>(&self, f: F) -> Arc<dyn Joinable<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (task, job) = Task::new(f);
        self.injector.push(job);
        // `wake_one`'s fence orders the push before the reads of
        // `sleeping` and `stopping` (the cords' sleep handshake).
        self.wake_one(None);
        if self.stopping.load(Ordering::Relaxed) {
            self.drop_injected();
        }
        task
    }

    /// Queues `f` on cord `cord`'s inbox (waking it if it sleeps).
    ///
    /// # Panics
    ///
    /// When there is no cord `cord`.
    pub fn spawn_on<F, T>(&self, cord: usize, f: F) -> Arc<dyn Joinable<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let n = self.cords.len();
        let target = self
            .cords
            .get(cord)
            .unwrap_or_else(|| panic!("spawn_on: no cord {cord} (the runtime has {n})"));
        let (task, job) = Task::new(f);
        target.inbox.post(Msg::Start(job));
        task
    }

    /// Wakes one sleeping cord other than `except`, if one sleeps (the
    /// poster's half of the sleep handshake, for the injector and the
    /// `Worker`s).
    pub fn wake_one(&self, except: Option<usize>) {
        fence(Ordering::SeqCst);
        let sleeper = self
            .cords
            .iter()
            .enumerate()
            .find(|(i, c)| Some(*i) != except && c.inbox.is_sleeping());
        if let Some((_, c)) = sleeper {
            c.inbox.notify();
        }
    }

    /// Whether a cord other than `me` is awake (runs, spins, or is being
    /// woken): one that may post to `me` soon (see `Reactor::spin`).
    pub fn peers_awake(&self, me: usize) -> bool {
        self.cords
            .iter()
            .enumerate()
            .any(|(i, c)| i != me && c.inbox.is_awake())
    }

    /// Whether work waits that cord `me` could take without a message: in
    /// the injector, or unstarted in another cord's `Worker`.
    pub fn has_work(&self, me: usize) -> bool {
        !self.injector.is_empty()
            || self
                .cords
                .iter()
                .enumerate()
                .any(|(i, c)| i != me && !c.stealer.is_empty())
    }

    /// Starts the shutdown: new work is refused, and each cord is told to
    /// stop by `deadline`.
    pub fn stop(&self, deadline: Instant) {
        self.stopping.store(true, Ordering::SeqCst);
        for c in self.cords.iter() {
            c.inbox
                .post(Msg::Run(Box::new(move || super::worker::stop(deadline))));
        }
    }

    /// Drops the work left in the injector (each task completes with a
    /// cancel).
    pub fn drop_injected(&self) {
        loop {
            match self.injector.steal() {
                crossbeam_deque::Steal::Success(job) => drop(job),
                crossbeam_deque::Steal::Empty => return,
                crossbeam_deque::Steal::Retry => {}
            }
        }
    }

    /// Cord `index`'s loop has ended.
    pub fn cord_ended(&self, index: usize) {
        self.ended.lock().unwrap_or_else(|e| e.into_inner())[index] = true;
        self.ended_cv.notify_all();
    }

    /// Waits until every cord's loop has ended or `deadline` passes;
    /// returns which have ended.
    pub fn wait_ended(&self, deadline: Instant) -> Vec<bool> {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        while !ended.iter().all(|e| *e) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            ended = self
                .ended_cv
                .wait_timeout(ended, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        ended.clone()
    }
}
