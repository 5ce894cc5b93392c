//! [`Stack`]: the Lua stack of a running C function, as a safe handle.
//!
//! The frame ([`lua_fn!`](crate::raw::lua_fn)) makes one for each call from
//! the state Lua called the function with; a body then reads its arguments
//! and pushes its results through it, with no `unsafe` of its own. The
//! handle keeps what the C API leaves to its caller:
//!
//! - it knows the top (it is read once, at the start, and every operation
//!   keeps it), so it checks each index (raw rule 5) and refuses to pop
//!   more than there is;
//! - it counts the free slots (raw rule 4): a push past them calls
//!   `lua_checkstack` first;
//! - it offers only what cannot raise a Lua error (raw rule 2): raw table
//!   accesses on values it checked are tables, keys checked not to be nil
//!   or NaN;
//! - a string read from it borrows the handle, so nothing that could pop the
//!   string (every such operation takes `&mut self`) runs while the bytes
//!   are in use (raw rule 6).
//!
//! A push that finds no room even after `lua_checkstack` (the Lua stack is
//! at its limit) panics, which the frame turns into a Lua error (raw
//! rule 1); [`Stack::ensure`] asks first and reports it as a [`Raise`].

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

use mlua::ffi;

use super::{LResult, Raise};

mod call;
mod meta;
mod push;
mod table;

/// The stack of the C function running on a Lua state; see the module doc.
///
/// Not `Send`: a Lua state belongs to its thread.
pub struct Stack<'f> {
    l: *mut ffi::lua_State,
    /// The index of the top value (0: empty), as the C API would report it,
    /// once something needed it (reading it is a call into the engine,
    /// which a C function that never asks does without); until then
    /// `-1 - k`, where `k` values are known above the unknown bottom (the
    /// handle pushed them and has not popped them), so that indices
    /// `-1..=-k` are valid without asking.
    top: Cell<c_int>,
    /// Free slots known to be above the top (raw rule 4).
    room: c_int,
    _frame: PhantomData<&'f mut ffi::lua_State>,
}

