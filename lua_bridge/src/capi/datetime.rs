//! The two functions of Tarantool's `datetime.c` that its `datetime.lua`
//! declares to the FFI and scripts may call through `ffi.C`
//! (`tnt_datetime_to_string`, `tnt_datetime_strftime`), with `snprintf`'s
//! contract: at most `len - 1` bytes and a NUL are written, and the length
//! of the whole text is returned.

use std::ffi::{c_char, CStr};

use crate::modules::datetime::value::Datetime;

/// Copies `text` into `buf` as `snprintf` would; its length.
///
/// # Safety
///
/// `buf` is null or writable for `len` bytes.
unsafe fn put(text: &[u8], buf: *mut c_char, len: isize) -> usize {
    if !buf.is_null() && len > 0 {
        let n = text.len().min(len as usize - 1);
        // SAFETY: caller's contract: `buf` holds `len` > `n` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    text.len()
}

/// `tnt_datetime_to_string(date, buf, len)`: the ISO 8601 text of `date`
/// (`datetime_snprint`).
///
/// # Safety
///
/// `date` points to a `struct datetime`; `buf` is null or writable for
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tnt_datetime_to_string(
    date: *const Datetime,
    buf: *mut c_char,
    len: isize,
) -> usize {
    // SAFETY: caller's contract.
    let d = unsafe { *date };
    crate::capi::guard("tnt_datetime_to_string", 0, || {
        // SAFETY: caller's contract.
        unsafe { put(d.text().as_bytes(), buf, len) }
    })
}

/// `tnt_datetime_strftime(date, buf, len, fmt)`: `date` formatted by
/// `fmt` (`datetime_strftime`).
///
/// # Safety
///
/// `date` points to a `struct datetime`; `buf` is null or writable for
/// `len` bytes; `fmt` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tnt_datetime_strftime(
    date: *const Datetime,
    buf: *mut c_char,
    len: u32,
    fmt: *const c_char,
) -> usize {
    // SAFETY: caller's contract.
    let (d, fmt) = unsafe { (*date, CStr::from_ptr(fmt)) };
    crate::capi::guard("tnt_datetime_strftime", 0, || {
        let text = crate::modules::datetime::strftime(&d, fmt.to_bytes());
        // SAFETY: caller's contract.
        unsafe { put(&text, buf, len as isize) }
    })
}
