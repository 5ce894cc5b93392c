//! Local calls ([`Handle::call_local`]): a call that runs on a cord living
//! on the calling thread (a tokio worker), made there on first use with
//! the runtime's Lua settings and init steps, and driven by the polls of
//! the calls made there: no thread hop, no job fiber, no cross-thread wake
//! for a call that does not wait.
//!
//! A fiber never leaves the thread that made it (docs/design.md), so a
//! local call whose Lua fiber waits (on a Rust future, a sleep) is bound
//! to its thread: it goes on when that thread drives its cord again, that
//! is when a local call is polled there (each poll there drives first, but
//! one that finds its call ended while no fiber is ready), or
//! when the host calls [`drive_local`] there (tokio's `on_thread_park`).
//! A wake of such a fiber from another thread (a future's `Waker`) posts
//! to the thread's inbox, which wakes the task of a local call still
//! waiting there ([`luafiber_runtime::local`]; the cord's context lists
//! them, so that the task woken is never one that ended). What tokio's multi-thread
//! scheduler cannot promise: that a task moved (stolen) to another worker
//! while its call waits on the first one is polled again there; such a
//! call ends when its thread drives again (docs/embedding.md, "On the
//! tokio worker: local calls"). A timer's deadline reaches the thread
//! through a helper thread ([`luafiber_runtime::local::Remote::drive_at`]).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use luafiber_runtime::{cord, local};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::handle::answer_to_result;
use super::wait::{self, Ticket};
use super::{args, direct, lua_serde, Call, Error, ErrorKind, Handle};
use crate::embed::cords::{serve, Init, Serving};
use crate::embed::{LuaRuntime, RuntimeBuilder};
use crate::modules::threads::request::{Body, Gather, Kind, Request};
use crate::raw::context::Part;
use crate::raw::Stack;

/// Fiber switches one drive runs at most before it gives the thread back
/// to its executor (a fiber that keeps yielding cannot hold a worker).
const BUDGET: usize = 256;

/// What a thread needs to make a runtime's local cord: its Lua settings,
/// its init steps and the index they are given (the runtime's cord count).
pub(super) struct Spec {
    lua: RuntimeBuilder,
    init: Vec<Init>,
    index: usize,
    /// Set when the runtime is dropped: local cords end at their thread's
    /// next local call.
    stopped: AtomicBool,
}

impl Spec {
    pub(super) fn new(lua: RuntimeBuilder, init: Vec<Init>, index: usize) -> Arc<Spec> {
        Arc::new(Spec {
            lua,
            init,
            index,
            stopped: AtomicBool::new(false),
        })
    }
}

/// Sets its spec's `stopped` when the runtime goes.
pub(super) struct StopLocal(pub(super) Arc<Spec>);

impl Drop for StopLocal {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::Release);
    }
}

/// This thread's local cord.
struct Local {
    spec: Arc<Spec>,
    /// Shared by the calls waiting here through an `Arc` of this thread's:
    /// a clone of the `Remote` itself counts in the `Arc`s of its inbox and
    /// driver slot, next to what other threads write as they post.
    remote: Arc<local::Remote>,
    /// Left undropped when the thread ends (a thread-local's drop may run
    /// after the scheduler's own thread-locals are gone): dropped only by
    /// [`enter`] once its runtime stopped.
    rt: ManuallyDrop<LuaRuntime>,
}

thread_local! {
    /// The local cord of this thread, if one was made.
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
    /// The spec whose local cord failed to start here (not tried again).
    static FAILED: Cell<usize> = const { Cell::new(0) };
}

/// Whether this thread has the local cord of `spec` (made here on first
/// use); `false` when the call must cross to a cord instead: inside a
/// fiber, on a cord, on a thread that has another Lua runtime, or when the
/// cord cannot start.
fn enter(spec: &Arc<Spec>) -> bool {
    enter_cord(spec).is_some()
}

/// [`enter`], giving what reaches the local cord's thread (a clone:
/// wanted only by a call that waits).
fn enter_remote(spec: &Arc<Spec>) -> Option<Arc<local::Remote>> {
    enter_cord(spec).and_then(|()| home_remote())
}

