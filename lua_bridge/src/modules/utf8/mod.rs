//! The Lua `utf8` module: Tarantool master's `src/lua/utf8.c`, loaded at
//! start as the global `utf8` (as master does).
//!
//! - `utf8.len(s [, i [, j]])`: code points in bytes `i..j` (1-based,
//!   negative from the end); `nil, pos` at an ill-formed sequence (`pos`
//!   the 1-based position of its last byte), `nil, 'position is out of
//!   string'`.
//! - `utf8.next(s [, pos])`: the next position and code point, nothing at
//!   the end or at an ill-formed sequence (so `for pos, c in utf8.next, s`
//!   walks a string).
//! - `utf8.char(c, ...)`: the UTF-8 of code points (unchecked, as ICU's
//!   `U8_APPEND_UNSAFE`).
//! - `utf8.sub(s, i [, j])`: code points `i..j`.
//! - `utf8.upper(s)`, `utf8.lower(s)`: full Unicode case mapping (root
//!   locale, as ICU's default `ucasemap`: `ß` upper is `SS`, `İ` lower is
//!   `i̇`, a final sigma is `ς`); ill-formed bytes pass through.
//! - `utf8.islower`, `isupper`, `isdigit`, `isalpha` `(s or code)`: the
//!   general category of the one character of `s` (or of a code point):
//!   `Ll`, `Lu`, `Nd`, any letter (ICU's `u_islower` ...).
//! - `utf8.cmp(a, b)`, `utf8.casecmp(a, b)`: -1, 0 or 1 by the Unicode
//!   Collation Algorithm with the root locale's order (CLDR), tertiary
//!   strength for `cmp`, primary (case and accents ignored) for `casecmp`,
//!   as master's ICU collations.
//!
//! Walking bytes follows ICU's macros ([`walk`]): an ill-formed sequence
//! counts as one unit, its maximal subpart.
//!
//! # Why these crates
//!
//! Master uses ICU4C. Here collation is ICU4X's `icu_collator` (the
//! Unicode consortium's Rust ICU: the same algorithm and root data as
//! ICU4C) and the categories its `icu_properties`; case mapping is Rust's
//! own `str::to_uppercase`/`to_lowercase` (full mappings from the Unicode
//! data, which is what ICU's root `ucasemap` applies).
//!
//! Differences from Tarantool:
//!
//! - On Lua 5.4 the global `utf8` keeps the standard library's
//!   `charpattern`, `codes`, `codepoint` and `offset` beside master's
//!   functions (master's replace `len` and `char`).
//! - ICU4X's Unicode version may be newer than the ICU a Tarantool build
//!   links (a character new in between has a category here).

mod walk;

use std::cmp::Ordering;
use std::ffi::c_int;
use std::sync::OnceLock;

use icu_collator::options::{CollatorOptions, Strength};
use icu_collator::CollatorBorrowed;
use icu_properties::props::GeneralCategory;
use icu_properties::CodePointMapData;

use crate::raw::error::{located, type_name};
use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};

/// The module's functions.
const FUNCS: &[Reg] = &[
    (c"upper", utf8_upper),
    (c"lower", utf8_lower),
    (c"len", utf8_len),
    (c"next", utf8_next),
    (c"char", utf8_char),
    (c"sub", utf8_sub),
    (c"islower", utf8_islower),
    (c"isupper", utf8_isupper),
    (c"isdigit", utf8_isdigit),
    (c"isalpha", utf8_isalpha),
    (c"cmp", utf8_cmp),
    (c"casecmp", utf8_casecmp),
];

/// Pushes the module table (at setup). On Lua 5.4 the standard `utf8`
/// library's other fields are kept in it.
pub(crate) fn open(s: &mut Stack) {
    let t = s.new_table(0, FUNCS.len() as c_int + 4);
    s.set_funcs(t, FUNCS);
    #[cfg(feature = "lua54")]
    {
        s.push_globals();
        if s.rawget_field(-1, c"utf8") == mlua::ffi::LUA_TTABLE {
            for name in [c"charpattern", c"codes", c"codepoint", c"offset"] {
                s.rawget_field(-1, name);
                s.set_field(t, name);
            }
        }
        s.settop(t);
    }
}

/// `luaL_error`'s string: `msg` at the caller's position.
fn usage(s: &Stack, msg: &str) -> Raise {
    located(s, msg)
}

/// `luaL_argerror`'s message for argument `idx` of `fname`.
fn arg_error(s: &Stack, idx: c_int, fname: &str, expected: &str) -> Raise {
    let got = type_name(s.type_of(idx)).to_string_lossy();
    let got = if s.type_of(idx) == mlua::ffi::LUA_TNONE {
        "no value".into()
    } else {
        got
    };
    located(
        s,
        &format!("bad argument #{idx} to '{fname}' ({expected} expected, got {got})"),
    )
}

