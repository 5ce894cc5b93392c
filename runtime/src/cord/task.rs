//! A task given to the cords: its job (the body of the fiber that runs it)
//! and its [`Completion`], which the job fills and the
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
use crate::io::inbox::{Inbox, Job, Msg};

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

    /// Stores the outcome (the first one only) and wakes the joiner.
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
            w.wake();
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

impl<T: Send> Abandon for Completion<T> {
    fn abandon(&self) {
        let id = Completion::fiber_id(&self.lock());
        self.finish(Err(FiberError::cancelled(id)));
    }
}

/// The task before its fiber runs it. Dropped unrun, it completes the task
/// with a cancel.
struct Unstarted<F, T> {
    f: Option<F>,
    done: Arc<Completion<T>>,
}

impl<F, T> Drop for Unstarted<F, T> {
    fn drop(&mut self) {
        if self.f.is_some() {
            self.done
                .finish(Err(FiberError::cancelled(FiberId(SCHED_FID))));
        }
    }
}

/// The job of a task: the body of the fiber that runs `f` on a cord and
/// completes `done`.
pub(crate) fn job<F, T>(f: F, done: Arc<Completion<T>>) -> Job
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let mut task = Unstarted { f: Some(f), done };
    Box::new(move || {
        let f = task.f.take().expect("a job runs once");
        let done = task.done.clone();
        drop(task);
        run(f, done);
    })
}

/// Runs the task's closure in the current fiber of this cord.
fn run<F, T>(f: F, done: Arc<Completion<T>>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let id = fiber::current().expect("a job runs in its fiber");
    let (cord, inbox) = super::worker::here().expect("jobs start only on cords");
    let cancelled = done.start(Running {
        cord,
        fiber: id,
        inbox,
    });
    let outcome = if cancelled || fiber::testcancel().is_err() {
        drop(f);
        Err(FiberError::cancelled(id))
    } else {
        let key = super::worker::track(done.clone());
        let r = panic::catch_unwind(AssertUnwindSafe(f)).map_err(|p| FiberError::panic(id, p));
        super::worker::untrack(key);
        r
    };
    done.finish(outcome);
}
