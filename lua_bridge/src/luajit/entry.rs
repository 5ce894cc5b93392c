//! The entry of the blocking C functions (`cond:wait`, `ch:get`, `ch:put`)
//! read and written in place: argument 1's userdata, a number argument,
//! the result (a boolean or a number), and the two facts of the switch
//! guard that LuaJIT's C API costs a call each for (the state's identity
//! and whether its collector may run).
//!
//! Through the C API each of those is a call: on LuaJIT `lua_touserdata`
//! walks `index2adr`, `lua_gc(l, LUA_GCISRUNNING)` goes through the API's
//! switch. Here they are a load or two from the state itself, through an
//! [`Entry`], which only the probe makes (luajit rule 1). The argument
//! readers trust what the Lua wrappers checked (`wrappers.lua`): that is
//! their `# Safety` contract; the pushes check the stack's room.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use std::mem::size_of;

use super::obj::{gcptr, itype, Global, State, Udata, Word, ISNUM, MAX_MEM, UDATA};
use crate::raw::context::Part;
use crate::raw::{Kind, Stack};

/// What the probe learnt of the C function frame: the token of the
/// in-place entry readers.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    /// The `TValue` words of `false` and `true`, as `lua_pushboolean`
    /// wrote them in the probe (luajit rule 4: no GC object in them).
    pub(super) bools: [Word; 2],
}

/// An [`Entry`] kept in a thread-local, or none (all zero: no boolean's
/// word is 0). Not an `Option`: a niche in a thread-local's value makes
/// every access test it for the "destroyed" state that a `const`
/// thread-local never has.
#[derive(Clone, Copy)]
pub(crate) struct Slot([Word; 2]);

impl Slot {
    /// No token.
    pub(crate) const NONE: Slot = Slot([0; 2]);

    /// `e` in a slot.
    pub(crate) fn of(e: Option<Entry>) -> Slot {
        e.map_or(Slot::NONE, |e| Slot(e.bools))
    }

    /// The token it holds.
    #[inline(always)]
    pub(crate) fn get(self) -> Option<Entry> {
        (self.0[0] != 0).then_some(Entry { bools: self.0 })
    }
}

/// Per-cord state of the fast paths (a part of the cord context): the
/// entry token of the cord's state, while the cord is installed.
pub(crate) struct EntrySlot(Cell<Slot>);

impl Default for EntrySlot {
    fn default() -> EntrySlot {
        EntrySlot(Cell::new(Slot::NONE))
    }
}

/// The entry token, when the probe of this thread's cord made one (the
/// fast paths are on).
#[inline(always)]
pub(crate) fn entry() -> Option<Entry> {
    EntrySlot::try_with(|e| e.0.get().get()).flatten()
}

/// Makes `e` the token of this thread's cord (`None`: fast paths off).
pub(super) fn set(e: Option<Entry>) {
    EntrySlot::try_with(|c| c.0.set(Slot::of(e)));
}

/// The head of the state `s` runs on.
#[inline(always)]
fn state<'a>(s: &'a Stack) -> &'a State {
    // SAFETY: `s` is a valid state of the layout the probe checked (luajit
    // rule 1), alive while `s` is borrowed.
    unsafe { &*s.as_ptr().cast::<State>() }
}

impl Entry {
    /// The identity of `s`'s Lua state: its `global_State` (`G(L)`), the
    /// same for every thread of one state.
    #[inline(always)]
    pub(crate) fn identity(self, s: &Stack) -> *const c_void {
        state(s).glref.cast()
    }

    /// The globals table of the thread `l` (`LUA_GLOBALSINDEX`), read in
    /// place (`lua_topointer` of it walks `index2adr`).
    ///
    /// # Safety
    ///
    /// `l` is a live thread of the state the probe checked.
    #[cfg(feature = "luajit")]
    #[inline(always)]
    pub(crate) unsafe fn globals(self, l: *mut mlua::ffi::lua_State) -> *const super::obj::GcTab {
        // SAFETY: the caller's contract; `env` of the checked layout
        // (luajit rule 1).
        unsafe { (*l.cast::<State>()).env }
    }

    /// The word of the value at `idx` (1-based, from the bottom of the
    /// running frame, as the C API counts) of `s`'s stack, read in place;
    /// `None` when `idx` is not below the top.
    #[inline(always)]
    pub(crate) fn value(self, s: &Stack, idx: c_int) -> Option<Word> {
        let st = state(s);
        let n = (st.top.cast_const() as usize - st.base as usize) / size_of::<Word>();
        let i = usize::try_from(idx).ok().filter(|&i| i >= 1 && i <= n)?;
        // SAFETY: a slot of the frame below `top` (just checked), of the
        // checked layout.
        Some(unsafe { *st.base.add(i - 1) })
    }

    /// Whether the collector of `s`'s state may run now: false inside a
    /// `__gc` finalizer and after `collectgarbage("stop")` (what
    /// `LUA_GCISRUNNING` reports, read in place).
    #[inline(always)]
    pub(crate) fn gc_may_run(self, s: &Stack) -> bool {
        // SAFETY: `glref` of a live state points to its live `global_State`,
        // of the checked layout.
        unsafe { (*state(s).glref.cast::<Global>()).threshold != MAX_MEM }
    }

    /// The word of argument `i` (1-based) of the running C function.
    ///
    /// # Safety
    ///
    /// The running C function has at least `i` arguments.
    #[inline(always)]
    unsafe fn arg(self, s: &Stack, i: usize) -> Word {
        // SAFETY: `base` is argument 1 of the running C function; the
        // caller's contract keeps `base + i - 1` below `top`.
        unsafe { *state(s).base.add(i - 1) }
    }

