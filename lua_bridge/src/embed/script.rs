//! The script runner: what the `luafiber` binary runs ([`LuaRuntime::run_main`])
//! and [`LuaRuntime::run_chunk`].

use std::ffi::{c_int, CString};

use luafiber_fiber::{self as fiber, Builder};

use super::{Error, LuaRuntime};
use crate::cord::{Ended, ErrorUse};
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::Stack;

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
    /// Once this thread has nothing left to run, the thread groups of
    /// `experimental.threads` are waited for too, until no fiber there is
    /// ready, sleeping or waiting on I/O (a server on a worker thread
    /// serves until it is closed). An error exit says which groups still
    /// had such work.
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
        let s = &mut self.main_stack();
        let top = s.top();
        // the chunks, the script, its arguments, and 3 for the arg table and
        // spawn
        let room = c_int::try_from(chunks.len() + args.len() + 4).unwrap_or(c_int::MAX);
        if s.ensure(room).is_err() {
            return Err(Error::Load("too many chunks and arguments".into()));
        }
        let t = s.new_table(args.len() as c_int, 2);
        s.push_str(interpreter);
        s.rawseti(t, -1);
        s.push_str(arg0);
        s.rawseti(t, 0);
        for (i, a) in args.iter().enumerate() {
            s.push_str(a);
            s.rawseti(t, i as i64 + 1);
        }
        s.push_globals();
        s.insert(-2);
        s.set_field(-2, c"arg");
        s.pop(1);
        for code in chunks {
            let rc = s.load(code, c"=(command line)");
            loaded(s, rc, top)?;
        }
        if script.is_some() {
            // no path: stdin
            let rc = s.load_file(cpath.as_deref());
            loaded(s, rc, top)?;
            for a in args {
                s.push_str(a);
            }
        }
        let id = lua_fiber::spawn_main(
            s,
            top + 1,
            prelude as c_int,
            Builder::new().name_bytes(name),
        )
        .map_err(|e| Error::Runtime(format!("{e:?}")))?;
        fiber::run();
        if fiber::status(id) == Some(fiber::Status::Suspended) {
            let mut report = lua_fiber::blocked::report(s, id);
            if let Some(note) = crate::fiber::entry::exit_note() {
                report.push('\n');
                report.push_str(&note);
            }
            return Err(Error::Runtime(report));
        }
        // This cord is done; fibers of the thread groups that sleep or
        // wait on I/O (a server on a worker) keep the script alive as this
        // cord's own would.
        crate::modules::threads::groups::wait_quiet();
        Ok(())
    }

    /// Runs `code` as the main fiber named `name`, then the scheduler until
    /// no fiber is ready or sleeping.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the chunk does not compile; [`Error::Runtime`]
    /// when it raises (with its traceback).
    pub fn run_chunk(&self, code: &str, name: &str) -> Result<(), Error> {
        let cname = CString::new(format!("={name}")).unwrap_or_default();
        let s = &mut self.main_stack();
        let top = s.top();
        let rc = s.load(code, &cname);
        loaded(s, rc, top)?;
        let id = lua_fiber::spawn(
            s,
            top + 1,
            Start::Ready,
            Builder::new().name(name.to_owned()).joinable(true),
            ErrorUse::Rust,
        )
        .map_err(|e| Error::Runtime(format!("{e:?}")))?;
        fiber::run();
        let mut ended = match Ended::joined(id, None) {
            Ok(Some(ended)) => ended,
            Ok(None) => return Ok(()),
            // The chunk made itself non-joinable: it has ended, and an error
            // of it was reported as a detached fiber's.
            Err(fiber::Error::Dead(_)) => return Ok(()),
            Err(e) => return Err(Error::Runtime(e.to_string())),
        };
        if ended.rc() == Some(0) {
            return Ok(());
        }
        let msg = ended.stack().describe(-1);
        Err(Error::Runtime(ended.take_traceback().unwrap_or(msg)))
    }
}

/// The result of a load that left a function or its message on top: on
/// failure, the message as [`Error::Load`], with the stack set back to
/// `top`.
fn loaded(s: &mut Stack, rc: Result<(), ()>, top: c_int) -> Result<(), Error> {
    if rc.is_ok() {
        return Ok(());
    }
    let msg = s.describe(-1);
    s.settop(top);
    Err(Error::Load(msg))
}
