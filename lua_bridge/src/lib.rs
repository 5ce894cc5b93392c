//! Lua on luafiber fibers: each fiber runs Lua on its own Lua thread and its
//! own machine stack, so Lua code may yield anywhere (inside `pcall`,
//! metamethods, `table.sort` comparators, `string.gsub` callbacks).
//!
//! [`LuaRuntime`] owns the cord's Lua state (one per OS thread), sets up the
//! registry refs every hot path uses, and installs Tarantool's Lua modules:
//! `fiber`, `clock`, `buffer` and `msgpack`. [`LuaRuntime::run_main`] is
//! what the `luafiber` binary runs.
//!
//! ```
//! let rt = luafiber_lua::LuaRuntime::new().unwrap();
//! rt.run_chunk(r#"
//!     local fiber = require('fiber')
//!     local f = fiber.new(function(x) fiber.sleep(0.001); return x * 2 end, 21)
//!     f:set_joinable(true)
//!     local ok, v = f:join()
//!     assert(ok and v == 42)
//! "#, "example").unwrap();
//! ```
//!
//! # Embedding
//!
//! A Rust program calls Lua the way Tarantool serves iproto CALL and EVAL:
//! [`LuaRuntime::call`] runs a global function (by dotted name) and
//! [`LuaRuntime::eval`] a chunk, each on a fresh fiber, and returns the
//! results as [`Value`]s; their handler C functions are made once and
//! fetched by registry ref for every call. [`LuaRuntime::spawn_call`] and
//! [`LuaRuntime::spawn_lua`] start such a fiber without waiting
//! ([`CallHandle::join`] gives the results). [`LuaRuntime::load_module`]
//! loads a module the calls can name.
//!
//! Rust functions that Lua calls and that may block their fiber (sleep,
//! wait on a channel) are registered with [`LuaRuntime::register_fn`], not
//! as mlua callbacks (an mlua callback must not switch fibers):
//!
//! ```
//! use std::time::{Duration, Instant};
//! use luafiber_lua::{LuaRuntime, Value};
//!
//! let rt = LuaRuntime::new().unwrap();
//! rt.register_fn("wait_ms", |args| {
//!     let ms = args.first().and_then(Value::as_i64).ok_or("expected milliseconds")?;
//!     // Blocks only the calling Lua fiber.
//!     luafiber_fiber::sleep(Duration::from_millis(ms as u64)).map_err(|e| e.to_string())?;
//!     Ok(vec![Value::from(ms)])
//! }).unwrap();
//! rt.load_module("svc", r#"
//!     return { handle = function(id) return id, wait_ms(20) end }
//! "#).unwrap();
//!
//! // One call: runs the scheduler until its fiber ends.
//! assert_eq!(rt.call("svc.handle", vec![7.into()]).unwrap(),
//!            [Value::Integer(7), Value::Integer(20)]);
//!
//! // 100 calls at once: they wait together.
//! let t = Instant::now();
//! let calls: Vec<_> = (0..100).map(|i| rt.spawn_call("svc.handle", vec![i.into()]).unwrap()).collect();
//! rt.run();
//! for (i, c) in calls.into_iter().enumerate() {
//!     assert_eq!(c.join().unwrap()[0], Value::Integer(i as i64));
//! }
//! assert!(t.elapsed() < Duration::from_secs(1));
//!
//! // Errors carry the Lua message and traceback.
//! let err = rt.eval("error('no such user')", vec![]).unwrap_err();
//! assert!(err.to_string().contains("no such user"));
//! ```
//!
//! Inside a Rust fiber, or inside a registered function, [`LuaHandle`]
//! makes the same calls; they block only the calling fiber.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod buffer;
mod call;
pub mod capi;
pub mod cfunc;
mod channel_lib;
mod clock_lib;
mod cord;
pub mod error;
mod fast_entry;
mod fiber_lib;
#[cfg(feature = "luajit")]
mod lj_obj;
mod lua;
mod memory;
mod msgpack;
mod spawn;
mod value;

use std::ffi::{c_int, CString};
use std::fmt;

use luafiber_fiber::{self as fiber, Builder, StackPoolConfig};
use mlua::{ffi, Lua, LuaOptions, StdLib};

