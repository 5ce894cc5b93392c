//! Lua on several cords: [`LuaCords`], made by
//! [`LuaRuntime::builder().cords(n)`](RuntimeBuilder::cords), runs `n`
//! cords (OS threads), each with its own scheduler, event loop and Lua
//! state, set up by the same init steps; [`LuaCords::call`] and
//! [`LuaCords::eval`] from any thread run on whichever cord is free first
//! (the runtime's injector), with arguments and results as MessagePack.
//! The thread groups of the Lua `experimental.threads` module are the
//! same machinery ([`start_group`]).
//!
//! - [`serve`]: a serving cord's Lua runtime and how a request runs there.
//!
//! What can be given as init, so that every cord gets the same: Lua source
//! ([`CordsBuilder::load_module`], [`CordsBuilder::eval`]) and a closure
//! run on each cord with its runtime ([`CordsBuilder::on_cord_start`]:
//! `Fn + Send + Sync`, so it can register functions, which need not be
//! `Send`, that it makes there). A Lua value never crosses: arguments and
//! results are MessagePack bytes, encoded and decoded by the `msgpack`
//! module's own encoder and decoder on the cords.

mod error;
mod names;
pub(crate) mod serve;

pub(super) use serve::Serving;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use luafiber_runtime::cord;

pub use error::{CallError, CallErrorKind};

use super::{Error, LuaRuntime, RuntimeBuilder};
use crate::modules::msgpack::port;
use crate::modules::threads::groups::{self, Group};
use crate::modules::threads::request::{Body, Gather, Kind, Outcome, Request};

/// An init step, run on each cord as it starts.
#[derive(Clone)]
pub(crate) enum Init {
    Module(String, String),
    Eval(String),
    Fn(InitFn),
}

/// Init code run on each cord with its runtime and index.
type InitFn = Arc<dyn Fn(&LuaRuntime, usize) -> Result<(), Error> + Send + Sync>;

impl RuntimeBuilder {
    /// Settings for `n` cords, each with a Lua state set up with these
    /// settings (stack size, pools, memory limit: each state has its own
    /// limit) and the builder's init steps.
    ///
    /// ```
    /// use luafiber_lua::LuaRuntime;
    ///
    /// let cords = LuaRuntime::builder()
    ///     .cords(2)
    ///     .load_module("calc", "return { add = function(a, b) return a + b end }")
    ///     .build()
    ///     .unwrap();
    /// // [1, 2] as MessagePack: a fixarray of two fixints.
    /// assert_eq!(cords.call("calc.add", &[0x92, 1, 2]).unwrap(), [0x91, 3]);
    /// ```
    pub fn cords(self, n: usize) -> CordsBuilder {
        CordsBuilder {
            lua: self,
            cords: n,
            thread_name: "luafiber-lua".into(),
            init: Vec::new(),
        }
    }
}

/// Settings of a [`LuaCords`]: the Lua settings, how many cords, their
/// threads' names and the init steps each cord runs, in order, as it
/// starts. Made by [`RuntimeBuilder::cords`].
///
/// Init steps run outside any fiber, before the cord takes calls; they
/// should not block for long (a step that waits keeps the build waiting).
#[derive(Clone)]
pub struct CordsBuilder {
    lua: RuntimeBuilder,
    cords: usize,
    thread_name: String,
    init: Vec<Init>,
}

impl CordsBuilder {
    /// The Lua settings and init steps, for cords made later on other
    /// threads (the host's local cords).
    pub(crate) fn parts(&self) -> (RuntimeBuilder, Vec<Init>) {
        (self.lua.clone(), self.init.clone())
    }

    /// The cords' thread names: `prefix` and the cord's index
    /// (`luafiber-lua-0`, ...). Default `luafiber-lua`.
    pub fn thread_name(mut self, prefix: impl Into<String>) -> CordsBuilder {
        self.thread_name = prefix.into();
        self
    }