impl<'f> Stack<'f> {
    /// The handle of the C function Lua called with `l`: `LUA_MINSTACK`
    /// free slots, the arguments below them.
    ///
    /// # Safety
    ///
    /// `l` is the state a C function was called with, that function is
    /// running, and nothing else uses `l`'s stack while the handle lives
    /// (the frame makes one per call and lends it to the body).
    #[inline(always)]
    pub unsafe fn from_frame(l: *mut ffi::lua_State) -> Stack<'f> {
        Stack {
            l,
            top: Cell::new(-1),
            room: ffi::LUA_MINSTACK,
            _frame: PhantomData,
        }
    }

    /// A handle on a state that runs no C function of ours: the cord's main
    /// thread at setup, a fiber's idle thread, or the state C code hands a
    /// function of the C module API (which may have used the slots its own
    /// C function was given). No free slot is assumed; pushes check for
    /// room. Rust code outside any C function's frame (and outside any
    /// protected call) uses [`Stack::outside`] instead, so that its
    /// allocations cannot raise where nothing would catch them.
    ///
    /// # Safety
    ///
    /// `l` is a valid state that no Lua code runs on while the handle
    /// lives, and nothing else uses its stack meanwhile.
    pub unsafe fn from_state(l: *mut ffi::lua_State) -> Stack<'f> {
        Stack {
            l,
            top: Cell::new(-1),
            room: 0,
            _frame: PhantomData,
        }
    }

    /// [`Stack::from_state`] for Rust code outside any C function's frame
    /// and outside any protected call (an embedding call pushing a name and
    /// arguments, the reading of a fiber's results, a runtime's drop): the
    /// handle's allocations are exempt from the memory limit while it
    /// lives ([`memory`](crate::raw::memory), raw rule 3), since a "not
    /// enough memory" error raised there would have no `lua_pcall` to land
    /// in and would abort the process. Code that pushed what its caller
    /// gave asks [`Outside::over_limit`] before it runs Lua code with it.
    ///
    /// # Safety
    ///
    /// As [`Stack::from_state`]; the handle is dropped in the fiber (or
    /// outside any fiber) where it was made.
    pub unsafe fn outside(l: *mut ffi::lua_State) -> Outside<'f> {
        Outside {
            _exempt: super::memory::Exempt::enter(),
            // SAFETY: caller's contract (a valid state).
            used: unsafe { super::memory::used(l) },
            // SAFETY: caller's contract.
            stack: unsafe { Stack::from_state(l) },
        }
    }

    /// The state, for `unsafe` code that works on it directly. Whatever
    /// that code pushes or pops it reports with [`Stack::sync`].
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut ffi::lua_State {
        self.l
    }

    /// Reads the top again after `unsafe` code changed the stack through
    /// [`Stack::as_ptr`]; the free slots count as none.
    ///
    /// # Safety
    ///
    /// The stack is as the C API leaves it (every change was made through
    /// the C API or keeps its invariants).
    pub unsafe fn sync(&mut self) {
        self.top.set(-1);
        self.room = 0;
    }

    /// Counts `n` values pushed by `unsafe` code that wrote them in place
    /// (LuaJIT's layout), within the room [`Stack::ensure`] gave.
    ///
    /// # Safety
    ///
    /// `n` values were pushed since the last operation of the handle, and
    /// `n` is at most the room it had.
    #[inline(always)]
    pub unsafe fn assume_pushed(&mut self, n: c_int) {
        self.bump(n);
        self.room -= n;
    }

    /// Counts `n` values pushed by `unsafe` code through the C API, after
    /// which the API left at least `room` free slots (it checked them).
    ///
    /// # Safety
    ///
    /// `n` values were pushed since the last operation of the handle, and
    /// `room` slots are free above them.
    #[inline(always)]
    pub unsafe fn pushed(&mut self, n: c_int, room: c_int) {
        self.bump(n);
        self.room = room;
    }

    /// The index of the top value: the number of values on the stack (at
    /// the start of a C function, its argument count).
    #[inline(always)]
    pub fn top(&self) -> c_int {
        self.t()
    }

    /// The free slots known above the top.
    #[inline(always)]
    pub fn room(&self) -> c_int {
        self.room
    }

    /// Makes sure `n` more values can be pushed.
    ///
    /// # Errors
    ///
    /// "stack overflow" (`IllegalParams`) when the Lua stack cannot grow
    /// that much.
    #[inline]
    pub fn ensure(&mut self, n: c_int) -> LResult<()> {
        if n <= self.room {
            return Ok(());
        }
        // SAFETY: `l` is valid; `lua_checkstack` only grows the stack (an
        // allocation, which does not fail on the limit here: raw rule 3).
        if n > 0 && unsafe { ffi::lua_checkstack(self.l, n) } == 0 {
            return Err(Raise::illegal("stack overflow"));
        }
        self.room = n;
        Ok(())
    }

    /// The top, read from the engine the first time it is needed.
    #[inline(always)]
    fn t(&self) -> c_int {
        let t = self.top.get();
        if t >= 0 {
            t
        } else {
            self.load_top()
        }
    }

    /// Whether at least `n` values are on the stack; asks the engine only
    /// when the values the handle knows of are not enough.
    #[inline(always)]
    fn has(&self, n: c_int) -> bool {
        let t = self.top.get();
        if t >= 0 {
            n <= t
        } else {
            n <= -1 - t || n <= self.load_top()
        }
    }

    #[inline(never)]
    fn load_top(&self) -> c_int {
        // SAFETY: `l` is valid (the handle's invariant).
        let t = unsafe { ffi::lua_gettop(self.l) };
        self.top.set(t);
        t
    }

    /// Moves the known top by `d`; an unknown top stays unknown, with `d`
    /// more values known above its bottom (none after a pop past them,
    /// which the callers check first).
    #[inline(always)]
    fn bump(&self, d: c_int) {
        let t = self.top.get();
        self.top.set(if t >= 0 { t + d } else { (t - d).min(-1) });
    }

    /// Takes one slot for a push.
    #[inline(always)]
    fn slot(&mut self) {
        if self.room < 1 {
            self.grow();
        }
        self.room -= 1;
        self.bump(1);
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        if self.ensure(ffi::LUA_MINSTACK).is_err() {
            panic!("the Lua stack is full");
        }
    }

    /// `idx` as the C API may be given it for a read (raw rule 5): a
    /// positive index past the top reads as none.
    #[inline(always)]
    fn readable(&self, idx: c_int) -> bool {
        idx > 0 || idx <= ffi::LUA_REGISTRYINDEX || (idx < 0 && self.has(-idx))
    }

    /// `idx` as an absolute index of a value on the stack, if it is one.
    #[inline(always)]
    fn on_stack(&self, idx: c_int) -> Option<c_int> {
        if idx > 0 && idx <= self.t() {
            Some(idx)
        } else if idx < 0 && -idx <= self.t() {
            Some(self.t() + idx + 1)
        } else {
            None
        }
    }

    /// The absolute index of `idx`; pseudo-indices stay as they are.
    ///
    /// # Panics
    ///
    /// Panics when `idx` is neither on the stack nor a pseudo-index.
    #[inline]
    pub fn abs(&self, idx: c_int) -> c_int {
        if idx <= ffi::LUA_REGISTRYINDEX {
            return idx;
        }
        match self.on_stack(idx) {
            Some(i) => i,
            None => invalid(idx),
        }
    }

    /// Runs the C API read `f` of the value at `idx`, when `idx` is
    /// acceptable.
    #[inline(always)]
    fn read<R>(
        &self,
        idx: c_int,
        f: unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int) -> R,
    ) -> Option<R> {
        if !self.readable(idx) {
            return None;
        }
        // SAFETY: an acceptable index (raw rule 5); each `f` given here
        // (`lua_type`, `lua_toboolean`, `lua_touserdata`, `lua_topointer`,
        // `lua_tothread`) only reads the value there.
        Some(unsafe { f(self.l, idx) })
    }

    /// The bytes of the string at `idx`, or of the number there converted
    /// to a string in place.
    ///
    /// # Safety
    ///
    /// The value at `idx` is a string or a number; the slice is used only
    /// while it stays on the stack (raw rule 6).
    #[inline(always)]
    unsafe fn tolstring<'s>(&self, idx: c_int) -> &'s [u8] {
        let mut len = 0;
        // SAFETY: caller's contract; `lua_tolstring` of a string or number
        // runs no metamethod and returns `len` bytes.
        unsafe {
            let p = ffi::lua_tolstring(self.l, idx, &mut len);
            std::slice::from_raw_parts(p.cast(), len)
        }
    }

    /// The Lua type of the value at `idx` (`LUA_TNONE` for an index past
    /// the top or an invalid one).
    #[inline(always)]
    pub fn type_of(&self, idx: c_int) -> c_int {
        self.read(idx, ffi::lua_type).unwrap_or(ffi::LUA_TNONE)
    }

    /// Whether the value at `idx` is nil or absent.
    #[inline(always)]
    pub fn is_none_or_nil(&self, idx: c_int) -> bool {
        self.type_of(idx) <= ffi::LUA_TNIL
    }

    /// The bytes of the string at `idx` (numbers are not converted).
    #[inline]
    pub fn to_str(&self, idx: c_int) -> Option<&[u8]> {
        if self.type_of(idx) != ffi::LUA_TSTRING {
            return None;
        }
        // SAFETY: a string; it stays on the stack while `&self` is borrowed
        // (raw rule 6: popping takes `&mut`).
        Some(unsafe { self.tolstring(idx) })
    }

    /// The number at `idx` (strings are not converted).
    #[inline]
    pub fn to_number(&self, idx: c_int) -> Option<f64> {
        if self.type_of(idx) != ffi::LUA_TNUMBER {
            return None;
        }
        // SAFETY: a number at an acceptable index.
        Some(unsafe { ffi::lua_tonumber(self.l, idx) })
    }

    /// The number at `idx`, or the number a numeric string at `idx` reads
    /// as (`lua_isnumber`; the string on the stack stays a string).
    #[inline]
    pub fn to_number_coerced(&self, idx: c_int) -> Option<f64> {
        match self.type_of(idx) {
            ffi::LUA_TNUMBER => self.to_number(idx),
            // SAFETY: a string at an acceptable index; `lua_isnumber` and
            // `lua_tonumber` only read it (no metamethod, no raise).
            ffi::LUA_TSTRING => unsafe {
                (ffi::lua_isnumber(self.l, idx) != 0).then(|| ffi::lua_tonumber(self.l, idx))
            },
            _ => None,
        }
    }

    /// The number at `idx` as an integer, when it is a number with an
    /// integral value that fits (Lua 5.4 floats included).
    #[inline]
    pub fn to_integer(&self, idx: c_int) -> Option<i64> {
        if self.type_of(idx) != ffi::LUA_TNUMBER {
            return None;
        }
        let mut exact = 0;
        // SAFETY: a number at an acceptable index.
        let i = unsafe { ffi::lua_tointegerx(self.l, idx, &mut exact) };
        (exact != 0).then_some(i as i64)
    }

    /// The bytes of the string or number at `idx`, a number converted to a
    /// string in place (`lua_tolstring`, which runs no metamethod).
    pub fn coerce_str(&mut self, idx: c_int) -> Option<&[u8]> {
        if !matches!(self.type_of(idx), ffi::LUA_TSTRING | ffi::LUA_TNUMBER) {
            return None;
        }
        // SAFETY: a string or number; the string stays on the stack while
        // `self` is borrowed (raw rule 6).
        Some(unsafe { self.tolstring(idx) })
    }

    /// Whether the value at `idx` is an integer (Lua 5.4's integer subtype;
    /// on LuaJIT, a number with an integral value).
    pub fn is_integer(&self, idx: c_int) -> bool {
        // SAFETY: an acceptable index (checked).
        self.readable(idx) && unsafe { ffi::lua_isinteger(self.l, idx) } != 0
    }

    /// The truth of the value at `idx`: false for nil, `false` and none.
    #[inline]
    pub fn to_bool(&self, idx: c_int) -> bool {
        self.read(idx, ffi::lua_toboolean).is_some_and(|b| b != 0)
    }

    /// The address of the (full or light) userdata at `idx`, or null.
    #[inline]
    pub fn to_userdata(&self, idx: c_int) -> *mut c_void {
        self.read(idx, ffi::lua_touserdata)
            .unwrap_or(std::ptr::null_mut())
    }

    /// The identity of the value at `idx` (`lua_topointer`), or null.
    #[inline]
    pub fn to_pointer(&self, idx: c_int) -> *const c_void {
        self.read(idx, ffi::lua_topointer)
            .unwrap_or(std::ptr::null())
    }

    /// The block of the userdata at `idx` when its metatable is the table at
    /// address `mt`, else `None`.
    ///
    /// A light userdata is not told apart from a full one, which only
    /// matters when the debug library gave light userdata one of the
    /// bridge's metatables (which can break memory safety in other ways
    /// too).
    #[inline]
    pub fn udata_with_mt(&mut self, idx: c_int, mt: *const c_void) -> Option<*mut c_void> {
        if !self.readable(idx) {
            return None;
        }
        if self.room < 1 {
            self.grow();
        }
        // SAFETY: an acceptable index (raw rule 5) and a free slot for the
        // metatable, which is popped at once (the handle's count stays).
        unsafe {
            let p = ffi::lua_touserdata(self.l, idx);
            if p.is_null() || ffi::lua_getmetatable(self.l, idx) == 0 {
                return None;
            }
            let same = ffi::lua_topointer(self.l, -1) == mt;
            ffi::lua_settop(self.l, -2);
            same.then_some(p)
        }
    }

    /// Sets the top to `idx` (absolute, or negative from the top): pops the
    /// values above it, or pushes nils up to it.
    ///
    /// # Panics
    ///
    /// Panics when a negative `idx` reaches below the bottom.
    #[inline]
    pub fn settop(&mut self, idx: c_int) {
        if idx < 0 {
            // Pops `n`: known without the top when the handle pushed them.
            let n = -idx - 1;
            assert!(self.has(n), "settop({idx}) below the bottom");
            self.bump(-n);
            self.room += n;
        } else if self.top.get() < 0 {
            // The top is unknown: count the room as if the stack were
            // empty (the most pushing `settop` may do), without asking.
            if self.room < idx && self.ensure(idx).is_err() {
                panic!("the Lua stack is full");
            }
            self.room -= idx;
            self.top.set(idx);
        } else {
            let t = self.t();
            if idx > t && self.ensure(idx - t).is_err() {
                panic!("the Lua stack is full");
            }
            self.room += t - idx;
            self.top.set(idx);
        }
        // SAFETY: a pop of values on the stack, or pushes of nils within
        // the room ensured.
        unsafe { ffi::lua_settop(self.l, idx) }
    }

    /// Pops `n` values (all, when fewer are there).
    #[inline]
    pub fn pop(&mut self, n: c_int) {
        let n = if n <= 0 {
            return;
        } else if self.has(n) {
            n
        } else {
            self.t()
        };
        self.settop(-n - 1);
    }

    /// Pops the top value into `idx`.
    ///
    /// # Panics
    ///
    /// Panics when `idx` is not on the stack.
    pub fn replace(&mut self, idx: c_int) {
        let idx = self.abs(idx);
        self.bump(-1);
        self.room += 1;
        // SAFETY: a valid index with a value on top.
        unsafe { ffi::lua_replace(self.l, idx) }
    }

    /// Removes the value at `idx`, moving those above down.
    ///
    /// # Panics
    ///
    /// Panics when `idx` is not on the stack.
    pub fn remove(&mut self, idx: c_int) {
        let Some(idx) = self.on_stack(idx) else {
            invalid(idx);
        };
        self.bump(-1);
        self.room += 1;
        // SAFETY: a value on the stack.
        unsafe { ffi::lua_remove(self.l, idx) }
    }

    /// Moves the top value to `idx`, moving those above up.
    ///
    /// # Panics
    ///
    /// Panics when `idx` is not on the stack.
    pub fn insert(&mut self, idx: c_int) {
        let Some(idx) = self.on_stack(idx) else {
            invalid(idx);
        };
        // SAFETY: a value on the stack.
        unsafe { ffi::lua_insert(self.l, idx) }
    }

    /// `lua_upvalueindex(i)`.
    #[inline(always)]
    pub const fn upvalue(i: c_int) -> c_int {
        ffi::lua_upvalueindex(i)
    }
}