#[doc(hidden)]
pub use call::Handlers;
pub use call::{CallHandle, LuaHandle};
pub use cord::{NewThread, ThreadPoolConfig};
pub use mlua;
pub use value::Value;

/// Why a runtime could not start or a script could not run.
#[derive(Debug)]
pub enum Error {
    /// This thread already has a `LuaRuntime` (one Lua state per cord).
    AlreadyRunning,
    /// Fibers already exist on this thread, so its stack settings are fixed.
    FibersExist,
    /// mlua failed (creating the state, setting the memory limit).
    Lua(mlua::Error),
    /// A script or chunk failed to load: the message.
    Load(String),
    /// A chunk or a called function raised an error: the message and
    /// traceback.
    Runtime(String),
    /// This thread has no `LuaRuntime` (a [`LuaHandle`] outlived it).
    NoRuntime,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AlreadyRunning => f.write_str("this thread already runs a LuaRuntime"),
            Error::FibersExist => f.write_str("fibers already exist on this thread"),
            Error::Lua(e) => write!(f, "{e}"),
            Error::Load(m) | Error::Runtime(m) => f.write_str(m),
            Error::NoRuntime => f.write_str("this thread has no LuaRuntime"),
        }
    }
}

impl std::error::Error for Error {}

/// Settings of a [`LuaRuntime`]; `RuntimeBuilder::default()` gives
/// Tarantool's defaults.
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    stacks: StackPoolConfig,
    threads: ThreadPoolConfig,
    memory_limit: Option<usize>,
    new_thread: NewThread,
}

impl RuntimeBuilder {
    /// Usable stack size of each fiber, in bytes (default 512 KiB; at least
    /// 16 KiB; rounded up to pages).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stacks.stack_size = bytes;
        self
    }

    /// Most stacks kept for reuse (default 16384, the first 1024 keeping their pages; 0: every fiber maps a fresh
    /// stack).
    pub fn stack_pool(mut self, max: usize) -> Self {
        self.stacks.max = max;
        self.stacks.hot = self.stacks.hot.min(max);
        self
    }

    /// Most finished Lua threads kept for reuse (default 4096; 0: every fiber
    /// makes a new Lua thread).
    pub fn thread_pool(mut self, max: usize) -> Self {
        self.threads.max = max;
        self
    }

    /// Caps the Lua heap, in bytes: an allocation past it is a Lua error
    /// ("not enough memory") for the code that asked, never an abort.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// How new Lua threads are made (benches compare the variants; the
    /// default is the cached wrapper ref).
    #[doc(hidden)]
    pub fn new_thread(mut self, how: NewThread) -> Self {
        self.new_thread = how;
        self
    }

    /// Sets up the Lua state and the scheduler of the calling thread.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyRunning`] when the thread has a runtime;
    /// [`Error::FibersExist`] when it has fibers already; [`Error::Lua`] when
    /// the memory limit cannot be set.
    pub fn build(self) -> Result<LuaRuntime, Error> {
        if cord::is_installed() {
            return Err(Error::AlreadyRunning);
        }
        if !fiber::configure(fiber::Config {
            stacks: self.stacks,
        }) {
            return Err(Error::FibersExist);
        }
        // SAFETY: the full standard library (ffi and debug included) is what
        // a script interpreter offers; scripts are trusted as in `luajit`.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
        let main = lua.state();
        if let Some(limit) = self.memory_limit {
            // SAFETY: `main` is the new, idle state; the limit is set once.
            unsafe { memory::set_limit(main, lua.used_memory(), limit) };
        }
        // SAFETY: `main` is the new state's main thread, idle; setup runs
        // once, before any fiber.
        let refs = unsafe { setup(main) };
        // SAFETY: `main` is valid.
        let registry = unsafe { lua::registry_ptr(main) };
        let cord_lua = std::rc::Rc::new(lua.clone());
        cord::install(
            cord::Cord {
                lua: cord_lua.clone(),
                main,
                registry,
                threads: Vec::new(),
                thread_pool: self.threads,
                new_thread: self.new_thread,
                fibers: slab::Slab::new(),
                gc_stopped: false,
                rust_fns: Vec::new(),
            },
            refs,
        );
        // SAFETY: `main` is the idle main thread of `cord_lua`'s state,
        // which the cord keeps until `uninstall`.
        unsafe { fast_entry::install(main, &cord_lua) };
        // SAFETY: the cord is installed; `main` is idle.
        unsafe { register_modules(main) };
        Ok(LuaRuntime { lua })
    }
}

