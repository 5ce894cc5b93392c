//! Tarantool's string extensions (master's `src/lua/string.lua`), set
//! into the global `string` table at setup, so they are methods of every
//! string too: `split`, `ljust`, `rjust`, `center`, `startswith`,
//! `endswith`, `hex`, `fromhex`, `strip`, `lstrip`, `rstrip`.
//!
//! C functions here where master has Lua over FFI calls (`memmem`,
//! `memcmp`, `string_strip_helper`): the same results on both engines.
//! A wrong argument raises master's string, placed as master's
//! `error(msg, 2)` places it: `"file:line: bad argument #1 to
//! 'string.split' (string expected, got nil)"`.
//!
//! Difference from Tarantool: master's `endswith` takes `#tail` before
//! it checks `tail`'s type and names the type of the first argument in
//! every message; here a wrong `tail`, `start` or `end` gets the
//! message of its own type.

use std::ffi::c_int;

use mlua::ffi;

use crate::raw::{error, lua_fn, Raise, Stack};

/// The bytes `split()` with no separator and `strip()` with no set treat
/// as spaces (C's `isspace` in the C locale).
const SPACES: &[u8] = b" \t\n\x0b\x0c\r";

/// Lua's `type()` name of the value at `idx` (nil for none).
fn type_name(s: &Stack, idx: c_int) -> String {
    let t = s.type_of(idx);
    if t == ffi::LUA_TNONE {
        return "nil".into();
    }
    error::type_name(t).to_string_lossy().into_owned()
}

/// Master's `"bad argument #%d to '%s' (%s expected, got %s)"`, placed at
/// the caller.
fn bad_arg(s: &Stack, n: c_int, func: &str, expected: &str, got: &str) -> Raise {
    Raise::Message(format!(
        "{}bad argument #{n} to '{func}' ({expected} expected, got {got})",
        error::location(s)
    ))
}

/// The string argument `n`, or master's error.
fn string_arg<'a>(s: &'a Stack, n: c_int, func: &str) -> Result<&'a [u8], Raise> {
    s.to_str(n)
        .ok_or_else(|| bad_arg(s, n, func, "string", &type_name(s, n)))
}

/// The optional number argument `n` (nil or absent: `None`), or master's
/// error naming `expected`.
fn opt_number(s: &Stack, n: c_int, func: &str, expected: &str) -> Result<Option<f64>, Raise> {
    if s.is_none_or_nil(n) {
        return Ok(None);
    }
    s.to_number(n)
        .map(Some)
        .ok_or_else(|| bad_arg(s, n, func, expected, &type_name(s, n)))
}

/// Pushes an array of `parts`.
fn push_parts(s: &mut Stack, parts: &[&[u8]]) -> Result<c_int, Raise> {
    s.ensure(2)?;
    let t = s.new_table(parts.len() as c_int, 0);
    for (i, p) in parts.iter().enumerate() {
        s.push_bytes(p);
        s.rawseti(t, i as i64 + 1);
    }
    Ok(1)
}

/// Splits at runs of spaces, leading and trailing ones dropped; after
/// `max` splits the rest (from its first non-space) is the last part.
fn split_spaces(inp: &[u8], mut max: f64) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut i = 0;
    loop {
        while i < inp.len() && SPACES.contains(&inp[i]) {
            i += 1;
        }
        if i == inp.len() {
            return parts;
        }
        if max <= 0.0 {
            parts.push(&inp[i..]);
            return parts;
        }
        let start = i;
        while i < inp.len() && !SPACES.contains(&inp[i]) {
            i += 1;
        }
        parts.push(&inp[start..i]);
        max -= 1.0;
    }
}

/// Splits at each `sep` (not empty), at most `max` times.
fn split_at<'a>(inp: &'a [u8], sep: &[u8], mut max: f64) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = inp;
    loop {
        if max <= 0.0 || rest.is_empty() {
            parts.push(rest);
            return parts;
        }
        match rest.windows(sep.len()).position(|w| w == sep) {
            Some(at) => {
                parts.push(&rest[..at]);
                rest = &rest[at + sep.len()..];
                max -= 1.0;
            }
            None => {
                parts.push(rest);
                return parts;
            }
        }
    }
}

