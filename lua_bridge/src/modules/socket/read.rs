//! The reading methods: `s:read()` over the read-ahead buffer (Tarantool's
//! `socket_read` with `check_limit` and `check_delimiter`), and `sysread`,
//! `recv`, `recvfrom`, which read the fd itself once.
//!
//! The loop of `s:read()`: answer from the buffer if it can; else read the
//! fd (`read(2)` into the buffer's free room), or, when a read already
//! came back short or said `EAGAIN` and no event came since, park until
//! one does (no syscall that would only say `EAGAIN`). End of stream gives
//! what is buffered (`''` when nothing is); an error or the timeout gives
//! nil with `s:errno()` set, the buffered bytes kept for the next call.

use std::ffi::c_int;
use std::os::fd::RawFd;

use luafiber_runtime::io::Interest;
use mlua::ffi;
use socket2::SockAddr;

use super::addr;
use super::rbuf::{ReadBuf, READAHEAD};
use super::sock::{this, Sock};
use super::wait::{opt_timeout, park, Deadline};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// Tarantool's `LIMIT_INFINITY`.
const LIMIT_INFINITY: usize = 2_147_483_647;

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
fn limit_of(n: f64) -> LResult<usize> {
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
            return Ok(Spec { limit: limit_of(n)?, delim: Delim::None });
        }
        ffi::LUA_TSTRING => return Ok(Spec { limit: LIMIT_INFINITY, delim: delim_arg(s, 2)? }),
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

/// `read(2)` of at most `buf.len()` bytes.
#[inline]
fn sys_read(fd: RawFd, buf: &mut [u8]) -> Result<usize, c_int> {
    // SAFETY: `buf` is valid for writes of its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    match n {
        -1 => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)),
        n => Ok(n as usize),
    }
}

/// Pushes the first `n` buffered bytes and drops them from the buffer.
#[inline]
fn answer(s: &mut Stack, sock: &Sock, n: usize) -> LResult {
    sock.ok();
    let mut b = sock.rbuf.borrow_mut();
    s.push_bytes(&b.data()[..n]);
    b.consume(n);
    Ok(1)
}

/// Fails a method with `e`: nil, `s:errno()` set.
#[inline]
fn fail(s: &mut Stack, sock: &Sock, e: c_int) -> LResult {
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
        let sock = this(s, 1)?;
        let spec = spec_arg(s)?;
        let mut deadline = Deadline::new(opt_timeout(s, 3, READ_USAGE)?);
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
                // SAFETY: the stack is as the C API left it; a collection
                // while the fiber slept may have shrunk the free room.
                unsafe { s.sync() };
            }
            let fd = sock.raw();
            if fd < 0 {
                return fail(s, sock, libc::EBADF);
            }
            let got = {
                let mut b = sock.rbuf.borrow_mut();
                let want = (spec.limit - b.len()).min(READAHEAD);
                let room = b.reserve(want);
                let asked = room.len();
                let got = sys_read(fd, room);
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
}

/// A size argument of `sysread`/`recv`: absent is `default`.
fn size_arg(s: &Stack, idx: c_int, default: usize, what: &str) -> LResult<usize> {
    if s.is_none_or_nil(idx) {
        return Ok(default);
    }
    match s.to_number(idx) {
        Some(n) if n >= 0.0 => Ok((n as usize).min(LIMIT_INFINITY)),
        Some(_) => Err(Raise::illegal(format!("socket:{what}(): size can not be negative"))),
        None => Err(Raise::illegal(format!("Usage: socket:{what}([size])"))),
    }
}

/// Runs `f` on `size` bytes of the socket's spare read-ahead room (past
/// the buffered bytes, which stay), then pushes what it wrote there, or
/// nil with the errno it gave.
fn read_into_spare<R>(
    s: &mut Stack,
    sock: &Sock,
    size: usize,
    f: impl FnOnce(&mut [u8]) -> Result<(usize, R), c_int>,
) -> LResult<Option<R>> {
    let mut b = sock.rbuf.borrow_mut();
    let room = &mut b.reserve(size)[..size];
    match f(room) {
        Ok((n, r)) => {
            sock.ok();
            s.push_bytes(&room[..n.min(size)]);
            Ok(Some(r))
        }
        Err(e) => {
            sock.fail(e);
            s.push_nil();
            Ok(None)
        }
    }
}

