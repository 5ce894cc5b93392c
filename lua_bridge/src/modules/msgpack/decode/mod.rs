//! MsgPack to Lua values (Tarantool's `luamp_decode`), checked as it goes.
//!
//! Rules, cited as "decode rule N" (raw rule 2: no Lua error may cross
//! it; and bad input must never crash nor make a huge allocation):
//!
//! 1. Every read is bounds-checked ([`reader`]); truncated input raises
//!    Tarantool's `ClientError`.
//! 2. A container's element count is checked against the bytes left (each
//!    element takes at least one byte) before its table is made.
//! 3. The decoder is a loop over an explicit stack of open containers, not
//!    a recursion; each open container takes at most 2 Lua stack slots,
//!    checked with `lua_checkstack` (its failure is the only depth limit,
//!    as in Tarantool, whose `decode_max_depth` applies to JSON).
//! 4. Only raw sets (`lua_rawseti`, `lua_rawset`, or their in-place form of
//!    [`Fill`]); a NaN key raises before `lua_rawset` could.
//! 5. On LuaJIT, an integer past `±(1e14 - 1)` is an `int64_t` or `uint64_t`
//!    cdata (Tarantool's `luaL_pushint64`/`luaL_pushuint64`), made by a Lua
//!    function under `lua_pcall`.
//! 6. An extension of the library's value types (uuid, ...) is made by its
//!    module's value type ([`ext::push`]: a constructor under `lua_pcall`,
//!    and the module's `require` under `lua_pcall` the first time); a body
//!    its type refuses is "invalid extension". Other extensions raise.

pub(crate) mod reader;
#[cfg(feature = "luajit")]
pub(crate) mod short_strings;

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi;

use super::State;
use crate::luajit::fill::Fill;
use crate::luajit::obj::{GcTab, Word};
use crate::modules::ext;
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{api, LResult, Raise, Stack};
use reader::{Head, Reader};

/// Integers within this magnitude decode to Lua numbers on LuaJIT
/// (`DBL_INT_MAX` of Tarantool's `utils.c`); others to 64-bit cdata.
pub(crate) const DBL_INT_MAX: i64 = 100_000_000_000_000 - 1;

/// An open container: what is still due and where the next array element
/// goes.
#[derive(Clone, Copy)]
struct Frame {
    /// Array elements, or map keys and values, still due.
    due: u64,
    /// The last array index set (arrays).
    next: u32,
    map: bool,
    /// A map's pending integer key, set with `lua_rawseti` (not pushed).
    int_key: Option<i32>,
    /// The table, for in-place stores (null without [`Fill`]).
    tab: *mut GcTab,
}

/// Per-cord state of the decoder (a part of the cord context): the
/// open-container stack, reused so decoding allocates only Lua objects in
/// steady state.
#[derive(Default)]
pub(crate) struct DecodeFrames(Cell<Vec<Frame>>);

/// The error of a non-finite number when the config refuses them
/// (Tarantool's `luaL_checkfinite`, a string).
fn not_finite() -> Raise {
    Raise::Message("number must not be NaN or Inf".into())
}

/// What the decoder reads of a module's state: a few words, copied per
/// call (not the whole [`State`]), so Lua code the collector runs meanwhile
/// (which may call `msgpack.cfg`) never aliases a borrow.
#[derive(Clone, Copy)]
struct Dec {
    invalid_numbers: bool,
    save_metatables: bool,
    fill: Option<Fill>,
    null: c_int,
    null_word: Option<Word>,
    array_mt: c_int,
    map_mt: c_int,
    array_mt_ptr: *const GcTab,
    map_mt_ptr: *const GcTab,
    /// The 64-bit integer cdata constructors (decode rule 5, LuaJIT's).
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    new_i64: c_int,
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    new_u64: c_int,
}

/// Slots the decoder asks `lua_checkstack` for at once: room for this many
/// minus 4 pushes before it asks again.
const ROOM: c_int = 40;

/// The bytes [`Decoder::decode_from`] reads.
#[derive(Clone, Copy)]
enum Src<'d> {
    Bytes(&'d [u8]),
    /// The string that is the only value on the stack ([`Fill`] only).
    OnlyArg,
    /// The string at index 1, from this offset on.
    Arg(usize),
}

