//! [`Handle`]: typed calls into a [`Runtime`](super::Runtime)'s cords from
//! any thread, blocking or as a [`Call`] future.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use luafiber_fiber::FiberId;
use luafiber_runtime::cord;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{args, Error, ErrorKind};
use crate::embed::cords::serve;
use crate::modules::msgpack::port;
use crate::modules::threads::request::{Body, FailKind, Failure, Gather, Kind, Outcome, Request};

/// A cheap, cloneable (`Clone + Send + Sync`) way to reach a
/// [`Runtime`](super::Runtime) from any thread: calls of Lua functions by
/// name and of Lua chunks, typed, blocking or awaited, and Rust closures
/// started on its cords. Get one with [`Runtime::handle`](super::Runtime::handle).
///
/// A call runs on a fresh Lua fiber of a cord (whichever is free first, or
/// the one named by the `_on` forms), which may yield: one cord runs many
/// calls at once. Arguments are a tuple (`(1, "x")`: two arguments; `()`:
/// none) or any other `serde::Serialize` value (one argument); results are
/// a tuple or any other `DeserializeOwned` type (the first value), as
/// [`crate::host`] describes. MessagePack carries them between threads.
///
/// From a fiber on one of the runtime's own cords, a call to that cord (or
/// to any cord) runs there without crossing threads; it parks only the
/// calling fiber. From any other thread the blocking forms block the
/// thread: in async code, use the [`Call`] futures of the `_async` forms.
///
/// After the runtime stopped, calls fail with [`ErrorKind::Stopped`].
#[derive(Clone)]
pub struct Handle {
    pub(super) cords: cord::Handle,
    /// Whether the cords have Lua states.
    pub(super) lua: bool,
    /// How to make a local cord ([`Handle::call_local`]), with Lua.
    pub(super) local: Option<Arc<super::local::Spec>>,
}

impl Handle {
    /// How many cords the runtime has.
    pub fn cords(&self) -> usize {
        self.cords.cords()
    }

    /// Calls the global Lua function `name` (a dotted path: `"app.add"`)
    /// with `args` on whichever cord is free first, and returns its results
    /// as `R`. Blocks the calling fiber only, or, outside any fiber, the
    /// thread.
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// let rt = luafiber::Builder::new()
    ///     .load_module("app", "return { add = function(a, b) return a + b end }")
    ///     .build()
    ///     .unwrap();
    /// let sum: i64 = rt.handle().call("app.add", (1, 2)).unwrap();
    /// assert_eq!(sum, 3);
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Lua`] when the function raises (the message; the value
    /// in [`Error::lua_value`]) or `name` names no function;
    /// [`ErrorKind::Convert`] when `args` do not serialize or the results
    /// do not make an `R`; [`ErrorKind::Refused`] when a result has no
    /// MessagePack form (a function) or the runtime has no Lua;
    /// [`ErrorKind::Stopped`] when the runtime stopped first;
    /// [`ErrorKind::Cancelled`] when the waiting fiber is cancelled.
    pub fn call<R: DeserializeOwned>(&self, name: &str, args: impl Serialize) -> Result<R, Error> {
        let bytes = self.wait(None, Kind::Call, name, &args::encode(&args)?)?;
        args::decode(&bytes)
    }

    /// Like [`call`](Handle::call), on cord `cord` (`0..cords()`): through
    /// its inbox, so it runs there even when the cord is busy.
    ///
    /// # Errors
    ///
    /// As [`call`](Handle::call); [`ErrorKind::Refused`] when there is no
    /// cord `cord`.
    pub fn call_on<R: DeserializeOwned>(
        &self,
        cord: usize,
        name: &str,
        args: impl Serialize,
    ) -> Result<R, Error> {
        let bytes = self.wait(Some(cord), Kind::Call, name, &args::encode(&args)?)?;
        args::decode(&bytes)
    }

    /// Runs the Lua chunk `code` with `...` = `args` on whichever cord is
    /// free first, and returns its results as `R`.
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// let rt = luafiber::Builder::new().build().unwrap();
    /// let (s, n): (String, i64) = rt.handle().eval("return ... , 42", ("x",)).unwrap();
    /// assert_eq!((s.as_str(), n), ("x", 42));
    /// ```
    ///
    /// # Errors
    ///
    /// As [`call`](Handle::call), and [`ErrorKind::Lua`] when the code
    /// does not compile.
    pub fn eval<R: DeserializeOwned>(&self, code: &str, args: impl Serialize) -> Result<R, Error> {
        let bytes = self.wait(None, Kind::Eval, code, &args::encode(&args)?)?;
        args::decode(&bytes)
    }

    /// Like [`eval`](Handle::eval), on cord `cord`.
    ///
    /// # Errors
    ///
    /// As [`call_on`](Handle::call_on).
    pub fn eval_on<R: DeserializeOwned>(
        &self,
        cord: usize,
        code: &str,
        args: impl Serialize,
    ) -> Result<R, Error> {
        let bytes = self.wait(Some(cord), Kind::Eval, code, &args::encode(&args)?)?;
        args::decode(&bytes)
    }

