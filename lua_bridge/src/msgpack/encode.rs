//! Lua values to MsgPack, as Tarantool's `luamp_encode_r` + `luaL_tofield`.
//!
//! Rules the code keeps (cfunc rule 2: no Lua error may cross it):
//!
//! 1. Only raw accesses (`lua_rawget`, `lua_rawgeti`, `lua_next`), which run
//!    no metamethod.
//! 2. Lua code (a `__serialize` function, `tostring`) runs only under
//!    `lua_pcall` of the cached trampoline; its error is raised as it is.
//! 3. After Lua code ran during a table's traversal, the traversal goes on
//!    through the base library's `next` under `lua_pcall`: that code may have
//!    changed the table, and a raw `lua_next` would then raise.

use std::ffi::c_int;

use luafiber_runtime::ibuf::Ibuf;
use mlua::ffi;
use rmp::encode as mp;

use super::{Config, State, MAX_NESTING};
use crate::cfunc::{LResult as LuaResult, Raise};
use crate::error::ErrorKind;
use crate::lua;

/// 2^63 as a float.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// How deep `__serialize` functions may hand over to each other (a function
/// whose result has a `__serialize` function, and so on).
const MAX_HANDOVERS: u32 = 64;

/// Stack slots a table level needs: the value, metatable, `__serialize`,
/// key, value, and a call's function and argument.
const SLOTS_PER_LEVEL: c_int = 8;

/// An encoder error, boxed so that results pass in a register on the hot
/// path; unboxed when the encode ends.
struct Fail(Box<Raise>);

impl From<Raise> for Fail {
    #[cold]
    fn from(r: Raise) -> Fail {
        Fail(Box::new(r))
    }
}

type LResult<T = ()> = Result<T, Fail>;

#[cold]
fn illegal(msg: impl Into<String>) -> Fail {
    Raise::illegal(msg).into()
}

#[cold]
fn oom<E>(_: E) -> Fail {
    Raise::Error(ErrorKind::OutOfMemory, "not enough memory".into()).into()
}

#[cold]
fn too_deep(level: u32) -> Fail {
    illegal(format!("Too high nest level - {}", level + 1))
}

/// What a table is encoded as.
enum Shape {
    /// An array of this many elements, read with `lua_rawgeti(1..=n)`.
    Array(u64),
    /// A map of every key.
    Map,
}

pub(super) struct Encoder<'a> {
    l: *mut ffi::lua_State,
    st: &'a State,
    cfg: Config,
    out: &'a mut Ibuf,
    /// Stack index of the string `"__serialize"`.
    key: c_int,
    /// Lua calls made so far (rule 3).
    calls: u64,
}

impl<'a> Encoder<'a> {
    /// An encoder writing to `out`; `key` is the stack index of the string
    /// `"__serialize"`.
    pub(super) fn new(
        l: *mut ffi::lua_State,
        st: &'a State,
        out: &'a mut Ibuf,
        key: c_int,
    ) -> Self {
        Encoder {
            l,
            st,
            cfg: st.cfg,
            out,
            key,
            calls: 0,
        }
    }

    /// Encodes the value at `idx` (an absolute index).
    ///
    /// # Safety
    ///
    /// `l` is the calling state of a `lua_fn` body; `idx` is valid.
    pub(super) unsafe fn encode(&mut self, idx: c_int) -> LuaResult<()> {
        // SAFETY: caller's contract.
        unsafe { self.value(idx, 0, 0) }.map_err(|f| *f.0)
    }

