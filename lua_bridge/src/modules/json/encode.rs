//! Lua values to JSON text: cjson's `json_append_data` over Tarantool's
//! `luaL_tofield` and `luaL_convertfield` (`src/lua/serializer.c`).
//!
//! Rules, cited as "json encode rule N" (raw rule 2 holds through the
//! [`Stack`]):
//!
//! 1. Lua code (a `__serialize` function, `tostring`, the `__serialize`
//!    lookup of userdata and cdata, which may run `__index`) runs only under
//!    `pcall`; its error is raised as it is ([`Raise::Top`]), so nothing is
//!    popped on that path.
//! 2. After Lua code ran during a table's traversal, the traversal goes on
//!    through the base library's `next` under `pcall`: that code may have
//!    changed the table, and a raw `lua_next` would then raise.
//! 3. Each table level makes sure of its Lua stack slots and of 64 KiB of
//!    the fiber's machine stack before it goes deeper.

use std::ffi::c_int;
use std::io::Write as _;

use luafiber_runtime::ibuf::{self, Ibuf};
use mlua::ffi;

use super::Shared;
use crate::modules::ext;
use crate::modules::serializer::{self, Config, Hint, Shape, BAD_SERIALIZE};
use crate::raw::error::ErrorKind;
use crate::raw::{LResult, Raise, Stack};

#[cfg(feature = "luajit")]
use crate::luajit::cdata;

/// How deep `__serialize` functions (and `tostring`) may hand over to each
/// other.
const MAX_HANDOVERS: u32 = 64;

/// Lua stack slots a level needs: the metatable, its field, a key and a
/// value, a call's function and argument, and the traversal's `next`.
const SLOTS_PER_LEVEL: c_int = 8;

/// Encodes the value at index 1 (the only value on the stack) and pushes
/// the JSON text.
pub(super) fn encode(s: &mut Stack, cfg: &Config, sh: &Shared, order: &[Vec<u8>]) -> LResult<()> {
    let done = ibuf::with_cord_scratch(|out| -> LResult<()> {
        let mut e = Encoder {
            cfg: *cfg,
            sh,
            order,
            out,
            calls: 0,
            handovers: 0,
        };
        e.value(s, 1, 0)?;
        s.push_bytes(e.out.data());
        Ok(())
    });
    done.map_err(|e| {
        match e {
            // the error value is on top: keep it alone above the argument
            Raise::Top if s.top() > 2 => {
                s.replace(2);
                s.settop(2);
            }
            Raise::Top => {}
            _ => s.settop(1),
        }
        e
    })
}

/// `%.{precision}g` of `v` (Tarantool's `fpconv_g_fmt`: a precision out of
/// 1..=14 is 14), `nan` for NaN.
pub(super) fn format_number(v: f64, precision: u32) -> Vec<u8> {
    let mut buf = [0u8; 32];
    let n = g_fmt(&mut buf, v, precision);
    buf[..n].to_vec()
}

/// [`format_number`] into `buf`; returns the length.
fn g_fmt(buf: &mut [u8; 32], v: f64, precision: u32) -> usize {
    if v.is_nan() {
        buf[..3].copy_from_slice(b"nan");
        return 3;
    }
    let precision = if (1..=14).contains(&precision) {
        precision
    } else {
        14
    };
    // SAFETY: snprintf writes at most `buf.len()` bytes (its NUL included)
    // into `buf`; the format takes an int and a double, which are given.
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%.*g".as_ptr(),
            precision as c_int,
            v,
        )
    };
    (n.max(0) as usize).min(buf.len() - 1)
}

#[cold]
fn oom<E>(_: E) -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into())
}

/// 2^63 and 2^64 as floats.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 2.0 * TWO_63;

/// A Lua number as Tarantool's `luaL_tofield` sees it.
enum Num {
    Uint(u64),
    Int(i64),
    Double(f64),
}

/// Tarantool's rule: a finite number with a fraction is a double; an
/// integral one in `[0, 2^64)` unsigned, in `[-2^63, 0)` signed; the rest
/// (NaN, infinities, huge values) doubles.
fn classify(n: f64) -> Num {
    if n.is_finite() && n.fract() != 0.0 {
        Num::Double(n)
    } else if (0.0..TWO_64).contains(&n) {
        Num::Uint(n as u64)
    } else if (-TWO_63..TWO_63).contains(&n) {
        Num::Int(n as i64)
    } else {
        Num::Double(n)
    }
}

/// The name of Lua type `t`, as `lua_typename`.
pub(super) fn type_name(t: c_int) -> &'static str {
    match t {
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "cdata",
    }
}

