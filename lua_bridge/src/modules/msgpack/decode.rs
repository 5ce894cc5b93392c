//! MsgPack to Lua values, checked as it goes.
//!
//! Rules, cited as "decode rule N" (raw rule 2: no Lua error may cross
//! it; and bad input must never crash nor make a huge allocation):
//!
//! 1. Every read is bounds-checked; truncated input is a `DecodeError`.
//! 2. A container's element count is checked against the bytes left (each
//!    element takes at least one byte) before its table is made.
//! 3. The decoder is a loop over an explicit stack of open containers, not
//!    a recursion, and open containers are limited by `decode_max_depth`
//!    (and by `lua_checkstack`).
//! 4. Only raw sets (`lua_rawseti`, `lua_rawset`); a NaN key raises before
//!    `lua_rawset` could.

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi;
use rmp::Marker;

use super::{Config, State};
use crate::raw::error::ErrorKind;
use crate::raw::{api, LResult, Raise, Stack};

fn error(name: &str, what: &str) -> Raise {
    Raise::Error(
        ErrorKind::DecodeError,
        format!("msgpack.{name}: invalid MsgPack: {what}"),
    )
}

/// What is wrong with the input, and where (1-based byte offsets): small
/// and `Copy`, so the hot path returns it in registers; made a [`Raise`]
/// only on the way out.
#[derive(Clone, Copy, Debug)]
enum Bad {
    Truncated(usize),
    Reserved(usize),
    Extension(usize),
    Count { n: u32, left: usize },
}

impl Bad {
    #[cold]
    fn raise(self, name: &str) -> Raise {
        match self {
            Bad::Truncated(at) => error(name, &format!("truncated data at byte {at}")),
            Bad::Reserved(at) => error(name, &format!("byte 0xc1 at byte {at}")),
            Bad::Extension(at) => Raise::Error(
                ErrorKind::DecodeError,
                format!("msgpack.{name}: unsupported MsgPack extension at byte {at}"),
            ),
            Bad::Count { n, left } => error(
                name,
                &format!("{n} elements claimed with {left} bytes left"),
            ),
        }
    }
}

/// The head of one MsgPack item.
enum Head<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a [u8]),
    Array(u32),
    Map(u32),
}