/// Makes the registry refs of the hot paths.
unsafe fn setup(l: *mut ffi::lua_State) -> cord::Refs {
    // SAFETY: `l` is an idle main state (caller).
    unsafe {
        let mut refs = cord::refs();
        ffi::lua_pushcfunction(l, cord::newthread_wrapper);
        refs.newthread = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_pushcfunction(l, crate::wide_cfn!(spawn::msgh));
        refs.msgh = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_createtable(l, 0, 3);
        ffi::lua_pushcfunction(l, error::error_tostring);
        ffi::lua_setfield(l, -2, c"__tostring".as_ptr());
        ffi::lua_pushcfunction(l, error::error_concat);
        ffi::lua_setfield(l, -2, c"__concat".as_ptr());
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushcfunction(l, error::error_unpack);
        ffi::lua_setfield(l, -2, c"unpack".as_ptr());
        ffi::lua_pushcfunction(l, error::error_raise);
        ffi::lua_setfield(l, -2, c"raise".as_ptr());
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        refs.error_mt = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        call::init(l, &mut refs);
        channel_lib::init(l);
        let (mt, methods) = fiber_lib::init_metatable(l);
        refs.fiber_mt = mt;
        refs.fiber_methods = methods;
        refs
    }
}

/// `collectgarbage` wrapper that tracks "stop"/"restart" (upvalue 1: the
/// original). Not under `protect`: it calls Lua.
unsafe extern "C-unwind" fn collectgarbage(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua; no Rust value is live across lua_call.
    unsafe {
        match lua::to_str(l, 1) {
            Some(b"stop") => cord::with(|c| c.gc_stopped = true),
            Some(b"restart") => cord::with(|c| c.gc_stopped = false),
            _ => {}
        }
        let n = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, n, ffi::LUA_MULTRET);
        ffi::lua_gettop(l)
    }
}

/// Puts the modules into `package.loaded`.
unsafe fn register_modules(l: *mut ffi::lua_State) {
    // SAFETY: `l` is the idle main state of an installed cord.
    unsafe {
        ffi::lua_getglobal(l, c"package".as_ptr());
        ffi::lua_getfield(l, -1, c"loaded".as_ptr());
        fiber_lib::open(l);
        ffi::lua_setfield(l, -2, c"fiber".as_ptr());
        clock_lib::open(l);
        ffi::lua_setfield(l, -2, c"clock".as_ptr());
        buffer::open(l);
        ffi::lua_setfield(l, -2, c"buffer".as_ptr());
        msgpack::open(l);
        ffi::lua_setfield(l, -2, c"msgpack".as_ptr());
        ffi::lua_pop(l, 2);
        ffi::lua_getglobal(l, c"collectgarbage".as_ptr());
        ffi::lua_pushcclosure(l, crate::wide_cfn!(collectgarbage), 1);
        ffi::lua_setglobal(l, c"collectgarbage".as_ptr());
    }
}

/// A cord's Lua runtime: the Lua state, its modules and the scheduler of the
/// calling thread. Not `Send`: fibers never leave their thread.
pub struct LuaRuntime {
    lua: Lua,
}

impl LuaRuntime {
    /// A runtime with the default settings (see [`RuntimeBuilder`]).
    ///
    /// # Errors
    ///
    /// As [`RuntimeBuilder::build`].
    pub fn new() -> Result<LuaRuntime, Error> {
        RuntimeBuilder::default().build()
    }

    /// Settings for a new runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The mlua handle, for setup work that does not yield (globals, loading
    /// code, conversions). Code run through it runs outside any fiber.
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// Runs the script at `path` as the main fiber, named after the file,
    /// with `arg` set as `lua` does (`arg[0]` = `path`, `arg[1..]` = `args`,
    /// `arg[-1]` = `interpreter`) and `...` = `args`; then runs the scheduler
    /// until no fiber is ready or sleeping. A `path` of `-` reads the script
    /// from stdin (chunk name `stdin`, fiber name `-`), as `lua` and
    /// `tarantool` do.
    ///
    /// An error in the main chunk prints the message and traceback to
    /// stderr and ends the process with status 1.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the file cannot be read or compiled.
    pub fn run_script(&self, path: &str, args: &[String], interpreter: &str) -> Result<(), Error> {
        self.run_main(&[], Some(path), args, interpreter)
    }