/// Pushes the integer `i` as a Lua number (an integer on Lua 5.4), in
/// place with [`Fill`].
///
/// # Safety
///
/// `l` is a live state with a free checked slot; on LuaJIT `i` is within
/// `±DBL_INT_MAX` (decode rule 5).
#[inline(always)]
unsafe fn push_int(l: *mut ffi::lua_State, fill: Option<Fill>, i: i64) {
    // SAFETY: caller's contract; an integral double is a word of fill
    // rule 4 (not a NaN).
    unsafe {
        #[cfg(feature = "luajit")]
        match fill {
            Some(fill) => fill.push_word(l, (i as f64).to_bits()),
            None => ffi::lua_pushnumber(l, i as f64),
        }
        #[cfg(not(feature = "luajit"))]
        {
            let _ = fill;
            ffi::lua_pushinteger(l, i);
        }
    }
}

pub(crate) struct Decoder {
    st: Dec,
}

impl Decoder {
    pub(crate) fn new(st: &State) -> Self {
        Decoder {
            st: Dec {
                invalid_numbers: st.cfg.decode_invalid_numbers,
                save_metatables: st.cfg.decode_save_metatables,
                fill: st.x.fill,
                null: st.null,
                null_word: st.x.null_word,
                array_mt: st.array_mt,
                map_mt: st.map_mt,
                array_mt_ptr: st.x.array_mt_ptr,
                map_mt_ptr: st.x.map_mt_ptr,
                new_i64: st.x.new_i64,
                new_u64: st.x.new_u64,
            },
        }
    }

    /// Pushes the value at the start of `data` onto `s`; returns the bytes
    /// it took. On error, the stack holds partial results (the caller
    /// raises).
    #[inline]
    pub(crate) fn decode(&self, s: &mut Stack, data: &[u8]) -> LResult<usize> {
        match self.decode_from(s, Src::Bytes(data)) {
            Some(r) => r,
            None => unreachable!("bytes are always there"),
        }
    }

    /// [`Decoder::decode`] of the string that is the only value on `s` (the
    /// hot path of `decode(s)`, read in place), or `None` when there is no
    /// such string or no [`Fill`].
    #[inline]
    pub(crate) fn decode_only_arg(&self, s: &mut Stack) -> Option<LResult<usize>> {
        self.decode_from(s, Src::OnlyArg)
    }

    /// [`Decoder::decode`] of the bytes from `offset` on of the string at
    /// index 1 (nothing for another value there).
    ///
    /// # Panics
    ///
    /// Panics when `offset` is past the string's end.
    #[inline]
    pub(crate) fn decode_arg(&self, s: &mut Stack, offset: usize) -> LResult<usize> {
        match self.decode_from(s, Src::Arg(offset)) {
            Some(r) => r,
            None => unreachable!("a string or none"),
        }
    }

    /// Pushes the `n` values that `data` holds one after another (an
    /// array's items: a request's arguments) and returns the bytes they
    /// took. A scalar is pushed as it is read (no open-container stack, no
    /// `lua_checkstack` per value: the hot path of a CALL's arguments);
    /// containers and extensions go through [`Decoder::decode`]. On error,
    /// the stack holds partial results (the caller raises).
    pub(crate) fn decode_items(&self, s: &mut Stack, data: &[u8], n: u32) -> LResult<usize> {
        s.ensure(n as c_int + 4)?;
        let mut r = Reader { data, pos: 0 };
        for left in (1..=n).rev() {
            let at = r.pos;
            // The commonest arguments, a small non-negative integer and a
            // short string, pushed with no `Head` made.
            match data.get(at) {
                Some(&b) if b < 0x80 => {
                    // SAFETY: room for `left` values was ensured (this one
                    // included).
                    unsafe {
                        push_int(s.as_ptr(), self.st.fill, i64::from(b));
                        s.assume_pushed(1);
                    }
                    r.pos = at + 1;
                    continue;
                }
                Some(&b) if b & 0xe0 == 0xa0 => {
                    let end = at + 1 + usize::from(b & 0x1f);
                    if let Some(bytes) = data.get(at + 1..end) {
                        self.push_short_str(s, bytes);
                        r.pos = end;
                        continue;
                    }
                }
                _ => {}
            }
            let head = r.head().map_err(|b| b.raise())?;
            if let Head::Array(_) | Head::Map(_) | Head::Ext(..) = head {
                r.pos = at + self.decode(s, &data[at..])?;
                // The decode left less room than the handle had.
                s.ensure(left as c_int + 4)?;
                continue;
            }
            // SAFETY: room for `left` values was ensured above (this one
            // included); a scalar at the top level has no container.
            unsafe {
                self.push_scalar(s.as_ptr(), self.st.fill, head, &[], &r)?;
                s.assume_pushed(1);
            }
        }
        Ok(r.pos)
    }