/// `luaL_checkinteger` (a number truncated, or a numeric string).
fn check_int(s: &Stack, idx: c_int, fname: &str) -> LResult<i64> {
    match s.to_number_coerced(idx) {
        Some(n) => Ok(
            if let (true, Some(i)) = (s.is_integer(idx), s.to_integer(idx)) {
                i
            } else {
                n as i64
            },
        ),
        None => Err(arg_error(s, idx, fname, "number")),
    }
}

/// `luaL_optinteger`.
fn opt_int(s: &Stack, idx: c_int, default: i64, fname: &str) -> LResult<i64> {
    if s.is_none_or_nil(idx) {
        Ok(default)
    } else {
        check_int(s, idx, fname)
    }
}

/// Master's `utf8_convert_offset`: a negative offset from the end (0 when
/// before the start).
fn convert_offset(offset: i64, len: i64) -> i64 {
    if offset >= 0 {
        offset
    } else if -offset > len {
        0
    } else {
        len + offset + 1
    }
}

/// Maps the case of `src`: the valid parts by `f`, ill-formed bytes as
/// they are.
fn map_case(src: &[u8], f: fn(&str) -> String) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    for chunk in src.utf8_chunks() {
        out.extend_from_slice(f(chunk.valid()).as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    out
}

lua_fn! {
    /// `utf8.upper(s)`.
    fn utf8_upper(s: &mut Stack) {
        if s.top() != 1 || s.coerce_str(1).is_none() {
            return Err(usage(s, "Usage: utf8.upper(<string>)"));
        }
        let out = map_case(s.to_str(1).unwrap_or_default(), str::to_uppercase);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `utf8.lower(s)`.
    fn utf8_lower(s: &mut Stack) {
        if s.top() != 1 || s.coerce_str(1).is_none() {
            return Err(usage(s, "Usage: utf8.lower(<string>)"));
        }
        let out = map_case(s.to_str(1).unwrap_or_default(), str::to_lowercase);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `utf8.len(s [, i [, j]])`.
    fn utf8_len(s: &mut Stack) {
        if s.top() > 3 || s.coerce_str(1).is_none() {
            return Err(usage(s, "Usage: utf8.len(<string>, [i, [j]])"));
        }
        let len = s.to_str(1).map_or(0, <[u8]>::len) as i64;
        let mut start = convert_offset(opt_int(s, 2, 1, "len")?, len);
        let end = convert_offset(opt_int(s, 3, -1, "len")?, len);
        if start < 1 || {
            start -= 1;
            start > len
        } || end > len
        {
            s.push_nil();
            s.push_str("position is out of string");
            return Ok(2);
        }
        let bytes = s.to_str(1).unwrap_or_default();
        let (mut pos, mut count) = (start as usize, 0i64);
        while (pos as i64) < end {
            count += 1;
            let (after, c) = walk::next(bytes, pos);
            pos = after;
            if c.is_none() {
                s.push_nil();
                s.push_int(pos as i64);
                return Ok(2);
            }
        }
        s.push_int(count);
        Ok(1)
    }
}

lua_fn! {
    /// `utf8.next(s [, pos])`: the position after the code point at
    /// `pos` (1-based) and the code point; nothing at the end or at an
    /// ill-formed sequence.
    fn utf8_next(s: &mut Stack) {
        if s.top() > 2 || s.coerce_str(1).is_none() {
            return Err(usage(s, "Usage: utf8.next(<string>, [<byte offset>])"));
        }
        let len = s.to_str(1).map_or(0, <[u8]>::len) as i64;
        let mut pos = convert_offset(opt_int(s, 2, 1, "next")?, len);
        if pos > 0 {
            pos -= 1;
        }
        if pos >= len {
            return Ok(0);
        }
        let (after, c) = walk::next(s.to_str(1).unwrap_or_default(), pos as usize);
        let Some(c) = c else { return Ok(0) };
        s.push_int(after as i64 + 1);
        s.push_int(i64::from(c));
        Ok(2)
    }
}

lua_fn! {
    /// `utf8.char(c, ...)`.
    fn utf8_char(s: &mut Stack) {
        let top = s.top();
        if top < 1 {
            return Err(usage(s, "Usage: utf8.char(<char code>"));
        }
        let mut out = Vec::with_capacity(top as usize * 4);
        for i in 1..=top {
            walk::append(&mut out, check_int(s, i, "char")? as u32);
        }
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `utf8.sub(s, i [, j])`.
    fn utf8_sub(s: &mut Stack) {
        if s.top() < 2 || s.coerce_str(1).is_none() {
            return Err(usage(s, "Usage: utf8.sub(<string>, [i, [j]])"));
        }
        let mut start = check_int(s, 2, "sub")?;
        if start > 0 {
            start -= 1;
        }
        let end = opt_int(s, 3, -1, "sub")?;
        let bytes = s.to_str(1).unwrap_or_default();
        let (a, b) = walk::sub(bytes, start, end);
        let out = bytes[a..b].to_vec();
        s.push_bytes(&out);
        Ok(1)
    }
}

/// The general category of code point `c` (`Unassigned` past Unicode).
fn category(c: i64) -> GeneralCategory {
    match u32::try_from(c) {
        Ok(c) => CodePointMapData::<GeneralCategory>::new().get32(c),
        Err(_) => GeneralCategory::Unassigned,
    }
}

/// Master's `UCHAR32_CHECKER`: `test` on the category of the one
/// character of a string argument, or of a code point.
fn check_char(s: &mut Stack, name: &str, test: fn(GeneralCategory) -> bool) -> LResult {
    if s.top() != 1 {
        return Err(usage(
            s,
            &format!("Usage: utf8.{name}(<string> or <one symbol code>)"),
        ));
    }
    let result = if s.type_of(1) == mlua::ffi::LUA_TSTRING {
        let bytes = s.to_str(1).unwrap_or_default();
        match bytes.is_empty() {
            true => false,
            false => match walk::next(bytes, 0) {
                (end, Some(c)) if end == bytes.len() => test(category(i64::from(c))),
                _ => false,
            },
        }
    } else {
        test(category(check_int(s, 1, name)?))
    };
    s.push_bool(result);
    Ok(1)
}

lua_fn! {
    /// `utf8.islower(s or code)`: category `Ll`.
    fn utf8_islower(s: &mut Stack) {
        check_char(s, "islower", |g| g == GeneralCategory::LowercaseLetter)
    }
}

lua_fn! {
    /// `utf8.isupper(s or code)`: category `Lu`.
    fn utf8_isupper(s: &mut Stack) {
        check_char(s, "isupper", |g| g == GeneralCategory::UppercaseLetter)
    }
}

lua_fn! {
    /// `utf8.isdigit(s or code)`: category `Nd`.
    fn utf8_isdigit(s: &mut Stack) {
        check_char(s, "isdigit", |g| g == GeneralCategory::DecimalNumber)
    }
}

lua_fn! {
    /// `utf8.isalpha(s or code)`: any letter category (`L*`).
    fn utf8_isalpha(s: &mut Stack) {
        check_char(s, "isalpha", |g| {
            matches!(
                g,
                GeneralCategory::UppercaseLetter
                    | GeneralCategory::LowercaseLetter
                    | GeneralCategory::TitlecaseLetter
                    | GeneralCategory::ModifierLetter
                    | GeneralCategory::OtherLetter
            )
        })
    }
}

/// The root collators, made once for the process (immutable data baked
/// into the binary): tertiary and primary strength.
fn collator(primary: bool) -> Option<&'static CollatorBorrowed<'static>> {
    static TERTIARY: OnceLock<Option<CollatorBorrowed<'static>>> = OnceLock::new();
    static PRIMARY: OnceLock<Option<CollatorBorrowed<'static>>> = OnceLock::new();
    let (cell, strength) = if primary {
        (&PRIMARY, Strength::Primary)
    } else {
        (&TERTIARY, Strength::Tertiary)
    };
    cell.get_or_init(|| {
        let mut options = CollatorOptions::default();
        options.strength = Some(strength);
        CollatorBorrowed::try_new(Default::default(), options).ok()
    })
    .as_ref()
}

/// `utf8.cmp` and `utf8.casecmp`.
fn compare(s: &mut Stack, usage_msg: &str, primary: bool) -> LResult {
    if s.top() != 2 || s.coerce_str(1).is_none() || s.coerce_str(2).is_none() {
        return Err(usage(s, usage_msg));
    }
    let coll = collator(primary).ok_or_else(|| Raise::Message("utf8: no collation data".into()))?;
    let (a, b) = (
        s.to_str(1).unwrap_or_default(),
        s.to_str(2).unwrap_or_default(),
    );
    let r = match coll.compare_utf8(a, b) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    };
    s.push_int(r);
    Ok(1)
}

lua_fn! {
    /// `utf8.cmp(a, b)`: -1, 0 or 1 (tertiary strength).
    fn utf8_cmp(s: &mut Stack) {
        compare(s, "Usage: utf8.cmp(<string1>, <string2>)", false)
    }
}

lua_fn! {
    /// `utf8.casecmp(a, b)`: -1, 0 or 1 (primary strength).
    fn utf8_casecmp(s: &mut Stack) {
        compare(s, "Usage: utf8.casecmp(<string1>, <string2>)", true)
    }
}