lua_fn! {
    /// `s:sysread([size])`: one `read(2)` of at most `size` bytes (default
    /// 16320) past the read-ahead buffer; `''` at end of stream, nil with
    /// `s:errno()` (`EAGAIN` when nothing is there). Never waits.
    pub(super) fn sock_sysread(s: &mut Stack) {
        let sock = this(s, 1)?;
        let size = size_arg(s, 2, READAHEAD, "sysread")?;
        let fd = sock.raw();
        read_into_spare(s, sock, size, |buf| sys_read(fd, buf).map(|n| (n, ())))?;
        Ok(1)
    }
}

/// `recv(2)`/`recvfrom(2)` with `flags`, and the sender's address.
fn sys_recvfrom(fd: RawFd, buf: &mut [u8], flags: c_int) -> Result<(usize, SockAddr), c_int> {
    // SAFETY: `try_init` gives storage for an address and its length,
    // which recvfrom fills; `buf` is valid for writes of its length.
    let r = unsafe {
        SockAddr::try_init(|storage, len| {
            match libc::recvfrom(fd, buf.as_mut_ptr().cast(), buf.len(), flags, storage.cast(), len) {
                -1 => Err(std::io::Error::last_os_error()),
                n => Ok(n as usize),
            }
        })
    };
    r.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// The size `recv` takes when none is given: the next datagram's on a
/// datagram socket (`MSG_PEEK | MSG_TRUNC`), else 512. Tarantool's
/// `get_recv_size`.
fn recv_size(s: &Stack, sock: &Sock) -> LResult<Result<usize, c_int>> {
    if !s.is_none_or_nil(2) {
        return size_arg(s, 2, 512, "recv").map(Ok);
    }
    if sock.itype != libc::SOCK_DGRAM {
        return Ok(Ok(512));
    }
    // SAFETY: a zero-length read with a null buffer is allowed.
    let n = unsafe {
        libc::recv(sock.raw(), std::ptr::null_mut(), 0, libc::MSG_PEEK | libc::MSG_TRUNC)
    };
    Ok(match n {
        -1 => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)),
        n => Ok(n as usize),
    })
}

/// A flags argument already made a number by `socket.lua` (nil: 0).
fn flags_arg(s: &Stack, idx: c_int) -> LResult<c_int> {
    if s.is_none_or_nil(idx) {
        return Ok(0);
    }
    s.to_integer(idx)
        .and_then(|n| c_int::try_from(n).ok())
        .ok_or_else(|| Raise::illegal("socket: flags must be a number"))
}

lua_fn! {
    /// `s:recv([size[, flags]])`: one `recv(2)` (size: the next datagram's
    /// on a datagram socket, else 512); nil with `s:errno()`. Never waits.
    /// `socket.lua` turns flag names into the number.
    pub(super) fn sock_recv(s: &mut Stack) {
        let sock = this(s, 1)?;
        let flags = flags_arg(s, 3)?;
        let size = match recv_size(s, sock)? {
            Ok(n) => n,
            Err(e) => return fail(s, sock, e),
        };
        let fd = sock.raw();
        read_into_spare(s, sock, size, |buf| {
            // SAFETY: `buf` is valid for writes of its length.
            match unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) } {
                -1 => Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)),
                n => Ok((n as usize, ())),
            }
        })?;
        Ok(1)
    }
}

lua_fn! {
    /// `s:recvfrom([size[, flags]])`: one `recvfrom(2)`: the data and the
    /// sender's address `{family, host, port}`; nil with `s:errno()`.
    pub(super) fn sock_recvfrom(s: &mut Stack) {
        let sock = this(s, 1)?;
        let flags = flags_arg(s, 3)?;
        let size = match recv_size(s, sock)? {
            Ok(n) => n,
            Err(e) => return fail(s, sock, e),
        };
        let fd = sock.raw();
        let from = read_into_spare(s, sock, size, |buf| sys_recvfrom(fd, buf, flags))?;
        match from {
            Some(from) => {
                addr::push_addr(s, &from);
                Ok(2)
            }
            None => Ok(1),
        }
    }
}
