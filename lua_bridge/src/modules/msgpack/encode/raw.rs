//! The LuaJIT fast path of the encoder: tables read in place through
//! LuaJIT's own object layout ([`luajit::table`](crate::luajit::table))
//! instead of the C API.
//!
//! Through the C API an encode is mostly calls: `lua_next` finds the key it
//! was given again before it moves on (a hash lookup per key), and every key
//! and value is pushed, typed, read and popped. Here a table is its array
//! part and its node array, read in the order `lua_next` gives (array slots
//! `0..asize`, then nodes `0..=hmask`), and a value is its tagged word.
//!
//! Rules the code keeps, cited as "fast encode rule N":
//!
//! 1. Nothing here runs Lua code or allocates a Lua object: the walk holds
//!    the stack borrowed (luajit rule 3), so no collection can start and no
//!    table can change during it.
//! 2. The walk either writes the whole value or gives up ([`Bail`]) without
//!    having done anything but append bytes; the caller then drops those
//!    bytes and encodes through the C API, which handles everything (a
//!    `__serialize` function, userdata, cdata other than scalars, `tostring`,
//!    every error and its message). So the output is the C API path's, byte
//!    for byte.
//! 3. The layout is not taken on trust: the walk needs the probe's
//!    [`Tables`](crate::luajit::table::Tables) token (luajit rule 1).

use rmp::encode as mp;

use super::{finite_number, len_head, Encoder, HEAD_MAX, MAX_NESTING};
use crate::luajit::cdata::payload_ctype_id;
use crate::luajit::obj::{CDATA, FALSE, ISNUM, NIL, STR, TRUE};
use crate::luajit::table::{Table, Tv};
use crate::modules::ext;
use crate::modules::serializer::{self, Hint, Shape};

/// The encoder gave up on the fast path (fast encode rule 2).
pub(super) struct Bail;

impl From<super::Fail> for Bail {
    #[inline(always)]
    fn from(_: super::Fail) -> Bail {
        Bail
    }
}

type Walk<T = ()> = Result<T, Bail>;