/// What reaches this thread's local cord, if it has one.
fn home_remote() -> Option<Arc<local::Remote>> {
    LOCAL.with(|l| {
        l.try_borrow()
            .ok()
            .and_then(|l| l.as_ref().map(|l| l.remote.clone()))
    })
}

fn enter_cord(spec: &Arc<Spec>) -> Option<()> {
    if luafiber_fiber::current().is_some() || cord::current().is_some() {
        return None;
    }
    let stopped = spec.stopped.load(Ordering::Acquire);
    LOCAL.with(|l| {
        let mut l = l.try_borrow_mut().ok()?;
        if let Some(cur) = &*l {
            if Arc::ptr_eq(&cur.spec, spec) && !stopped {
                return Some(());
            }
            if !cur.spec.stopped.load(Ordering::Acquire) {
                return None;
            }
            let mut old = l.take().expect("checked");
            // SAFETY: taken out of the thread-local, dropped once here.
            serve::stop_local(unsafe { ManuallyDrop::take(&mut old.rt) });
        }
        let key = Arc::as_ptr(spec) as usize;
        if stopped || FAILED.get() == key || serve::with_runtime(|_| ()).is_some() {
            return None;
        }
        let made = serve::start(spec.lua.clone(), &spec.init, spec.index, &|_| {})
            .map_err(|e| e.to_string())
            .and_then(|()| serve::take_runtime().ok_or_else(|| "no runtime".to_owned()))
            .and_then(|rt| match local::remote() {
                Ok(r) => Ok((rt, r)),
                Err(e) => {
                    serve::stop_local(rt);
                    Err(e.to_string())
                }
            });
        match made {
            Ok((rt, remote)) => {
                *l = Some(Local {
                    spec: spec.clone(),
                    remote: Arc::new(remote),
                    rt: ManuallyDrop::new(rt),
                });
                Some(())
            }
            Err(e) => {
                FAILED.set(key);
                tracing::warn!(error = %e, "no local cord on this thread: its calls cross to the cords");
                None
            }
        }
    })
}

/// Runs what is ready on this thread's local cord, if it has one (outside
/// any fiber): give it to tokio's `Builder::on_thread_park`, so that a
/// worker drives the fibers of its local calls before it sleeps.
///
/// ```text
/// tokio::runtime::Builder::new_multi_thread()
///     .on_thread_park(luafiber::drive_local)
/// ```
pub fn drive_local() {
    if luafiber_fiber::current().is_some() {
        return;
    }
    if let Some(remote) = home_remote() {
        local::run_ready(BUDGET);
        hand_driver(&remote);
    }
}

/// Lists `gather`, a local call that waits on this thread's cord, in the
/// cord's list (the answered ones are dropped from it as it grows).
fn list_waiting(gather: &Arc<Gather>) {
    Serving::try_with(|p| {
        let mut w = p.waiting.borrow_mut();
        if w.len() >= 64 && w.len().is_power_of_two() {
            w.retain(|g| !g.is_done());
        }
        w.push(gather.clone());
    });
}

/// Makes the task of the latest local call still waiting on this thread's
/// cord its driver: the one a wake for the cord wakes, never a task that
/// ended.
fn hand_driver(remote: &local::Remote) {
    let next = Serving::try_with(|p| {
        let mut w = p.waiting.borrow_mut();
        while let Some(g) = w.last() {
            if let Some(waker) = g.waiter() {
                return Some(waker);
            }
            w.pop();
        }
        None
    })
    .flatten()
    .or_else(wait::any_waker);
    match next {
        Some(w) => remote.set_driver(&w),
        None => remote.clear_driver(),
    }
}