    /// Pushes the string `bytes` (at most 31 of them) onto `s`, which has
    /// room for it and one more value: on LuaJIT one seen again lately
    /// through its kept word ([`short_strings::push`]).
    #[inline(always)]
    fn push_short_str(&self, s: &mut Stack, bytes: &[u8]) {
        #[cfg(feature = "luajit")]
        if let Some(fill) = self.st.fill {
            if short_strings::push(fill, s, bytes) {
                return;
            }
        }
        // SAFETY: room for one value (the caller's).
        unsafe {
            api::push_bytes(s.as_ptr(), bytes);
            s.assume_pushed(1);
        }
    }

    /// The one body of the entries above, so that [`Decoder::run`] is
    /// inlined into it once.
    #[inline(never)]
    fn decode_from(&self, s: &mut Stack, src: Src<'_>) -> Option<LResult<usize>> {
        // The string of an argument is borrowed from `s` (raw rule 6): it
        // stays on the stack, the decoder only pushing above it.
        let data = match src {
            Src::Bytes(data) => data,
            Src::OnlyArg => self.st.fill?.only_arg_str(s)?,
            Src::Arg(offset) => &s.to_str(1).unwrap_or_default()[offset..],
        };
        let mut frames = DecodeFrames::try_with(|f| f.0.take()).unwrap_or_default();
        frames.clear();
        // SAFETY: `s` is the running C function's stack; `data` cannot
        // change while the decoder runs (Lua code run by the collector
        // cannot reach Rust's memory, nor change a Lua string, and the
        // callers keep pointer data alive). After it, the handle learns what
        // the decoder pushed: the one value, with room for 3 more left (it
        // checked for 4 before the last push), or, on error, something it
        // reads again.
        let r = unsafe {
            let r = self.run(s.as_ptr(), data, &mut frames);
            match r {
                Ok(_) => s.pushed(1, 3),
                Err(_) => s.sync(),
            }
            r
        };
        DecodeFrames::try_with(|f| f.0.set(frames));
        Some(r)
    }

    /// The decoding loop, on the C API directly (and [`Fill`]'s in-place
    /// writes on LuaJIT): through the [`Stack`] handle its per-push
    /// accounting cost 5% more instructions per decode (the room is checked
    /// here once per open container instead).
    ///
    /// # Safety
    ///
    /// `l` is the stack of the running C function, and no handle on it is
    /// used meanwhile; `data` does not change while this runs.
    unsafe fn run(
        &self,
        l: *mut ffi::lua_State,
        data: &[u8],
        frames: &mut Vec<Frame>,
    ) -> LResult<usize> {
        let mut r = Reader { data, pos: 0 };
        let fill = self.st.fill;
        // SAFETY: raw pushes and sets on tables this loop made (decode rule
        // 4), in place only as `Fill` allows; the stack grows by at most 2
        // per open container, checked in `open`.
        unsafe {
            let mut room = 0;
            loop {
                let head = r.head().map_err(|b| b.raise())?;
                // An array element that is a scalar goes into its slot in
                // place when it can.
                if let (Some(fill), Some(f)) = (fill, frames.last_mut()) {
                    if !f.map {
                        if let Some(w) = self.scalar_word(fill, head) {
                            if fill.store(f.tab, f.next + 1, w) {
                                f.next += 1;
                                f.due -= 1;
                                if f.due > 0 {
                                    continue;
                                }
                                frames.pop();
                                // The array is complete on top: store it.
                                if self.close(l, Some(fill), frames) {
                                    return Ok(r.pos);
                                }
                                continue;
                            }
                        }
                    }
                }
                let opened = match head {
                    Head::Int(i) if self.int_key_due(frames, i) => {
                        let f = frames.last_mut().expect("a map is open");
                        f.int_key = Some(i as i32);
                        f.due -= 1;
                        continue;
                    }
                    Head::Array(n) => {
                        r.check_count(n, 1).map_err(|b| b.raise())?;
                        self.open(l, frames, &mut room, n, false)?
                    }
                    Head::Map(n) => {
                        r.check_count(n, 2).map_err(|b| b.raise())?;
                        self.open(l, frames, &mut room, n, true)?
                    }
                    head if frames.is_empty() => {
                        if ffi::lua_checkstack(l, 4) == 0 {
                            return Err(Raise::Message("msgpack.decode: no Lua stack left".into()));
                        }
                        self.push_scalar(l, fill, head, frames, &r)?;
                        false
                    }
                    head => {
                        self.push_scalar(l, fill, head, frames, &r)?;
                        false
                    }
                };
                if opened {
                    continue;
                }
                if self.close(l, fill, frames) {
                    return Ok(r.pos);
                }
            }
        }
    }

