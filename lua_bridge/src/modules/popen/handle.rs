//! A popen handle: a userdata holding the [`Proc`], and its methods and
//! metamethods (master's `lbox_popen_*` of `src/lua/popen.c`).
//!
//! The methods live in the handle's metatable, which is also where
//! `__index` looks first (so `ph.__index` is the metamethod itself, as in
//! master); then it gives the fields `pid`, `command`, `opts`, `status`,
//! `stdin`, `stdout`, `stderr`. Master marks a closed handle by giving it
//! a second metatable with the same functions; here the [`Proc`] keeps a
//! closed flag. The waits (`read`, `write`, `wait`) park the calling fiber
//! only; `close` and `__gc` never switch.

use std::ffi::c_int;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use mlua::ffi;

use super::proc::{Failure, Proc, Status};
use super::{push_timed_out, signame, PopenKind, Shared};
use crate::modules::errno;
use crate::raw::context::Part;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Kind, LResult, Raise, Reg, Stack};

/// The methods and metamethods, in the handle's metatable.
const METHODS: &[Reg] = &[
    (c"signal", ph_signal),
    (c"terminate", ph_terminate),
    (c"kill", ph_kill),
    (c"wait", ph_wait),
    (c"read", ph_read),
    (c"write", ph_write),
    (c"shutdown", ph_shutdown),
    (c"info", ph_info),
    (c"close", ph_close),
    (c"is_closed", ph_is_closed),
    (c"__index", ph_index),
    (c"__serialize", ph_serialize),
    (c"__gc", ph_gc),
];

/// The kind of handles of this cord.
fn kind() -> Kind<Shared> {
    PopenKind::with(|k| k.0.get())
}

/// Makes the handles' metatable, once per cord.
pub(super) fn init(s: &mut Stack) {
    if !kind().metatable_ptr().is_null() {
        return;
    }
    let k = Kind::<Shared>::new_empty(s, METHODS.len() as c_int + 1);
    k.push_metatable(s);
    let mt = s.top();
    s.set_funcs(mt, METHODS);
    s.push_cstr(c"popen_handle");
    s.set_field(mt, c"__name");
    s.pop(1);
    PopenKind::with(|c| c.0.set(k));
}

/// Pushes a new handle of `p`.
pub(super) fn push(s: &mut Stack, p: Proc) {
    kind().push(s, Rc::new(p));
}

/// The handle at 1, or the usage error `usage`.
fn this(s: &mut Stack, usage: &str) -> LResult<Shared> {
    kind().get(s, 1).ok_or_else(|| Raise::illegal(usage))
}

/// The handle at 1, open; a closed one is master's "attempt to operate on
/// a closed handle".
fn open_handle(s: &mut Stack, usage: &str) -> LResult<Shared> {
    let p = this(s, usage)?;
    if p.is_deleted() {
        return Err(Raise::illegal(
            "popen: attempt to operate on a closed handle",
        ));
    }
    Ok(p)
}

/// Sets `errno()` and pushes a `SystemError` with `msg` and the error's
/// text.
pub(super) fn push_sys_error(s: &mut Stack, e: &io::Error, msg: &str) {
    let code = e.raw_os_error().unwrap_or(libc::EIO);
    errno::set(code);
    let text = format!("{msg}: {}", errno::strerror(code));
    error::push(s, ErrorKind::SystemError, &text);
}

/// Master's `luaT_check_timeout` of the `timeout` field of the options
/// table at `idx` (none: no limit); `None` for a bad one.
fn timeout_opt(s: &mut Stack, idx: c_int) -> Option<Option<Duration>> {
    let t = match s.rawget_field(idx, c"timeout") {
        ffi::LUA_TNIL => Some(None),
        ffi::LUA_TNUMBER => s
            .to_number(-1)
            .filter(|t| *t >= 0.0)
            .map(|t| Duration::try_from_secs_f64(t).ok()),
        _ => None,
    };
    s.pop(1);
    t
}

/// A boolean field `name` of the table at `idx` (`Some(None)` when
/// absent, `None` when not a boolean).
fn flag_opt(s: &mut Stack, idx: c_int, name: &std::ffi::CStr) -> Option<Option<bool>> {
    let r = match s.rawget_field(idx, name) {
        ffi::LUA_TNIL => Some(None),
        ffi::LUA_TBOOLEAN => Some(Some(s.to_bool(-1))),
        _ => None,
    };
    s.pop(1);
    r
}

/// Whether the value at `idx` is none or nil.
fn none_or_nil(s: &Stack, idx: c_int) -> bool {
    matches!(s.type_of(idx), ffi::LUA_TNONE | ffi::LUA_TNIL)
}

