//! On LuaJIT, `s:read()` and `s:write()` as Lua functions (`fast.lua`)
//! whose case that neither waits nor fails is one FFI call, compiled into
//! the caller's trace (a C function call ends a trace, and costs its frame
//! and its argument checks through the C API): a read answered from the
//! read-ahead buffer (the requests of a pipelined batch after the first),
//! a write the socket takes whole (the reply). What waits or fails goes to
//! the C functions `read_args` and `write_from`, the options already taken
//! apart. On Lua 5.4 the C methods are called directly: a Lua function in
//! front of them would only cost.
//!
//! The wrappers call the FFI functions only with a userdata whose
//! metatable is the socket metatable (`getmetatable` finds it through
//! `__metatable`; a table cannot have a userdata's type, and only C code
//! sets a userdata's metatable), so the pointer they get is a live
//! `Rc` of a [`Sock`] (udata rule 1). Neither function switches fibers, calls Lua or raises.

use std::ffi::{c_char, c_int, c_void};
use std::rc::Rc;

use luafiber_runtime::io::Interest;

use super::read::{limit_of, sock_read_args};
use super::sock::Sock;
use super::write::{sock_write_from, sys_send};
use crate::raw::{LResult, Stack};

/// A result of [`try_read`] and [`try_write`] that sends the wrapper to
/// the C function.
const FALLBACK: f64 = -2.0;

/// The primitive `try_read` of `fast.lua`: when the read-ahead buffer
/// holds the answer to a read of `limit` bytes (up to and with `delim`,
/// when not null), drops it from the buffer and returns its length, with
/// `*out` its address (valid until the next call on this socket; the
/// wrapper copies it at once); else -2.
///
/// # Safety
///
/// `sock` is a live socket (the wrapper checked the metatable); `delim` is
/// null or valid for `dlen` bytes; `out` is valid for a write.
unsafe extern "C" fn try_read(
    sock: *const Rc<Sock>,
    delim: *const c_char,
    dlen: usize,
    limit: f64,
    out: *mut *const u8,
) -> f64 {
    // SAFETY: the caller's contract: `sock` is live, `delim` (when not
    // null) valid for `dlen` bytes, `out` for a write; the wrapper holds
    // the socket and the delimiter's string on its stack for the call.
    let (sock, delim, out) = unsafe {
        let delim =
            (!delim.is_null()).then(|| std::slice::from_raw_parts(delim.cast::<u8>(), dlen));
        (&**sock, delim, &mut *out)
    };
    let Ok(limit) = limit_of(limit) else {
        return FALLBACK;
    };
    if sock.is_closed() {
        return FALLBACK;
    }
    let Ok(mut b) = sock.rbuf.try_borrow_mut() else {
        return FALLBACK;
    };
    let n = match delim {
        None => b.check_limit(limit),
        Some(d) => b.check_delimiter(d, limit),
    };
    let Some(n) = n else {
        return FALLBACK;
    };
    // The bytes stay where they are after the consume, until the buffer
    // is next written.
    *out = b.data().as_ptr();
    b.consume(n);
    sock.ok();
    n as f64
}

/// The primitive `try_write` of `fast.lua`: one send of `len` bytes at
/// `p`, as `s:write()` makes it; the bytes sent (fewer when the socket
/// had no room for all: the wrapper goes on with `write_from`), -1 for an
/// error (`s:errno()` set), -2 when the socket is closed.
///
/// # Safety
///
/// `sock` is a live socket (the wrapper checked the metatable); `p` is
/// valid (not null) for `len` bytes.
unsafe extern "C" fn try_write(sock: *const Rc<Sock>, p: *const c_char, len: usize) -> f64 {
    // SAFETY: the caller's contract: `sock` is live, `p` valid for `len`
    // bytes (a string the wrapper holds on its stack for the call).
    let (sock, data) = unsafe { (&**sock, std::slice::from_raw_parts(p.cast::<u8>(), len)) };
    if sock.is_closed() {
        return FALLBACK;
    }
    if len == 0 {
        sock.ok();
        return 0.0;
    }
    let more = sock.more_flag();
    match sys_send(sock, data, more) {
        Ok(n) => {
            if n == len {
                sock.set_corked(more != 0);
                sock.ok();
            }
            n as f64
        }
        Err(libc::EAGAIN) => {
            sock.would_block(Interest::WRITABLE);
            0.0
        }
        Err(libc::EINTR) => 0.0,
        Err(e) => {
            sock.fail(e);
            -1.0
        }
    }
}

/// Runs `fast.lua` over the socket metatable (at `mt`) and its methods
/// table (at `methods`), on LuaJIT; elsewhere, or when it fails (no FFI),
/// the C methods stay.
pub(super) fn install(s: &mut Stack, mt: c_int, methods: c_int) -> LResult<()> {
    const CHUNK: &str = include_str!("fast.lua");
    if !cfg!(feature = "luajit") || cfg!(luafiber_no_fast_paths) {
        return Ok(());
    }
    s.ensure(8)?;
    let top = s.top();
    if s.load(CHUNK, c"=socket.fast").is_err() {
        s.settop(top);
        return Ok(());
    }
    s.ensure(8)?;
    s.push_value(mt);
    s.push_value(methods);
    s.push_cfunction(sock_read_args);
    s.push_cfunction(sock_write_from);
    s.push_light(try_read as *mut c_void);
    s.push_light(try_write as *mut c_void);
    // A chunk that fails leaves the C methods as they were.
    let _ = s.pcall(6, 0);
    s.settop(top);
    Ok(())
}