    /// Stores the complete value on top into its container, and closes
    /// every container complete with it; true when it was the root's
    /// value (the decode is done).
    ///
    /// # Safety
    ///
    /// As [`Decoder::run`], with a value on top for the innermost open
    /// container (or the root).
    #[inline(always)]
    unsafe fn close(
        &self,
        l: *mut ffi::lua_State,
        fill: Option<Fill>,
        frames: &mut Vec<Frame>,
    ) -> bool {
        loop {
            let Some(f) = frames.last_mut() else {
                return true;
            };
            if f.map && f.due % 2 == 0 {
                // A key (a NaN key was refused as it was read).
                f.due -= 1;
                return false;
            }
            // SAFETY: a map table under its key and value, or under its
            // value when the key is an integer kept aside; an array table
            // under its element.
            unsafe {
                if f.map {
                    match f.int_key.take() {
                        Some(k) => ffi::lua_rawseti(l, -2, k.into()),
                        None => ffi::lua_rawset(l, -3),
                    }
                } else {
                    f.next += 1;
                    let stored = fill.is_some_and(|fill| fill.pop_into(l, f.tab, f.next));
                    if !stored {
                        ffi::lua_rawseti(l, -2, ffi::lua_Integer::from(f.next));
                    }
                }
            }
            f.due -= 1;
            if f.due > 0 {
                return false;
            }
            frames.pop();
        }
    }

    /// Whether the integer `i` just read is a map key to keep aside (set
    /// with `lua_rawseti` once its value is there).
    #[inline(always)]
    fn int_key_due(&self, frames: &[Frame], i: i64) -> bool {
        matches!(frames.last(), Some(f) if f.map && f.due % 2 == 0) && i32::try_from(i).is_ok()
    }

    /// The word of a scalar that [`Fill`] may store in place (none for
    /// strings, NaN, big integers, extensions).
    #[inline(always)]
    fn scalar_word(&self, fill: Fill, head: Head<'_>) -> Option<Word> {
        match head {
            Head::Int(i) if (-DBL_INT_MAX..=DBL_INT_MAX).contains(&i) => Some((i as f64).to_bits()),
            Head::Float(f) if f.is_finite() => Some(f.to_bits()),
            Head::Bool(b) => Some(fill.bool_word(b)),
            Head::Nil => self.st.null_word,
            _ => None,
        }
    }

    /// Pushes a scalar item: an integer is a Lua integer on 5.4; on LuaJIT
    /// a number within [`DBL_INT_MAX`], else an `int64_t` or `uint64_t`
    /// cdata (decode rule 5); an unsigned integer past `i64::MAX` is a
    /// float on 5.4.
    ///
    /// # Safety
    ///
    /// As [`Decoder::run`], with room for one value.
    unsafe fn push_scalar(
        &self,
        l: *mut ffi::lua_State,
        fill: Option<Fill>,
        head: Head<'_>,
        frames: &[Frame],
        r: &Reader<'_>,
    ) -> LResult<()> {
        // SAFETY: caller's contract (room for one value).
        unsafe {
            // An integer, and an unsigned one when it is the same value.
            let push_int = |i: i64| -> LResult<()> {
                #[cfg(feature = "luajit")]
                if !(-DBL_INT_MAX..=DBL_INT_MAX).contains(&i) {
                    return self.push_cdata(l, self.st.new_i64, i as u64);
                }
                push_int(l, fill, i);
                Ok(())
            };
            match head {
                Head::Nil if self.st.null == ffi::LUA_NOREF => {
                    ffi::lua_pushlightuserdata(l, std::ptr::null_mut())
                }
                Head::Nil => api::push_registry_ref(l, self.st.null),
                Head::Bool(b) => ffi::lua_pushboolean(l, c_int::from(b)),
                Head::Int(i) => push_int(i)?,
                Head::Uint(u) => match i64::try_from(u) {
                    Ok(i) if i <= DBL_INT_MAX || !cfg!(feature = "luajit") => push_int(i)?,
                    #[cfg(feature = "luajit")]
                    _ => return self.push_cdata(l, self.st.new_u64, u),
                    #[cfg(not(feature = "luajit"))]
                    _ => ffi::lua_pushnumber(l, u as f64),
                },
                Head::Float(f) => {
                    if !f.is_finite() {
                        if !self.st.invalid_numbers {
                            return Err(not_finite());
                        }
                        if f.is_nan() && frames.last().is_some_and(|f| f.map && f.due % 2 == 0) {
                            return Err(Raise::Message("table index is NaN".into()));
                        }
                    }
                    match fill {
                        Some(fill) if !f.is_nan() => fill.push_word(l, f.to_bits()),
                        _ => ffi::lua_pushnumber(l, f),
                    }
                }
                Head::Str(s) => api::push_bytes(l, s),
                Head::Ext(t, body) if ext::known(t) => {
                    // Decode rule 6: made by its module's value type. A
                    // handle on `l` for it (nothing else uses the stack
                    // until it returns; `run`'s caller syncs its own).
                    let mut s = Stack::from_state(l);
                    if let Err(e) = ext::push(&mut s, t, body) {
                        // Bad input before the extension is what Tarantool's
                        // check (before the decode) reports.
                        return Err(reader::check(r.data).map_or_else(|b| b.raise(), |_| e));
                    }
                }
                Head::Ext(t, _) => {
                    // Bad input before the extension is what Tarantool's
                    // check (before the decode) reports.
                    if let Err(b) = reader::check(r.data) {
                        return Err(b.raise());
                    }
                    return Err(Raise::Error(
                        ErrorKind::IllegalParams,
                        format!("Unsupported MsgPack extension type: {t}"),
                    ));
                }
                Head::Array(_) | Head::Map(_) => unreachable!("containers are opened"),
            }
        }
        Ok(())
    }

