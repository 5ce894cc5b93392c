//! The Lua `popen` module: Tarantool master's `src/lua/popen.c` over
//! `src/lib/core/popen.c`. `popen.new(argv, opts)` and
//! `popen.shell(command, mode)` start a child process and give a handle
//! whose methods (`read`, `write`, `shutdown`, `wait`, `signal`, `kill`,
//! `terminate`, `info`, `close`, `is_closed`) park only the calling fiber:
//! the pipes are non-blocking fds on the cord's event loop and the child
//! is reaped through its pidfd (see [`proc`]). `require('popen')` loads it
//! (`package.preload`).
//!
//! Three files: this face (the constants, `new` and `shell` with master's
//! argument checks), [`handle`] (the handle's methods and metamethods) and
//! [`proc`] (the process and its pipes, no Lua).
//!
//! Errors are master's: a wrong argument raises an `IllegalParams` error
//! object (`popen.new: wrong parameter "argv": expected table, got
//! number`, `Bad params, use: ph:read([{...}])`); a failed system call
//! returns `nil, err`; a cancel raises `FiberIsCancelled`.
//!
//! Differences from Tarantool:
//!
//! - The program is run with `execvp` (a name without a slash is looked up
//!   in `PATH`; master runs `execve` on it as it is), and a program that
//!   cannot be run makes `popen.new` return `nil, err` (`SystemError`,
//!   `ENOENT`...) where master's child exits with the errno as its code.
//! - The child's signal mask is always emptied and `SIGPIPE` reset (what
//!   Rust's `Command` does); `restore_signals` resets the dispositions of
//!   signals 1-31 too.
//! - I/O errors of `read`/`write` are `SystemError`s (master: `SocketError`
//!   from coio).
//! - An array argument (`argv`, `inherit_fds`) ends at its first `nil`
//!   (master takes `#t` and raises for a hole).

mod handle;
mod proc;

use std::cell::Cell;
use std::ffi::{c_int, CStr};

use mlua::ffi;

use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};
use proc::{Action, Opts, Proc};

/// A handle's payload (shared with the fibers that run its methods).
type Shared = std::rc::Rc<Proc>;

/// Per-cord state of `popen` (a part of the cord context): the handles'
/// kind.
#[derive(Default)]
pub(crate) struct PopenKind(Cell<Kind<Shared>>);

/// The signals of `popen.signal` (master's `popen_lua_signals`).
const SIGNALS: &[(&CStr, c_int)] = &[
    (c"SIGHUP", libc::SIGHUP),
    (c"SIGINT", libc::SIGINT),
    (c"SIGQUIT", libc::SIGQUIT),
    (c"SIGILL", libc::SIGILL),
    (c"SIGTRAP", libc::SIGTRAP),
    (c"SIGABRT", libc::SIGABRT),
    (c"SIGIOT", libc::SIGIOT),
    (c"SIGBUS", libc::SIGBUS),
    (c"SIGFPE", libc::SIGFPE),
    (c"SIGKILL", libc::SIGKILL),
    (c"SIGUSR1", libc::SIGUSR1),
    (c"SIGSEGV", libc::SIGSEGV),
    (c"SIGUSR2", libc::SIGUSR2),
    (c"SIGPIPE", libc::SIGPIPE),
    (c"SIGALRM", libc::SIGALRM),
    (c"SIGTERM", libc::SIGTERM),
    (c"SIGSTKFLT", libc::SIGSTKFLT),
    (c"SIGCHLD", libc::SIGCHLD),
    (c"SIGCONT", libc::SIGCONT),
    (c"SIGSTOP", libc::SIGSTOP),
    (c"SIGTSTP", libc::SIGTSTP),
    (c"SIGTTIN", libc::SIGTTIN),
    (c"SIGTTOU", libc::SIGTTOU),
    (c"SIGURG", libc::SIGURG),
    (c"SIGXCPU", libc::SIGXCPU),
    (c"SIGXFSZ", libc::SIGXFSZ),
    (c"SIGVTALRM", libc::SIGVTALRM),
    (c"SIGPROF", libc::SIGPROF),
    (c"SIGWINCH", libc::SIGWINCH),
    (c"SIGIO", libc::SIGIO),
    (c"SIGPOLL", libc::SIGPOLL),
    (c"SIGPWR", libc::SIGPWR),
    (c"SIGSYS", libc::SIGSYS),
];