    /// Loads the Lua module `name` from `code` on each cord, as
    /// [`LuaRuntime::load_module`] does.
    pub fn load_module(mut self, name: &str, code: &str) -> CordsBuilder {
        self.init.push(Init::Module(name.into(), code.into()));
        self
    }

    /// Runs the Lua chunk `code` on each cord (as [`LuaRuntime::eval`],
    /// dropping its results): globals, `require`s.
    pub fn eval(mut self, code: &str) -> CordsBuilder {
        self.init.push(Init::Eval(code.into()));
        self
    }

    /// Runs `f` on each cord with its runtime and the cord's index
    /// (`0..n`): register functions there ([`LuaRuntime::register_fn`]),
    /// set globals through [`LuaRuntime::lua`].
    pub fn on_cord_start(
        mut self,
        f: impl Fn(&LuaRuntime, usize) -> Result<(), Error> + Send + Sync + 'static,
    ) -> CordsBuilder {
        self.init.push(Init::Fn(Arc::new(f)));
        self
    }

    /// Starts the cords and runs the init steps on each; returns when every
    /// cord serves.
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] when a thread cannot start, or the first error of
    /// an init step (naming its cord); the cords started are shut down.
    ///
    /// # Panics
    ///
    /// When `n` is 0.
    pub fn build(self) -> Result<LuaCords, Error> {
        self.build_with(|_| {})
    }

    /// [`build`](CordsBuilder::build), with `place(i)` run on each cord
    /// once its runtime is built, before the init steps.
    fn build_with(self, place: impl Fn(usize) + Send + Sync + 'static) -> Result<LuaCords, Error> {
        let failed = Arc::new(Mutex::new(None::<String>));
        let fail = failed.clone();
        let CordsBuilder {
            lua,
            cords: n,
            thread_name,
            init,
        } = self;
        let rt = luafiber_runtime::Runtime::builder()
            .cords(n)
            .thread_name(thread_name)
            .on_cord_start(move |i| {
                if let Err(e) = serve::start(lua.clone(), &init, i, &place) {
                    let mut f = fail.lock().unwrap_or_else(|e| e.into_inner());
                    f.get_or_insert_with(|| format!("cord {i}: {e}"));
                }
            })
            .on_cord_stop(|_| serve::stop())
            .build()
            .map_err(|e| Error::Runtime(e.to_string()))?;
        let failed = failed.lock().unwrap_or_else(|e| e.into_inner()).take();
        match failed {
            None => Ok(LuaCords { rt }),
            Some(msg) => {
                rt.shutdown_timeout(Duration::from_secs(1));
                Err(Error::Runtime(msg))
            }
        }
    }
}

impl std::fmt::Debug for CordsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CordsBuilder")
            .field("cords", &self.cords)
            .field("thread_name", &self.thread_name)
            .field("init_steps", &self.init.len())
            .finish_non_exhaustive()
    }
}

/// Several cords, each with its own Lua state (set up by the same init
/// steps), serving calls from any thread: Tarantool's application threads
/// for a Rust program. `Send + Sync`; made by
/// [`LuaRuntime::builder().cords(n)`](RuntimeBuilder::cords).
///
/// Arguments are one MessagePack array (`[]` is `0x90`) and results come
/// back as one (the values returned), so no Lua value crosses between
/// threads. A call runs on a fresh Lua fiber of its cord, which may yield:
/// a cord runs many calls at once.
///
/// Dropping it shuts the cords down (as `shutdown_timeout` with one
/// second).
///
/// ```
/// use luafiber_lua::LuaRuntime;
/// use std::sync::Arc;
///
/// let cords = Arc::new(
///     LuaRuntime::builder()
///         .cords(2)
///         .eval("function square(x) return x * x end")
///         .build()
///         .unwrap(),
/// );
/// let threads: Vec<_> = (1..=4u8)
///     .map(|i| {
///         let cords = cords.clone();
///         // From any thread: [i] in, [i * i] out.
///         std::thread::spawn(move || cords.call("square", &[0x91, i]).unwrap())
///     })
///     .collect();
/// let got: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
/// assert_eq!(got, [[0x91, 1], [0x91, 4], [0x91, 9], [0x91, 16]]);
/// ```
pub struct LuaCords {
    rt: cord::Runtime,
}