    /// [`call`](Handle::call) with the arguments as one MessagePack array
    /// (`[1, 2]` is `[0x92, 1, 2]`) and the results as one: for callers
    /// that have the bytes already (a proxy).
    ///
    /// # Errors
    ///
    /// As [`call`](Handle::call); [`ErrorKind::Refused`] when `args` is not
    /// one well-formed MessagePack array.
    pub fn call_raw(&self, name: &str, args: &[u8]) -> Result<Vec<u8>, Error> {
        port::check_array(args).map_err(|m| refused(&m))?;
        self.wait(None, Kind::Call, name, args)
    }

    /// [`call`](Handle::call) as a future: it starts the call now and gives
    /// its results when awaited, from any executor (tokio, `futures`'
    /// `block_on`, a hand-made one): the cord that answers wakes the
    /// task's `std::task::Waker`. Dropping the future before it is ready
    /// cancels the call's Lua fiber (a call not started yet never starts).
    ///
    /// ```
    /// # use luafiber_lua::host as luafiber;
    /// let rt = luafiber::Builder::new()
    ///     .load_module("app", "return { add = function(a, b) return a + b end }")
    ///     .build()
    ///     .unwrap();
    /// let call = rt.handle().call_async::<i64>("app.add", (1, 2));
    /// // Any executor: here the calling thread's own.
    /// assert_eq!(luafiber_runtime::block_on_future(call).unwrap().unwrap(), 3);
    /// ```
    pub fn call_async<R: DeserializeOwned>(&self, name: &str, args: impl Serialize) -> Call<R> {
        self.start_async(None, Kind::Call, name, args::encode(&args))
    }

    /// [`call_on`](Handle::call_on) as a future, as [`call_async`](Handle::call_async).
    pub fn call_on_async<R: DeserializeOwned>(
        &self,
        cord: usize,
        name: &str,
        args: impl Serialize,
    ) -> Call<R> {
        self.start_async(Some(cord), Kind::Call, name, args::encode(&args))
    }

    /// [`eval`](Handle::eval) as a future, as [`call_async`](Handle::call_async).
    pub fn eval_async<R: DeserializeOwned>(&self, code: &str, args: impl Serialize) -> Call<R> {
        self.start_async(None, Kind::Eval, code, args::encode(&args))
    }

    /// [`eval_on`](Handle::eval_on) as a future, as [`call_async`](Handle::call_async).
    pub fn eval_on_async<R: DeserializeOwned>(
        &self,
        cord: usize,
        code: &str,
        args: impl Serialize,
    ) -> Call<R> {
        self.start_async(Some(cord), Kind::Eval, code, args::encode(&args))
    }

    /// Starts the Rust closure `f` on a new fiber of whichever cord is free
    /// first; its [`JoinHandle`](luafiber_runtime::cord::JoinHandle) gives
    /// the value (`join` parks a fiber, blocks a plain thread).
    pub fn spawn<F, T>(&self, f: F) -> cord::JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.cords.spawn(f)
    }

    /// Like [`spawn`](Handle::spawn), on cord `cord`.
    ///
    /// # Panics
    ///
    /// When `cord >= cords()`.
    pub fn spawn_on<F, T>(&self, cord: usize, f: F) -> cord::JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.cords.spawn_on(cord, f)
    }

    /// Starts a call and waits for its results.
    fn wait(
        &self,
        cord: Option<usize>,
        kind: Kind,
        what: &str,
        args: &[u8],
    ) -> Result<Vec<u8>, Error> {
        let gather = self.start(cord, kind, what, args)?;
        let answer = gather.wait_one(None).map_err(Error::from)?;
        answer_to_result(answer, gather.fiber_id())
    }

    pub(super) fn start_async<R>(
        &self,
        cord: Option<usize>,
        kind: Kind,
        what: &str,
        args: Result<Vec<u8>, Error>,
    ) -> Call<R> {
        let started = args.and_then(|a| self.start(cord, kind, what, &a));
        Call {
            state: match started {
                Ok(g) => Ok(g),
                Err(e) => Err(Some(e)),
            },
            cords: self.cords.clone(),
            _r: PhantomData,
        }
    }

    /// Sends the request: run inline when the caller is a fiber of the
    /// target cord, else through the injector or the cord's inbox.
    fn start(
        &self,
        target: Option<usize>,
        kind: Kind,
        what: &str,
        args: &[u8],
    ) -> Result<Arc<Gather>, Error> {
        if !self.lua {
            return Err(refused("this runtime was built without Lua"));
        }
        if let Some(c) = target.filter(|&c| c >= self.cords()) {
            return Err(refused(&format!(
                "no cord {c} (there are {})",
                self.cords()
            )));
        }
        let fname = match kind {
            Kind::Eval => "eval",
            _ => "call",
        };
        let (gather, reply) = Gather::one();
        let req = Request {
            kind,
            body: Body::new(what.as_bytes(), args),
            reply,
            fname,
        };
        let here = cord::current().filter(|&c| {
            target.is_none_or(|t| t == c)
                && luafiber_fiber::current().is_some()
                && cord::Handle::current().is_some_and(|h| h.same_runtime(&self.cords))
        });
        match (here, target) {
            // A fiber of this cord, as a job from the inbox would be (the
            // serve code runs on a fiber of its own, never inside the
            // caller's Lua frames).
            (Some(_), _) => {
                match luafiber_runtime::task::Builder::new().spawn(move || serve::serve(req)) {
                    Ok(h) => drop(h),
                    Err(e) => return Err(Error::new(ErrorKind::Refused, e.to_string())),
                }
            }
            (None, None) => drop(self.cords.spawn(move || serve::serve(req))),
            (None, Some(c)) => drop(self.cords.spawn_on(c, move || serve::serve(req))),
        }
        Ok(gather)
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("cords", &self.cords())
            .field("lua", &self.lua)
            .finish()
    }
}