/// The name of signal `signo` in `popen.signal` (`"unknown"` if none).
pub(super) fn signame(signo: c_int) -> &'static str {
    SIGNALS
        .iter()
        .rev()
        .find(|(_, n)| *n == signo)
        .and_then(|(name, _)| name.to_str().ok())
        .unwrap_or("unknown")
}

/// `popen.opts`, `popen.stream` and `popen.state`.
const OPTS: &[(&CStr, &CStr)] = &[
    (c"INHERIT", c"inherit"),
    (c"DEVNULL", c"devnull"),
    (c"CLOSE", c"close"),
    (c"PIPE", c"pipe"),
];
const STREAMS: &[(&CStr, &CStr)] = &[(c"OPEN", c"open"), (c"CLOSED", c"closed")];
const STATES: &[(&CStr, &CStr)] = &[
    (c"ALIVE", c"alive"),
    (c"EXITED", c"exited"),
    (c"SIGNALED", c"signaled"),
];

/// Pushes a table of named strings.
fn push_names(s: &mut Stack, names: &[(&CStr, &CStr)]) {
    let t = s.new_table(0, names.len() as c_int);
    for (name, value) in names {
        s.push_cstr(value);
        s.set_field(t, name);
    }
}

lua_fn! {
    /// The `popen` module's loader (`package.preload.popen`): `new`,
    /// `shell`, `signal`, `opts`, `stream`, `state`.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        handle::init(s);
        let m = s.new_table(0, 6);
        s.push_cfunction(popen_new);
        s.set_field(m, c"new");
        s.push_cfunction(popen_shell);
        s.set_field(m, c"shell");
        let t = s.new_table(0, SIGNALS.len() as c_int);
        for (name, n) in SIGNALS {
            s.push_int((*n).into());
            s.set_field(t, name);
        }
        s.set_field(m, c"signal");
        push_names(s, OPTS);
        s.set_field(m, c"opts");
        push_names(s, STREAMS);
        s.set_field(m, c"stream");
        push_names(s, STATES);
        s.set_field(m, c"state");
        Ok(1)
    }
}

/// Lua's type name of the value at `idx`, as `lua_typename` gives it.
pub(super) fn type_name(s: &Stack, idx: c_int) -> String {
    match s.type_of(idx) {
        ffi::LUA_TNONE => "no value".into(),
        t => error::type_name(t).to_string_lossy().into_owned(),
    }
}

/// Master's `luaT_popen_param_type_error`.
fn type_error(s: &Stack, idx: c_int, func: &str, param: &str, exp: &str) -> Raise {
    let got = type_name(s, idx);
    Raise::illegal(format!(
        "{func}: wrong parameter \"{param}\": expected {exp}, got {got}"
    ))
}

/// Master's `luaT_popen_param_value_error`.
fn value_error(got: &str, func: &str, param: &str, exp: &str) -> Raise {
    Raise::illegal(format!(
        "{func}: wrong parameter \"{param}\": expected {exp}, got {got}"
    ))
}

/// The string at `idx` only if it is one (master's
/// `luaL_tolstring_strict`).
fn strict_str(s: &Stack, idx: c_int) -> Option<Vec<u8>> {
    s.to_str(idx).map(<[u8]>::to_vec)
}

/// The stream options' names in errors.
const STD_NAMES: [&str; 3] = ["opts.stdin", "opts.stdout", "opts.stderr"];

/// Master's `luaT_popen_parse_stdX`: the action of the value at `idx`.
fn parse_action(s: &Stack, idx: c_int, fd: usize) -> LResult<Action> {
    let Some(a) = strict_str(s, idx) else {
        return Err(type_error(
            s,
            idx,
            "popen.new",
            STD_NAMES[fd],
            "string or nil",
        ));
    };
    // Master compares with `strncmp(action, name, len)`: a prefix matches.
    let pick = [
        Action::Inherit,
        Action::Devnull,
        Action::Close,
        Action::Pipe,
    ];
    pick.into_iter()
        .find(|act| act.name().as_bytes().starts_with(&a))
        .ok_or_else(|| {
            let got = String::from_utf8_lossy(&a);
            value_error(
                &got,
                "popen.new",
                STD_NAMES[fd],
                "popen.opts.<...> constant",
            )
        })
}

