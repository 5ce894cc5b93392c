//! `s:read()` over the read-ahead buffer: Tarantool's `socket_read` with
//! `check_limit` and `check_delimiter`.
//!
//! The loop of `s:read()`: answer from the buffer if it can; else read the
//! fd (`read(2)` into the buffer's free room), or, when a read already
//! came back short or said `EAGAIN` and no event came since, park until
//! one does (no syscall that would only say `EAGAIN`), and look at the
//! buffer again after each wake (another reader of the socket may have
//! filled it). End of stream gives
//! what is buffered (`''` when nothing is); an error or the timeout gives
//! nil with `s:errno()` set, the buffered bytes kept for the next call.

use std::ffi::c_int;

use luafiber_runtime::io::Interest;
use luafiber_runtime::net::sys;
use mlua::ffi;

use super::rbuf::{ReadBuf, READAHEAD};
use super::sock::{this, Sock};
use super::wait::{opt_timeout, park, Deadline};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// Tarantool's `LIMIT_INFINITY`.
pub(super) const LIMIT_INFINITY: usize = 2_147_483_647;

const READ_USAGE: &str = "Usage: s:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)";

/// The longest delimiter kept on the C stack (longer ones are copied to the
/// heap).
const INLINE_DELIM: usize = 64;

/// What `s:read()` waits for.
enum Delim {
    /// A number of bytes only.
    None,
    /// One delimiter, copied (no allocation): the answer is pushed onto
    /// the stack the argument's bytes are borrowed from.
    One([u8; INLINE_DELIM], usize),
    /// One long delimiter, or several.
    Many(Vec<Vec<u8>>),
}

struct Spec {
    limit: usize,
    delim: Delim,
}

impl Spec {
    /// Tarantool's `check`: the length of the answer in `b`, if there is
    /// one.
    #[inline]
    fn check(&self, b: &mut ReadBuf) -> Option<usize> {
        match &self.delim {
            Delim::None => b.check_limit(self.limit),
            Delim::One(d, n) => b.check_delimiter(&d[..*n], self.limit),
            Delim::Many(ds) => b.check_delimiters(ds, self.limit),
        }
    }
}

/// A delimiter argument: a string, or a list of strings.
fn delim_arg(s: &mut Stack, idx: c_int) -> LResult<Delim> {
    if let Some(d) = s.to_str(idx) {
        if d.len() <= INLINE_DELIM {
            let mut buf = [0; INLINE_DELIM];
            buf[..d.len()].copy_from_slice(d);
            return Ok(Delim::One(buf, d.len()));
        }
        return Ok(Delim::Many(vec![d.to_vec()]));
    }
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return Err(Raise::illegal(READ_USAGE));
    }
    let mut all = Vec::new();
    for i in 1.. {
        s.rawgeti(idx, i);
        let d = s.to_str(-1).map(<[u8]>::to_vec);
        let nil = s.is_none_or_nil(-1);
        s.pop(1);
        match d {
            Some(d) => all.push(d),
            None if nil => break,
            None => return Err(Raise::illegal(READ_USAGE)),
        }
    }
    Ok(Delim::Many(all))
}

/// A limit: a non-negative number, cut to `LIMIT_INFINITY`.
pub(super) fn limit_of(n: f64) -> LResult<usize> {
    if n < 0.0 {
        return Err(Raise::illegal("socket:read(): limit can not be negative"));
    }
    if n.is_nan() {
        return Err(Raise::illegal(READ_USAGE));
    }
    Ok((n as usize).min(LIMIT_INFINITY))
}

/// The option names `s:read()` looks up, in the order of its upvalues
/// (interned once: a look-up by upvalue hashes nothing).
pub(super) const READ_KEYS: [&std::ffi::CStr; 4] = [c"chunk", c"size", c"delimiter", c"line"];

/// The field of the options table at 2 named by upvalue `key` (raw):
/// pushed; its index, or `None` (popped) when it is nil.
fn field(s: &mut Stack, key: c_int) -> Option<c_int> {
    s.push_value(Stack::upvalue(key));
    s.rawget(2);
    match s.is_none_or_nil(-1) {
        true => {
            s.pop(1);
            None
        }
        false => Some(s.top()),
    }
}

/// Argument 2 of `s:read()`.
fn spec_arg(s: &mut Stack) -> LResult<Spec> {
    match s.type_of(2) {
        ffi::LUA_TNUMBER => {
            let n = s.to_number(2).unwrap_or(f64::NAN);
            return Ok(Spec {
                limit: limit_of(n)?,
                delim: Delim::None,
            });
        }
        ffi::LUA_TSTRING => {
            return Ok(Spec {
                limit: LIMIT_INFINITY,
                delim: delim_arg(s, 2)?,
            })
        }
        ffi::LUA_TTABLE => {}
        _ => return Err(Raise::illegal(READ_USAGE)),
    }
    let top = s.top();
    let limit = match field(s, 1).or_else(|| field(s, 2)) {
        None => LIMIT_INFINITY,
        Some(i) => limit_of(s.to_number(i).ok_or_else(|| Raise::illegal(READ_USAGE))?)?,
    };
    let delim = match field(s, 3).or_else(|| field(s, 4)) {
        None => Delim::None,
        Some(i) => delim_arg(s, i)?,
    };
    s.settop(top);
    Ok(Spec { limit, delim })
}