#[cold]
#[inline(never)]
fn invalid(idx: c_int) -> ! {
    panic!("Lua stack index {idx} is not valid here")
}

#[cold]
#[inline(never)]
fn not_a_table(idx: c_int) -> ! {
    panic!("Lua stack index {idx} holds no table")
}

/// A [`Stack`] made by [`Stack::outside`]: its allocations are exempt from
/// the memory limit while it lives. Dereferences to the [`Stack`].
pub struct Outside<'f> {
    stack: Stack<'f>,
    /// The bytes the state had allocated when the handle was made (with a
    /// memory limit).
    used: Option<usize>,
    _exempt: super::memory::Exempt,
}

impl Outside<'_> {
    /// Whether what was allocated since the handle was made took the state
    /// past its memory limit: a call that pushed its caller's values then
    /// fails with "not enough memory" instead of running. (Pushing what
    /// needs no new memory, such as an interned name, never fails so.)
    pub fn over_limit(&self) -> bool {
        // SAFETY: the handle's state is valid (its invariant).
        unsafe { super::memory::grew_past_limit(self.stack.l, self.used) }
    }
}

impl<'f> std::ops::Deref for Outside<'f> {
    type Target = Stack<'f>;
    fn deref(&self) -> &Stack<'f> {
        &self.stack
    }
}

impl<'f> std::ops::DerefMut for Outside<'f> {
    fn deref_mut(&mut self) -> &mut Stack<'f> {
        &mut self.stack
    }
}