impl Encoder<'_> {
    /// Encodes `root` through the fast path; on [`Bail`] the bytes it wrote
    /// are dropped and `false` returned (fast encode rule 2).
    pub(super) fn raw_root(&mut self, root: Table<'_>) -> bool {
        let start = self.out.used();
        if self.raw_table(root, 0).is_err() {
            self.out.truncate(start);
            return false;
        }
        true
    }

    /// The value `v` of table `t`.
    #[inline(always)]
    fn raw_value(&mut self, t: &Table<'_>, v: Tv<'_>, level: u32) -> Walk {
        if let Some(n) = v.number() {
            return Ok(self.float(n)?);
        }
        if let Some(bytes) = v.str() {
            return Ok(self.str(bytes)?);
        }
        self.raw_other(t, v, level)
    }

    /// [`Encoder::raw_value`] of what is not a number or string.
    #[inline(never)]
    fn raw_other(&mut self, t: &Table<'_>, v: Tv<'_>, level: u32) -> Walk {
        if let Some(child) = t.child(v) {
            return self.raw_table(child, level);
        }
        match v.tag() {
            NIL => Ok(self.head(|w| mp::write_nil(w))?),
            FALSE => Ok(self.head(|w| mp::write_bool(w, false))?),
            TRUE => Ok(self.head(|w| mp::write_bool(w, true))?),
            _ if t.tables().is_null(v) => Ok(self.head(|w| mp::write_nil(w))?),
            CDATA => {
                if let Some(s) = self.st.ctypes.and_then(|ct| ct.read(v)) {
                    return Ok(self.scalar(s)?);
                }
                // A value type of the library: its extension, read in place.
                let payload = v.cdata().ok_or(Bail)?;
                // SAFETY: the payload of a live cdata (fast encode rule 1:
                // nothing can collect it during the walk).
                let e = unsafe { ext::read_payload(payload_ctype_id(payload), payload) };
                Ok(self.ext(&e.ok_or(Bail)?)?)
            }
            _ => Err(Bail),
        }
    }

    /// A table: its `__serialize` hint, else Tarantool's array-or-map rule
    /// (as [`Encoder::table`]).
    fn raw_table(&mut self, t: Table<'_>, level: u32) -> Walk {
        let mut hint = None;
        if let Some(mt) = t.metatable().filter(|_| self.cfg.encode_load_metatables) {
            let v = mt.serialize_field();
            if !v.is_nil() {
                hint = match serializer::hint(v.str().ok_or(Bail)?) {
                    Some(Hint::Array) => Some(Shape::Array(max_key(&t))),
                    Some(Hint::Map) => Some(Shape::Map),
                    None => return Err(Bail),
                };
            }
        }
        if level >= self.cfg.encode_max_depth.min(MAX_NESTING)
            || !crate::modules::serializer::stack_ok()
        {
            return Err(Bail);
        }
        let shape = match hint {
            Some(shape) => shape,
            None if self.raw_sequence(&t) => return Ok(()),
            None => self.raw_inspect(&t)?,
        };
        let (asize, hmask) = t.sizes();
        match shape {
            Shape::Array(n) => {
                let n = u32::try_from(n).map_err(|_| Bail)?;
                self.head(|w| mp::write_array_len(w, n).map(drop))?;
                self.raw_elements(&t, n, level)
            }
            Shape::Map if (asize as usize + hmask as usize) < 15 => {
                let start = self.begin_container()?;
                let n = self.raw_entries(&t, level)?;
                Ok(self.end_container(start, n, true)?)
            }
            Shape::Map => {
                // Room for more than 15 pairs: the header is written for
                // the count, not moved into place after the pairs (which
                // costs depth x size in a deep nest).
                let n = count(&t);
                self.head(|w| mp::write_map_len(w, n).map(drop))?;
                let written = self.raw_entries(&t, level)?;
                debug_assert_eq!(written, n);
                Ok(())
            }
        }
    }

    /// A table of the commonest shape, with no `__serialize` hint: a
    /// sequence (`t[1..=n]` all set, nothing in the hash part nor at
    /// `t[0]`) of numbers, strings and booleans, written with one
    /// reservation and no inspection but the scan for its length; the
    /// bytes [`Encoder::raw_inspect`] and [`Encoder::raw_elements`] give.
    /// `false`, with nothing written, for any other table.
    #[inline]
    fn raw_sequence(&mut self, t: &Table<'_>) -> bool {
        let (_, hmask) = t.sizes();
        let array = t.array();
        if hmask != 0 || !t.slots()[0].val().is_nil() || array.first().is_some_and(|v| !v.is_nil())
        {
            return false;
        }
        let Some(n) = array.iter().rposition(|v| !v.is_nil()).filter(|&n| n > 0) else {
            return false;
        };
        let items = &array[1..=n];
        // The bytes it takes at most: a number 9, a string its head and
        // bytes, a boolean 1; nil (a hole) or another type: not for here.
        let mut bytes = HEAD_MAX;
        for &v in items {
            bytes += match v.tag() {
                tag if tag <= ISNUM => {
                    if !f64::from_bits(v.word()).is_finite() {
                        return false;
                    }
                    HEAD_MAX
                }
                STR => 5 + v.str().map_or(0, <[u8]>::len),
                TRUE | FALSE => 1,
                _ => return false,
            };
        }
        // Dense, so never excessively sparse ([`serializer::sparse_rule`]:
        // `n > n * encode_sparse_ratio` is false for any integer ratio).
        let Ok(room) = self.out.try_reserve(bytes) else {
            return false;
        };
        let mut at = len_head(room, n as u32, false);
        for &v in items {
            if let Some(x) = v.number() {
                at += finite_number(&mut room[at..], x);
            } else if let Some(b) = v.str() {
                at += len_head(&mut room[at..], b.len() as u32, true);
                room[at..at + b.len()].copy_from_slice(b);
                at += b.len();
            } else {
                room[at] = if v.tag() == TRUE { 0xc3 } else { 0xc2 };
                at += 1;
            }
        }
        self.out.advance(at);
        true
    }

    /// Tarantool's default rule, as [`Encoder::inspect`]: an array when
    /// every key is a positive integer and the array is not excessively
    /// sparse; its length is the largest key.
    fn raw_inspect(&mut self, t: &Table<'_>) -> Walk<Shape> {
        let (mut size, mut max) = (0f64, 0f64);
        for (i, v) in t.array().iter().enumerate() {
            if !v.is_nil() {
                if i == 0 {
                    return Ok(Shape::Map);
                }
                size += 1.0;
                max = i as f64;
            }
        }
        for n in t.slots() {
            if n.val().is_nil() {
                continue;
            }
            let Some(k) = n.key().number() else {
                return Ok(Shape::Map);
            };
            if !(k >= 1.0 && k.floor() == k) {
                return Ok(Shape::Map);
            }
            size += 1.0;
            max = max.max(k);
        }
        serializer::sparse_rule(size, max, &self.cfg).map_err(|_| Bail)
    }

    /// Elements `1..=n`: array slots, then keys in the hash part (Bail: the
    /// C API path reads those).
    fn raw_elements(&mut self, t: &Table<'_>, n: u32, level: u32) -> Walk {
        if n == 0 {
            return Ok(());
        }
        let Some(elements) = t.array().get(1..=n as usize) else {
            return Err(Bail);
        };
        for &v in elements {
            self.raw_value(t, v, level + 1)?;
        }
        Ok(())
    }

    /// Every key and value, in `lua_next` order; returns how many.
    fn raw_entries(&mut self, t: &Table<'_>, level: u32) -> Walk<u32> {
        let mut count: u32 = 0;
        for (i, &v) in t.array().iter().enumerate() {
            if !v.is_nil() {
                count = count.checked_add(1).ok_or(Bail)?;
                self.int(i as i64)?;
                self.raw_value(t, v, level + 1)?;
            }
        }
        for n in t.slots() {
            if !n.val().is_nil() {
                count = count.checked_add(1).ok_or(Bail)?;
                self.raw_value(t, n.key(), level + 1)?;
                self.raw_value(t, n.val(), level + 1)?;
            }
        }
        Ok(count)
    }
}

/// The keys of a table with a value.
fn count(t: &Table<'_>) -> u32 {
    let live = t.array().iter().filter(|v| !v.is_nil()).count()
        + t.slots().iter().filter(|n| !n.val().is_nil()).count();
    // A table holds fewer than 2^32 keys (LuaJIT's sizes are 32-bit).
    live as u32
}

/// The largest positive integer key, 0 if none (as [`Encoder::max_key`]).
fn max_key(t: &Table<'_>) -> u64 {
    let mut max = t.array().iter().rposition(|v| !v.is_nil()).unwrap_or(0) as f64;
    for n in t.slots() {
        if n.val().is_nil() || n.key().tag() > ISNUM {
            continue;
        }
        if let Some(k) = n.key().number() {
            if k > max && k.floor() == k {
                max = k;
            }
        }
    }
    max as u64
}
