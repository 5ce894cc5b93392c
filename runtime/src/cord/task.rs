//! A task given to the cords: its closure, run by the fiber its job starts,
//! and its [`Completion`], which the fiber fills and the
//! [`JoinHandle`](super::JoinHandle) takes.
//!
//! A task always completes once: with the closure's value or panic when it
//! ran; with a cancel when it was cancelled before it began, when its job
//! was dropped unstarted (a shutdown, a cord that ended), or when its fiber
//! was still suspended as its cord ended (the cord abandons it; see
//! [`Abandon`]).

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

use luafiber_fiber::{self as fiber, FiberId, SCHED_FID};

use crate::error::FiberError;
use crate::io::inbox::{Inbox, Job, Msg, Runnable};

/// What the task's closure gave: its value, or how it failed.
pub(crate) type Outcome<T> = Result<T, FiberError>;

/// Where a started task runs.
pub(crate) struct Running {
    pub cord: usize,
    pub fiber: FiberId,
    pub inbox: Arc<Inbox>,
}

pub(crate) struct State<T> {
    /// The outcome, until the handle takes it.
    pub outcome: Option<Outcome<T>>,
    /// Set with the outcome (and stays set after it is taken).
    pub finished: bool,
    /// The joiner to wake when the outcome comes.
    pub joiner: Option<Waker>,
    /// Set when the task's fiber starts.
    pub running: Option<Running>,
    /// A cancel asked before the task began: its closure is skipped.
    pub cancel: bool,
}

/// The cell a task and its handle share.
pub(crate) struct Completion<T> {
    state: Mutex<State<T>>,
}

impl<T> Completion<T> {
    pub fn new() -> Completion<T> {
        Completion {
            state: Mutex::new(State {
                outcome: None,
                finished: false,
                joiner: None,
                running: None,
                cancel: false,
            }),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records where the task runs; returns whether a cancel came first.
    fn start(&self, running: Running) -> bool {
        let mut st = self.lock();
        st.running = Some(running);
        st.cancel
    }

    /// Stores the outcome (the first one only) and wakes the joiner, at
    /// the cord's next turn when called on a cord.
    pub fn finish(&self, outcome: Outcome<T>) {
        let joiner = {
            let mut st = self.lock();
            if st.finished {
                return;
            }
            st.finished = true;
            st.outcome = Some(outcome);
            st.joiner.take()
        };
        if let Some(w) = joiner {
            super::worker::wake_later(w);
        }
    }

    /// The id of the task's fiber, or [`SCHED_FID`] before it started.
    pub fn fiber_id(st: &State<T>) -> FiberId {
        st.running.as_ref().map_or(FiberId(SCHED_FID), |r| r.fiber)
    }

    /// Asks the task to stop: before it began, its closure is skipped;
    /// while it runs, its fiber gets a cancel (a flag plus a wakeup, seen
    /// at its next cancellation point), posted to its cord.
    pub fn cancel(&self) {
        let mut st = self.lock();
        if st.finished {
            return;
        }
        st.cancel = true;
        if let Some(r) = &st.running {
            let id = r.fiber;
            r.inbox.post(Msg::Run(Box::new(move || {
                let _ = fiber::cancel(id);
            })));
        }
    }
}

/// A task whose fiber may be left suspended when its cord ends: the cord
/// completes it with a cancel, so no joiner waits for ever.
pub(crate) trait Abandon: Send + Sync {
    /// Completes the task with a cancel, unless it has completed.
    fn abandon(&self);
}

/// What a [`JoinHandle`](super::JoinHandle) holds: its task's completion.
pub(crate) trait Joinable<T>: Send + Sync {
    fn completion(&self) -> &Completion<T>;
}

/// A task: its closure until a cord takes it, and its completion, in one
/// allocation shared by its job, its fiber and its handle.
pub(crate) struct Task<F, T> {
    f: Mutex<Option<F>>,
    done: Completion<T>,
}

impl<F, T> Task<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    /// A task of `f`, and the job that starts it.
    pub fn new(f: F) -> (Arc<Task<F, T>>, Job) {
        let task = Arc::new(Task {
            f: Mutex::new(Some(f)),
            done: Completion::new(),
        });
        let job = Job::new(task.clone());
        (task, job)
    }

    fn take(&self) -> Option<F> {
        self.f.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl<F: Send, T: Send> Joinable<T> for Task<F, T> {
    fn completion(&self) -> &Completion<T> {
        &self.done
    }
}

impl<F: Send, T: Send> Abandon for Task<F, T> {
    fn abandon(&self) {
        let id = Completion::fiber_id(&self.done.lock());
        self.done.finish(Err(FiberError::cancelled(id)));
    }
}

impl<F, T> Runnable for Task<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    /// Runs the closure in the current fiber of this cord.
    fn run(self: Arc<Self>) {
        let Some(f) = self.take() else { return };
        let id = fiber::current().expect("a job runs in its fiber");
        let (cord, inbox) = super::worker::here().expect("jobs start only on cords");
        let cancelled = self.done.start(Running {
            cord,
            fiber: id,
            inbox,
        });
        let outcome = if cancelled || fiber::testcancel().is_err() {
            drop(f);
            Err(FiberError::cancelled(id))
        } else {
            let key = super::worker::track(self.clone());
            let r = panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| FiberError::panic(id, p));
            super::worker::untrack(key);
            r
        };
        self.done.finish(outcome);
    }

    fn drop_unstarted(&self) {
        if let Some(f) = self.take() {
            drop(f);
            self.done
                .finish(Err(FiberError::cancelled(FiberId(SCHED_FID))));
        }
    }
}