    /// What the `luafiber` binary runs: the `chunks` (its `-e` options), in
    /// order, then the script at `script` as [`run_script`] runs it, all in
    /// one main fiber, as Tarantool does; then the scheduler until no fiber
    /// is ready or sleeping.
    ///
    /// `arg` is set before the first chunk runs; the chunks get no `...` and
    /// their chunk name is `(command line)`, as in Tarantool. After the
    /// chunks the fiber yields once (Tarantool sleeps 0 there), so fibers
    /// they made ready start before the script. Without a script the main
    /// fiber is named `-e`, `arg[0]` is `interpreter` and `args` are only in
    /// `arg[1..]`.
    ///
    /// Everything is loaded before anything runs: when a chunk or the script
    /// does not compile, or the script cannot be read, nothing runs
    /// (Tarantool reads the script after running the chunks). An error
    /// raised by a chunk or the script prints the message and traceback to
    /// stderr and ends the process with status 1.
    ///
    /// [`run_script`]: LuaRuntime::run_script
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when a chunk or the script cannot be read or
    /// compiled; [`Error::Runtime`] when the main fiber cannot be made.
    pub fn run_main(
        &self,
        chunks: &[String],
        script: Option<&str>,
        args: &[String],
        interpreter: &str,
    ) -> Result<(), Error> {
        // how many chunks run before the fiber's function: without a
        // script, the last chunk is that function
        let prelude = match (script, chunks.len()) {
            (Some(_), n) => n,
            (None, 0) => return Ok(()),
            (None, n) => n - 1,
        };
        let (name, arg0) = match script {
            Some(path) => (
                std::path::Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.to_owned()),
                path,
            ),
            None => ("-e".to_owned(), interpreter),
        };
        let cpath = match script {
            Some("-") | None => None,
            Some(path) => {
                Some(CString::new(path).map_err(|_| Error::Load(format!("bad path {path:?}")))?)
            }
        };
        let l = self.lua.state();
        // SAFETY: `l` is the idle main state; every push is balanced below.
        unsafe {
            let top = ffi::lua_gettop(l);
            // the chunks, the script, its arguments, and 3 for the arg
            // table and spawn
            let room = c_int::try_from(chunks.len() + args.len() + 4).unwrap_or(c_int::MAX);
            if ffi::lua_checkstack(l, room) == 0 {
                return Err(Error::Load("too many chunks and arguments".into()));
            }
            ffi::lua_createtable(l, args.len() as c_int, 2);
            lua::push_str(l, interpreter);
            ffi::lua_rawseti(l, -2, -1);
            lua::push_str(l, arg0);
            ffi::lua_rawseti(l, -2, 0);
            for (i, a) in args.iter().enumerate() {
                lua::push_str(l, a);
                ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
            }
            ffi::lua_setglobal(l, c"arg".as_ptr());
            for code in chunks {
                let name = c"=(command line)".as_ptr();
                loaded(
                    l,
                    ffi::luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), name),
                    top,
                )?;
            }
            if script.is_some() {
                // a null path: stdin
                let path = cpath.as_ref().map_or(std::ptr::null(), |p| p.as_ptr());
                loaded(l, ffi::luaL_loadfile(l, path), top)?;
                for a in args {
                    lua::push_str(l, a);
                }
            }
            self.spawn_main(l, top + 1, prelude as c_int, name)
        }
    }

    /// Runs `code` as the main fiber named `name`, then the scheduler until
    /// no fiber is ready or sleeping.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the chunk does not compile; [`Error::Runtime`]
    /// when it raises (with its traceback).
    pub fn run_chunk(&self, code: &str, name: &str) -> Result<(), Error> {
        let l = self.lua.state();
        let cname = CString::new(format!("={name}")).unwrap_or_default();
        // SAFETY: `l` is the idle main state; every push is balanced.
        unsafe {
            let top = ffi::lua_gettop(l);
            let rc = ffi::luaL_loadbuffer(l, code.as_ptr().cast(), code.len(), cname.as_ptr());
            loaded(l, rc, top)?;
            let id = spawn::spawn(
                l,
                top + 1,
                spawn::Start::Ready,
                Builder::new().name(name.to_owned()).joinable(true),
                false,
            )
            .map_err(|e| Error::Runtime(format!("{e:?}")))?;
            fiber::run();
            let ext = match fiber::join(id, None) {
                Ok(ext) => ext,
                // The chunk made itself non-joinable: it has ended, and an
                // error of it was reported as a detached fiber's.
                Err(fiber::Error::Dead(_)) => return Ok(()),
                Err(e) => return Err(Error::Runtime(e.to_string())),
            };
            let lf = cord::with(|c| c.fibers.remove(ext - 1));
            let t = lf.thread.l;
            let result = if lf.rc == Some(0) {
                Ok(())
            } else {
                let msg = spawn::describe(t, -1);
                Err(Error::Runtime(match lf.traceback {
                    Some(tb) => tb,
                    None => msg,
                }))
            };
            cord::unref(l, lf.udata);
            cord::recycle_thread(lf.thread);
            result
        }
    }

    /// Spawns the main fiber, which runs the `prelude` chunks from `func`,
    /// then the function above them with the arguments above it; then runs
    /// the scheduler.
    ///
    /// # Safety
    ///
    /// `l` is the idle main state; `func` to `func + prelude` are functions,
    /// the values above them arguments.
    unsafe fn spawn_main(
        &self,
        l: *mut ffi::lua_State,
        func: c_int,
        prelude: c_int,
        name: String,
    ) -> Result<(), Error> {
        // SAFETY: caller's contract.
        unsafe {
            spawn::spawn_main(l, func, prelude, Builder::new().name(name))
                .map_err(|e| Error::Runtime(format!("{e:?}")))?;
        }
        fiber::run();
        Ok(())
    }

    /// Makes the Rust function `f` the Lua global `name`. Unlike an `mlua`
    /// callback, `f` may block its fiber (`fiber::sleep`, waiting on a channel,
    /// ...): only the calling fiber waits. Arguments and results convert
    /// through [`Value`] (functions, userdata and threads arrive as `Nil`);
    /// an `Err(msg)` is raised in Lua as an `IllegalParams` error object
    /// whose message is `"name: msg"`. Inside a fiber, a call from a `__gc`
    /// finalizer or under an mlua callback raises instead of calling `f`.
    ///
    /// `f` is kept for the runtime's whole life; registering `name` again
    /// replaces the global (the old function stays allocated). A panic in
    /// `f` is caught and raised in Lua as a `RustPanic` error object.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when `name` contains a NUL byte.
    pub fn register_fn(
        &self,
        name: &str,
        f: impl Fn(Vec<Value>) -> Result<Vec<Value>, String> + 'static,
    ) -> Result<(), Error> {
        let cname = CString::new(name).map_err(|_| Error::Load(format!("bad name {name:?}")))?;
        let idx = cord::with(|c| {
            c.rust_fns.push((std::rc::Rc::new(f), name.to_owned()));
            c.rust_fns.len() - 1
        });
        let l = self.lua.state();
        // SAFETY: `l` is the idle main state; the closure is set up once.
        unsafe {
            ffi::lua_pushinteger(l, idx as ffi::lua_Integer);
            ffi::lua_pushcclosure(l, value::call_rust_fn, 1);
            ffi::lua_setglobal(l, cname.as_ptr());
        }
        Ok(())
    }

    /// Runs the scheduler until no fiber is ready or sleeping.
    ///
    /// # Panics
    ///
    /// Panics when called from inside a fiber.
    pub fn run(&self) {
        fiber::run();
    }
}

impl Drop for LuaRuntime {
    fn drop(&mut self) {
        cord::uninstall();
    }
}

/// The result of a `luaL_load*` call that returned `rc` on `l`: on failure,
/// the message it left on top, as [`Error::Load`], with the stack set back
/// to `top`.
///
/// # Safety
///
/// `l` is the state the chunk was loaded on, `top` an index at or below its
/// top.
unsafe fn loaded(l: *mut ffi::lua_State, rc: c_int, top: c_int) -> Result<(), Error> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: caller's contract; a failed load leaves its message on top.
    unsafe {
        let msg = spawn::describe(l, -1);
        ffi::lua_settop(l, top);
        Err(Error::Load(msg))
    }
}
