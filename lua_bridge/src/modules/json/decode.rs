//! JSON text to Lua values: cjson's tokenizer and parser
//! (`third_party/lua-cjson/lua_cjson.c` in Tarantool), with its messages:
//! "Expected EXPECTED but found FOUND on line N at character M here
//! 'CONTEXT'", where CONTEXT is up to 8 bytes before the token, ` >> ` and
//! up to 8 bytes after it.
//!
//! As in cjson: a NUL byte ends the text; `nan`, `inf` and `-inf` are
//! numbers when `decode_invalid_numbers` is on; integers that do not fit an
//! `int64` are unsigned (saturating at 2^64-1); lines count the line feeds
//! between tokens. Nothing here runs Lua code.

use std::ffi::c_int;

use luafiber_runtime::ibuf::{self, Ibuf};
use mlua::ffi;

use super::Shared;
use crate::modules::serializer::Config;
use crate::raw::error::ErrorKind;
use crate::raw::{LResult, Raise, Stack};

/// The largest integer decoded as a Lua number on LuaJIT (Tarantool's
/// `DBL_INT_MAX`, 10^14 - 1: what `%.14g` prints exactly).
const DBL_INT_MAX: i64 = 99_999_999_999_999;

/// Decodes the JSON text at index 1 (the only value on the stack) and
/// pushes its value.
pub(super) fn decode(s: &mut Stack, cfg: &Config, sh: &Shared) -> LResult<()> {
    let owned;
    let data: &[u8] = match s.type_of(1) {
        ffi::LUA_TSTRING => {
            let b = s.to_str(1).unwrap_or_default();
            // SAFETY: raw rule 6: the string stays at index 1, never popped
            // or replaced while the parser reads it (it pushes above it).
            unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) }
        }
        ffi::LUA_TNUMBER => {
            owned = super::encode::format_number(s.to_number(1).unwrap_or_default(), 14);
            &owned
        }
        t => {
            return Err(Raise::illegal(format!(
                "bad argument #1 to 'decode' (string expected, got {})",
                super::encode::type_name(t)
            )))
        }
    };
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(fail("JSON parser does not support UTF-16 or UTF-32".into()));
    }
    let done = ibuf::with_cord_scratch(|tmp| -> LResult<()> {
        let mut p = Parser {
            data,
            pos: 0,
            line: 1,
            line_start: 0,
            depth: 0,
            cfg,
            sh,
            tmp,
        };
        let tok = p.next();
        p.value(s, tok)?;
        let tok = p.next();
        if tok.kind != Kind::End {
            return Err(p.unexpected("the end", &tok));
        }
        Ok(())
    });
    done.inspect_err(|_| s.settop(1))
}

fn fail(msg: String) -> Raise {
    Raise::Error(ErrorKind::DecodeError, msg)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// A string: its bytes are `data[from..to]`, or the parser's `tmp`
    /// when it had escapes.
    Str {
        from: usize,
        to: usize,
        escaped: bool,
    },
    Uint(u64),
    Int(i64),
    Number(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A bad token, with cjson's description.
    Error(&'static str),
}

impl Kind {
    /// cjson's `json_token_type_name`.
    fn name(&self) -> &'static str {
        match self {
            Kind::ObjBegin => "'{'",
            Kind::ObjEnd => "'}'",
            Kind::ArrBegin => "'['",
            Kind::ArrEnd => "']'",
            Kind::Str { .. } => "string",
            Kind::Uint(_) => "unsigned int",
            Kind::Int(_) => "int",
            Kind::Number(_) => "number",
            Kind::Bool(_) => "boolean",
            Kind::Null => "null",
            Kind::Colon => "colon",
            Kind::Comma => "comma",
            Kind::End => "end",
            Kind::Error(what) => what,
        }
    }
}

struct Token {
    kind: Kind,
    /// The token's byte offset in its line (0-based).
    column: usize,
}

struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    line: u32,
    /// Where the current line starts.
    line_start: usize,
    depth: u32,
    cfg: &'a Config,
    sh: &'a Shared,
    /// Where strings with escapes are decoded (a cord buffer).
    tmp: &'a mut Ibuf,
}