/// A bounds-checked reader (decode rule 1).
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        match self.data.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(Bad::Truncated(self.pos + 1)),
        }
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Bad> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    #[inline(always)]
    fn len(&mut self, width: usize) -> Result<u32, Bad> {
        Ok(match width {
            1 => u32::from(self.array::<1>()?[0]),
            2 => u32::from(u16::from_be_bytes(self.array()?)),
            _ => u32::from_be_bytes(self.array()?),
        })
    }

    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Reads one item's head (a scalar whole, a container's count).
    #[inline(always)]
    fn head(&mut self) -> Result<Head<'a>, Bad> {
        let at = self.pos + 1;
        let m = Marker::from_u8(self.array::<1>()?[0]);
        Ok(match m {
            Marker::FixPos(v) => Head::Int(i64::from(v)),
            Marker::FixNeg(v) => Head::Int(i64::from(v)),
            Marker::Null => Head::Nil,
            Marker::True => Head::Bool(true),
            Marker::False => Head::Bool(false),
            Marker::U8 => Head::Int(i64::from(self.array::<1>()?[0])),
            Marker::U16 => Head::Int(i64::from(u16::from_be_bytes(self.array()?))),
            Marker::U32 => Head::Int(i64::from(u32::from_be_bytes(self.array()?))),
            Marker::U64 => Head::Uint(u64::from_be_bytes(self.array()?)),
            Marker::I8 => Head::Int(i64::from(i8::from_be_bytes(self.array()?))),
            Marker::I16 => Head::Int(i64::from(i16::from_be_bytes(self.array()?))),
            Marker::I32 => Head::Int(i64::from(i32::from_be_bytes(self.array()?))),
            Marker::I64 => Head::Int(i64::from_be_bytes(self.array()?)),
            Marker::F32 => Head::Float(f64::from(f32::from_be_bytes(self.array()?))),
            Marker::F64 => Head::Float(f64::from_be_bytes(self.array()?)),
            Marker::FixStr(n) => Head::Str(self.take(usize::from(n))?),
            Marker::Str8 | Marker::Bin8 => {
                let n = self.len(1)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::Str16 | Marker::Bin16 => {
                let n = self.len(2)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::Str32 | Marker::Bin32 => {
                let n = self.len(4)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::FixArray(n) => Head::Array(u32::from(n)),
            Marker::Array16 => Head::Array(self.len(2)?),
            Marker::Array32 => Head::Array(self.len(4)?),
            Marker::FixMap(n) => Head::Map(u32::from(n)),
            Marker::Map16 => Head::Map(self.len(2)?),
            Marker::Map32 => Head::Map(self.len(4)?),
            Marker::Reserved => return Err(Bad::Reserved(at)),
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => return Err(Bad::Extension(at)),
        })
    }

    /// Checks a container's count against the bytes left (decode rule 2).
    #[inline(always)]
    fn check_count(&self, n: u32, per: usize) -> Result<(), Bad> {
        if (n as usize).saturating_mul(per) > self.left() {
            return Err(Bad::Count {
                n,
                left: self.left(),
            });
        }
        Ok(())
    }
}

/// The length of the one MsgPack value at the start of `data` (Tarantool's
/// `mp_check`): it walks the items with a count of those still due, so it
/// needs no stack whatever the nesting.
pub(super) fn extent(data: &[u8], name: &str) -> LResult<usize> {
    let mut r = Reader { data, pos: 0 };
    let mut due: u64 = 1;
    while due > 0 {
        due -= 1;
        match r.head().map_err(|b| b.raise(name))? {
            Head::Array(n) => {
                r.check_count(n, 1).map_err(|b| b.raise(name))?;
                due += u64::from(n);
            }
            Head::Map(n) => {
                r.check_count(n, 2).map_err(|b| b.raise(name))?;
                due += 2 * u64::from(n);
            }
            _ => {}
        }
        if due > r.left() as u64 {
            return Err(error(name, "truncated data"));
        }
    }
    Ok(r.pos)
}

/// An open container: what is still due and where the next array element
/// goes.
#[derive(Clone, Copy)]
struct Frame {
    /// Array elements, or map keys and values, still due.
    due: u64,
    /// The last array index set (arrays; in maps an odd `due` means a key
    /// waits for its value).
    next: u32,
    map: bool,
}

thread_local! {
    /// The open-container stack, reused so decoding allocates only Lua
    /// objects in steady state.
    static FRAMES: Cell<Vec<Frame>> = const { Cell::new(Vec::new()) };
}

pub(super) struct Decoder<'a> {
    st: &'a State,
    cfg: &'a Config,
    name: &'a str,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(st: &'a State, cfg: &'a Config, name: &'a str) -> Self {
        Decoder { st, cfg, name }
    }

    /// Pushes the value at the start of `data` onto `s`; returns the bytes
    /// it took. On error, the stack holds partial results (the caller
    /// raises).
    pub(super) fn decode(&self, s: &mut Stack, data: &[u8]) -> LResult<usize> {
        let mut frames = FRAMES.with(Cell::take);
        frames.clear();
        // SAFETY: `s` is the running C function's stack; `data` cannot
        // change while the decoder runs (Lua code run by the collector
        // cannot reach Rust's memory, nor change a Lua string). After it,
        // the handle learns what the decoder pushed: the one value, with
        // room for 3 more left (it checked for 4 before the last push), or,
        // on error, something it reads again.
        let r = unsafe {
            let r = self.run(s.as_ptr(), data, &mut frames);
            match r {
                Ok(_) => s.pushed(1, 3),
                Err(_) => s.sync(),
            }
            r
        };
        FRAMES.with(|f| f.set(frames));
        r
    }

    /// [`Decoder::decode`] of the string at argument 1 of `s`, from the
    /// 1-based byte position `pos`; returns the bytes it took from there.
    ///
    /// # Errors
    ///
    /// `IllegalParams` when `pos` is not within the string (or argument 1
    /// is none), and as [`Decoder::decode`].
    pub(super) fn decode_arg1(&self, s: &mut Stack, pos: f64) -> LResult<usize> {
        // SAFETY: the string at index 1 is never popped by the decoder (it
        // only pushes above the top), so its bytes stay put while the
        // decoder reads them (raw rule 6).
        let data = unsafe { api::to_str(s.as_ptr(), 1) }.unwrap_or_default();
        if !(pos >= 1.0 && pos <= data.len() as f64 && pos.fract() == 0.0) {
            return Err(Raise::illegal(format!(
                "msgpack.{}: offset is out of bounds",
                self.name
            )));
        }
        self.decode(s, &data[pos as usize - 1..])
    }

    /// The decoding loop, on the C API directly: through the [`Stack`]
    /// handle its per-push accounting cost 5% more instructions per decode
    /// (the room is checked here once per open container instead).
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
        // SAFETY: raw pushes and sets on tables this loop made (decode rule
        // 4);
        // the stack grows by at most 2 per open container, checked below.
        unsafe {
            if ffi::lua_checkstack(l, 4) == 0 {
                return Err(error(self.name, "no Lua stack left"));
            }
            loop {
                // Push one item; an open container continues with its first
                // element.
                let opened = match r.head().map_err(|b| b.raise(self.name))? {
                    Head::Nil => {
                        self.st.push_null(l);
                        false
                    }
                    Head::Bool(b) => {
                        ffi::lua_pushboolean(l, c_int::from(b));
                        false
                    }
                    Head::Int(i) => {
                        push_int(l, i);
                        false
                    }
                    Head::Uint(u) => {
                        match i64::try_from(u) {
                            Ok(i) => push_int(l, i),
                            Err(_) => ffi::lua_pushnumber(l, u as f64),
                        }
                        false
                    }
                    Head::Float(f) => {
                        if !f.is_finite() {
                            if !self.cfg.decode_invalid_numbers {
                                return Err(Raise::Error(
                                    ErrorKind::DecodeError,
                                    "number must not be NaN or Inf".into(),
                                ));
                            }
                            if f.is_nan() && frames.last().is_some_and(|f| f.map && f.due % 2 == 0)
                            {
                                return Err(error(self.name, "a map key is NaN"));
                            }
                        }
                        ffi::lua_pushnumber(l, f);
                        false
                    }
                    Head::Str(s) => {
                        api::push_bytes(l, s);
                        false
                    }
                    Head::Array(n) => {
                        r.check_count(n, 1).map_err(|b| b.raise(self.name))?;
                        self.open(l, frames, n, 0, false)?;
                        n > 0
                    }
                    Head::Map(n) => {
                        r.check_count(n, 2).map_err(|b| b.raise(self.name))?;
                        self.open(l, frames, 0, n, true)?;
                        n > 0
                    }
                };
                if opened {
                    continue;
                }
                // A value is complete on top: store it into its container,
                // and close every container that is complete with it.
                loop {
                    let Some(f) = frames.last_mut() else {
                        return Ok(r.pos);
                    };
                    if f.map {
                        if f.due % 2 == 0 {
                            // A key (a NaN key was refused as it was read).
                            f.due -= 1;
                            break;
                        }
                        ffi::lua_rawset(l, -3);
                    } else {
                        f.next += 1;
                        ffi::lua_rawseti(l, -2, ffi::lua_Integer::from(f.next));
                    }
                    f.due -= 1;
                    if f.due > 0 {
                        break;
                    }
                    frames.pop();
                }
            }
        }
    }

    /// Pushes a new table for a container of `narr` elements or `nrec`
    /// pairs, with its kind's metatable; opens a frame when it is not empty.
    ///
    /// # Safety
    ///
    /// As [`Decoder::run`].
    unsafe fn open(
        &self,
        l: *mut ffi::lua_State,
        frames: &mut Vec<Frame>,
        narr: u32,
        nrec: u32,
        map: bool,
    ) -> LResult<()> {
        if frames.len() >= self.cfg.decode_max_depth as usize {
            return Err(error(
                self.name,
                &format!("nesting deeper than {} levels", self.cfg.decode_max_depth),
            ));
        }
        // SAFETY: room for the table and a pending key was checked.
        unsafe {
            if ffi::lua_checkstack(l, 4) == 0 {
                return Err(error(self.name, "nesting too deep for the Lua stack"));
            }
            let hint = |n: u32| n.min(1 << 20) as c_int;
            ffi::lua_createtable(l, hint(narr), hint(nrec));
            if self.cfg.decode_save_metatables {
                api::push_registry_ref(
                    l,
                    if map {
                        self.st.map_mt
                    } else {
                        self.st.array_mt
                    },
                );
                ffi::lua_setmetatable(l, -2);
            }
        }
        let due = if map {
            2 * u64::from(nrec)
        } else {
            u64::from(narr)
        };
        if due > 0 {
            frames.push(Frame { due, next: 0, map });
        }
        Ok(())
    }
}

/// Pushes an integer: a Lua integer on 5.4, a number on LuaJIT.
///
/// # Safety
///
/// `l` is a valid state with room for one value.
unsafe fn push_int(l: *mut ffi::lua_State, i: i64) {
    // SAFETY: caller's contract (room for one value).
    unsafe {
        #[cfg(feature = "luajit")]
        ffi::lua_pushnumber(l, i as f64);
        #[cfg(not(feature = "luajit"))]
        ffi::lua_pushinteger(l, i);
    }
}