impl Handle {
    /// [`call_async`](Handle::call_async) on a cord that lives on the
    /// thread that polls the future (made there on first use, with the
    /// runtime's Lua settings and init steps; a step is given the cord
    /// index [`cords()`](Handle::cords)): the first poll starts the Lua
    /// fiber right there, and a call that does not wait is ready after it,
    /// with no thread hop. A call whose fiber waits (a Rust async function,
    /// a sleep) goes on when that thread drives its cord again: at each
    /// poll of a local call there, on [`drive_local`], or when a wake of
    /// the fiber from another thread (or a timer's deadline) wakes the task
    /// of a local call still waiting there. A wait on a socket is seen only
    /// at those drives: give such calls to [`call_async`](Handle::call_async).
    /// On a cord, in a fiber, or on a thread with a Lua
    /// runtime of its own, it is [`call_async`](Handle::call_async).
    ///
    /// Each thread has its own Lua state: globals set by one call are not
    /// seen by calls on other threads; functions registered with
    /// [`Runtime::register_fn`](super::Runtime::register_fn) after the
    /// start are not on local cords (the builder's are). The local cords
    /// end after the runtime is dropped, at their thread's next local call
    /// (else with the thread, unclosed).
    ///
    /// The function is found by its name at each call (a redefined global
    /// is seen), and on the polling thread the call's fiber runs it itself:
    /// the arguments `args` are kept in the future until its first poll
    /// (so the future is `Send` when `A` is), then put on the fiber's Lua
    /// stack; a call that ends in that poll hands its results straight to
    /// the future.
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// let rt = luafiber::Builder::new()
    ///     .load_module("app", "return { add = function(a, b) return a + b end }")
    ///     .build()
    ///     .unwrap();
    /// let call = rt.handle().call_local::<i64>("app.add", (1, 2));
    /// // Any executor; tokio's: `tokio::spawn(call)` on a worker.
    /// assert_eq!(luafiber_runtime::block_on_future(call).unwrap().unwrap(), 3);
    /// ```
    ///
    /// # Errors
    ///
    /// As [`call_async`](Handle::call_async); the arguments' conversion
    /// ([`ErrorKind::Convert`]) fails at the first poll.
    pub fn call_local<R: DeserializeOwned>(
        &self,
        name: &str,
        args: impl Serialize,
    ) -> LocalCall<R, impl Serialize> {
        self.start_local(Kind::Call, name, args)
    }

    /// [`eval_async`](Handle::eval_async) on a cord of the polling thread,
    /// as [`call_local`](Handle::call_local) (the chunk runs as
    /// [`eval_async`](Handle::eval_async) runs it there).
    pub fn eval_local<R: DeserializeOwned>(
        &self,
        code: &str,
        args: impl Serialize,
    ) -> LocalCall<R, impl Serialize> {
        self.start_local(Kind::Eval, code, args)
    }

    fn start_local<R, A>(&self, kind: Kind, what: &str, args: A) -> LocalCall<R, A> {
        LocalCall {
            state: State::Start {
                kind,
                what: What::new(what.as_bytes()),
                args,
                handle: thread_handle(self),
            },
            _r: PhantomData,
        }
    }
}

thread_local! {
    /// A copy of the handle whose local calls this thread made last.
    static HANDLE: RefCell<Option<Arc<Handle>>> = const { RefCell::new(None) };
}

/// `h` for a call to keep: this thread's own copy of it (made once), whose
/// count only this thread touches while its calls are made and dropped
/// here. A clone of `h` itself would count in the runtime's shared `Arc`s,
/// a cache line that every worker making calls writes (a fifth of a
/// call's CPU on 2 tokio workers).
fn thread_handle(h: &Handle) -> Arc<Handle> {
    let Some(spec) = &h.local else {
        return Arc::new(h.clone());
    };
    let kept = HANDLE.try_with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let same = c.as_ref().is_some_and(|k| {
            k.local.as_ref().is_some_and(|s| Arc::ptr_eq(s, spec)) && k.cords.same_runtime(&h.cords)
        });
        if !same {
            *c = Some(Arc::new(h.clone()));
        }
        c.clone()
    });
    kept.ok().flatten().unwrap_or_else(|| Arc::new(h.clone()))
}

/// Bytes a [`What`] holds inline at most: a usual function name
/// (`"module.function"`).
const WHAT_INLINE: usize = 22;

/// A local call's function name or chunk: inline when short (no
/// allocation), and small, as the future moves (into an executor's task,
/// a `FuturesUnordered`) by copy.
enum What {
    Inline(u8, [u8; WHAT_INLINE]),
    Heap(Box<[u8]>),
}

impl What {
    fn new(b: &[u8]) -> What {
        match u8::try_from(b.len()) {
            Ok(n) if b.len() <= WHAT_INLINE => {
                let mut buf = [0; WHAT_INLINE];
                buf[..b.len()].copy_from_slice(b);
                What::Inline(n, buf)
            }
            _ => What::Heap(b.into()),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            What::Inline(n, buf) => &buf[..usize::from(*n)],
            What::Heap(b) => b,
        }
    }
}

