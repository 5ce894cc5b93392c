//! The encoder's tables: their shape (Tarantool's array-or-map rule and
//! `__serialize` hints), their elements and pairs, and the container heads.

use std::ffi::c_int;

use mlua::ffi;
use rmp::encode as mp;

use super::{illegal, no_stack, oom, too_deep, Encoder, LResult};
use super::{SLOTS_AT_ONCE, SLOTS_PER_LEVEL};
use crate::modules::msgpack::MAX_NESTING;
use crate::modules::serializer::{self, Hint, Shape};
use crate::raw::{Raise, Stack};

impl Encoder<'_> {
    /// Makes sure of [`SLOTS_PER_LEVEL`] stack slots above the top (encode
    /// rule 4): [`SLOTS_AT_ONCE`] when it can, so that `lua_checkstack`
    /// runs once per encode.
    #[cold]
    fn reserve_stack(&mut self, s: &mut Stack, level: u32) -> LResult<()> {
        if s.ensure(SLOTS_AT_ONCE).is_ok() || s.ensure(SLOTS_PER_LEVEL).is_ok() {
            return Ok(());
        }
        Err(too_deep(level))
    }

    #[inline(never)]
    pub(super) fn table(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
        handovers: u32,
    ) -> LResult<()> {
        if !serializer::stack_ok() {
            return Err(no_stack(level));
        }
        if s.room() < SLOTS_PER_LEVEL {
            self.reserve_stack(s, level)?;
        }
        let mut hint = None;
        if self.cfg.encode_load_metatables && s.get_metatable(idx) {
            s.push_value(self.key);
            s.rawget(top + 1);
            // The string first: a hint is the usual `__serialize`. A number
            // becomes a string here, then fails as an unknown hint, as in
            // Tarantool (`lua_isstring`).
            match s.coerce_str(top + 2).map(serializer::hint) {
                None => match s.type_of(top + 2) {
                    ffi::LUA_TNIL => {}
                    ffi::LUA_TFUNCTION => return self.hand_over(s, idx, top, level, handovers),
                    _ => return Err(illegal(serializer::BAD_SERIALIZE)),
                },
                Some(Some(Hint::Array)) => hint = Some(Shape::Array(self.max_key(s, idx))),
                Some(Some(Hint::Map)) => hint = Some(Shape::Map),
                Some(None) => return Err(illegal(serializer::BAD_SERIALIZE)),
            }
            s.settop(top);
        }
        if level >= self.cfg.encode_max_depth.min(MAX_NESTING) {
            if self.cfg.encode_deep_as_nil && level < MAX_NESTING {
                return self.head(|w| mp::write_nil(w));
            }
            return Err(too_deep(level));
        }
        match hint {
            Some(Shape::Array(n)) => {
                let n =
                    u32::try_from(n).map_err(|_| illegal("msgpack.encode: array is too long"))?;
                self.head(|w| mp::write_array_len(w, n).map(drop))?;
                self.elements(s, idx, top, 1, n, level)
            }
            Some(Shape::Map) => {
                let start = self.begin_container()?;
                let n = self.entries(s, idx, top, level, 0)?;
                self.end_container(start, n, true)
            }
            None => self.plain(s, idx, top, level),
        }
    }

    /// Array elements `from..=to` of the table at `idx` (`lua_rawgeti`).
    pub(super) fn elements(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        from: u32,
        to: u32,
        level: u32,
    ) -> LResult<()> {
        for i in from..=to {
            let t = match c_int::try_from(i) {
                // SAFETY: `idx` holds a table (the caller's value of type
                // table), which its elements' encoding never pops.
                Ok(i) => unsafe { s.rawgeti_unchecked(idx, i) },
                Err(_) => {
                    s.push_number(f64::from(i));
                    s.rawget(idx);
                    s.type_of(top + 1)
                }
            };
            self.value(s, top + 1, top + 1, t, level + 1, 0)?;
            s.settop(top);
        }
        Ok(())
    }

    /// The next key and value of the table at `idx` after the key on top:
    /// raw while no Lua code ran since `calls` (and `raw` allows it), else
    /// through [`Encoder::pnext`] (encode rule 3).
    #[inline(always)]
    fn next(&mut self, s: &mut Stack, idx: c_int, calls: u64, raw: bool) -> LResult<bool> {
        if raw && self.calls == calls {
            // SAFETY: no Lua code ran since this traversal began, so the
            // key on top is nil or the one `next` gave, and no key of the
            // table was assigned (encode rules 1 and 3).
            return Ok(unsafe { s.next(idx) });
        }
        self.pnext(s, idx)
    }

    /// A table without a `__serialize` hint, in one traversal when its keys
    /// come as 1, 2, 3, ... (an array): Tarantool's rule needs no second look
    /// then. Other tables go to [`Encoder::inspect`] and a second traversal.
    pub(super) fn plain(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
    ) -> LResult<()> {
        let start = self.begin_container()?;
        let calls = self.calls;
        let mut n: u32 = 0;
        s.push_nil();
        let key = top + 1;
        loop {
            if !self.next(s, idx, calls, true)? {
                return self.end_container(start, n, false);
            }
            let k = s.to_number(key).unwrap_or(f64::NAN);
            if k == f64::from(n) + 1.0 {
                self.value_at(s, key + 1, key + 1, level + 1, 0)?;
                n += 1;
                s.settop(key);
                continue;
            }
            s.settop(top);
            let shape = if !(k >= 1.0 && k.floor() == k) {
                Shape::Map
            } else {
                self.inspect(s, idx)?
            };
            if self.calls == calls {
                // Nothing ran that a second traversal would repeat: start
                // over with the shape known.
                self.out.truncate(start);
                return match shape {
                    Shape::Array(max) => {
                        let max = u32::try_from(max)
                            .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                        self.head(|w| mp::write_array_len(w, max).map(drop))?;
                        self.elements(s, idx, top, 1, max, level)
                    }
                    Shape::Map => {
                        let start = self.begin_container()?;
                        let count = self.entries(s, idx, top, level, 0)?;
                        self.end_container(start, count, true)
                    }
                };
            }
            // Lua code ran for elements 1..=n: keep them, never run it twice.
            return match shape {
                Shape::Array(max) => {
                    let max = u32::try_from(max)
                        .map_err(|_| illegal("msgpack.encode: array is too long"))?;
                    self.elements(s, idx, top, n + 1, max, level)?;
                    self.end_container(start, max.max(n), false)
                }
                Shape::Map => {
                    self.elements_to_pairs(start + 1, n)?;
                    let count = self.entries(s, idx, top, level, n)?;
                    self.end_container(start, n + count, true)
                }
            };
        }
    }

    /// Tarantool's default rule for the table at `idx`
    /// ([`serializer::inspect`]: no Lua code runs in its traversal, so the
    /// raw `next` of encode rule 3).
    pub(super) fn inspect(&mut self, s: &mut Stack, idx: c_int) -> LResult<Shape> {
        serializer::inspect(s, idx, &self.cfg).map_err(illegal)
    }

    /// The length of an array by `__serialize` ([`serializer::max_key`]).
    pub(super) fn max_key(&mut self, s: &mut Stack, idx: c_int) -> u64 {
        serializer::max_key(s, idx)
    }

    /// Every key and value of the table at `idx`, but the integer keys
    /// `1..=skip`; returns how many pairs it wrote.
    pub(super) fn entries(
        &mut self,
        s: &mut Stack,
        idx: c_int,
        top: c_int,
        level: u32,
        skip: u32,
    ) -> LResult<u32> {
        let calls = self.calls;
        let mut count: u32 = 0;
        s.push_nil();
        let key = top + 1;
        while self.next(s, idx, calls, skip == 0)? {
            if skip > 0 {
                if let Some(k) = s.to_number(key) {
                    if k >= 1.0 && k <= f64::from(skip) && k.floor() == k {
                        s.settop(key);
                        continue;
                    }
                }
            }
            count = count
                .checked_add(1)
                .ok_or_else(|| illegal("msgpack.encode: map is too big"))?;
            self.value_at(s, key, key + 1, level + 1, 0)?;
            self.value_at(s, key + 1, key + 1, level + 1, 0)?;
            s.settop(key);
        }
        Ok(count)
    }

    /// `lua_next` through the base library's `next` under `lua_pcall`
    /// (encode rule 3): pops the key; pushes the next key and value, or
    /// nothing at the end.
    pub(super) fn pnext(&mut self, s: &mut Stack, idx: c_int) -> LResult<bool> {
        if self.st.next == ffi::LUA_NOREF {
            return Err(illegal(
                "msgpack.encode: no base library `next` to go on with a table after Lua code ran",
            ));
        }
        s.push_ref(self.st.next);
        s.push_value(idx);
        s.push_value(-3);
        s.pcall(2, 2).map_err(|()| Raise::Top)?;
        s.remove(-3);
        if s.type_of(-2) == ffi::LUA_TNIL {
            s.pop(2);
            return Ok(false);
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
            let len = crate::modules::msgpack::decode::reader::check(&self.out.data()[p..])
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
