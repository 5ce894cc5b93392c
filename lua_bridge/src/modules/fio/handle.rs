//! File handles: a userdata holding the fd ([`Fh`]), and the C functions
//! of `fio.internal` that work on one (`open`, `close`, `read`, `pread`,
//! `write`, `pwrite`, `lseek`, `ftruncate`, `fsync`, `fdatasync`,
//! `fstat`). `fio.lua` builds the methods (`fh:read()`, ...) on them, as
//! master's `fio.lua` builds them on `fio.c`'s.
//!
//! A handle's fd is -1 once closed; a handle the GC collects while open
//! closes its fd there (`close(2)` of a file, without a switch: master
//! schedules it on a worker fiber because its `close` yields).
//!
//! Each call runs on the blocking pool ([`call::blocking`]) with the fd
//! number; the bytes it reads come back in a buffer of its own and the
//! bytes it writes go as a copy, so a fiber cancelled meanwhile leaves
//! nothing the pool thread could touch after it is freed.

use std::cell::Cell;
use std::ffi::c_int;
use std::os::fd::RawFd;
use std::rc::Rc;

use super::call::{self, blocking, push_bool, push_nil_error};
use super::stat;
use super::sys;
use crate::modules::errno;
use crate::raw::context::Part;
use crate::raw::{lua_fn, Kind, LResult, Stack};

/// The payload of a handle: its fd, -1 once closed (shared by the fibers
/// that hold the handle).
pub(super) type Fh = Rc<Cell<RawFd>>;

/// Per-cord state of `fio`'s file handles (a part of the cord context):
/// their kind (the cord's Lua state has one metatable for them).
#[derive(Default)]
pub(crate) struct Handles(Cell<Kind<Fh>>);

/// Makes the handles' metatable (its `__index`, `__tostring` and
/// `__serialize` are set by `fio.lua`) and pushes it.
pub(super) fn init(s: &mut Stack) -> LResult<c_int> {
    s.ensure(4)?;
    let kind = Kind::<Fh>::new_empty(s, 4);
    kind.push_metatable(s);
    let mt = s.top();
    s.push_cfunction(handle_gc);
    s.set_field(mt, c"__gc");
    s.push_cstr(c"fio.handle");
    s.set_field(mt, c"__name");
    Handles::with(|h| h.0.set(kind));
    Ok(mt)
}

/// The handle at `idx`, or a usage error naming `what`.
fn handle(s: &mut Stack, idx: c_int, what: &str) -> LResult<Fh> {
    Handles::with(|h| h.0.get())
        .get(s, idx)
        .ok_or_else(|| call::usage(&format!("Usage: {what}")))
}

/// A number argument as `lua_tonumber` reads it (0 when it is none).
fn number(s: &Stack, idx: c_int) -> f64 {
    s.to_number_coerced(idx).unwrap_or(0.0)
}

/// A size or offset argument: a number truncated toward zero, 0 for
/// anything else; negative ones are refused with `EINVAL` by the call.
fn offset(s: &Stack, idx: c_int) -> i64 {
    let n = number(s, idx);
    if n.is_finite() {
        n as i64
    } else {
        -1
    }
}

lua_fn! {
    /// `fio.internal.open(path, flags, mode)`: a new handle, or `nil, err`.
    pub(super) fn internal_open(s: &mut Stack) {
        let Some(path) = call::text(s, 1) else {
            return Err(call::usage("Usage: fio.open(path, flags, mode)"));
        };
        let flags = number(s, 2) as i64 as c_int;
        let mode = number(s, 3) as i64 as u32;
        let r = blocking(s, move || sys::open(sys::path(&path), flags, mode))?;
        match r {
            Ok(fd) => {
                s.ensure(2)?;
                Handles::with(|h| h.0.get()).push(s, Rc::new(Cell::new(fd)));
                Ok(1)
            }
            Err(e) => push_nil_error(s, &e),
        }
    }
}

