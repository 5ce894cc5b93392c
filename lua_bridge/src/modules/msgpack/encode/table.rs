//! The encoder's tables: their shape (Tarantool's array-or-map rule and
//! `__serialize` hints), their elements and pairs, and the container heads.

use std::ffi::c_int;

use mlua::ffi;
use rmp::encode as mp;

use super::{illegal, no_stack, oom, stack_ok, too_deep, Encoder, LResult};
use super::{SLOTS_AT_ONCE, SLOTS_PER_LEVEL};
use crate::modules::msgpack::MAX_NESTING;
use crate::modules::serializer::{self, Hint, Shape};
use crate::raw::{api, Raise, Stack};

impl Encoder<'_> {
    /// Makes sure of [`SLOTS_PER_LEVEL`] stack slots above `top` (rule 4).
    #[cold]
    pub(super) unsafe fn reserve_stack(&mut self, top: c_int, level: u32) -> LResult<()> {
        // SAFETY: the calling state of a `lua_fn` body.
        unsafe {
            for n in [SLOTS_AT_ONCE, SLOTS_PER_LEVEL] {
                if ffi::lua_checkstack(self.l, n) != 0 {
                    self.room = top + n;
                    return Ok(());
                }
            }
        }
        Err(too_deep(level))
    }

    #[inline(never)]
    pub(super) unsafe fn table(
        &mut self,
        idx: c_int,
        top: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` holds a table; raw reads only (rule 1), Lua code
        // under pcall (rule 2), room checked (rule 4).
        unsafe {
            if !stack_ok() {
                return Err(no_stack(level));
            }
            if top + SLOTS_PER_LEVEL > self.room {
                self.reserve_stack(top, level)?;
            }
            let mut hint = None;
            if self.cfg.encode_load_metatables && ffi::lua_getmetatable(l, idx) != 0 {
                ffi::lua_pushvalue(l, self.key);
                api::rawget(l, top + 1);
                // The string first: a hint is the usual `__serialize`. A
                // number becomes a string here, then fails as an unknown
                // hint, as in Tarantool (`lua_isstring`).
                let mut len = 0;
                let p = ffi::lua_tolstring(l, top + 2, &mut len);
                if p.is_null() {
                    match ffi::lua_type(l, top + 2) {
                        ffi::LUA_TNIL => {}
                        ffi::LUA_TFUNCTION => return self.hand_over(idx, top, level, handovers),
                        _ => return Err(illegal(serializer::BAD_SERIALIZE)),
                    }
                } else {
                    hint = match serializer::hint(std::slice::from_raw_parts(p.cast(), len)) {
                        Some(Hint::Array) => Some(Shape::Array(self.max_key(idx))),
                        Some(Hint::Map) => Some(Shape::Map),
                        None => return Err(illegal(serializer::BAD_SERIALIZE)),
                    };
                }
                ffi::lua_settop(l, top);
            }
            if level >= self.cfg.encode_max_depth.min(MAX_NESTING) {
                if self.cfg.encode_deep_as_nil && level < MAX_NESTING {
                    return self.head(|w| mp::write_nil(w));
                }
                return Err(too_deep(level));
            }
            match hint {
                Some(Shape::Array(n)) => {
                    let n = u32::try_from(n)
                        .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                    self.head(|w| mp::write_array_len(w, n).map(drop))?;
                    self.elements(idx, top, 1, n, level)
                }
                Some(Shape::Map) => {
                    let start = self.begin_container()?;
                    let n = self.entries(idx, top, level, 0)?;
                    self.end_container(start, n, true)
                }
                None => self.plain(idx, top, level),
            }
        }
    }

    /// Array elements `from..=to` of the table at `idx` (`lua_rawgeti`).
    pub(super) unsafe fn elements(
        &mut self,
        idx: c_int,
        top: c_int,
        from: u32,
        to: u32,
        level: u32,
    ) -> LResult<()> {
        let l = self.l;
        // SAFETY: `idx` holds a table (caller); raw reads only; `top` is the
        // top (rule 4).
        unsafe {
            for i in from..=to {
                let t = match c_int::try_from(i) {
                    Ok(i) => api::rawgeti_type(l, idx, i),
                    Err(_) => {
                        ffi::lua_pushnumber(l, f64::from(i));
                        api::rawget(l, idx);
                        ffi::lua_type(l, top + 1)
                    }
                };
                self.value(top + 1, top + 1, t, level + 1, 0)?;
                ffi::lua_settop(l, top);
            }
        }
        Ok(())
    }

    /// A table without a `__serialize` hint, in one traversal when its keys
    /// come as 1, 2, 3, ... (an array): Tarantool's rule needs no second look
    /// then. Other tables go to [`Encoder::inspect`] and a second traversal.
    pub(super) unsafe fn plain(&mut self, idx: c_int, top: c_int, level: u32) -> LResult<()> {
        let l = self.l;
        let start = self.begin_container()?;
        let calls = self.calls;
        let mut n: u32 = 0;
        // SAFETY: `idx` holds a table; rules 1-4.
        unsafe {
            ffi::lua_pushnil(l);
            let key = top + 1;
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
                    self.value_at(key + 1, key + 1, level + 1, 0)?;
                    n += 1;
                    ffi::lua_settop(l, key);
                    continue;
                }
                ffi::lua_settop(l, top);
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
                            self.head(|w| mp::write_array_len(w, max).map(drop))?;
                            self.elements(idx, top, 1, max, level)
                        }
                        Shape::Map => {
                            let start = self.begin_container()?;
                            let count = self.entries(idx, top, level, 0)?;
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
                        self.elements(idx, top, n + 1, max, level)?;
                        self.end_container(start, max.max(n), false)
                    }
                    Shape::Map => {
                        self.elements_to_pairs(start + 1, n)?;
                        let count = self.entries(idx, top, level, n)?;
                        self.end_container(start, n + count, true)
                    }
                };
            }
        }
    }

    /// Tarantool's default rule for the table at `idx`
    /// ([`serializer::inspect`]).
    pub(super) unsafe fn inspect(&mut self, idx: c_int) -> LResult<Shape> {
        // SAFETY: the calling state of a `lua_fn` body; no Lua code runs
        // while the handle lives.
        let mut s = unsafe { Stack::from_state(self.l) };
        serializer::inspect(&mut s, idx, &self.cfg).map_err(illegal)
    }

    /// The length of an array by `__serialize` ([`serializer::max_key`]).
    pub(super) unsafe fn max_key(&mut self, idx: c_int) -> u64 {
        // SAFETY: as in `inspect`.
        let mut s = unsafe { Stack::from_state(self.l) };
        serializer::max_key(&mut s, idx)
    }

    /// Every key and value of the table at `idx`, but the integer keys
    /// `1..=skip`; returns how many pairs it wrote.
    pub(super) unsafe fn entries(
        &mut self,
        idx: c_int,
        top: c_int,
        level: u32,
        skip: u32,
    ) -> LResult<u32> {
        let l = self.l;
        let calls = self.calls;
        let mut count: u32 = 0;
        // SAFETY: `idx` holds a table; rules 1-4.
        unsafe {
            ffi::lua_pushnil(l);
            let key = top + 1;
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
                self.value_at(key, key + 1, level + 1, 0)?;
                self.value_at(key + 1, key + 1, level + 1, 0)?;
                ffi::lua_settop(l, key);
            }
        }
        Ok(count)
    }

    /// `lua_next` through the base library's `next` under `lua_pcall` (rule
    /// 3): pops the key; pushes the next key and value, or nothing at the end.
    pub(super) unsafe fn pnext(&mut self, idx: c_int) -> LResult<bool> {
        let l = self.l;
        self.room = 0;
        // SAFETY: a key is on top and `idx` holds a table.
        unsafe {
            if self.st.next == ffi::LUA_NOREF {
                return Ok(ffi::lua_next(l, idx) != 0);
            }
            api::push_registry_ref(l, self.st.next);
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
    pub(super) fn elements_to_pairs(&mut self, from: usize, n: u32) -> LResult<()> {
        let mut pairs = Vec::new();
        let mut p = from;
        for i in 1..=n {
            let len = crate::modules::msgpack::decode::extent(&self.out.data()[p..], "encode")
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
    pub(super) fn begin_container(&mut self) -> LResult<usize> {
        let start = self.out.used();
        self.out.extend_from_slice(&[0]).map_err(oom)?;
        Ok(start)
    }

    /// Writes the header begun at `start` in the shortest form for `count`
    /// (rmp's markers); a longer form moves the elements after it.
    #[inline(always)]
    pub(super) fn end_container(&mut self, start: usize, count: u32, map: bool) -> LResult<()> {
        if count <= 15 {
            let marker = if map {
                rmp::Marker::FixMap(count as u8)
            } else {
                rmp::Marker::FixArray(count as u8)
            };
            self.out.data_mut()[start] = marker.to_u8();
            return Ok(());
        }
        self.end_long_container(start, count, map)
    }

    /// [`Encoder::end_container`] for more than 15 elements.
    #[inline(never)]
    pub(super) fn end_long_container(
        &mut self,
        start: usize,
        count: u32,
        map: bool,
    ) -> LResult<()> {
        let mut head = [0u8; 5];
        let mut w = &mut head[..];
        let r = if map {
            mp::write_map_len(&mut w, count)
        } else {
            mp::write_array_len(&mut w, count)
        };
        if r.is_err() {
            return Err(oom(()));
        }
        let len = 5 - w.len();
        let end = self.out.used();
        self.out.try_alloc(len - 1).map_err(oom)?;
        let data = self.out.data_mut();
        data.copy_within(start + 1..end, start + len);
        data[start..start + len].copy_from_slice(&head[..len]);
        Ok(())
    }
}