/// A boolean option `name` of the table at `t`, when set.
fn bool_opt(s: &mut Stack, t: c_int, name: &CStr) -> LResult<Option<bool>> {
    let ty = s.rawget_field(t, name);
    let r = match ty {
        ffi::LUA_TNIL => Ok(None),
        ffi::LUA_TBOOLEAN => Ok(Some(s.to_bool(-1))),
        _ => {
            let param = format!("opts.{}", name.to_string_lossy());
            Err(type_error(s, -1, "popen.new", &param, "boolean or nil"))
        }
    };
    s.pop(1);
    r
}

/// Master's `luaT_popen_parse_env`: `KEY=VALUE` entries.
fn parse_env(s: &mut Stack, idx: c_int) -> LResult<Vec<Vec<u8>>> {
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return Err(type_error(s, idx, "popen.new", "opts.env", "table or nil"));
    }
    let mut env = Vec::new();
    s.push_nil();
    while s.next_checked(idx)? {
        match (strict_str(s, -2), strict_str(s, -1)) {
            (Some(mut k), Some(v)) => {
                k.push(b'=');
                k.extend_from_slice(&v);
                env.push(k);
            }
            _ => {
                return Err(value_error(
                    "a non-string key or value",
                    "popen.new",
                    "opts.env",
                    "{[<string>] = <string>, ...}",
                ))
            }
        }
        s.pop(1);
    }
    Ok(env)
}

/// Master's `luaT_popen_parse_inherit_fds`.
fn parse_inherit_fds(s: &mut Stack, idx: c_int) -> LResult<Vec<i32>> {
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return Err(type_error(
            s,
            idx,
            "popen.new",
            "opts.inherit_fds",
            "table or nil",
        ));
    }
    let mut fds = Vec::new();
    for i in 1.. {
        if s.rawgeti(idx, i) == ffi::LUA_TNIL {
            s.pop(1);
            break;
        }
        let n = s
            .to_number(-1)
            .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= 2.0e9);
        let Some(n) = n else {
            let got = type_name(s, -1);
            return Err(Raise::illegal(format!(
                "popen.new: wrong parameter \"opts.inherit_fds[{i}]\": \
                 expected nonnegative integer, got {got}"
            )));
        };
        fds.push(n as i32);
        s.pop(1);
    }
    Ok(fds)
}

/// Master's `luaT_popen_parse_opts` of the value at `idx` (a table or
/// nothing).
fn parse_opts(s: &mut Stack, idx: c_int) -> LResult<Opts> {
    let mut o = Opts {
        argv: Vec::new(),
        env: None,
        stdio: [Action::Inherit; 3],
        shell: false,
        setsid: false,
        close_fds: true,
        restore_signals: true,
        group_signal: false,
        keep_child: false,
        inherit_fds: Vec::new(),
    };
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return Ok(o);
    }
    for (fd, name) in [c"stdin", c"stdout", c"stderr"].into_iter().enumerate() {
        if s.rawget_field(idx, name) != ffi::LUA_TNIL {
            o.stdio[fd] = parse_action(s, -1, fd)?;
        }
        s.pop(1);
    }
    if s.rawget_field(idx, c"env") != ffi::LUA_TNIL {
        let t = s.top();
        o.env = Some(parse_env(s, t)?);
    }
    s.pop(1);
    let flags: [(&CStr, &mut bool); 3] = [
        (c"shell", &mut o.shell),
        (c"setsid", &mut o.setsid),
        (c"close_fds", &mut o.close_fds),
    ];
    for (name, flag) in flags {
        if let Some(v) = bool_opt(s, idx, name)? {
            *flag = v;
        }
    }
    if s.rawget_field(idx, c"inherit_fds") != ffi::LUA_TNIL {
        let t = s.top();
        o.inherit_fds = parse_inherit_fds(s, t)?;
    }
    s.pop(1);
    let flags: [(&CStr, &mut bool); 3] = [
        (c"restore_signals", &mut o.restore_signals),
        (c"group_signal", &mut o.group_signal),
        (c"keep_child", &mut o.keep_child),
    ];
    for (name, flag) in flags {
        if let Some(v) = bool_opt(s, idx, name)? {
            *flag = v;
        }
    }
    Ok(o)
}