    /// Pushes a new 64-bit integer cdata holding `bits`, made by the Lua
    /// function of registry ref `make` (decode rule 5).
    ///
    /// # Safety
    ///
    /// As [`Decoder::push_scalar`].
    #[cold]
    #[cfg(feature = "luajit")]
    unsafe fn push_cdata(&self, l: *mut ffi::lua_State, make: c_int, bits: u64) -> LResult<()> {
        // SAFETY: caller's contract (room for one value); the constructor
        // takes no argument and returns a new 8-byte cdata, whose payload
        // `lua_topointer` gives (luajit rule 1: the constructor's ctype was
        // made by the probe of `new_i64`).
        unsafe {
            if make == ffi::LUA_NOREF {
                ffi::lua_pushnumber(l, bits as i64 as f64);
                return Ok(());
            }
            api::push_registry_ref(l, make);
            if ffi::lua_pcall(l, 0, 1, 0) != 0 {
                return Err(Raise::Top);
            }
            ffi::lua_topointer(l, -1)
                .cast::<u64>()
                .cast_mut()
                .write(bits);
        }
        Ok(())
    }

    /// Pushes a new table for a container of `n` elements or pairs, with
    /// its kind's metatable; opens a frame when it is not empty (and says
    /// so).
    ///
    /// # Safety
    ///
    /// As [`Decoder::run`].
    unsafe fn open(
        &self,
        l: *mut ffi::lua_State,
        frames: &mut Vec<Frame>,
        room: &mut c_int,
        n: u32,
        map: bool,
    ) -> LResult<bool> {
        let st = self.st;
        let hint = n.min(1 << 20) as c_int;
        // SAFETY: room for the table, a pending key and a value was checked
        // (decode rule 3).
        let tab = unsafe {
            if *room < 4 {
                if ffi::lua_checkstack(l, ROOM) == 0 {
                    return Err(Raise::Message(
                        "msgpack.decode: nesting too deep for the Lua stack".into(),
                    ));
                }
                *room = ROOM;
            }
            *room -= 2;
            let (narr, nrec) = if map { (0, hint) } else { (hint, 0) };
            ffi::lua_createtable(l, narr, nrec);
            match st.fill {
                Some(fill) => {
                    let tab = fill.top_table(l);
                    if st.save_metatables {
                        let mt = if map { st.map_mt_ptr } else { st.array_mt_ptr };
                        fill.set_fresh_metatable(tab, mt);
                    }
                    tab
                }
                None => {
                    if st.save_metatables {
                        let mt = if map { st.map_mt } else { st.array_mt };
                        api::push_registry_ref(l, mt);
                        ffi::lua_setmetatable(l, -2);
                    }
                    std::ptr::null_mut()
                }
            }
        };
        let due = if map { 2 * u64::from(n) } else { u64::from(n) };
        if due > 0 {
            frames.push(Frame {
                due,
                next: 0,
                map,
                int_key: None,
                tab,
            });
        }
        Ok(due > 0)
    }
}