fn refused(m: &str) -> Error {
    Error::new(ErrorKind::Refused, m)
}

/// A call's answer as the results' bytes or the [`Error`].
pub(super) fn answer_to_result(
    answer: Option<Outcome>,
    fiber: Option<FiberId>,
) -> Result<Vec<u8>, Error> {
    match answer {
        Some(Ok(bytes)) => Ok(bytes),
        Some(Err(f)) => Err(failure_to_error(f).with_fiber(fiber)),
        None => Err(Error::new(ErrorKind::Stopped, "no answer")),
    }
}

pub(super) fn failure_to_error(f: Failure) -> Error {
    let kind = match f.kind {
        // Tarantool's `TimedOut` error object (a table whose `type` is
        // that) keeps its kind, and so does the `RustPanic` one a
        // registered Rust function's panic raises.
        FailKind::Lua => match error_type(f.value.as_deref()).as_deref() {
            Some("TimedOut") => ErrorKind::TimedOut,
            Some("RustPanic") => ErrorKind::Panic,
            _ => ErrorKind::Lua,
        },
        FailKind::Refused => ErrorKind::Refused,
        FailKind::Dropped => ErrorKind::Stopped,
        FailKind::Cancelled => ErrorKind::Cancelled,
    };
    // A table raised without `__tostring` has no text of its own: show
    // its fields, not `table: 0x...`.
    let message = match f.value.as_deref() {
        Some(v) if f.message.starts_with("table: ") => super::text::render(v).unwrap_or(f.message),
        _ => f.message,
    };
    Error::new(kind, message).with_value(f.value)
}

/// The `type` of an error object raised in Lua (a table with that field),
/// from its MessagePack form.
fn error_type(value: Option<&[u8]>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed {
        r#type: String,
    }
    rmp_serde::from_slice::<Typed>(value?)
        .ok()
        .map(|t| t.r#type)
}

/// A call started by [`Handle::call_async`] (and the other `_async`
/// forms): a `Send` future of the call's results, woken by the cord that
/// answers through the task's `std::task::Waker`; no executor of ours is
/// involved. Dropping it before it is ready cancels the call's Lua fiber
/// (on its cord; a `pcall` there sees Tarantool's `FiberIsCancelled`), or
/// keeps the call from starting.
#[must_use = "a Call does nothing unless awaited; dropping it cancels the call"]
pub struct Call<R> {
    /// The call's answer to come, or the error it failed to start with
    /// (taken by the first poll).
    state: Result<Arc<Gather>, Option<Error>>,
    cords: cord::Handle,
    _r: PhantomData<fn() -> R>,
}

impl<R: DeserializeOwned> Future for Call<R> {
    type Output = Result<R, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let gather = match &mut this.state {
            Ok(g) => g,
            Err(e) => {
                let e = e
                    .take()
                    .unwrap_or_else(|| Error::new(ErrorKind::Stopped, "polled after it ended"));
                return Poll::Ready(Err(e));
            }
        };
        let answer = match gather.poll_one(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(a) => a,
        };
        let fiber = gather.fiber_id();
        this.state = Err(None);
        Poll::Ready(answer_to_result(answer, fiber).and_then(|b| args::decode(&b)))
    }
}

impl<R> Drop for Call<R> {
    fn drop(&mut self) {
        let Ok(gather) = &self.state else { return };
        if let Some((cord, id)) = gather.abandon() {
            drop(self.cords.spawn_on(cord, move || {
                let _ = luafiber_fiber::cancel(id);
            }));
        }
    }
}

impl<R> std::fmt::Debug for Call<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field(
                "finished",
                &self.state.as_ref().map_or(true, |g| g.is_done()),
            )
            .finish()
    }
}