/// Master's `luaT_popen_parse_argv`.
fn parse_argv(s: &mut Stack, idx: c_int) -> LResult<Vec<Vec<u8>>> {
    let mut argv = Vec::new();
    for i in 1.. {
        if s.rawgeti(idx, i) == ffi::LUA_TNIL {
            s.pop(1);
            break;
        }
        let Some(a) = strict_str(s, -1) else {
            let got = type_name(s, -1);
            return Err(Raise::illegal(format!(
                "popen.new: wrong parameter \"argv[{i}]\": expected string, got {got}"
            )));
        };
        argv.push(a);
        s.pop(1);
    }
    Ok(argv)
}

/// `popen.new(argv, opts)` on arguments already in place.
fn new_at(s: &mut Stack, argv: c_int, opts: c_int) -> LResult {
    if s.type_of(argv) != ffi::LUA_TTABLE {
        return Err(type_error(s, argv, "popen.new", "argv", "table"));
    }
    if !matches!(
        s.type_of(opts),
        ffi::LUA_TTABLE | ffi::LUA_TNIL | ffi::LUA_TNONE
    ) {
        return Err(type_error(s, opts, "popen.new", "opts", "table or nil"));
    }
    s.ensure(8)?;
    let mut o = parse_opts(s, opts)?;
    o.argv = parse_argv(s, argv)?;
    if o.group_signal && !o.setsid {
        return Err(Raise::illegal("popen: group signal without setting sid"));
    }
    if o.argv.is_empty() {
        return Err(Raise::illegal("popen: no command to run"));
    }
    match Proc::spawn(o) {
        Ok(p) => {
            handle::push(s, p);
            Ok(1)
        }
        Err(e) => {
            s.push_nil();
            handle::push_sys_error(s, &e, "popen: cannot start the child");
            Ok(2)
        }
    }
}

lua_fn! {
    /// `popen.new(argv[, opts])`: a handle of a new child process, or
    /// `nil, err` (master's `lbox_popen_new`).
    fn popen_new(s: &mut Stack) {
        new_at(s, 1, 2)
    }
}

lua_fn! {
    /// `popen.shell(command[, mode])`: `popen.new({command}, {shell =
    /// true, setsid = true, group_signal = true, ...})`, with `mode` made
    /// of `'r'` (stdout piped), `'R'` (stderr piped) and `'w'` (stdin
    /// piped) (master's `lbox_popen_shell`).
    fn popen_shell(s: &mut Stack) {
        if s.type_of(1) != ffi::LUA_TSTRING {
            return Err(type_error(s, 1, "popen.shell", "command", "string"));
        }
        if !matches!(s.type_of(2), ffi::LUA_TSTRING | ffi::LUA_TNIL | ffi::LUA_TNONE) {
            return Err(type_error(s, 2, "popen.shell", "mode", "string or nil"));
        }
        let mode = strict_str(s, 2).unwrap_or_default();
        s.ensure(8)?;
        let argv = s.new_table(1, 0);
        s.push_value(1);
        s.rawseti(argv, 1);
        let opts = s.new_table(0, 6);
        for name in [c"shell", c"setsid", c"group_signal"] {
            s.push_bool(true);
            s.set_field(opts, name);
        }
        for c in &mode {
            let field = match c {
                b'r' => c"stdout",
                b'R' => c"stderr",
                b'w' => c"stdin",
                _ => {
                    let got = String::from_utf8_lossy(&mode);
                    return Err(value_error(
                        &got,
                        "popen.shell",
                        "mode",
                        "'r', 'w', 'R' or its combination",
                    ));
                }
            };
            s.push_cstr(c"pipe");
            s.set_field(opts, field);
        }
        new_at(s, argv, opts)
    }
}

/// The `TimedOut` error of a wait or I/O call that ran out of time.
pub(super) fn push_timed_out(s: &mut Stack) {
    error::push(s, ErrorKind::TimedOut, "timed out");
}