impl Parser<'_> {
    /// The byte at `i`, 0 past the end (the C text's NUL).
    #[inline]
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn rest(&self) -> &[u8] {
        &self.data[self.pos.min(self.data.len())..]
    }

    fn token(&self, kind: Kind) -> Token {
        Token {
            kind,
            column: self.pos - self.line_start,
        }
    }

    /// The next token (cjson's `json_next_token`).
    fn next(&mut self) -> Token {
        loop {
            match self.at(self.pos) {
                b' ' | b'\t' | b'\r' => {}
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.pos + 1;
                }
                _ => break,
            }
            self.pos += 1;
        }
        let c = self.at(self.pos);
        let single = match c {
            b'{' => Some(Kind::ObjBegin),
            b'}' => Some(Kind::ObjEnd),
            b'[' => Some(Kind::ArrBegin),
            b']' => Some(Kind::ArrEnd),
            b',' => Some(Kind::Comma),
            b':' => Some(Kind::Colon),
            0 => return self.token(Kind::End),
            b'"' => return self.string(),
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' | b'-' | b'0'..=b'9' => None,
            _ => return self.token(Kind::Error("invalid token")),
        };
        if let Some(kind) = single {
            let t = self.token(kind);
            self.pos += 1;
            return t;
        }
        if !self.invalid_number() {
            return self.number();
        }
        let words: [(&[u8], Kind); 3] = [
            (b"true", Kind::Bool(true)),
            (b"false", Kind::Bool(false)),
            (b"null", Kind::Null),
        ];
        for (word, kind) in words {
            if self.rest().starts_with(word) {
                let t = self.token(kind);
                self.pos += word.len();
                return t;
            }
        }
        if self.cfg.decode_invalid_numbers {
            // cjson compares 3 bytes of "-nan", so "-na" is NaN too.
            let special: [(&[u8], f64, usize); 4] = [
                (b"inf", f64::INFINITY, 3),
                (b"-inf", f64::NEG_INFINITY, 4),
                (b"nan", f64::NAN, 3),
                (b"-na", f64::NAN, 4),
            ];
            for (word, v, len) in special {
                if self.rest().starts_with(word) {
                    let t = self.token(Kind::Number(v));
                    self.pos += len;
                    return t;
                }
            }
        }
        self.token(Kind::Error("invalid token"))
    }

    /// What cjson's `json_is_invalid_number` refuses: a leading `+`, hex,
    /// leading zeros, anything but a digit after an optional `-`.
    fn invalid_number(&self) -> bool {
        let mut p = self.pos;
        match self.at(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        match self.at(p) {
            b'0' => {
                let c = self.at(p + 1);
                (c | 0x20) == b'x' || c.is_ascii_digit()
            }
            c => !c.is_ascii_digit(),
        }
    }

    /// A number (`strtoll`, `strtoull` past `LLONG_MAX`, `strtod` when a
    /// `.`, `e` or `E` follows the digits).
    fn number(&mut self) -> Token {
        let start = self.pos;
        let neg = self.at(start) == b'-';
        let mut p = start + usize::from(neg);
        let digits = p;
        while self.at(p).is_ascii_digit() {
            p += 1;
        }
        let text = &self.data[digits..p];
        let mut kind = match (neg, parse_u64(text)) {
            (false, Some(u)) if u < i64::MAX as u64 => Kind::Int(u as i64),
            (false, u) => Kind::Uint(u.unwrap_or(u64::MAX)),
            (true, Some(u)) if u <= i64::MAX as u64 + 1 => Kind::Int((u as i64).wrapping_neg()),
            (true, _) => Kind::Int(i64::MIN),
        };
        if matches!(self.at(p), b'.' | b'e' | b'E') {
            if self.at(p) == b'.' {
                p += 1;
                while self.at(p).is_ascii_digit() {
                    p += 1;
                }
            }
            if matches!(self.at(p), b'e' | b'E') {
                let mut q = p + 1;
                if matches!(self.at(q), b'+' | b'-') {
                    q += 1;
                }
                if self.at(q).is_ascii_digit() {
                    while self.at(q).is_ascii_digit() {
                        q += 1;
                    }
                    p = q;
                }
            }
            let v = std::str::from_utf8(&self.data[start..p])
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            kind = Kind::Number(v);
        }
        let t = self.token(kind);
        self.pos = p;
        t
    }

    /// A string token, its escapes decoded into `tmp` (cjson's
    /// `json_next_string_token`).
    fn string(&mut self) -> Token {
        let column = self.pos - self.line_start;
        self.pos += 1;
        let from = self.pos;
        let mut escaped = false;
        loop {
            let c = self.at(self.pos);
            match c {
                b'"' => break,
                0 => return self.token(Kind::Error("unexpected end of string")),
                b'\\' => {
                    if !escaped {
                        escaped = true;
                        self.tmp.truncate(0);
                        let _ = self.tmp.extend_from_slice(&self.data[from..self.pos]);
                    }
                    let out = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 12,
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape() {
                                continue;
                            }
                            return self.token(Kind::Error("invalid unicode escape code"));
                        }
                        _ => return self.token(Kind::Error("invalid escape code")),
                    };
                    let _ = self.tmp.extend_from_slice(&[out]);
                    self.pos += 2;
                }
                c => {
                    if escaped {
                        let _ = self.tmp.extend_from_slice(&[c]);
                    }
                    self.pos += 1;
                }
            }
        }
        let to = self.pos;
        self.pos += 1;
        Token {
            kind: Kind::Str { from, to, escaped },
            column,
        }
    }

    /// `\uXXXX` (or a surrogate pair of them) at `pos`, appended to `tmp`
    /// as UTF-8; false when malformed.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut utf8 = [0u8; 4];
        let n = match cp {
            0..=0x7F => {
                utf8[0] = cp as u8;
                1
            }
            0x80..=0x7FF => {
                utf8[0] = (cp >> 6) as u8 | 0xC0;
                utf8[1] = (cp & 0x3F) as u8 | 0x80;
                2
            }
            0x800..=0xFFFF => {
                utf8[0] = (cp >> 12) as u8 | 0xE0;
                utf8[1] = ((cp >> 6) & 0x3F) as u8 | 0x80;
                utf8[2] = (cp & 0x3F) as u8 | 0x80;
                3
            }
            _ => {
                utf8[0] = (cp >> 18) as u8 | 0xF0;
                utf8[1] = ((cp >> 12) & 0x3F) as u8 | 0x80;
                utf8[2] = ((cp >> 6) & 0x3F) as u8 | 0x80;
                utf8[3] = (cp & 0x3F) as u8 | 0x80;
                4
            }
        };
        let _ = self.tmp.extend_from_slice(&utf8[..n]);
        self.pos += len;
        true
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            v = (v << 4) | (self.at(at + i) as char).to_digit(16)?;
        }
        Some(v)
    }

    /// cjson's context: up to 8 bytes of the line before `column`, ` >> `,
    /// up to 8 bytes from it (to the line's end).
    fn context(&self, column: usize) -> String {
        let at = self.line_start + column;
        let before = column.min(8);
        let mut ctx = self.data[at - before..at.min(self.data.len())].to_vec();
        ctx.extend_from_slice(b" >> ");
        for i in 0..8 {
            match self.at(at + i) {
                0 | b'\n' => break,
                c => ctx.push(c),
            }
        }
        String::from_utf8_lossy(&ctx).into_owned()
    }

    fn unexpected(&self, expected: &str, tok: &Token) -> Raise {
        fail(format!(
            "Expected {expected} but found {} on line {} at character {} here '{}'",
            tok.kind.name(),
            self.line,
            tok.column + 1,
            self.context(tok.column)
        ))
    }

    /// Enters a table, with room for `slots` values.
    fn descend(&mut self, s: &mut Stack, slots: c_int) -> LResult<()> {
        self.depth += 1;
        let stack_ok = crate::modules::serializer::stack_ok();
        if self.depth <= self.cfg.decode_max_depth && stack_ok && s.ensure(slots).is_ok() {
            return Ok(());
        }
        let column = self.pos - self.line_start;
        Err(fail(format!(
            "Found too many nested data structures ({}) on line {} at character {} here '{}'",
            self.depth,
            self.line,
            column,
            self.context(column.saturating_sub(1))
        )))
    }

    /// Pushes the value that starts with `tok`.
    fn value(&mut self, s: &mut Stack, tok: Token) -> LResult<()> {
        match tok.kind {
            Kind::Str { from, to, escaped } => {
                if escaped {
                    s.push_bytes(self.tmp.data());
                } else {
                    s.push_bytes(&self.data[from..to]);
                }
            }
            Kind::Uint(u) if u <= DBL_INT_MAX as u64 => s.push_int(u as i64),
            Kind::Uint(u) => self.push_wide(s, u, false)?,
            Kind::Int(i) if (-DBL_INT_MAX..=DBL_INT_MAX).contains(&i) => s.push_int(i),
            Kind::Int(i) => self.push_wide(s, i as u64, true)?,
            Kind::Number(v) => {
                if !v.is_finite() && !self.cfg.decode_invalid_numbers {
                    return Err(fail("number must not be NaN or Inf".into()));
                }
                s.push_number(v);
            }
            Kind::Bool(b) => s.push_bool(b),
            Kind::Null => self.sh.push_null(s),
            Kind::ObjBegin => self.object(s)?,
            Kind::ArrBegin => self.array(s)?,
            _ => return Err(self.unexpected("value", &tok)),
        }
        Ok(())
    }

    /// Pushes an integer beyond [`DBL_INT_MAX`] (`bits`, signed when
    /// `signed`): an `int64_t`/`uint64_t` cdata on LuaJIT, as Tarantool's
    /// `luaL_pushint64`; on Lua 5.4 an integer (a float past `i64::MAX`).
    fn push_wide(&mut self, s: &mut Stack, bits: u64, signed: bool) -> LResult<()> {
        #[cfg(feature = "luajit")]
        {
            let ctype = if signed {
                self.sh.int64
            } else {
                self.sh.uint64
            };
            if ctype != ffi::LUA_NOREF {
                s.push_ref(ctype);
                s.pcall(0, 1).map_err(|()| {
                    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
                })?;
                let p = s.to_pointer(-1).cast::<u64>().cast_mut();
                // SAFETY: the value on top is the fresh cdata the ctype call
                // made: its payload is 8 bytes of its 64-bit integer type.
                unsafe { p.write(bits) };
                return Ok(());
            }
        }
        if signed || bits <= i64::MAX as u64 {
            s.push_int(bits as i64);
        } else {
            s.push_number(bits as f64);
        }
        Ok(())
    }

    fn new_table(&mut self, s: &mut Stack, mt: c_int) -> c_int {
        let t = s.new_table(0, 0);
        if self.cfg.decode_save_metatables && mt != ffi::LUA_NOREF {
            s.push_ref(mt);
            s.set_metatable(t);
        }
        t
    }

    fn object(&mut self, s: &mut Stack) -> LResult<()> {
        self.descend(s, 3)?;
        let t = self.new_table(s, self.sh.map_mt);
        let mut tok = self.next();
        if tok.kind == Kind::ObjEnd {
            self.depth -= 1;
            return Ok(());
        }
        loop {
            let Kind::Str { .. } = tok.kind else {
                return Err(self.unexpected("object key string", &tok));
            };
            self.value(s, tok)?;
            let colon = self.next();
            if colon.kind != Kind::Colon {
                return Err(self.unexpected("colon", &colon));
            }
            let v = self.next();
            self.value(s, v)?;
            s.rawset(t)?;
            let sep = self.next();
            match sep.kind {
                Kind::ObjEnd => {
                    self.depth -= 1;
                    return Ok(());
                }
                Kind::Comma => tok = self.next(),
                _ => return Err(self.unexpected("comma or '}'", &sep)),
            }
        }
    }

    fn array(&mut self, s: &mut Stack) -> LResult<()> {
        self.descend(s, 2)?;
        let t = self.new_table(s, self.sh.array_mt);
        let mut tok = self.next();
        if tok.kind == Kind::ArrEnd {
            self.depth -= 1;
            return Ok(());
        }
        for i in 1.. {
            self.value(s, tok)?;
            s.rawseti(t, i);
            let sep = self.next();
            match sep.kind {
                Kind::ArrEnd => break,
                Kind::Comma => tok = self.next(),
                _ => return Err(self.unexpected("comma or ']'", &sep)),
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

/// The decimal digits `text` as a `u64`, `None` past `u64::MAX`.
fn parse_u64(text: &[u8]) -> Option<u64> {
    text.iter().try_fold(0u64, |v, &d| {
        v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}
