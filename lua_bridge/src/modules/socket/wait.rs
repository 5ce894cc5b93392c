//! Waits: the timeout arguments, the park every blocking method goes
//! through, and `s:readable()`, `s:writable()`, `s:wait()` and
//! `socket.iowait()` (Tarantool's `do_wait` and `lbox_socket_iowait`).

use std::ffi::c_int;
use std::time::{Duration, Instant};

use luafiber_runtime::io::{self as rio, Interest, Ready};

use super::sock::{os_errno, this, Sock};
use crate::raw::error;
use crate::raw::{args, lua_fn, LResult, Raise, Stack};

/// A timeout argument in seconds: `None` (no limit) when absent or nil;
/// a number or a numeric string (negative: none left). NaN and anything
/// else raise `usage`.
pub(super) fn opt_timeout(s: &Stack, idx: c_int, usage: &str) -> LResult<Option<Duration>> {
    if s.is_none_or_nil(idx) {
        return Ok(None);
    }
    let t = s.to_number(idx).or_else(|| {
        let text = std::str::from_utf8(s.to_str(idx)?).ok()?;
        text.trim().parse::<f64>().ok()
    });
    match t {
        Some(t) if !t.is_nan() => Ok(args::seconds(t)),
        _ => Err(Raise::illegal(usage)),
    }
}

/// When a method's timeout runs out: set at its first wait.
pub(crate) struct Deadline {
    timeout: Option<Duration>,
    at: Option<Option<Instant>>,
}

impl Deadline {
    pub fn new(timeout: Option<Duration>) -> Deadline {
        Deadline { timeout, at: None }
    }

    /// Whether the call may not wait at all (a zero timeout).
    pub fn is_zero(&self) -> bool {
        self.timeout == Some(Duration::ZERO)
    }

    /// The time left (`None`: no limit).
    fn left(&mut self) -> Option<Duration> {
        let t = self.timeout;
        let at = *self
            .at
            .get_or_insert_with(|| t.and_then(|t| Instant::now().checked_add(t)));
        match (t, at) {
            (None, _) | (Some(_), None) => None,
            (Some(_), Some(at)) => Some(at.saturating_duration_since(Instant::now())),
        }
    }
}

/// Tells the stack handle that the fiber may have slept: it reads the top
/// again and counts no free slot it was given (a collection while other
/// fibers ran may have shrunk this thread's stack).
#[inline]
pub(super) fn after_switch(s: &mut Stack) {
    // SAFETY: the stack is as the C API left it: a switch runs other
    // fibers on their own Lua threads, and nothing here wrote to this one
    // but through the C API.
    unsafe { s.sync() };
}

/// Parks the calling fiber until an event says `sock` is ready for
/// `interest` or the deadline passes: `Ok(Ok)` to go on, `Ok(Err(errno))`
/// for the method to fail with (`ETIMEDOUT`, `EBADF` when the socket was
/// closed meanwhile), `Err` to raise (a cancel, a switch refused). The
/// stack handle is told of the switch ([`after_switch`]).
pub(crate) fn park(
    s: &mut Stack,
    sock: &Sock,
    interest: Interest,
    deadline: &mut Deadline,
    what: &str,
) -> LResult<Result<(), c_int>> {
    let left = deadline.left();
    if left == Some(Duration::ZERO) {
        return Ok(Err(libc::ETIMEDOUT));
    }
    crate::fiber::check_switch(s, what)?;
    let parked = sock.park(interest, left);
    after_switch(s);
    match parked {
        Ok(_) => Ok(Ok(())),
        Err(e) => failed(e).map(Err),
    }
}

/// A failed wait: a cancel is raised (`FiberIsCancelled`), anything else
/// gives its errno.
pub(super) fn failed(e: std::io::Error) -> LResult<c_int> {
    match rio::is_cancelled(&e) {
        true => Err(error::from_fiber(luafiber_fiber::Error::Cancelled)),
        false => Ok(os_errno(e)),
    }
}

/// Tarantool's `do_wait`: waits until `poll(2)` or an event says the
/// socket at 1 is ready for `interest`, at most the timeout at 2; the
/// ready directions, or `None` with `ETIMEDOUT` (or `EBADF`) set.
fn do_wait(s: &mut Stack, interest: Interest, what: &str) -> LResult<Option<Ready>> {
    let sock = &*this(s, 1)?;
    let timeout = opt_timeout(s, 2, what)?;
    sock.ok();
    sock.uncork();
    if timeout != Some(Duration::ZERO) {
        crate::fiber::check_switch(s, what)?;
    }
    match sock.wait(interest, timeout) {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            sock.fail(failed(e)?);
            Ok(None)
        }
    }
}