    unsafe fn value(&mut self, idx: c_int, level: u32, handovers: u32) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` is a valid absolute index (callers); raw reads only.
        unsafe {
            match ffi::lua_type(l, idx) {
                ffi::LUA_TNIL => mp::write_nil(self.out).map_err(oom),
                ffi::LUA_TBOOLEAN => {
                    mp::write_bool(self.out, ffi::lua_toboolean(l, idx) != 0).map_err(oom)
                }
                ffi::LUA_TNUMBER => self.number(idx),
                ffi::LUA_TSTRING => {
                    let mut len = 0;
                    let p = ffi::lua_tolstring(l, idx, &mut len);
                    self.str(std::slice::from_raw_parts(p.cast(), len))
                }
                ffi::LUA_TTABLE => self.table(idx, level, handovers),
                ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, idx).is_null() => {
                    mp::write_nil(self.out).map_err(oom)
                }
                ffi::LUA_TUSERDATA | ffi::LUA_TLIGHTUSERDATA => self.object(idx, level, handovers),
                #[cfg(feature = "luajit")]
                10 => self.object(idx, level, handovers),
                _ => self.unsupported(idx),
            }
        }
    }

    unsafe fn str(&mut self, s: &[u8]) -> LResult<()> {
        let len =
            u32::try_from(s.len()).map_err(|_| illegal("msgpack.encode: string is too long"))?;
        mp::write_str_len(self.out, len).map_err(oom)?;
        self.out.extend_from_slice(s).map_err(oom)
    }

    unsafe fn number(&mut self, idx: c_int) -> LResult<()> {
        let l = self.l;
        #[cfg(not(feature = "luajit"))]
        // SAFETY: `idx` holds a number (caller).
        unsafe {
            if ffi::lua_isinteger(l, idx) != 0 {
                let i = ffi::lua_tointeger(l, idx);
                return self.int(i);
            }
        }
        // SAFETY: as above.
        let n = unsafe { ffi::lua_tonumber(l, idx) };
        // Tarantool's rule: integral values in the int64/uint64 range are
        // integers, everything else a float64.
        if (-TWO_63..TWO_63).contains(&n) {
            let i = n as i64;
            if i as f64 == n {
                return self.int(i);
            }
            return mp::write_f64(self.out, n).map_err(oom);
        }
        if (TWO_63..2.0 * TWO_63).contains(&n) {
            return mp::write_uint(self.out, n as u64).map(drop).map_err(oom);
        }
        if !self.cfg.encode_invalid_numbers && !n.is_finite() {
            if self.cfg.encode_invalid_as_nil {
                return mp::write_nil(self.out).map_err(oom);
            }
            return Err(illegal("number must not be NaN or Inf"));
        }
        mp::write_f64(self.out, n).map_err(oom)
    }

    #[inline]
    fn int(&mut self, i: i64) -> LResult<()> {
        let r = if i >= 0 {
            mp::write_uint(self.out, i as u64)
        } else {
            mp::write_sint(self.out, i)
        };
        r.map(drop).map_err(oom)
    }

    /// A type MsgPack has no form for: its `tostring` or nil when the
    /// config says so, else an error.
    unsafe fn unsupported(&mut self, idx: c_int) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` is valid (caller); `tostring` runs under lua_pcall.
        unsafe {
            if self.cfg.encode_use_tostring && self.st.tostring != ffi::LUA_NOREF {
                ffi::lua_pushvalue(l, idx);
                self.call(self.st.tostring)?;
                let r = match lua::to_str(l, -1) {
                    Some(s) => self.str(s),
                    None => Err(illegal("msgpack.encode: tostring did not return a string")),
                };
                ffi::lua_pop(l, 1);
                return r;
            }
            if self.cfg.encode_invalid_as_nil {
                return mp::write_nil(self.out).map_err(oom);
            }
            let name = std::ffi::CStr::from_ptr(ffi::lua_typename(l, ffi::lua_type(l, idx)));
            Err(illegal(format!(
                "unsupported Lua type '{}'",
                name.to_string_lossy()
            )))
        }
    }

    /// Calls `f(x)` where `f` is the value of registry ref `f_ref` and `x`
    /// is on top; replaces `x` by the result (rule 2).
    unsafe fn call(&mut self, f_ref: c_int) -> LResult<()> {
        let l = self.l;
        // SAFETY: room was checked by the caller's level (SLOTS_PER_LEVEL).
        unsafe {
            lua::push_registry_ref(l, f_ref);
            ffi::lua_insert(l, -2);
            self.call_top()
        }
    }

    /// Calls the function below the top with the top value (rule 2), leaving
    /// the result in their place.
    unsafe fn call_top(&mut self) -> LResult<()> {
        let l = self.l;
        self.calls += 1;
        // SAFETY: (f, x) are on top; the trampoline runs under lua_pcall.
        unsafe {
            lua::push_registry_ref(l, self.st.call);
            ffi::lua_insert(l, -3);
            if ffi::lua_pcall(l, 2, 1, 0) != 0 {
                return Err(Raise::Top.into());
            }
        }
        Ok(())
    }

    /// Userdata, light userdata and cdata: encoded through a `__serialize`
    /// function in their metatable, else unsupported.
    unsafe fn object(&mut self, idx: c_int, level: u32, handovers: u32) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` is valid; raw reads only, Lua code under pcall.
        unsafe {
            if !self.cfg.encode_load_metatables || ffi::lua_getmetatable(l, idx) == 0 {
                return self.unsupported(idx);
            }
            ffi::lua_pushvalue(l, self.key);
            ffi::lua_rawget(l, -2);
            ffi::lua_remove(l, -2);
            if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                ffi::lua_pop(l, 1);
                return self.unsupported(idx);
            }
            self.hand_over(idx, level, handovers)
        }
    }

    /// With a `__serialize` function on top: calls it with the value at
    /// `idx` and encodes its result instead.
    unsafe fn hand_over(&mut self, idx: c_int, level: u32, handovers: u32) -> LResult<()> {
        let l = self.l;
        if handovers >= MAX_HANDOVERS {
            return Err(illegal(
                "msgpack.encode: __serialize functions nest too deep",
            ));
        }
        // SAFETY: the function is on top; `idx` is valid.
        unsafe {
            ffi::lua_pushvalue(l, idx);
            self.call_top()?;
            let r = self.value(ffi::lua_gettop(l), level, handovers + 1);
            ffi::lua_pop(l, 1);
            r
        }
    }

    unsafe fn table(&mut self, idx: c_int, level: u32, handovers: u32) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` holds a table; raw reads only (rule 1), Lua code
        // under pcall (rule 2).
        unsafe {
            if ffi::lua_checkstack(l, SLOTS_PER_LEVEL) == 0 {
                return Err(too_deep(level));
            }
            let mut hint = None;
            if self.cfg.encode_load_metatables && ffi::lua_getmetatable(l, idx) != 0 {
                ffi::lua_pushvalue(l, self.key);
                ffi::lua_rawget(l, -2);
                match ffi::lua_type(l, -1) {
                    ffi::LUA_TNIL => {}
                    ffi::LUA_TFUNCTION => {
                        ffi::lua_remove(l, -2);
                        return self.hand_over(idx, level, handovers);
                    }
                    ffi::LUA_TSTRING => {
                        let mut len = 0;
                        let p = ffi::lua_tolstring(l, -1, &mut len);
                        hint = match std::slice::from_raw_parts(p.cast::<u8>(), len) {
                            b"seq" | b"sequence" | b"array" => {
                                Some(Shape::Array(ffi::lua_rawlen(l, idx) as u64))
                            }
                            b"map" | b"mapping" => Some(Shape::Map),
                            _ => return Err(illegal("invalid __serialize value")),
                        };
                    }
                    _ => return Err(illegal("invalid __serialize value")),
                }
                ffi::lua_settop(l, -3);
            }
            if level >= self.cfg.encode_max_depth.min(MAX_NESTING) {
                if self.cfg.encode_deep_as_nil && level < MAX_NESTING {
                    return mp::write_nil(self.out).map_err(oom);
                }
                return Err(too_deep(level));
            }
            match hint {
                Some(Shape::Array(n)) => {
                    let n = u32::try_from(n)
                        .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                    mp::write_array_len(self.out, n).map_err(oom)?;
                    self.elements(idx, 1, n, level)
                }
                Some(Shape::Map) => {
                    let start = self.begin_container()?;
                    let n = self.entries(idx, level, 0)?;
                    self.end_container(start, n, true)
                }
                None => self.plain(idx, level),
            }
        }
    }

    /// Array elements `from..=to` of the table at `idx` (`lua_rawgeti`).
    unsafe fn elements(&mut self, idx: c_int, from: u32, to: u32, level: u32) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` holds a table (caller); raw reads only.
        unsafe {
            let top = ffi::lua_gettop(l);
            for i in from..=to {
                ffi::lua_rawgeti(l, idx, ffi::lua_Integer::from(i));
                self.value(top + 1, level + 1, 0)?;
                ffi::lua_settop(l, top);
            }
        }
        Ok(())
    }

    /// A table without a `__serialize` hint, in one traversal when its keys
    /// come as 1, 2, 3, ... (an array): Tarantool's rule needs no second look
    /// then. Other tables go to [`Encoder::inspect`] and a second traversal.
    unsafe fn plain(&mut self, idx: c_int, level: u32) -> LResult<()> {
        let l = self.l;
        let start = self.begin_container()?;
        let calls = self.calls;
        let mut n: u32 = 0;
        // SAFETY: `idx` holds a table; rules 1-3.
        unsafe {
            ffi::lua_pushnil(l);
            let key = ffi::lua_gettop(l);
            loop {
                let more = if self.calls == calls {
                    ffi::lua_next(l, idx) != 0
                } else {
                    self.pnext(idx)?
                };
                if !more {
                    return self.end_container(start, n, false);
                }
                let is_num = ffi::lua_type(l, key) == ffi::LUA_TNUMBER;
                let k = if is_num {
                    ffi::lua_tonumber(l, key)
                } else {
                    f64::NAN
                };
                if k == f64::from(n) + 1.0 {
                    self.value(key + 1, level + 1, 0)?;
                    n += 1;
                    ffi::lua_settop(l, key);
                    continue;
                }
                ffi::lua_settop(l, key - 1);
                let surely_map = !(k >= 1.0 && k.floor() == k);
                if self.calls == calls {
                    // Nothing ran that a second traversal would repeat:
                    // start over with the shape known.
                    self.out.truncate(start);
                    let shape = if surely_map {
                        Shape::Map
                    } else {
                        self.inspect(idx)?
                    };
                    return match shape {
                        Shape::Array(max) => {
                            let max = u32::try_from(max)
                                .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                            mp::write_array_len(self.out, max).map_err(oom)?;
                            self.elements(idx, 1, max, level)
                        }
                        Shape::Map => {
                            let start = self.begin_container()?;
                            let count = self.entries(idx, level, 0)?;
                            self.end_container(start, count, true)
                        }
                    };
                }
                // Lua code ran for elements 1..=n: keep them, never run it
                // twice.
                let shape = if surely_map {
                    Shape::Map
                } else {
                    self.inspect(idx)?
                };
                return match shape {
                    Shape::Array(max) => {
                        let max = u32::try_from(max)
                            .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                        self.elements(idx, n + 1, max, level)?;
                        self.end_container(start, max.max(n), false)
                    }
                    Shape::Map => {
                        self.elements_to_pairs(start + 1, n)?;
                        let count = self.entries(idx, level, n)?;
                        self.end_container(start, n + count, true)
                    }
                };
            }
        }
    }

    /// Tarantool's default rule (`lua_field_inspect_table`): an array when
    /// every key is a positive integer (or equals the count so far) and the
    /// array is not excessively sparse; its length is the largest key.
    unsafe fn inspect(&mut self, idx: c_int) -> LResult<Shape> {
        let l = self.l;
        let (mut size, mut max) = (0f64, 0f64);
        // SAFETY: `idx` holds a table; no Lua code runs in this traversal,
        // so a raw `lua_next` cannot fail (rule 3).
        unsafe {
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, idx) != 0 {
                size += 1.0;
                ffi::lua_settop(l, -2);
                let k = if ffi::lua_type(l, -1) == ffi::LUA_TNUMBER {
                    ffi::lua_tonumber(l, -1)
                } else {
                    f64::NAN
                };
                if k != size && !(k >= 1.0 && k.floor() == k) {
                    ffi::lua_settop(l, -2);
                    return Ok(Shape::Map);
                }
                max = max.max(k);
            }
        }
        let ratio = f64::from(self.cfg.encode_sparse_ratio);
        if ratio > 0.0 && max > size * ratio && max > f64::from(self.cfg.encode_sparse_safe) {
            if !self.cfg.encode_sparse_convert {
                return Err(illegal("excessively sparse array"));
            }
            return Ok(Shape::Map);
        }
        Ok(Shape::Array(max as u64))
    }

    /// Every key and value of the table at `idx`, but the integer keys
    /// `1..=skip`; returns how many pairs it wrote.
    unsafe fn entries(&mut self, idx: c_int, level: u32, skip: u32) -> LResult<u32> {
        let l = self.l;
        let calls = self.calls;
        let mut count: u32 = 0;
        // SAFETY: `idx` holds a table; rules 1-3.
        unsafe {
            ffi::lua_pushnil(l);
            let key = ffi::lua_gettop(l);
            loop {
                let more = if self.calls == calls && skip == 0 {
                    ffi::lua_next(l, idx) != 0
                } else {
                    self.pnext(idx)?
                };
                if !more {
                    break;
                }
                if skip > 0 && ffi::lua_type(l, key) == ffi::LUA_TNUMBER {
                    let k = ffi::lua_tonumber(l, key);
                    if k >= 1.0 && k <= f64::from(skip) && k.floor() == k {
                        ffi::lua_settop(l, key);
                        continue;
                    }
                }
                count = count
                    .checked_add(1)
                    .ok_or_else(|| illegal("msgpack.encode: map is too big"))?;
                self.value(key, level + 1, 0)?;
                self.value(key + 1, level + 1, 0)?;
                ffi::lua_settop(l, key);
            }
        }
        Ok(count)
    }

    /// `lua_next` through the base library's `next` under `lua_pcall` (rule
    /// 3): pops the key; pushes the next key and value, or nothing at the end.
    unsafe fn pnext(&mut self, idx: c_int) -> LResult<bool> {
        let l = self.l;
        // SAFETY: a key is on top and `idx` holds a table.
        unsafe {
            if self.st.next == ffi::LUA_NOREF {
                return Ok(ffi::lua_next(l, idx) != 0);
            }
            lua::push_registry_ref(l, self.st.next);
            ffi::lua_pushvalue(l, idx);
            ffi::lua_pushvalue(l, -3);
            if ffi::lua_pcall(l, 2, 2, 0) != 0 {
                return Err(Raise::Top.into());
            }
            ffi::lua_remove(l, -3);
            if ffi::lua_type(l, -2) == ffi::LUA_TNIL {
                ffi::lua_settop(l, -3);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Rewrites the `n` encoded elements from `from` as the pairs
    /// `1 => e1, 2 => e2, ...` (an array found to be a map after Lua code
    /// ran for its first elements; rare, so it may allocate).
    fn elements_to_pairs(&mut self, from: usize, n: u32) -> LResult<()> {
        let mut pairs = Vec::new();
        let mut p = from;
        for i in 1..=n {
            let len = super::decode::extent(&self.out.data()[p..], "encode")
                .expect("the encoder's own output");
            mp::write_uint(&mut pairs, u64::from(i)).map_err(oom)?;
            pairs.extend_from_slice(&self.out.data()[p..p + len]);
            p += len;
        }
        self.out.truncate(from);
        self.out.extend_from_slice(&pairs).map_err(oom)
    }

    /// Writes room for a container header of the short form (up to 15
    /// elements); returns where it starts.
    fn begin_container(&mut self) -> LResult<usize> {
        let start = self.out.used();
        self.out.extend_from_slice(&[0]).map_err(oom)?;
        Ok(start)
    }

    /// Writes the header begun at `start` in the shortest form for `count`;
    /// a longer form moves the elements after it.
    fn end_container(&mut self, start: usize, count: u32, map: bool) -> LResult<()> {
        let (fix, m16, m32) = if map {
            (0x80, 0xde, 0xdf)
        } else {
            (0x90, 0xdc, 0xdd)
        };
        if count <= 15 {
            self.out.data_mut()[start] = fix | count as u8;
            return Ok(());
        }
        let mut head = [0u8; 5];
        let len = if count <= 0xffff {
            head[0] = m16;
            head[1..3].copy_from_slice(&(count as u16).to_be_bytes());
            3
        } else {
            head[0] = m32;
            head[1..5].copy_from_slice(&count.to_be_bytes());
            5
        };
        let end = self.out.used();
        self.out.try_alloc(len - 1).map_err(oom)?;
        let data = self.out.data_mut();
        data.copy_within(start + 1..end, start + len);
        data[start..start + len].copy_from_slice(&head[..len]);
        Ok(())
    }
}