/// The JSON escape of byte `c`, as Tarantool's `json_char2escape`: control
/// characters, DEL, `"` and `\`.
#[inline]
fn escape(c: u8, buf: &mut [u8; 6]) -> Option<usize> {
    let short = match c {
        b'"' => b'"',
        b'\\' => b'\\',
        8 => b'b',
        9 => b't',
        10 => b'n',
        12 => b'f',
        13 => b'r',
        0..=0x1f | 0x7f => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            *buf = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(c >> 4) as usize],
                HEX[(c & 15) as usize],
            ];
            return Some(6);
        }
        _ => return None,
    };
    buf[0] = b'\\';
    buf[1] = short;
    Some(2)
}

struct Encoder<'a> {
    cfg: Config,
    sh: &'a Shared,
    /// `encode_key_order`: the keys a map's entries come in first.
    order: &'a [Vec<u8>],
    out: &'a mut Ibuf,
    /// Lua calls made so far (json encode rule 2).
    calls: u64,
    /// `__serialize` functions running (json encode rule 1's chain bound).
    handovers: u32,
}

impl Encoder<'_> {
    #[inline]
    fn put(&mut self, b: &[u8]) -> LResult<()> {
        self.out.extend_from_slice(b).map_err(oom)
    }

    /// Encodes the value at `idx` (absolute); `depth` is the number of
    /// tables around it.
    fn value(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        match s.type_of(idx) {
            ffi::LUA_TNIL => self.put(b"null"),
            ffi::LUA_TBOOLEAN => self.put(if s.to_bool(idx) { b"true" } else { b"false" }),
            ffi::LUA_TNUMBER => {
                if cfg!(not(feature = "luajit")) && s.is_integer(idx) {
                    if let Some(i) = s.to_integer(idx) {
                        return self.int(i);
                    }
                }
                self.number(s.to_number(idx).unwrap_or_default())
            }
            ffi::LUA_TSTRING => self.string(s.to_str(idx).unwrap_or_default()),
            ffi::LUA_TTABLE => self.table(s, idx, depth),
            ffi::LUA_TLIGHTUSERDATA if s.to_userdata(idx).is_null() => self.put(b"null"),
            ffi::LUA_TUSERDATA => self.object(s, idx, depth),
            #[cfg(feature = "luajit")]
            10 => self.cdata(s, idx, depth),
            _ => self.unsupported(s, idx, depth),
        }
    }

    fn number(&mut self, n: f64) -> LResult<()> {
        match classify(n) {
            Num::Uint(u) => self.uint(u),
            Num::Int(i) => self.int(i),
            Num::Double(d) => self.double(d),
        }
    }

    /// A double: an error or null for NaN and the infinities when
    /// `encode_invalid_numbers` is off.
    fn double(&mut self, d: f64) -> LResult<()> {
        if !d.is_finite() && !self.cfg.encode_invalid_numbers {
            if self.cfg.encode_invalid_as_nil {
                return self.put(b"null");
            }
            return Err(Raise::illegal("number must not be NaN or Inf"));
        }
        let room = self.out.try_reserve(32).map_err(oom)?;
        let buf: &mut [u8; 32] = (&mut room[..32]).try_into().expect("32 bytes reserved");
        let n = g_fmt(buf, d, self.cfg.encode_number_precision);
        self.out.advance(n);
        Ok(())
    }

    fn int(&mut self, i: i64) -> LResult<()> {
        if i >= 0 {
            return self.uint(i as u64);
        }
        let mut buf = [0u8; 24];
        let mut w = &mut buf[..];
        let _ = write!(w, "{i}");
        let n = 24 - w.len();
        self.put(&buf[..n])
    }

    fn uint(&mut self, u: u64) -> LResult<()> {
        let mut buf = [0u8; 24];
        let mut w = &mut buf[..];
        let _ = write!(w, "{u}");
        let n = 24 - w.len();
        self.put(&buf[..n])
    }

    /// A JSON string of the bytes `b` (not checked to be UTF-8, as cjson).
    fn string(&mut self, b: &[u8]) -> LResult<()> {
        let room = self.out.try_reserve(b.len() * 6 + 2).map_err(oom)?;
        let mut n = 0;
        room[n] = b'"';
        n += 1;
        let mut esc = [0u8; 6];
        for &c in b {
            match escape(c, &mut esc) {
                None => {
                    room[n] = c;
                    n += 1;
                }
                Some(k) => {
                    room[n..n + k].copy_from_slice(&esc[..k]);
                    n += k;
                }
            }
        }
        room[n] = b'"';
        self.out.advance(n + 1);
        Ok(())
    }

    /// Makes sure of room for one more table level (json encode rule 3).
    fn level(&mut self, s: &mut Stack, depth: u32) -> LResult<()> {
        if !serializer::stack_ok() {
            return Err(Raise::illegal(format!(
                "json.encode: nest level {} is too deep for the fiber's stack",
                depth + 1
            )));
        }
        s.ensure(SLOTS_PER_LEVEL)
    }

    /// Calls the function below the `nargs` values on top (json encode rule 1); leaves
    /// its one result in their place.
    fn call(&mut self, s: &mut Stack, nargs: c_int) -> LResult<()> {
        self.calls += 1;
        s.pcall(nargs, 1).map_err(|()| Raise::Top)
    }

    /// With a function and its argument above `top`: calls it and encodes
    /// its result instead of the value (a `__serialize` function or
    /// `tostring`).
    fn hand_over(&mut self, s: &mut Stack, top: c_int, depth: u32) -> LResult<()> {
        if self.handovers >= MAX_HANDOVERS {
            return Err(Raise::illegal(
                "json.encode: __serialize functions nest too deep",
            ));
        }
        self.call(s, 1)?;
        self.handovers += 1;
        let r = self.value(s, top + 1, depth);
        self.handovers -= 1;
        r?;
        s.settop(top);
        Ok(())
    }

    fn table(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        self.level(s, depth)?;
        let top = s.top();
        let mut shape = None;
        if self.cfg.encode_load_metatables && s.get_metatable(idx) {
            match s.rawget_field(-1, c"__serialize") {
                ffi::LUA_TNIL => {}
                ffi::LUA_TFUNCTION => {
                    s.remove(-2);
                    s.push_value(idx);
                    return self.hand_over(s, top, depth);
                }
                ffi::LUA_TSTRING => {
                    let hint = s.to_str(-1).and_then(serializer::hint);
                    shape = Some(match hint {
                        Some(Hint::Array) => Shape::Array(serializer::max_key(s, idx)),
                        Some(Hint::Map) => Shape::Map,
                        None => return Err(Raise::illegal(BAD_SERIALIZE)),
                    });
                }
                _ => return Err(Raise::illegal(BAD_SERIALIZE)),
            }
            s.settop(top);
        }
        let shape = match shape {
            Some(shape) => shape,
            None => serializer::inspect(s, idx, &self.cfg).map_err(Raise::illegal)?,
        };
        if depth >= self.cfg.encode_max_depth {
            if !self.cfg.encode_deep_as_nil {
                return Err(Raise::illegal("Too high nest level"));
            }
            return self.put(b"null");
        }
        match shape {
            Shape::Array(n) => self.array(s, idx, n, depth + 1),
            Shape::Map => self.map(s, idx, depth + 1),
        }
    }

    fn array(&mut self, s: &mut Stack, idx: c_int, n: u64, depth: u32) -> LResult<()> {
        let n = c_int::try_from(n).map_err(|_| Raise::illegal("json.encode: array is too long"))?;
        self.put(b"[")?;
        for i in 1..=n {
            if i > 1 {
                self.put(b",")?;
            }
            s.rawgeti(idx, i);
            let v = s.top();
            self.value(s, v, depth)?;
            s.settop(v - 1);
        }
        self.put(b"]")
    }

    /// A map: the keys of `encode_key_order` first, then the others in
    /// traversal order.
    fn map(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        self.put(b"{")?;
        let mut first = true;
        let order = self.order;
        for key in order {
            s.push_bytes(key);
            s.rawget(idx);
            let v = s.top();
            if s.is_none_or_nil(v) {
                s.pop(1);
                continue;
            }
            if !std::mem::take(&mut first) {
                self.put(b",")?;
            }
            self.string(key)?;
            self.put(b":")?;
            self.value(s, v, depth)?;
            s.settop(v - 1);
        }
        let calls = self.calls;
        s.push_nil();
        while self.next(s, idx, calls)? {
            let k = s.top() - 1;
            if !order.is_empty() && s.to_str(k).is_some_and(|b| order.iter().any(|o| o == b)) {
                s.pop(1);
                continue;
            }
            if !std::mem::take(&mut first) {
                self.put(b",")?;
            }
            self.key(s, k)?;
            self.put(b":")?;
            self.value(s, k + 1, depth)?;
            s.settop(k);
        }
        self.put(b"}")
    }

    /// Pops a key and pushes the next key and value of the table at `t`;
    /// false at the end (json encode rule 2: raw until Lua code ran since `calls`).
    fn next(&mut self, s: &mut Stack, t: c_int, calls: u64) -> LResult<bool> {
        if self.calls == calls || self.sh.next == ffi::LUA_NOREF {
            // SAFETY: the key on top is nil or the one `next` pushed, and
            // no Lua code ran since the traversal started, so no key was
            // assigned to the table.
            return Ok(unsafe { s.next(t) });
        }
        s.push_ref(self.sh.next);
        s.push_value(t);
        s.push_value(-3);
        s.pcall(2, 2).map_err(|()| Raise::Top)?;
        s.remove(-3);
        if s.is_none_or_nil(-2) {
            s.pop(2);
            return Ok(false);
        }
        Ok(true)
    }

    /// A map key: a string, or an integral number (or integer cdata) as a
    /// string.
    fn key(&mut self, s: &mut Stack, k: c_int) -> LResult<()> {
        let bad = || Raise::illegal("table key must be a number or string");
        let num = match s.type_of(k) {
            ffi::LUA_TSTRING => return self.string(s.to_str(k).unwrap_or_default()),
            ffi::LUA_TNUMBER if cfg!(not(feature = "luajit")) && s.is_integer(k) => {
                s.to_integer(k).map(Num::Int).ok_or_else(bad)?
            }
            ffi::LUA_TNUMBER => classify(s.to_number(k).unwrap_or_default()),
            #[cfg(feature = "luajit")]
            10 => match self.sh.ctypes.and_then(|ct| ct.read_at(s, k)) {
                Some(cdata::Scalar::Int(i)) => Num::Int(i),
                Some(cdata::Scalar::Uint(u)) => Num::Uint(u),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        self.put(b"\"")?;
        match num {
            Num::Uint(u) => self.uint(u)?,
            Num::Int(i) => self.int(i)?,
            Num::Double(_) => return Err(bad()),
        }
        self.put(b"\"")
    }

    /// A cdata: a scalar as its value; others through `__serialize` (but
    /// ctype objects and the built-in types, gh-1226), else unsupported.
    #[cfg(feature = "luajit")]
    fn cdata(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        use cdata::Scalar;
        match self.sh.ctypes.and_then(|ct| ct.read_at(s, idx)) {
            Some(Scalar::Nil) => self.put(b"null"),
            Some(Scalar::Bool(b)) => self.put(if b { b"true" } else { b"false" }),
            Some(Scalar::Int(i)) => self.int(i),
            Some(Scalar::Uint(u)) => self.uint(u),
            Some(Scalar::F32(f)) => self.double(f64::from(f)),
            Some(Scalar::F64(f)) => self.double(f),
            None if cdata::ctype_id_at(s, idx) > Some(self.sh.ctypeid) => {
                self.object(s, idx, depth)
            }
            None => self.unsupported(s, idx, depth),
        }
    }

    /// A userdata or cdata: the text of a value type of the library; else
    /// what its `__serialize` function returns (looked
    /// up through `__index`, as Tarantool does; a failing lookup counts as
    /// none), else [`Encoder::unsupported`].
    fn object(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        if let Some(e) = ext::read(s, idx) {
            // A value type of the library: its text, as cjson writes an
            // MsgPack extension.
            return self.string(&e.text());
        }
        if self.cfg.encode_load_metatables && self.sh.index != ffi::LUA_NOREF {
            let top = s.top();
            s.push_ref(self.sh.index);
            s.push_value(idx);
            self.calls += 1;
            if s.pcall(1, 1).is_ok() {
                match s.type_of(-1) {
                    ffi::LUA_TNIL => {}
                    ffi::LUA_TFUNCTION => {
                        s.push_value(idx);
                        return self.hand_over(s, top, depth);
                    }
                    _ => return Err(Raise::illegal(BAD_SERIALIZE)),
                }
            }
            s.settop(top);
        }
        self.unsupported(s, idx, depth)
    }

    /// A value JSON has no form for: its `tostring` (`encode_use_tostring`),
    /// or null (`encode_invalid_as_nil`), or an error.
    fn unsupported(&mut self, s: &mut Stack, idx: c_int, depth: u32) -> LResult<()> {
        if self.cfg.encode_use_tostring && self.sh.tostring != ffi::LUA_NOREF {
            let top = s.top();
            s.push_ref(self.sh.tostring);
            s.push_value(idx);
            return self.hand_over(s, top, depth);
        }
        if self.cfg.encode_invalid_as_nil {
            return self.put(b"null");
        }
        Err(Raise::illegal(format!(
            "unsupported Lua type '{}'",
            type_name(s.type_of(idx))
        )))
    }
}