lua_fn! {
    /// `string.split(inp [, sep [, max]])`: the parts of `inp` between the
    /// separators (a table); without `sep`, the runs of non-space bytes;
    /// at most `max` splits.
    fn string_split(s: &mut Stack) {
        const F: &str = "string.split";
        let inp = string_arg(s, 1, F)?;
        let sep = if s.is_none_or_nil(2) { None } else { Some(string_arg(s, 2, F)?) };
        let max = match s.to_number(3) {
            _ if s.is_none_or_nil(3) => f64::from(u32::MAX),
            Some(m) if m >= 0.0 => m,
            _ => return Err(bad_arg(s, 3, F, "positive integer", &type_name(s, 3))),
        };
        let parts = match sep {
            None => split_spaces(inp, max),
            Some([]) => return Err(bad_arg(s, 2, F, "non-empty string", "empty string")),
            Some(sep) => split_at(inp, sep, max),
        };
        let parts: Vec<Vec<u8>> = parts.into_iter().map(<[u8]>::to_vec).collect();
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        push_parts(s, &parts)
    }
}

/// How `ljust`, `rjust` and `center` pad.
#[derive(Clone, Copy)]
enum Justify {
    Left,
    Right,
    Center,
}

/// `ljust`, `rjust`, `center`: `inp` padded with `char` (a space by
/// default) to `width` bytes, never cut.
fn justify(s: &mut Stack, func: &str, how: Justify) -> Result<c_int, Raise> {
    let inp = string_arg(s, 1, func)?;
    let width = match s.to_number(2) {
        Some(w) if w >= 0.0 => w,
        _ => return Err(bad_arg(s, 2, func, "positive integer", &type_name(s, 2))),
    };
    let fill = match s.to_str(3) {
        _ if s.is_none_or_nil(3) => b' ',
        Some(&[c]) => c,
        _ => return Err(bad_arg(s, 3, func, "char", &type_name(s, 3))),
    };
    let delta = width - inp.len() as f64;
    if delta < 0.0 {
        s.settop(1);
        return Ok(1);
    }
    // `char:rep(n)` takes the integral part of `n`.
    let (left, right) = match how {
        Justify::Left => (0.0, delta),
        Justify::Right => (delta, 0.0),
        Justify::Center => ((delta / 2.0).floor(), delta - (delta / 2.0).floor()),
    };
    let (left, right) = (left as usize, right as usize);
    let mut out = Vec::with_capacity(left + inp.len() + right);
    out.resize(left, fill);
    out.extend_from_slice(inp);
    out.resize(left + inp.len() + right, fill);
    s.push_bytes(&out);
    Ok(1)
}

lua_fn! {
    /// `string.ljust(inp, width [, char])`.
    fn string_ljust(s: &mut Stack) {
        justify(s, "string.ljust", Justify::Left)
    }
}

lua_fn! {
    /// `string.rjust(inp, width [, char])`.
    fn string_rjust(s: &mut Stack) {
        justify(s, "string.rjust", Justify::Right)
    }
}

lua_fn! {
    /// `string.center(inp, width [, char])`: the odd byte of padding goes
    /// right.
    fn string_center(s: &mut Stack) {
        justify(s, "string.center", Justify::Center)
    }
}

/// The byte range `[start, end]` (1-based, inclusive) of `startswith` and
/// `endswith`: negative positions count from the end (clamped at 0), `end`
/// at most the length.
fn bounds(len: usize, start: Option<f64>, end: Option<f64>) -> (f64, f64) {
    let len = len as f64;
    let start = match start {
        None => 1.0,
        Some(v) if v < 0.0 => (len + v + 1.0).max(0.0),
        Some(v) => v,
    };
    let end = match end {
        None => len,
        Some(v) if v > len => len,
        Some(v) if v < 0.0 => (len + v + 1.0).max(0.0),
        Some(v) => v,
    };
    (start, end)
}

