//! The script runner: what the `luafiber` binary runs ([`LuaRuntime::run_main`])
//! and [`LuaRuntime::run_chunk`].

use std::ffi::{c_int, CString};

use luafiber_fiber::{self as fiber, Builder};
use mlua::ffi;

use super::{Error, LuaRuntime};
use crate::cord::{self, ErrorUse};
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::api;

impl LuaRuntime {
    /// Runs the script at `path` as the main fiber, named after the file,
    /// with `arg` set as `lua` does (`arg[0]` = `path`, `arg[1..]` = `args`,
    /// `arg[-1]` = `interpreter`) and `...` = `args`; then runs the scheduler
    /// until no fiber is ready, sleeping or waiting on I/O. A `path` of `-`
    /// reads the script from stdin (chunk name `stdin`, fiber name `-`), as
    /// `lua` and `tarantool` do.
    ///
    /// An error in the main chunk prints the message and traceback to
    /// stderr and ends the process with status 1.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the file cannot be read or compiled;
    /// [`Error::Runtime`] when the main fiber is blocked with nothing left
    /// to wake it, as [`run_main`](LuaRuntime::run_main) says.
    pub fn run_script(&self, path: &str, args: &[String], interpreter: &str) -> Result<(), Error> {
        self.run_main(&[], Some(path), args, interpreter)
    }

    /// What the `luafiber` binary runs: the `chunks` (its `-e` options), in
    /// order, then the script at `script` as [`run_script`] runs it, all in
    /// one main fiber, as Tarantool does; then the scheduler until no fiber
    /// is ready, sleeping or waiting on I/O. Fibers still blocked then (on a
    /// channel, a cond, a join) stay so when the main fiber is done; when
    /// the main fiber is one of them, nothing can ever wake it, and the
    /// work after its wait would silently not be done: that is an error.
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
    /// compiled; [`Error::Runtime`] when the main fiber cannot be made, or
    /// when it is blocked with nothing left to wake it: then the message
    /// lists every blocked fiber (id, name, and for a Lua fiber the
    /// traceback of where it waits). The blocked fibers stay suspended.
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
                    .map(|n| std::os::unix::ffi::OsStrExt::as_bytes(n).to_vec())
                    .unwrap_or_else(|| path.as_bytes().to_vec()),
                path,
            ),
            None => (b"-e".to_vec(), interpreter),
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
            api::push_str(l, interpreter);
            ffi::lua_rawseti(l, -2, -1);
            api::push_str(l, arg0);
            ffi::lua_rawseti(l, -2, 0);
            for (i, a) in args.iter().enumerate() {
                api::push_str(l, a);
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
                    api::push_str(l, a);
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
            let id = lua_fiber::spawn(
                l,
                top + 1,
                Start::Ready,
                Builder::new().name(name.to_owned()).joinable(true),
                ErrorUse::Rust,
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
                let msg = api::describe(t, -1);
                Err(Error::Runtime(match lf.traceback {
                    Some(tb) => tb,
                    None => msg,
                }))
            };
            api::unref(l, lf.udata);
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
        name: Vec<u8>,
    ) -> Result<(), Error> {
        // SAFETY: caller's contract.
        let id = unsafe {
            lua_fiber::spawn_main(l, func, prelude, Builder::new().name_bytes(name))
                .map_err(|e| Error::Runtime(format!("{e:?}")))?
        };
        fiber::run();
        if fiber::status(id) == Some(fiber::Status::Suspended) {
            // SAFETY: outside any fiber, the main state idle.
            return Err(Error::Runtime(unsafe { lua_fiber::blocked::report(id) }));
        }
        Ok(())
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
        let msg = api::describe(l, -1);
        ffi::lua_settop(l, top);
        Err(Error::Load(msg))
    }
}