impl LuaCords {
    /// How many cords there are.
    pub fn cords(&self) -> usize {
        self.rt.cords()
    }

    /// Calls the global function `name` (a dotted path, as
    /// [`LuaRuntime::call`]) with the MessagePack array `args` as its
    /// arguments, on whichever cord takes it first, and returns its results
    /// as a MessagePack array. Blocks the calling fiber (only it) or, outside
    /// any fiber, the thread.
    ///
    /// # Errors
    ///
    /// [`CallError`] of kind [`Lua`](CallErrorKind::Lua) when the function
    /// raises (with the error's message) or `name` names no function;
    /// [`Refused`](CallErrorKind::Refused) when `args` is not one
    /// MessagePack array or a result cannot be sent back (a function, a Lua
    /// thread, a userdata: "cannot be sent to another cord");
    /// [`Stopped`](CallErrorKind::Stopped) when the cords stopped first.
    pub fn call(&self, name: &str, args: &[u8]) -> Result<Vec<u8>, CallError> {
        self.spawn_call(name, args)?.join()
    }

    /// Like [`call`](LuaCords::call), on cord `cord` (`0..cords()`): through
    /// its inbox, so it runs there even when the cord is busy.
    ///
    /// # Errors
    ///
    /// As [`call`](LuaCords::call), and when there is no cord `cord`.
    pub fn call_on(&self, cord: usize, name: &str, args: &[u8]) -> Result<Vec<u8>, CallError> {
        self.send(Some(cord), Kind::Call, name, args, "LuaCords::call_on")?
            .join()
    }

    /// Runs the Lua chunk `code` with `...` = the MessagePack array `args`
    /// on whichever cord takes it first, as [`LuaRuntime::eval`] does, and
    /// returns its results as a MessagePack array.
    ///
    /// # Errors
    ///
    /// As [`call`](LuaCords::call), and when the code does not compile.
    pub fn eval(&self, code: &str, args: &[u8]) -> Result<Vec<u8>, CallError> {
        self.send(None, Kind::Eval, code, args, "LuaCords::eval")?
            .join()
    }

    /// Like [`eval`](LuaCords::eval), on cord `cord`.
    ///
    /// # Errors
    ///
    /// As [`call_on`](LuaCords::call_on).
    pub fn eval_on(&self, cord: usize, code: &str, args: &[u8]) -> Result<Vec<u8>, CallError> {
        self.send(Some(cord), Kind::Eval, code, args, "LuaCords::eval_on")?
            .join()
    }

    /// Starts [`call`](LuaCords::call) without waiting: many calls can be
    /// in flight from one thread; [`CordCall::join`] gives the results.
    ///
    /// # Errors
    ///
    /// When `args` is not one MessagePack array.
    pub fn spawn_call(&self, name: &str, args: &[u8]) -> Result<CordCall, CallError> {
        self.send(None, Kind::Call, name, args, "LuaCords::call")
    }

    /// Starts [`call_on`](LuaCords::call_on) without waiting.
    ///
    /// # Errors
    ///
    /// As [`call_on`](LuaCords::call_on), but for the call's own errors
    /// (those come from [`CordCall::join`]).
    pub fn spawn_call_on(
        &self,
        cord: usize,
        name: &str,
        args: &[u8],
    ) -> Result<CordCall, CallError> {
        self.send(Some(cord), Kind::Call, name, args, "LuaCords::call_on")
    }

    fn send(
        &self,
        cord: Option<usize>,
        kind: Kind,
        what: &str,
        args: &[u8],
        fname: &'static str,
    ) -> Result<CordCall, CallError> {
        let refused = |m: String| CallError::new(CallErrorKind::Refused, format!("{fname}: {m}"));
        port::check_array(args).map_err(refused)?;
        if let Some(c) = cord.filter(|&c| c >= self.cords()) {
            return Err(refused(format!("no cord {c} (there are {})", self.cords())));
        }
        let (gather, reply) = Gather::one();
        let req = Request {
            kind,
            body: Body::new(what.as_bytes(), args),
            reply,
            fname,
        };
        Group::send(self, cord, req);
        Ok(CordCall { gather })
    }