/// Tells the stack handle of a fiber switch.
fn after_switch(s: &mut Stack) {
    // SAFETY: the stack is as the C API left it: a switch runs other
    // fibers on their own Lua threads, and nothing here wrote to this one.
    unsafe { s.sync() };
}

/// Pushes `nil, err` for a failed wait or I/O call; raises a cancel.
fn push_failure(s: &mut Stack, f: Failure) -> LResult {
    s.ensure(4)?;
    s.push_nil();
    match f {
        Failure::Closed => error::push(s, ErrorKind::ChannelIsClosed, "Channel is closed"),
        Failure::Io(e) if luafiber_runtime::io::is_cancelled(&e) => {
            return Err(error::from_fiber(luafiber_fiber::Error::Cancelled));
        }
        Failure::Io(e) if e.kind() == io::ErrorKind::TimedOut => push_timed_out(s),
        Failure::Io(e) => push_sys_error(s, &e, "popen"),
    }
    Ok(2)
}

/// Sends `signo` and pushes `true`, or `nil, err`.
fn send(s: &mut Stack, p: &Proc, signo: c_int) -> LResult {
    s.ensure(4)?;
    match p.signal(signo) {
        Ok(()) => {
            s.push_bool(true);
            Ok(1)
        }
        Err(e) => {
            s.push_nil();
            let msg = match e.raw_os_error() {
                Some(libc::ESRCH) => format!(
                    "Attempt to send a signal {signo} to a process that does not exist anymore"
                ),
                _ => {
                    let op = if p.opts.group_signal {
                        "killpg"
                    } else {
                        "kill"
                    };
                    format!("Unable to {op} {} signo {signo}", p.pid().unwrap_or(-1))
                }
            };
            push_sys_error(s, &e, &msg);
            Ok(2)
        }
    }
}

lua_fn! {
    /// `ph:signal(signo)`: `true`, or `nil, err`.
    fn ph_signal(s: &mut Stack) {
        const USAGE: &str = "Bad params, use: ph:signal(signo)";
        let p = this(s, USAGE)?;
        let Some(signo) = s.to_number_coerced(2) else {
            return Err(Raise::illegal(USAGE));
        };
        let p = open_handle(s, USAGE).map(|_| p)?;
        send(s, &p, signo as c_int)
    }
}

lua_fn! {
    /// `ph:terminate()`: `ph:signal(SIGTERM)`.
    fn ph_terminate(s: &mut Stack) {
        let p = open_handle(s, "Bad params, use: ph:terminate()")?;
        send(s, &p, libc::SIGTERM)
    }
}

lua_fn! {
    /// `ph:kill()`: `ph:signal(SIGKILL)`.
    fn ph_kill(s: &mut Stack) {
        let p = open_handle(s, "Bad params, use: ph:kill()")?;
        send(s, &p, libc::SIGKILL)
    }
}

lua_fn! {
    /// `ph:wait([{timeout = t}])`: the status table once the child ended;
    /// `nil, err` on timeout (`TimedOut`) or when the handle is closed
    /// meanwhile (`ChannelIsClosed`); raises `FiberIsCancelled`.
    fn ph_wait(s: &mut Stack) {
        const USAGE: &str = "Bad params, use: ph:wait([{timeout = <number>}])";
        let p = open_handle(s, USAGE)?;
        let mut timeout = None;
        if !none_or_nil(s, 2) {
            if s.type_of(2) != ffi::LUA_TTABLE {
                return Err(Raise::illegal(USAGE));
            }
            timeout = timeout_opt(s, 2).ok_or_else(|| Raise::illegal(USAGE))?;
        }
        if p.status() == Status::Alive {
            crate::fiber::check_switch(s, "ph:wait")?;
        }
        let r = p.wait(timeout);
        after_switch(s);
        match r {
            Ok(st) => {
                s.ensure(4)?;
                push_status(s, st);
                Ok(1)
            }
            Err(f) => push_failure(s, f),
        }
    }
}

/// The piped stream `idx` of `p`, checked as master's `popen_may_io`.
fn check_io(p: &Proc, idx: usize) -> LResult<()> {
    match p.stream_open(idx) {
        None => Err(Raise::illegal(
            "popen: handle does not support the requested IO operation",
        )),
        Some(false) => Err(Raise::illegal(
            "popen: attempt to operate on a closed file descriptor",
        )),
        Some(true) => Ok(()),
    }
}