/// One `recv(2)` of at most `buf.len()` bytes; `read(2)` when the fd is
/// no socket (`from_fd` of a pipe).
#[inline]
pub(super) fn sys_read(sock: &Sock, buf: &mut [u8]) -> Result<usize, c_int> {
    sock.call(|fd| match sys::recv(fd, buf) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTSOCK) => sys::read(fd, buf),
        r => r,
    })
}

/// Pushes the first `n` buffered bytes and drops them from the buffer.
#[inline]
pub(super) fn answer(s: &mut Stack, sock: &Sock, n: usize) -> LResult {
    sock.ok();
    let mut b = sock.rbuf.borrow_mut();
    s.push_bytes(&b.data()[..n]);
    b.consume(n);
    Ok(1)
}

/// Fails a method with `e`: nil, `s:errno()` set.
#[inline]
pub(super) fn fail(s: &mut Stack, sock: &Sock, e: c_int) -> LResult {
    sock.fail(e);
    s.push_nil();
    Ok(1)
}

lua_fn! {
    /// `s:read(limit | delimiter | {chunk =, delimiter =}[, timeout])`:
    /// `limit` bytes, or up to and with the first delimiter (of a list, the
    /// one that ends first; at most `chunk` bytes), from the read-ahead
    /// buffer; what is left at end of stream (`''` when nothing is); nil
    /// with `s:errno()` on an error or timeout (`ETIMEDOUT`), the bytes
    /// kept. A cancel raises `FiberIsCancelled`. Tarantool's `socket_read`.
    pub(super) fn sock_read(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let spec = spec_arg(s)?;
        let deadline = Deadline::new(opt_timeout(s, 3, READ_USAGE)?);
        read(s, sock, &spec, deadline)
    }
}

lua_fn! {
    /// `read_args(s, limit, delimiter, timeout)`: `s:read()` with its
    /// options already taken apart (`limit` a number or nil, `delimiter` a
    /// string or nil), for the LuaJIT wrapper of `fast.rs`.
    pub(super) fn sock_read_args(s: &mut Stack) {
        let sock = &*this(s, 1)?;
        let limit = match s.to_number(2) {
            Some(n) => limit_of(n)?,
            None if s.is_none_or_nil(2) => LIMIT_INFINITY,
            None => return Err(Raise::illegal(READ_USAGE)),
        };
        let delim = match s.is_none_or_nil(3) {
            true => Delim::None,
            false => delim_arg(s, 3)?,
        };
        let deadline = Deadline::new(opt_timeout(s, 4, READ_USAGE)?);
        read(s, sock, &Spec { limit, delim }, deadline)
    }
}

/// The loop of `s:read()` (see the module docs).
fn read(s: &mut Stack, sock: &Sock, spec: &Spec, mut deadline: Deadline) -> LResult {
    loop {
        let found = spec.check(&mut sock.rbuf.borrow_mut());
        if let Some(n) = found {
            return answer(s, sock, n);
        }
        if !sock.may_read() && !deadline.is_zero() {
            sock.uncork();
            if let Err(e) = park(s, sock, Interest::READABLE, &mut deadline, "socket.read")? {
                return fail(s, sock, e);
            }
            if sock.is_closed() {
                return fail(s, sock, libc::EBADF);
            }
            // Another reader woken by the same event may have read the
            // bytes and left this one's answer in the buffer.
            continue;
        }
        if sock.is_closed() {
            return fail(s, sock, libc::EBADF);
        }
        let got = {
            let mut b = sock.rbuf.borrow_mut();
            let want = (spec.limit - b.len()).min(READAHEAD);
            let room = b.reserve(want);
            let asked = room.len();
            let got = sys_read(sock, room);
            if let Ok(n) = got {
                b.commit(n);
                sock.read_got(n, asked);
            }
            got
        };
        match got {
            Ok(0) => {
                let n = sock.rbuf.borrow().len();
                return answer(s, sock, n);
            }
            Ok(_) => {}
            Err(libc::EAGAIN) => {
                sock.would_block(Interest::READABLE);
                if deadline.is_zero() {
                    sock.uncork();
                    return fail(s, sock, libc::ETIMEDOUT);
                }
            }
            Err(libc::EINTR) => {}
            Err(e) => return fail(s, sock, e),
        }
    }
}