enum State<R, A> {
    /// Not polled yet: the call's kind, its function's name or chunk, its
    /// arguments, the handle it was made from.
    Start {
        kind: Kind,
        what: What,
        args: A,
        handle: Arc<Handle>,
    },
    /// A direct CALL whose fiber waits on the local cord of `remote`'s
    /// thread (`wait.rs`).
    Direct {
        ticket: Ticket,
        remote: Arc<local::Remote>,
    },
    /// An EVAL running on the local cord of `remote`'s thread; `listed`
    /// once in its cord's list of waiting calls.
    Local {
        gather: Arc<Gather>,
        remote: Arc<local::Remote>,
        listed: bool,
    },
    /// Crossed to a cord.
    Hop(Box<Call<R>>),
    Done,
}

/// A call started by [`Handle::call_local`] or [`Handle::eval_local`]: a
/// future of its results, `Send` when the arguments `A` are (they are kept
/// until the first poll). Dropping it before it is ready cancels the
/// call's Lua fiber (on its thread, at its next drive when dropped
/// elsewhere).
#[must_use = "a LocalCall does nothing unless polled; dropping it cancels the call"]
pub struct LocalCall<R, A> {
    state: State<R, A>,
    _r: PhantomData<fn() -> R>,
}

// The arguments are moved out at the first poll, never used pinned.
impl<R, A> Unpin for LocalCall<R, A> {}

impl<R: DeserializeOwned, A: Serialize> LocalCall<R, A> {
    /// The first poll: starts the call on this thread's local cord (or
    /// hands it to [`Handle::start_async`] when it cannot run here).
    /// `Some` when it ended already. Out of line: the later polls of a
    /// call that waits keep a small frame.
    #[inline(never)]
    fn begin(&mut self, cx: &Context<'_>) -> Option<Result<R, Error>> {
        let State::Start {
            kind,
            what,
            args,
            handle,
        } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Some(Err(Error::new(ErrorKind::Stopped, "polled after it ended")));
        };
        let spec = handle.local.as_ref();
        if kind == Kind::Call && spec.is_some_and(enter) {
            let name = what.bytes();
            // SAFETY: `direct::start` gives the call fiber's idle thread.
            let push = |s: &mut Stack<'_>| unsafe { lua_serde::push_args_onto(s, &args) };
            let ticket = match direct::start::<R>(name, push, cx.waker()) {
                direct::Started::Done(r) => {
                    // As every poll here: the cord's other fibers get a
                    // drive (a budget left over wakes its driver).
                    if local::run_ready(BUDGET) {
                        if let Some(remote) = home_remote() {
                            remote.run(|| {});
                        }
                    }
                    return Some(r);
                }
                direct::Started::Waiting(ticket) => ticket,
            };
            let Some(remote) = home_remote() else {
                // Its fiber is cancelled (nobody would read its answer).
                ticket.abandon_here();
                return Some(Err(Error::new(ErrorKind::Stopped, "the local cord went")));
            };
            self.state = State::Direct { ticket, remote };
            return None;
        }
        let what = String::from_utf8_lossy(what.bytes()).into_owned();
        let encoded = args::encode(&args);
        let Some(remote) = spec.and_then(enter_remote) else {
            let call = handle.start_async(None, kind, &what, encoded);
            self.state = State::Hop(Box::new(call));
            return None;
        };
        let args = match encoded {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        // EVAL: the serve chain, as a cord runs it.
        let (gather, reply) = Gather::one();
        serve::serve(Request {
            kind,
            body: Body::new(what.as_bytes(), &args),
            reply,
            fname: match kind {
                Kind::Eval => "eval",
                _ => "call",
            },
        });
        self.state = State::Local {
            gather,
            remote,
            listed: false,
        };
        None
    }
}