lua_fn! {
    /// `ph:read([{stdout = b, stderr = b, timeout = t}])`: the bytes there
    /// are once one is (at most 4096; `''` at the end of the stream), or
    /// `nil, err`.
    fn ph_read(s: &mut Stack) {
        const USAGE: &str = "Bad params, use: ph:read([{stdout = <boolean>, \
                             stderr = <boolean>, timeout = <number>}])";
        let p = open_handle(s, USAGE)?;
        let (mut out, mut err, mut timeout) = (false, false, None);
        if !none_or_nil(s, 2) {
            if s.type_of(2) != ffi::LUA_TTABLE {
                return Err(Raise::illegal(USAGE));
            }
            let bad = || Raise::illegal(USAGE);
            out = flag_opt(s, 2, c"stdout").ok_or_else(bad)?.unwrap_or(false);
            err = flag_opt(s, 2, c"stderr").ok_or_else(bad)?.unwrap_or(false);
            timeout = timeout_opt(s, 2).ok_or_else(bad)?;
        }
        if out && err {
            return Err(Raise::illegal(
                "popen: reading from both stdout and stderr at one call is not supported",
            ));
        }
        let idx = if err { 2 } else { 1 };
        check_io(&p, idx)?;
        if timeout != Some(Duration::ZERO) {
            crate::fiber::check_switch(s, "ph:read")?;
        }
        let mut buf = [0u8; 4096];
        let r = p.read(idx, &mut buf, timeout);
        after_switch(s);
        match r {
            Ok(n) => {
                s.ensure(1)?;
                s.push_bytes(&buf[..n]);
                Ok(1)
            }
            Err(f) => push_failure(s, f),
        }
    }
}

lua_fn! {
    /// `ph:write(str[, {timeout = t}])`: `true` once all of `str` is
    /// written to the child's stdin, or `nil, err`.
    fn ph_write(s: &mut Stack) {
        const USAGE: &str = "Bad params, use: ph:write(str[, {timeout = <number>}])";
        let p = this(s, USAGE)?;
        let Some(data) = s.to_str(2).map(<[u8]>::to_vec) else {
            return Err(Raise::illegal(USAGE));
        };
        let p = open_handle(s, USAGE).map(|_| p)?;
        let mut timeout = None;
        if !none_or_nil(s, 3) {
            if s.type_of(3) != ffi::LUA_TTABLE {
                return Err(Raise::illegal(USAGE));
            }
            timeout = timeout_opt(s, 3).ok_or_else(|| Raise::illegal(USAGE))?;
        }
        check_io(&p, 0)?;
        crate::fiber::check_switch(s, "ph:write")?;
        let r = p.write(&data, timeout);
        after_switch(s);
        match r {
            Ok(()) => {
                s.push_bool(true);
                Ok(1)
            }
            Err(f) => push_failure(s, f),
        }
    }
}

lua_fn! {
    /// `ph:shutdown({stdin = b, stdout = b, stderr = b})`: closes the
    /// parent's end of the chosen pipes; `true`.
    fn ph_shutdown(s: &mut Stack) {
        const USAGE: &str = "Bad params, use: ph:shutdown({stdin = <boolean>, \
                             stdout = <boolean>, stderr = <boolean>})";
        let p = open_handle(s, USAGE)?;
        let mut which = [false; 3];
        if !none_or_nil(s, 2) {
            if s.type_of(2) != ffi::LUA_TTABLE {
                return Err(Raise::illegal(USAGE));
            }
            for (i, name) in [c"stdin", c"stdout", c"stderr"].into_iter().enumerate() {
                let v = flag_opt(s, 2, name).ok_or_else(|| Raise::illegal(USAGE))?;
                which[i] = v.unwrap_or(false);
            }
        }
        if which == [false; 3] {
            return Err(Raise::illegal("popen: neither stdin, stdout nor stderr is set"));
        }
        if which.iter().enumerate().any(|(i, on)| *on && p.stream_open(i).is_none()) {
            return Err(Raise::illegal(
                "popen: handle does not support the requested IO operation",
            ));
        }
        p.shutdown(which);
        s.push_bool(true);
        Ok(1)
    }
}

/// Pushes a status table (master's `luaT_push_popen_process_status`).
fn push_status(s: &mut Stack, st: Status) {
    let t = s.new_table(0, 3);
    let (state, code) = match st {
        Status::Alive => (c"alive", None),
        Status::Exited(c) => (c"exited", Some((c"exit_code", c))),
        Status::Signaled(c) => (c"signaled", Some((c"signo", c))),
    };
    s.push_cstr(state);
    s.set_field(t, c"state");
    if let Some((name, code)) = code {
        s.push_int(code.into());
        s.set_field(t, name);
    }
    if let Status::Signaled(signo) = st {
        s.push_str(signame(signo));
        s.set_field(t, c"signame");
    }
}