lua_fn! {
    /// `s:readable([timeout])`: true once the socket can be read (or has an
    /// error or end of stream), false on timeout (`ETIMEDOUT`).
    pub(super) fn sock_readable(s: &mut Stack) {
        let r = do_wait(s, Interest::READABLE, "Usage: s:readable([timeout])")?;
        s.push_bool(r.is_some());
        Ok(1)
    }
}

lua_fn! {
    /// `s:writable([timeout])`: as `readable`, for writing.
    pub(super) fn sock_writable(s: &mut Stack) {
        let r = do_wait(s, Interest::WRITABLE, "Usage: s:writable([timeout])")?;
        s.push_bool(r.is_some());
        Ok(1)
    }
}

/// Pushes `'R'`, `'W'` or `'RW'` for `r`, `''` for none.
fn push_events(s: &mut Stack, r: Ready) {
    s.push_bytes(match (r.is_readable(), r.is_writable()) {
        (true, true) => b"RW",
        (true, false) => b"R",
        (false, true) => b"W",
        (false, false) => b"",
    });
}

lua_fn! {
    /// `s:wait([timeout])`: `'R'`, `'W'` or `'RW'` once the socket is ready
    /// either way; 0 on timeout (`ETIMEDOUT`), as Tarantool's.
    pub(super) fn sock_wait(s: &mut Stack) {
        match do_wait(s, Interest::READABLE | Interest::WRITABLE, "Usage: s:wait([timeout])")? {
            Some(r) => push_events(s, r),
            None => s.push_int(0),
        }
        Ok(1)
    }
}

const IOWAIT_USAGE: &str = "Usage: iowait(fd, 1 | 'r' | 2 | 'w' | 3 | 'rw' [, timeout])";

/// The events argument of `iowait`: a mask 1..=3, or a string of `r`/`w`
/// (either case); whether it was a number.
fn events_arg(s: &Stack) -> LResult<(Interest, bool)> {
    let bits = match (s.to_integer(2), s.to_str(2)) {
        (Some(n), _) => n,
        (None, Some(text)) => {
            let mut bits = 0;
            for c in text {
                bits |= match c {
                    b'r' | b'R' => 1,
                    b'w' | b'W' => 2,
                    _ => return Err(Raise::illegal(IOWAIT_USAGE)),
                };
            }
            bits
        }
        _ => return Err(Raise::illegal(IOWAIT_USAGE)),
    };
    let interest = match bits {
        1 => Interest::READABLE,
        2 => Interest::WRITABLE,
        3 => Interest::READABLE | Interest::WRITABLE,
        _ => return Err(Raise::illegal(IOWAIT_USAGE)),
    };
    Ok((interest, s.to_number(2).is_some()))
}

lua_fn! {
    /// `socket.iowait(fd, events[, timeout])`: waits until `fd` is ready
    /// for `events` (1 or `'R'`, 2 or `'W'`, 3 or `'RW'`); gives the ready
    /// events in the form given (0 or `''` on timeout). `iowait(nil, nil,
    /// t)` sleeps `t`. A cancel raises `FiberIsCancelled`. Tarantool's
    /// `lbox_socket_iowait`.
    pub(super) fn socket_iowait(s: &mut Stack) {
        if s.top() < 2 {
            return Err(Raise::illegal(IOWAIT_USAGE));
        }
        let timeout = opt_timeout(s, 3, IOWAIT_USAGE)?;
        let fd = match s.is_none_or_nil(1) {
            true => -1,
            false => s.to_integer(1).ok_or_else(|| Raise::illegal(IOWAIT_USAGE))?,
        };
        if fd < 0 {
            if !s.is_none_or_nil(2) {
                return Err(Raise::illegal(IOWAIT_USAGE));
            }
            crate::fiber::check_switch(s, "socket.iowait")?;
            let slept = match timeout {
                Some(t) => luafiber_fiber::sleep(t),
                None => luafiber_fiber::block_cancellable(None).map(drop),
            };
            slept.map_err(error::from_fiber)?;
            return Ok(0);
        }
        let (interest, numeric) = events_arg(s)?;
        if timeout != Some(Duration::ZERO) {
            crate::fiber::check_switch(s, "socket.iowait")?;
        }
        let fd = c_int::try_from(fd).map_err(|_| Raise::illegal(IOWAIT_USAGE))?;
        let ready = match rio::wait_fd(fd, interest, timeout) {
            Ok(r) => r,
            Err(e) => {
                crate::modules::errno::set(failed(e)?);
                Ready::NONE
            }
        };
        match numeric {
            true => s.push_int(
                i64::from(ready.is_readable()) | (i64::from(ready.is_writable()) << 1),
            ),
            false => push_events(s, ready),
        }
        Ok(1)
    }
}