impl<R: DeserializeOwned, A: Serialize> Future for LocalCall<R, A> {
    type Output = Result<R, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Start { .. } => {
                    if let Some(r) = this.begin(cx) {
                        this.state = State::Done;
                        return Poll::Ready(r);
                    }
                }
                State::Direct { ticket, remote } => {
                    let remote = &**remote;
                    let here = remote.is_home();
                    let ended = here && ticket.ended_here();
                    let on_loan = Cell::new(false);
                    let Poll::Ready(r) = poll_waiting(
                        remote,
                        cx,
                        (here, ended),
                        |cx| {
                            let p = ticket.poll::<R>(cx, remote, here);
                            on_loan.set(ticket.on_loan());
                            p
                        },
                        |remote, cx| {
                            // Its own task is woken by what its fiber
                            // awaits: it drives only when nobody does.
                            match on_loan.get() {
                                true => remote.offer_driver(cx.waker()),
                                false => remote.set_driver(cx.waker()),
                            }
                        },
                    ) else {
                        return Poll::Pending;
                    };
                    this.state = State::Done;
                    return Poll::Ready(r);
                }
                State::Local {
                    gather,
                    remote,
                    listed,
                } => {
                    let listing = |remote: &local::Remote, cx: &mut Context<'_>| {
                        if !*listed {
                            *listed = true;
                            list_waiting(gather);
                        }
                        remote.set_driver(cx.waker());
                    };
                    let Poll::Ready(answer) = poll_waiting(
                        remote,
                        cx,
                        (remote.is_home(), false),
                        |cx| gather.poll_one(cx),
                        listing,
                    ) else {
                        return Poll::Pending;
                    };
                    let fiber = gather.fiber_id();
                    this.state = State::Done;
                    return Poll::Ready(
                        answer_to_result(answer, fiber).and_then(|b| args::decode(&b)),
                    );
                }
                State::Hop(call) => return Pin::new(&mut **call).poll(cx),
                State::Done => {
                    return Poll::Ready(Err(Error::new(
                        ErrorKind::Stopped,
                        "polled after it ended",
                    )))
                }
            }
        }
    }
}

/// A poll of a local call that went on waiting on `remote`'s thread
/// (`here`: polled on that thread): drives the thread's cord first when on
/// it (only outside any fiber: polled in a fiber, a `block_on_future` of
/// it, the thread's loop drives), unless the call `ended` and no fiber
/// is ready (a drive went since the end; the posts to the thread's inbox
/// wake a driver of their own), then polls with `answer`. While the call
/// waits, `waits` makes its task the cord's driver (or offers it, for a
/// call whose own wake comes from what its fiber awaits); when it ends, a
/// wake for the cord goes to one still waiting (the task may end now).
fn poll_waiting<T>(
    remote: &local::Remote,
    cx: &mut Context<'_>,
    (here, ended): (bool, bool),
    answer: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    waits: impl FnOnce(&local::Remote, &mut Context<'_>),
) -> Poll<T> {
    let home = here && luafiber_fiber::current().is_none();
    if home && (!ended || luafiber_fiber::has_ready()) && local::run_ready(BUDGET) {
        cx.waker().wake_by_ref();
    }
    let Poll::Ready(r) = answer(cx) else {
        if home {
            waits(remote, cx);
            if let Some(t) = luafiber_fiber::next_timer() {
                remote.drive_at(t);
            }
        }
        return Poll::Pending;
    };
    if home && remote.is_driver(cx.waker()) {
        hand_driver(remote);
    }
    Poll::Ready(r)
}

impl<R, A> Drop for LocalCall<R, A> {
    fn drop(&mut self) {
        if let State::Direct { ticket, remote } = &mut self.state {
            ticket.drop_with(remote);
            return;
        }
        let State::Local { gather, remote, .. } = &self.state else {
            return;
        };
        let Some((_, id)) = gather.abandon() else {
            return;
        };
        // The call's fiber is pooled (`direct.rs`): once the call answered
        // it may run another, which the cancel must not reach. On its
        // thread an unanswered call still has it (only that thread
        // answers); elsewhere it is asked there.
        if remote.is_home() {
            let _ = luafiber_fiber::cancel(id);
        } else {
            let gather = gather.clone();
            remote.run(move || {
                if !gather.is_done() {
                    let _ = luafiber_fiber::cancel(id);
                }
            });
        }
    }
}

impl<R, A> std::fmt::Debug for LocalCall<R, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Start { .. } => "start",
            State::Direct { .. } | State::Local { .. } => "local",
            State::Hop(_) => "crossed",
            State::Done => "done",
        };
        f.debug_struct("LocalCall").field("state", &state).finish()
    }
}
