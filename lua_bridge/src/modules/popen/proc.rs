//! A child process and the parent's ends of its pipes, with no Lua:
//! master's `src/lib/core/popen.c`.
//!
//! - Spawn: `std::process::Command` (fork + exec, the pipes, `/dev/null`,
//!   exec errors reported back to the parent) with a `pre_exec` step for
//!   what it lacks (`setsid`, closed std streams, signal dispositions,
//!   `close_fds` with `inherit_fds`); the step makes only async-signal-safe
//!   calls. A well-kept library beats our own `vfork` code here.
//! - Pipes: the parent's ends are non-blocking [`Fd`]s on the cord's event
//!   loop, so a read or a write parks only the calling fiber.
//! - Reaping, SIGCHLD-safe: no signal handler and no `waitpid(-1)`, which
//!   would steal other code's children. The child's `pidfd` (Linux >= 5.3)
//!   is registered in the event loop and becomes readable when the child
//!   ends; then `waitpid(pid, WNOHANG)` reaps exactly this child. Each
//!   status query also tries `waitpid(pid, WNOHANG)` first (master learns
//!   of the end from libev's SIGCHLD watcher). Without a pidfd the wait
//!   polls every 10 ms. A handle closed while its child lives (killed,
//!   or kept with `keep_child`) hands the pid to a thread of its own that
//!   blocks in `waitpid(pid)`, so no zombie is left and the cord never
//!   blocks.

use std::cell::Cell;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use luafiber_runtime::io::{Fd, Interest};

/// What a child's std stream is (master's `popen.opts`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Action {
    /// The parent's stream (`'inherit'`).
    Inherit,
    /// `/dev/null` (`'devnull'`).
    Devnull,
    /// Closed in the child (`'close'`).
    Close,
    /// A pipe to the parent (`'pipe'`).
    Pipe,
}

impl Action {
    /// The name Lua sees (`popen.opts.*`).
    pub(super) fn name(self) -> &'static str {
        match self {
            Action::Inherit => "inherit",
            Action::Devnull => "devnull",
            Action::Close => "close",
            Action::Pipe => "pipe",
        }
    }
}

/// What to run and how (master's `struct popen_opts`).
#[derive(Clone, Debug)]
pub(super) struct Opts {
    /// The program and its arguments (`sh -c` not included).
    pub argv: Vec<Vec<u8>>,
    /// The whole environment of the child, or `None` for the parent's.
    pub env: Option<Vec<Vec<u8>>>,
    /// stdin, stdout, stderr.
    pub stdio: [Action; 3],
    /// Run `argv` through `/bin/sh -c`.
    pub shell: bool,
    /// Make the child a session (and process group) leader.
    pub setsid: bool,
    /// Close every fd above 2 in the child but `inherit_fds`.
    pub close_fds: bool,
    /// Reset the signal dispositions in the child.
    pub restore_signals: bool,
    /// Signal the whole process group (needs `setsid`).
    pub group_signal: bool,
    /// Let the child live on when the handle is closed.
    pub keep_child: bool,
    /// The fds the child keeps even with `close_fds`.
    pub inherit_fds: Vec<RawFd>,
}

/// A child's state (master's `POPEN_STATE_*` with its code).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Status {
    /// Running (or not reaped yet).
    Alive,
    /// Ended with this exit code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// A child process: what a popen handle holds.
pub(super) struct Proc {
    /// The options it was started with.
    pub opts: Opts,
    /// The command line as master renders it (multiword and empty
    /// arguments quoted).
    pub command: String,
    /// The pid, -1 once reaped.
    pid: Cell<i32>,
    status: Cell<Status>,
    /// Readable when the child ends (`None` without pidfd support).
    pidfd: Option<Fd>,
    /// The parent's ends of the piped streams.
    ios: [Option<Fd>; 3],
    /// Set by [`Proc::delete`] (`ph:close()`, `__gc`).
    deleted: Cell<bool>,
}

/// Why a wait or an I/O call of a handle did not succeed.
#[derive(Debug)]
pub(super) enum Failure {
    /// The handle was closed meanwhile (master: `ChannelIsClosed`).
    Closed,
    /// The system call's error, a timeout or a cancel of the fiber.
    Io(io::Error),
}

/// Master's command line: arguments joined by spaces, those that are empty
/// or hold a space put in single quotes.
pub(super) fn command_line(argv: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for a in argv {
        let a = String::from_utf8_lossy(a);
        let quote = a.is_empty() || a.contains(' ');
        if !out.is_empty() {
            out.push(' ');
        }
        if quote {
            out.push('\'');
        }
        out.push_str(&a);
        if quote {
            out.push('\'');
        }
    }
    out
}