    /// Shuts the cords down: calls not yet started are dropped, every fiber
    /// is cancelled, and each cord's Lua state is closed once its fibers are
    /// done or `timeout` runs out (see [`cord::Runtime::shutdown_timeout`]).
    /// Calls still waiting fail.
    pub fn shutdown_timeout(self, timeout: Duration) {
        self.rt.shutdown_timeout(timeout);
    }
}

impl Group for LuaCords {
    fn handle(&self) -> &cord::Handle {
        self.rt.handle()
    }

    fn send(&self, target: Option<usize>, req: Request) {
        let job = move || serve::serve(req);
        // The handle is dropped: the answer comes through the request's
        // slot (and a job dropped unrun drops its slot, which answers).
        match target {
            None => drop(self.rt.spawn(job)),
            Some(i) => drop(self.rt.spawn_on(i, job)),
        }
    }
}

impl std::fmt::Debug for LuaCords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaCords")
            .field("cords", &self.cords())
            .finish()
    }
}

/// A call started by [`LuaCords::spawn_call`]: `Send`, joinable from any
/// thread or fiber. Dropping it leaves the call running (its results are
/// dropped).
#[must_use = "dropping a CordCall loses its results"]
pub struct CordCall {
    gather: Arc<Gather>,
}

impl CordCall {
    /// Whether the answer is in ([`join`](CordCall::join) then returns at
    /// once).
    pub fn is_finished(&self) -> bool {
        self.gather.is_done()
    }

    /// Waits for the call's results (a MessagePack array). In a fiber only
    /// the fiber waits; elsewhere the thread blocks.
    ///
    /// # Errors
    ///
    /// As [`LuaCords::call`]; [`CallErrorKind::Cancelled`] when the waiting
    /// fiber is cancelled.
    pub fn join(self) -> Result<Vec<u8>, CallError> {
        self.wait(None)
    }

    /// Like [`join`](CordCall::join), waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`join`](CordCall::join), and "timed out" when `timeout` runs out
    /// first (the call goes on; its results are dropped).
    pub fn join_timeout(self, timeout: Duration) -> Result<Vec<u8>, CallError> {
        self.wait(Some(timeout))
    }

    fn wait(self, timeout: Option<Duration>) -> Result<Vec<u8>, CallError> {
        let answer = self.gather.wait_one(timeout).map_err(|e| {
            if e.is_timeout() {
                CallError::new(CallErrorKind::TimedOut, "timed out")
            } else {
                CallError::new(CallErrorKind::Cancelled, "fiber is cancelled")
            }
        })?;
        match answer {
            Some(o) => outcome_to_result(o),
            // Taken already: only a second wait on the same gather.
            None => Err(CallError::new(CallErrorKind::Stopped, "no answer")),
        }
    }
}

impl std::fmt::Debug for CordCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CordCall")
            .field("finished", &self.is_finished())
            .finish()
    }
}

fn outcome_to_result(o: Outcome) -> Result<Vec<u8>, CallError> {
    o.map_err(CallError::from)
}

/// Starts a thread group of `experimental.threads`: `size` cords set up
/// with `lua`, each knowing its place (group `name`, thread `i + 1`).
fn start_group(lua: RuntimeBuilder, name: &str, size: usize) -> Result<Arc<dyn Group>, String> {
    let group: Arc<str> = name.into();
    let cords = lua
        .cords(size)
        .thread_name(name)
        .build_with(move |i| groups::set_place(group.clone(), i + 1))
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(cords))
}

/// Lets the Lua runtime being built on this thread start thread groups
/// (`threads.cfg`) with its own settings.
pub(super) fn install_starter(lua: &RuntimeBuilder) {
    let lua = lua.clone();
    groups::set_starter(Box::new(move |name, size| {
        start_group(lua.clone(), name, size)
    }));
}