lua_fn! {
    /// `fio.internal.close(fh)`: `true`, or `false, err` (`EBADF` once
    /// closed).
    pub(super) fn internal_close(s: &mut Stack) {
        let fh = handle(s, 1, "fh:close()")?;
        let fd = fh.replace(-1);
        if fd < 0 {
            return push_bool(s, Err(std::io::Error::from_raw_os_error(libc::EBADF)));
        }
        let r = blocking(s, move || sys::close(fd))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.fd(fh)`: the fd number (-1 once closed).
    pub(super) fn internal_fd(s: &mut Stack) {
        let fh = handle(s, 1, "fh.fh")?;
        s.push_int(fh.get().into());
        Ok(1)
    }
}

/// Reads with `read(fd)` on the pool and pushes the bytes, or `nil, err`.
fn push_read(
    s: &mut Stack,
    fh: &Fh,
    read: impl FnOnce(RawFd) -> std::io::Result<Vec<u8>> + Send + 'static,
) -> LResult {
    let fd = fh.get();
    match blocking(s, move || read(fd))? {
        Ok(bytes) => {
            s.ensure(1)?;
            s.push_bytes(&bytes);
            Ok(1)
        }
        Err(e) => push_nil_error(s, &e),
    }
}

lua_fn! {
    /// `fio.internal.read(fh, size)`: at most `size` bytes from the file
    /// position (one `read(2)`; `''` at the end), or `nil, err`.
    pub(super) fn internal_read(s: &mut Stack) {
        let fh = handle(s, 1, "fh:read([size])")?;
        let size = offset(s, 2);
        if size <= 0 {
            s.push_cstr(c"");
            return Ok(1);
        }
        push_read(s, &fh, move |fd| sys::read(fd, size as usize))
    }
}

lua_fn! {
    /// `fio.internal.pread(fh, size, offset)`: at most `size` bytes at
    /// `offset` (one `pread(2)`), or `nil, err`.
    pub(super) fn internal_pread(s: &mut Stack) {
        let fh = handle(s, 1, "fh:pread(size[, offset])")?;
        let (size, off) = (offset(s, 2), offset(s, 3));
        if size <= 0 {
            s.push_cstr(c"");
            return Ok(1);
        }
        if off < 0 {
            errno::set(libc::EINVAL);
            return push_nil_error(s, &std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        push_read(s, &fh, move |fd| sys::pread(fd, size as usize, off as u64))
    }
}

/// The bytes to write: the string at `idx`, its first `len` bytes when
/// `len` is given.
fn data(s: &mut Stack, idx: c_int, len_idx: Option<c_int>, what: &str) -> LResult<Vec<u8>> {
    let len = len_idx
        .filter(|&i| !s.is_none_or_nil(i))
        .map(|i| offset(s, i));
    let bytes = s
        .coerce_str(idx)
        .ok_or_else(|| call::usage(&format!("Usage: {what}")))?;
    let end = len.map_or(bytes.len(), |n| n.clamp(0, bytes.len() as i64) as usize);
    Ok(bytes[..end].to_vec())
}

lua_fn! {
    /// `fio.internal.write(fh, data[, len])`: writes all of `data` at the
    /// file position (Tarantool's `coio_write` loop): `true`, or `false,
    /// err`.
    pub(super) fn internal_write(s: &mut Stack) {
        let fh = handle(s, 1, "fh:write(data)")?;
        let bytes = data(s, 2, Some(3), "fh:write(data)")?;
        let fd = fh.get();
        let r = blocking(s, move || sys::write(fd, &bytes))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.pwrite(fh, data, len, offset)`: writes all of `data`
    /// (its first `len` bytes when `len` is given) at `offset`: `true`, or
    /// `false, err`.
    pub(super) fn internal_pwrite(s: &mut Stack) {
        let fh = handle(s, 1, "fh:pwrite(data, offset)")?;
        let bytes = data(s, 2, Some(3), "fh:pwrite(data, offset)")?;
        let off = offset(s, 4);
        if off < 0 {
            return push_bool(s, Err(std::io::Error::from_raw_os_error(libc::EINVAL)));
        }
        let fd = fh.get();
        let r = blocking(s, move || sys::pwrite(fd, &bytes, off as u64))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.lseek(fh, offset, whence)`: the new position, or -1
    /// with `errno()` set (master returns `lseek`'s result as it is).
    pub(super) fn internal_lseek(s: &mut Stack) {
        let fh = handle(s, 1, "fh:seek(offset[, whence])")?;
        let off = number(s, 2) as i64;
        let whence = number(s, 3) as c_int;
        let fd = fh.get();
        let r = blocking(s, move || sys::lseek(fd, off, whence))?;
        match r {
            Ok(pos) => s.push_number(pos as f64),
            Err(e) => {
                errno::set(call::errno_of(&e));
                s.push_int(-1);
            }
        }
        Ok(1)
    }
}

lua_fn! {
    /// `fio.internal.ftruncate(fh, length)`: `true`, or `false, err`.
    pub(super) fn internal_ftruncate(s: &mut Stack) {
        let fh = handle(s, 1, "fh:truncate([length])")?;
        let len = offset(s, 2);
        let fd = fh.get();
        let r = blocking(s, move || sys::ftruncate(fd, len))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.fsync(fh)`: `true`, or `false, err`.
    pub(super) fn internal_fsync(s: &mut Stack) {
        let fd = handle(s, 1, "fh:fsync()")?.get();
        let r = blocking(s, move || sys::fsync(fd, false))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.fdatasync(fh)`: `true`, or `false, err`.
    pub(super) fn internal_fdatasync(s: &mut Stack) {
        let fd = handle(s, 1, "fh:fdatasync()")?.get();
        let r = blocking(s, move || sys::fsync(fd, true))?;
        push_bool(s, r)
    }
}

lua_fn! {
    /// `fio.internal.fstat(fh)`: the stat table, or `nil, err`.
    pub(super) fn internal_fstat(s: &mut Stack) {
        let fd = handle(s, 1, "fh:stat()")?.get();
        let r = blocking(s, move || sys::fstat(fd))?;
        stat::push_result(s, r)
    }
}

lua_fn! {
    /// `__gc`: closes the fd of a handle still open (no switch).
    fn handle_gc(s: &mut Stack) {
        if let Some(fh) = Handles::with(|h| h.0.get()).take(s, 1) {
            let fd = fh.replace(-1);
            if fd >= 0 {
                let _ = sys::close(fd);
            }
        }
        Ok(0)
    }
}