/// Pushes the opts table (master's `luaT_push_popen_opts`).
fn push_opts(s: &mut Stack, p: &Proc) {
    let o = &p.opts;
    let t = s.new_table(0, 9);
    for (i, name) in [c"stdin", c"stdout", c"stderr"].into_iter().enumerate() {
        s.push_str(o.stdio[i].name());
        s.set_field(t, name);
    }
    let flags = [
        (c"shell", o.shell),
        (c"setsid", o.setsid),
        (c"close_fds", o.close_fds),
        (c"restore_signals", o.restore_signals),
        (c"group_signal", o.group_signal),
        (c"keep_child", o.keep_child),
    ];
    for (name, v) in flags {
        s.push_bool(v);
        s.set_field(t, name);
    }
}

/// Pushes the state of std stream `idx`: `nil` when it is not piped.
fn push_stream(s: &mut Stack, p: &Proc, idx: usize) {
    match p.stream_open(idx) {
        None => s.push_nil(),
        Some(true) => s.push_cstr(c"open"),
        Some(false) => s.push_cstr(c"closed"),
    }
}

/// Pushes the `info()` table.
fn push_info(s: &mut Stack, p: &Proc) {
    let t = s.new_table(0, 7);
    let status = p.status();
    if let Some(pid) = p.pid() {
        s.push_int(pid.into());
        s.set_field(t, c"pid");
    }
    s.push_str(&p.command);
    s.set_field(t, c"command");
    push_opts(s, p);
    s.set_field(t, c"opts");
    push_status(s, status);
    s.set_field(t, c"status");
    for (i, name) in [c"stdin", c"stdout", c"stderr"].into_iter().enumerate() {
        push_stream(s, p, i);
        s.set_field(t, name);
    }
}

lua_fn! {
    /// `ph:info()`: `{pid, command, opts, status, stdin, stdout, stderr}`.
    fn ph_info(s: &mut Stack) {
        let p = open_handle(s, "Bad params, use: ph:info()")?;
        s.ensure(6)?;
        push_info(s, &p);
        Ok(1)
    }
}

lua_fn! {
    /// `ph:close()`: kills the child (unless `keep_child`), closes the
    /// pipes; `true`, or `nil, err` when the kill failed (the handle is
    /// closed all the same). A second close is `true`.
    fn ph_close(s: &mut Stack) {
        let p = this(s, "Bad params, use: ph:close()")?;
        s.ensure(4)?;
        if p.is_deleted() {
            s.push_bool(true);
            return Ok(1);
        }
        match p.delete() {
            Ok(()) => {
                s.push_bool(true);
                Ok(1)
            }
            Err(e) => {
                s.push_nil();
                push_sys_error(s, &e, "popen: cannot kill the child");
                Ok(2)
            }
        }
    }
}

lua_fn! {
    /// `ph:is_closed()`.
    fn ph_is_closed(s: &mut Stack) {
        let p = this(s, "Bad params, use: ph:is_closed()")?;
        s.push_bool(p.is_deleted());
        Ok(1)
    }
}

lua_fn! {
    /// `__index(ph, key)`: a method, or a field (`pid`, `command`, `opts`,
    /// `status`, `stdin`, `stdout`, `stderr`); a closed handle has no
    /// fields.
    fn ph_index(s: &mut Stack) {
        const USAGE: &str = "Bad params, use __index(ph, <string>)";
        let p = this(s, USAGE)?;
        let Some(key) = s.to_str(2).map(<[u8]>::to_vec) else {
            return Err(Raise::illegal(USAGE));
        };
        s.ensure(6)?;
        s.get_metatable(1);
        s.push_value(2);
        s.rawget(-2);
        if s.type_of(-1) != ffi::LUA_TNIL {
            return Ok(1);
        }
        if p.is_deleted() {
            return Err(Raise::illegal("Attempt to index a closed popen handle"));
        }
        match &key[..] {
            b"pid" => match p.pid() {
                Some(pid) => s.push_int(pid.into()),
                None => s.push_nil(),
            },
            b"command" => s.push_str(&p.command),
            b"opts" => push_opts(s, &p),
            b"status" => push_status(s, p.status()),
            b"stdin" => push_stream(s, &p, 0),
            b"stdout" => push_stream(s, &p, 1),
            b"stderr" => push_stream(s, &p, 2),
            _ => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__serialize(ph)`: the `info()` table, or `"<closed popen
    /// handle>"`.
    fn ph_serialize(s: &mut Stack) {
        let p = this(s, "Bad params, use: __serialize(ph)")?;
        s.ensure(6)?;
        if p.is_deleted() {
            s.push_cstr(c"<closed popen handle>");
        } else {
            push_info(s, &p);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: closes an open handle (kills its child unless
    /// `keep_child`).
    fn ph_gc(s: &mut Stack) {
        if let Some(p) = kind().take(s, 1) {
            let _ = p.delete();
        }
        Ok(0)
    }
}