/// `startswith` and `endswith`.
fn affix(s: &mut Stack, func: &str, at_end: bool) -> Result<c_int, Raise> {
    let inp = string_arg(s, 1, func)?;
    let part = string_arg(s, 2, func)?;
    let start = opt_number(s, 3, func, "integer")?;
    let end = opt_number(s, 4, func, "integer")?;
    let (start, end) = bounds(inp.len(), start, end);
    let n = part.len() as f64;
    let yes = if part.is_empty() {
        true
    } else if end - start + 1.0 < n || start > end {
        false
    } else {
        let from = if at_end { end - n } else { start - 1.0 };
        // Master compares memory there; a start before the string (0 or a
        // fraction) reads no byte here.
        from >= 0.0 && {
            let from = from as usize;
            inp.get(from..from + part.len()) == Some(part)
        }
    };
    s.push_bool(yes);
    Ok(1)
}

lua_fn! {
    /// `string.startswith(inp, head [, start [, end]])`.
    fn string_startswith(s: &mut Stack) {
        affix(s, "string.startswith", false)
    }
}

lua_fn! {
    /// `string.endswith(inp, tail [, start [, end]])`.
    fn string_endswith(s: &mut Stack) {
        affix(s, "string.endswith", true)
    }
}

lua_fn! {
    /// `string.hex(inp)`: lower-case hex, two digits a byte.
    fn string_hex(s: &mut Stack) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let inp = string_arg(s, 1, "string.hex")?;
        let mut out = Vec::with_capacity(inp.len() * 2);
        for &b in inp {
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 15)]);
        }
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `string.fromhex(inp)`: the bytes of an even number of hex digits
    /// (either case).
    fn string_fromhex(s: &mut Stack) {
        const F: &str = "string.fromhex";
        let inp = string_arg(s, 1, F)?;
        if inp.len() % 2 != 0 {
            return Err(bad_arg(s, 1, F, "even amount of chars", "odd amount"));
        }
        let digit = |c: u8| (c as char).to_digit(16);
        let out: Option<Vec<u8>> = inp
            .chunks(2)
            .map(|p| Some((digit(p[0])? * 16 + digit(p[1])?) as u8))
            .collect();
        let out = out.ok_or_else(|| bad_arg(s, 1, F, "hex string", "non hex chars"))?;
        s.push_bytes(&out);
        Ok(1)
    }
}

/// `strip`, `lstrip`, `rstrip`: `inp` without the bytes of `chars` (the
/// spaces by default) at its start and/or end.
fn strip(s: &mut Stack, func: &str, left: bool, right: bool) -> Result<c_int, Raise> {
    let inp = string_arg(s, 1, func)?;
    let chars = if s.is_none_or_nil(2) {
        SPACES
    } else {
        string_arg(s, 2, func)?
    };
    let mut from = 0;
    let mut to = inp.len();
    if left {
        while from < to && chars.contains(&inp[from]) {
            from += 1;
        }
    }
    if right {
        while to > from && chars.contains(&inp[to - 1]) {
            to -= 1;
        }
    }
    if from == 0 && to == inp.len() {
        s.settop(1);
        return Ok(1);
    }
    let out = inp[from..to].to_vec();
    s.push_bytes(&out);
    Ok(1)
}

lua_fn! {
    /// `string.strip(inp [, chars])`.
    fn string_strip(s: &mut Stack) {
        strip(s, "string.strip", true, true)
    }
}

lua_fn! {
    /// `string.lstrip(inp [, chars])`.
    fn string_lstrip(s: &mut Stack) {
        strip(s, "string.lstrip", true, false)
    }
}

lua_fn! {
    /// `string.rstrip(inp [, chars])`.
    fn string_rstrip(s: &mut Stack) {
        strip(s, "string.rstrip", false, true)
    }
}

/// Sets the extensions into the global `string` table (at setup).
pub(crate) fn extend(s: &mut Stack) {
    let top = s.top();
    s.push_globals();
    if s.rawget_field(-1, c"string") == ffi::LUA_TTABLE {
        let t = s.top();
        s.set_funcs(
            t,
            &[
                (c"split", string_split),
                (c"ljust", string_ljust),
                (c"rjust", string_rjust),
                (c"center", string_center),
                (c"startswith", string_startswith),
                (c"endswith", string_endswith),
                (c"hex", string_hex),
                (c"fromhex", string_fromhex),
                (c"strip", string_strip),
                (c"lstrip", string_lstrip),
                (c"rstrip", string_rstrip),
            ],
        );
    }
    s.settop(top);
}