    /// Pushes `b` (`lua_pushboolean`, in place).
    #[inline(always)]
    pub(crate) fn push_bool(self, s: &mut Stack, b: bool) {
        self.push_word(s, self.bools[usize::from(b)]);
    }

    /// Pushes the integer `n` as LuaJIT's number (`lua_pushinteger`, in
    /// place).
    #[inline(always)]
    pub(crate) fn push_int(self, s: &mut Stack, n: c_int) {
        self.push_word(s, f64::from(n).to_bits());
    }

    /// Writes `word`, a value holding no GC object (luajit rule 4), at the
    /// top.
    #[inline(always)]
    fn push_word(self, s: &mut Stack, word: Word) {
        if s.room() < 1 && s.ensure(1).is_err() {
            panic!("the Lua stack is full");
        }
        // SAFETY: a free slot at `top` (just counted), of the checked
        // layout; the handle is told of the push at once.
        unsafe {
            let st = &mut *s.as_ptr().cast::<State>();
            *st.top = word;
            st.top = st.top.add(1);
            s.assume_pushed(1);
        }
    }
}

/// The `T` of argument `i` (1-based) of the running C function when it
/// is a userdata of `kind`, cloned out: checked in place when the probe
/// made the token, else through the C API ([`Kind::get`]).
#[inline(always)]
pub(crate) fn arg_of<T: Clone + 'static>(s: &mut Stack, i: c_int, kind: Kind<T>) -> Option<T> {
    assert!(i > 0, "arg_of: argument {i}");
    match arg_udata_with_mt(s, i as usize, kind.metatable_ptr()) {
        // SAFETY: the block of argument `i`, a userdata whose metatable is
        // the kind's (checked in place), on the stack.
        Some(p) => (!p.is_null()).then(|| unsafe { kind.clone_from_block(p) }),
        None => kind.get(s, i),
    }
}

/// The `T` of argument 1 of the running C function, a userdata of `kind`,
/// cloned out without checking its metatable again: read in place when the
/// probe made the token.
///
/// # Safety
///
/// Argument 1 of the running C function is a userdata of `kind` (the Lua
/// wrappers checked its metatable, `wrappers.lua`).
#[inline(always)]
pub(crate) unsafe fn arg1_of_kind<T: Clone + 'static>(s: &Stack, kind: Kind<T>) -> T {
    let p = match entry() {
        // SAFETY: caller's contract: argument 1 is there; a userdata's
        // payload follows its `GCudata` head (luajit rule 2).
        Some(e) => gcptr::<Udata>(unsafe { e.arg(s, 1) })
            .wrapping_add(1)
            .cast_mut()
            .cast(),
        None => s.to_userdata(1),
    };
    // SAFETY: caller's contract: the block of a userdata of `kind`, on the
    // stack.
    unsafe { kind.clone_from_block(p) }
}

/// The payload of argument `i` (1-based) of the running C function when it
/// is a full userdata whose metatable is `mt` (the table's address, as
/// `lua_topointer` gives it), else null; read in place. `None` when the
/// probe made no token (the caller asks the C API).
#[inline(always)]
pub(crate) fn arg_udata_with_mt(s: &Stack, i: usize, mt: *const c_void) -> Option<*mut c_void> {
    let e = entry()?;
    let st = state(s);
    // SAFETY: `base..top` are the running C function's arguments (the
    // checked layout); argument `i` is read only when it is one of them.
    let word = unsafe {
        if (st.top.cast_const() as usize - st.base as usize) / size_of::<Word>() < i {
            return Some(std::ptr::null_mut());
        }
        e.arg(s, i)
    };
    if itype(word) != UDATA {
        return Some(std::ptr::null_mut());
    }
    let ud = gcptr::<Udata>(word);
    // SAFETY: a userdata's word points to its live `GCudata` head, of the
    // checked layout (luajit rule 2); its payload follows the head.
    let same = unsafe { (*ud).metatable } as *const c_void == mt;
    Some(if same {
        ud.wrapping_add(1).cast_mut().cast()
    } else {
        std::ptr::null_mut()
    })
}

/// Argument 2 of the running C function when it is a number (0 when it
/// is not): read in place when the probe made the token.
#[inline(always)]
pub(crate) fn arg2_number(s: &Stack) -> f64 {
    let Some(e) = entry() else {
        return s.to_number(2).unwrap_or(0.0);
    };
    let st = state(s);
    if (st.top.cast_const() as usize - st.base as usize) / size_of::<Word>() < 2 {
        return 0.0;
    }
    // SAFETY: argument 2 is there (checked); a number's word is its `f64`
    // bits.
    let word = unsafe { e.arg(s, 2) };
    if itype(word) <= ISNUM {
        f64::from_bits(word)
    } else {
        0.0
    }
}

/// Pushes a boolean, in place when the probe made the token.
#[inline(always)]
pub(crate) fn push_bool(s: &mut Stack, b: bool) {
    match entry() {
        Some(e) => e.push_bool(s, b),
        None => s.push_bool(b),
    }
}

/// Pushes an integer, in place when the probe made the token.
#[inline(always)]
pub(crate) fn push_int(s: &mut Stack, n: c_int) {
    match entry() {
        Some(e) => e.push_int(s, n),
        None => s.push_int(n.into()),
    }
}