/// The signals a `restore_signals` child gets back to `SIG_DFL`.
const LAST_SIGNAL: libc::c_int = 31;

/// Runs in the child between `fork` and `exec` (async-signal-safe calls
/// only: no allocation, no lock).
fn child_setup(opts: &Opts, keep: &[RawFd]) -> io::Result<()> {
    if opts.restore_signals {
        for sig in 1..=LAST_SIGNAL {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                // SAFETY: async-signal-safe; the child is single-threaded.
                unsafe { libc::signal(sig, libc::SIG_DFL) };
            }
        }
    }
    // SAFETY: async-signal-safe.
    if opts.setsid && unsafe { libc::setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    for (fd, action) in opts.stdio.iter().enumerate() {
        if *action == Action::Close {
            // SAFETY: closes one of the child's own std fds.
            unsafe { libc::close(fd as RawFd) };
        }
    }
    if opts.close_fds {
        // Close-on-exec rather than closed: the fd that reports an exec
        // error to the parent must stay open until the exec.
        let mut lo: u32 = 3;
        for &fd in keep {
            let fd = fd as u32;
            if fd >= lo {
                if fd > lo {
                    cloexec_range(lo, fd - 1);
                }
                lo = fd + 1;
            }
        }
        cloexec_range(lo, u32::MAX);
    }
    for &fd in keep {
        // SAFETY: clears FD_CLOEXEC of an fd the caller asked to keep.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    }
    Ok(())
}

/// Marks fds `lo..=hi` close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`, Linux >= 5.11; `fcntl` on each below the fd
/// limit otherwise).
fn cloexec_range(lo: u32, hi: u32) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 4;
    // SAFETY: a syscall on the child's own fd table.
    let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC) };
    if r == 0 {
        return;
    }
    // SAFETY: async-signal-safe.
    let max = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(0, 1 << 16) as u32;
    for fd in lo..=hi.min(max) {
        // SAFETY: sets a flag of an fd of the child, or fails with EBADF.
        unsafe { libc::fcntl(fd as RawFd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// Opens a pidfd of `pid` (non-blocking), or `None` when the kernel has
/// none.
fn pidfd_open(pid: i32) -> Option<Fd> {
    // SAFETY: a syscall with two integers; it returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new fd this process owns.
    Fd::new(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }).ok()
}

impl Proc {
    /// Starts `opts.argv` (master's `popen_new`).
    ///
    /// # Errors
    ///
    /// What `fork`, `exec` (a program not found: `ENOENT`), `pipe` or the
    /// child's setup report.
    pub(super) fn spawn(opts: Opts) -> io::Result<Proc> {
        let (prog, args): (&[u8], &[Vec<u8>]) = if opts.shell {
            (b"/bin/sh", &opts.argv[..])
        } else {
            (&opts.argv[0], &opts.argv[1..])
        };
        let mut cmd = Command::new(OsStr::from_bytes(prog));
        if opts.shell {
            cmd.arg0("sh").arg("-c");
        }
        cmd.args(args.iter().map(|a| OsStr::from_bytes(a)));
        if let Some(env) = &opts.env {
            cmd.env_clear();
            for e in env {
                let at = e.iter().position(|&b| b == b'=').unwrap_or(e.len());
                let v = e.get(at + 1..).unwrap_or_default();
                cmd.env(OsStr::from_bytes(&e[..at]), OsStr::from_bytes(v));
            }
        }
        let stdio = |a: Action| match a {
            Action::Pipe => Stdio::piped(),
            Action::Devnull => Stdio::null(),
            Action::Inherit | Action::Close => Stdio::inherit(),
        };
        cmd.stdin(stdio(opts.stdio[0]));
        cmd.stdout(stdio(opts.stdio[1]));
        cmd.stderr(stdio(opts.stdio[2]));
        let mut keep = opts.inherit_fds.clone();
        keep.sort_unstable();
        keep.dedup();
        let child_opts = opts.clone();
        // SAFETY: the closure makes only async-signal-safe calls (see
        // `child_setup`), on data made before the fork.
        unsafe { cmd.pre_exec(move || child_setup(&child_opts, &keep)) };
        let mut child = cmd.spawn()?;
        let pid = child.id() as i32;
        let wrap = |fd: Option<OwnedFd>| fd.map(Fd::new).transpose();
        let ios = [
            wrap(child.stdin.take().map(OwnedFd::from))?,
            wrap(child.stdout.take().map(OwnedFd::from))?,
            wrap(child.stderr.take().map(OwnedFd::from))?,
        ];
        let argv_shown: Vec<Vec<u8>> = if opts.shell {
            let mut v = vec![b"sh".to_vec(), b"-c".to_vec()];
            v.extend(opts.argv.iter().cloned());
            v
        } else {
            opts.argv.clone()
        };
        Ok(Proc {
            command: command_line(&argv_shown),
            opts,
            pid: Cell::new(pid),
            status: Cell::new(Status::Alive),
            pidfd: pidfd_open(pid),
            ios,
            deleted: Cell::new(false),
        })
    }

    /// The pid, or `None` once the child is reaped (as far as the last
    /// status query knows, as master's field is updated by its SIGCHLD
    /// watcher).
    pub(super) fn pid(&self) -> Option<i32> {
        let pid = self.pid.get();
        (pid >= 0).then_some(pid)
    }

    /// The child's state, reaping it when it has ended.
    pub(super) fn status(&self) -> Status {
        self.refresh();
        self.status.get()
    }

    /// Whether the handle was closed.
    pub(super) fn is_deleted(&self) -> bool {
        self.deleted.get()
    }

    /// The parent's end of std stream `idx`: `None` when it is not piped,
    /// `Some(false)` once shut down.
    pub(super) fn stream_open(&self, idx: usize) -> Option<bool> {
        self.ios[idx].as_ref().map(|fd| !fd.is_closed())
    }

    /// `waitpid(pid, WNOHANG)`: records the status of an ended child.
    fn refresh(&self) {
        let pid = self.pid.get();
        if pid < 0 {
            return;
        }
        let mut ws: libc::c_int = 0;
        // SAFETY: waits for this handle's own child only.
        let r = unsafe { libc::waitpid(pid, &mut ws, libc::WNOHANG) };
        if r != pid {
            return;
        }
        let status = if libc::WIFSIGNALED(ws) {
            Status::Signaled(libc::WTERMSIG(ws))
        } else {
            Status::Exited(libc::WEXITSTATUS(ws))
        };
        self.status.set(status);
        self.pid.set(-1);
        if let Some(fd) = &self.pidfd {
            let _ = fd.close();
        }
    }

    /// Waits until the child ends (master's `popen_wait_timeout`): parks
    /// the calling fiber on the pidfd; a wakeup by anything else waits
    /// again.
    ///
    /// # Errors
    ///
    /// [`Failure::Closed`] when the handle gets closed; a timeout or a
    /// cancel as [`Failure::Io`].
    pub(super) fn wait(&self, timeout: Option<Duration>) -> Result<Status, Failure> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            if self.deleted.get() {
                return Err(Failure::Closed);
            }
            let st = self.status();
            if st != Status::Alive {
                return Ok(st);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Err(Failure::Io(io::ErrorKind::TimedOut.into()));
            }
            let r = match &self.pidfd {
                Some(fd) => fd.wait(Interest::READABLE, left).map(drop),
                None => {
                    let step = Duration::from_millis(10);
                    let nap = left.map_or(step, |l| l.min(step));
                    luafiber_runtime::sleep(nap).map_err(io::Error::other)
                }
            };
            match r {
                Ok(()) => {}
                // The pidfd was closed: the child was reaped, or the
                // handle closed; the loop tells which.
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => {}
                Err(e) => return Err(Failure::Io(e)),
            }
        }
    }

    /// The fd of piped stream `idx`, open.
    fn stream(&self, idx: usize) -> Result<&Fd, Failure> {
        match &self.ios[idx] {
            Some(fd) if !fd.is_closed() => Ok(fd),
            _ => Err(Failure::Closed),
        }
    }

    /// Reads at most `buf.len()` bytes from piped stream `idx` once some
    /// are there (0 at the end of the stream). The caller checked that
    /// the stream is piped and open.
    ///
    /// # Errors
    ///
    /// `read(2)`'s, a timeout, a cancel; [`Failure::Closed`] when the
    /// stream is shut down meanwhile.
    pub(super) fn read(
        &self,
        idx: usize,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> Result<usize, Failure> {
        let fd = self.stream(idx)?;
        let r = fd.io(Interest::READABLE, timeout, |fd| {
            // SAFETY: writes at most `buf.len()` bytes into `buf`.
            let n = unsafe { libc::read(raw(fd), buf.as_mut_ptr().cast(), buf.len()) };
            match n {
                -1 => Err(io::Error::last_os_error()),
                n => Ok(n as usize),
            }
        });
        self.io_result(r)
    }

    /// Writes all of `data` to the child's stdin.
    ///
    /// # Errors
    ///
    /// As [`Proc::read`] (`EPIPE` when the child closed its end).
    pub(super) fn write(&self, data: &[u8], timeout: Option<Duration>) -> Result<(), Failure> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut done = 0;
        while done < data.len() {
            let fd = self.stream(0)?;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let rest = &data[done..];
            let r = fd.io(Interest::WRITABLE, left, |fd| {
                // SAFETY: reads at most `rest.len()` bytes from `rest`.
                let n = unsafe { libc::write(raw(fd), rest.as_ptr().cast(), rest.len()) };
                match n {
                    -1 => Err(io::Error::last_os_error()),
                    n => Ok(n as usize),
                }
            });
            done += self.io_result(r)?;
        }
        Ok(())
    }

    /// An I/O result, an `EBADF` of a stream shut down meanwhile told as
    /// [`Failure::Closed`].
    fn io_result(&self, r: io::Result<usize>) -> Result<usize, Failure> {
        match r {
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => Err(Failure::Closed),
            Err(e) => Err(Failure::Io(e)),
            Ok(n) => Ok(n),
        }
    }

    /// Closes the parent's end of each piped stream in `which` (stdin,
    /// stdout, stderr); one already closed is skipped.
    pub(super) fn shutdown(&self, which: [bool; 3]) {
        for (fd, on) in self.ios.iter().zip(which) {
            if let (Some(fd), true) = (fd, on) {
                let _ = fd.close();
            }
        }
    }

    /// Sends `signo` to the child, or to its process group with
    /// `group_signal` (master's `popen_send_signal`); never to a child
    /// already reaped, whose pid may be another process's now.
    ///
    /// # Errors
    ///
    /// `ESRCH` when the child is gone; `kill(2)`'s otherwise.
    pub(super) fn signal(&self, signo: i32) -> io::Result<()> {
        self.refresh();
        let Some(pid) = self.pid() else {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        };
        // SAFETY: signals this handle's child, which is not reaped yet (its
        // pid is still its own).
        let r = unsafe {
            match self.opts.group_signal {
                true => libc::killpg(pid, signo),
                false => libc::kill(pid, signo),
            }
        };
        match r {
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        }
    }

    /// Closes the handle (master's `popen_delete`): kills the child with
    /// `SIGKILL` unless `keep_child`, closes the pipes, wakes the fibers
    /// waiting for the child, and leaves the reaping of a live child to a
    /// thread of its own. Never switches fibers (a `__gc` calls it).
    ///
    /// # Errors
    ///
    /// The `kill` error, other than `ESRCH` (informational: the handle is
    /// closed all the same).
    pub(super) fn delete(&self) -> io::Result<()> {
        if self.deleted.replace(true) {
            return Ok(());
        }
        let mut r = Ok(());
        if !self.opts.keep_child {
            match self.signal(libc::SIGKILL) {
                Err(e) if e.raw_os_error() != Some(libc::ESRCH) => r = Err(e),
                _ => {}
            }
        }
        self.shutdown([true; 3]);
        if let Some(fd) = &self.pidfd {
            let _ = fd.close();
        }
        self.refresh();
        let pid = self.pid.replace(-1);
        if pid >= 0 {
            reap_later(pid);
        }
        r
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.delete();
    }
}

/// The raw fd of a borrowed one.
fn raw(fd: std::os::fd::BorrowedFd<'_>) -> RawFd {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

/// Reaps `pid` on a thread of its own (a blocking `waitpid`), so that a
/// closed handle's child leaves no zombie whenever it ends.
fn reap_later(pid: i32) {
    let reap = move || {
        let mut ws = 0;
        // SAFETY: waits for this process's own child, which no handle
        // refers to any more.
        while unsafe { libc::waitpid(pid, &mut ws, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    };
    if std::thread::Builder::new()
        .name("popen-reap".into())
        .spawn(reap)
        .is_err()
    {
        // No thread: one more try now; the child may stay a zombie.
        let mut ws = 0;
        // SAFETY: as above.
        unsafe { libc::waitpid(pid, &mut ws, libc::WNOHANG) };
    }
}
