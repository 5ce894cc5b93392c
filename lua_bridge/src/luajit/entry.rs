//! The entry of the blocking C functions (`cond:wait`, `ch:get`, `ch:put`)
//! without the C API or the cord's `RefCell`: argument 1's userdata, a
//! number argument, the result (a boolean or a number) and the "may this
//! Lua code switch fibers now" test, read and written in place.
//!
//! Through the C API and the cord, each of those is a few calls: on LuaJIT
//! `lua_touserdata` walks `index2adr`, `lua_gc(l, LUA_GCISRUNNING)` goes
//! through the API's switch, and the cord's record of the running fiber sits
//! behind a `RefCell` borrow and a `Slab` lookup. Here they are a few loads
//! from a thread-local [`Fast`] and from the state itself.
//!
//! Rules the code keeps:
//!
//! 1. The fast test ([`may_switch`]) is only a sufficient condition for
//!    what `fiber::guard::check_switch_slow` accepts, read from the same facts: in
//!    a fiber; on the cord's own state (LuaJIT: the same `global_State`;
//!    Lua 5.4: the same registry); not the main thread; the GC may run (not
//!    inside a `__gc` finalizer); mlua runs no callback (its current state
//!    is the main thread). When it says no, the slow check decides and
//!    words the refusal, so behaviour and errors are the slow check's.
//! 2. Nothing is cached that can go stale: every fact is read at the call,
//!    from the state or from mlua. [`Fast`] holds only what is fixed while
//!    the cord is installed (its main thread, its state's identity, where its
//!    `mlua::Lua` lives), set by [`install`] and cleared by [`uninstall`].
//! 3. LuaJIT's layout is not taken on trust: [`install`] checks it against
//!    the C API (a userdata argument read both ways inside a C function;
//!    `LUA_GCISRUNNING` with the collector running and stopped). On any
//!    mismatch the fast paths stay off: [`may_switch`] is always false and
//!    the other helpers call the C API. The boolean words written are the
//!    ones `lua_pushboolean` wrote in the check, not constants.
//!
//! The layout is LuaJIT 2.1's GC64 mode (`lj_obj.h`), the only mode of the
//! vendored x86-64 and arm64 builds; Lua 5.4 keeps the C API for both.

use std::cell::Cell;
use std::ffi::c_void;
use std::rc::Rc;

use mlua::ffi;

/// What the fast paths read of the cord, fixed while it is installed
/// (rule 2). All null when no cord is installed or the layout check
/// failed.
///
/// No `bool` in here: a field with a niche makes every `FAST.with` test the
/// niche for the "destroyed" case that a `const` thread-local never has.
#[derive(Clone, Copy)]
struct Fast {
    /// The cord's main thread.
    main: *mut ffi::lua_State,
    /// The cord's state: `G(L)` on LuaJIT, the registry table on Lua 5.4.
    /// Null turns the fast paths off: [`may_switch`] fails (no state has a
    /// null identity) and [`arg1_udata`] calls `lua_touserdata`.
    state: *const c_void,
    /// The cord's `mlua::Lua`, kept alive by the cord's `Rc`; valid
    /// whenever `state` is not null.
    lua: *const mlua::Lua,
    /// The `TValue` words of `false` and `true`, as `lua_pushboolean`
    /// wrote them in the check (LuaJIT only).
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    bools: [u64; 2],
}

const OFF: Fast = Fast {
    main: std::ptr::null_mut(),
    state: std::ptr::null(),
    lua: std::ptr::null(),
    bools: [0; 2],
};

thread_local! {
    static FAST: Cell<Fast> = const { Cell::new(OFF) };
    /// What [`probe`] learnt: the words of `false` and `true`, or `None`
    /// when its checks failed.
    static PROBED: Cell<Option<[u64; 2]>> = const { Cell::new(None) };
}

/// The fields read of LuaJIT's objects (`lj_obj.h`, GC64).
#[cfg(feature = "luajit")]
mod lj {
    use std::ffi::c_void;

    /// The head of `lua_State`.
    #[repr(C)]
    #[allow(dead_code)] // Every field up to those read, for their offsets.
    pub(super) struct State {
        nextgc: u64,
        marked: u8,
        gct: u8,
        dummy_ffid: u8,
        status: u8,
        /// `G(L)`, the `global_State`.
        pub glref: *const Global,
        gclist: u64,
        /// The frame of the running function: its first argument in a C
        /// function.
        pub base: *const u64,
        /// The first free slot: one past the last argument or result.
        pub top: *mut u64,
    }

    /// The head of `global_State`: the allocator, then `GCState`.
    #[repr(C)]
    #[allow(dead_code)] // Every field up to those read, for their offsets.
    pub(super) struct Global {
        /// The allocator (`lua_getallocf`), to check `glref`.
        pub allocf: *const c_void,
        /// Its data.
        pub allocd: *const c_void,
        total: u64,
        /// [`MAX_MEM`] while the collector is stopped or a finalizer runs.
        pub threshold: u64,
    }

    /// `GCudata`; the payload follows it.
    #[repr(C)]
    #[allow(dead_code)] // Every field, for the size.
    pub(super) struct Udata {
        nextgc: u64,
        marked: u8,
        gct: u8,
        udtype: u8,
        unused2: u8,
        env: u64,
        len: u32,
        metatable: u64,
        align1: u32,
    }

    /// `LJ_MAX_MEM` in GC64 mode: what `LUA_GCISRUNNING` compares the
    /// threshold with.
    pub(super) const MAX_MEM: u64 = 1 << 47;

    pub(super) use crate::luajit::obj::{itype, GC_MASK, UDATA};
}

/// The identity of `l`'s state that [`Fast::state`] holds.
///
/// # Safety
///
/// `l` is a valid state; on LuaJIT, its layout is the one checked.
#[inline(always)]
unsafe fn state_of(l: *mut ffi::lua_State) -> *const c_void {
    #[cfg(feature = "luajit")]
    {
        // SAFETY: caller's contract; `glref` is in every `lua_State`.
        unsafe { (*l.cast::<lj::State>()).glref.cast() }
    }
    #[cfg(not(feature = "luajit"))]
    {
        // SAFETY: caller's contract.
        unsafe { crate::raw::api::registry_ptr(l) }
    }
}

/// Whether the GC of the cord's state may run now: false inside a `__gc`
/// finalizer, and on LuaJIT after `collectgarbage("stop")` too (see
/// `raw::api::gc_running`, which this is on LuaJIT, read in place).
///
/// # Safety
///
/// `f.state` is the state of `l`, not null (so the layout was checked).
#[inline(always)]
unsafe fn gc_running(f: &Fast, l: *mut ffi::lua_State) -> bool {
    #[cfg(feature = "luajit")]
    {
        let _ = l;
        // SAFETY: caller's contract: `f.state` is `G(l)`, a live
        // `global_State` of the checked layout.
        unsafe { (*f.state.cast::<lj::Global>()).threshold != lj::MAX_MEM }
    }
    #[cfg(not(feature = "luajit"))]
    {
        let _ = f;
        // SAFETY: caller's contract.
        unsafe { crate::raw::api::gc_running(l) }
    }
}

/// The fast test of rule 1: true only when `fiber::guard::check_switch_slow` would
/// let Lua code running on `l` switch fibers now. False whenever the layout
/// check failed or no cord is installed.
///
/// # Safety
///
/// `l` is a valid state.
#[inline(always)]
pub(crate) unsafe fn may_switch(l: *mut ffi::lua_State) -> bool {
    let f = FAST.with(Cell::get);
    luafiber_fiber::switch_count().is_some()
        && l != f.main
        // SAFETY: caller's contract; `state_of` only reads `l`'s own
        // fields, of the checked layout whenever `f.state` is not null (and
        // the compare fails when it is).
        && unsafe { state_of(l) } == f.state
        // SAFETY: `f.state` is `l`'s state, not null (just compared).
        && unsafe { gc_running(&f, l) }
        // SAFETY: `f.state` is not null, so `f.lua` points into the
        // installed cord's `Rc` (rule 2).
        && unsafe { (*f.lua).state() } == f.main
}

/// The payload of the userdata at argument 1 of the running C function:
/// `lua_touserdata(l, 1)`, read in place on LuaJIT when the layout checked
/// (the fast paths are on).
///
/// # Safety
///
/// `l` is the state of the running C function, whose argument 1 is a full
/// userdata.
#[inline(always)]
pub(crate) unsafe fn arg1_udata(l: *mut ffi::lua_State) -> *mut c_void {
    #[cfg(feature = "luajit")]
    if !FAST.with(Cell::get).state.is_null() {
        // SAFETY: caller's contract: `base` is argument 1, a userdata
        // `TValue`; its payload follows the `GCudata` header (rule 3).
        unsafe {
            let tv = *(*l.cast::<lj::State>()).base;
            let ud = (tv & lj::GC_MASK) as *mut u8;
            return ud.add(std::mem::size_of::<lj::Udata>()).cast();
        }
    }
    // SAFETY: caller's contract.
    unsafe { ffi::lua_touserdata(l, 1) }
}

/// Argument 2 of the running C function, a number, as a `c_int` (the
/// caller knows it is an integer in range): read in place on LuaJIT, where
/// a number `TValue` is its `f64` bits.
///
/// # Safety
///
/// `l` is the state of the running C function, whose argument 2 is a
/// number.
#[inline(always)]
pub(crate) unsafe fn arg2_int(l: *mut ffi::lua_State) -> std::ffi::c_int {
    #[cfg(feature = "luajit")]
    if !FAST.with(Cell::get).state.is_null() {
        // SAFETY: caller's contract; rule 3.
        return unsafe { f64::from_bits(*(*l.cast::<lj::State>()).base.add(1)) } as _;
    }
    // SAFETY: caller's contract.
    unsafe { ffi::lua_tointeger(l, 2) as _ }
}

/// Pushes `b` onto `l` (`lua_pushboolean`, written in place on LuaJIT).
///
/// # Safety
///
/// `l` is the state of the running C function, with room for one value.
#[inline(always)]
pub(crate) unsafe fn push_bool(l: *mut ffi::lua_State, b: bool) {
    #[cfg(feature = "luajit")]
    {
        let f = FAST.with(Cell::get);
        if !f.state.is_null() {
            // SAFETY: caller's contract; rule 3.
            unsafe { push_word(l, f.bools[usize::from(b)]) };
            return;
        }
    }
    // SAFETY: caller's contract.
    unsafe { ffi::lua_pushboolean(l, std::ffi::c_int::from(b)) }
}

/// Pushes the integer `n` onto `l` (`lua_pushinteger`, written in place on
/// LuaJIT as its `f64`).
///
/// # Safety
///
/// As [`push_bool`].
#[inline(always)]
pub(crate) unsafe fn push_int(l: *mut ffi::lua_State, n: std::ffi::c_int) {
    #[cfg(feature = "luajit")]
    if !FAST.with(Cell::get).state.is_null() {
        // SAFETY: caller's contract; rule 3.
        unsafe { push_word(l, f64::from(n).to_bits()) };
        return;
    }
    // SAFETY: caller's contract.
    unsafe { ffi::lua_pushinteger(l, n.into()) }
}

/// Writes `word` at `l`'s top and moves the top up.
///
/// # Safety
///
/// `l` is of the checked layout, with room for one value; `word` is a
/// valid `TValue` that holds no GC object.
#[cfg(feature = "luajit")]
#[inline(always)]
unsafe fn push_word(l: *mut ffi::lua_State, word: u64) {
    // SAFETY: caller's contract.
    unsafe {
        let st = &mut *l.cast::<lj::State>();
        *st.top = word;
        st.top = st.top.add(1);
    }
}

/// Turns the fast paths on for the cord whose main thread is `main` and
/// whose mlua handle is `lua` (kept by the cord until [`uninstall`]), after
/// checking LuaJIT's layout (rule 3).
///
/// # Safety
///
/// `main` is the idle main thread of `lua`'s state, with room for 3 values;
/// `lua` stays alive until [`uninstall`].
pub(crate) unsafe fn install(main: *mut ffi::lua_State, lua: &Rc<mlua::Lua>) {
    // SAFETY: caller's contract; the stack is left as it was.
    let ok = unsafe {
        let is_main = ffi::lua_pushthread(main) == 1;
        ffi::lua_pop(main, 1);
        is_main && check_state(main) && check_udata(main)
    };
    if let (true, Some(bools)) = (ok, PROBED.with(Cell::get)) {
        FAST.with(|f| {
            f.set(Fast {
                main,
                // SAFETY: `main` is valid, of the checked layout.
                state: unsafe { state_of(main) },
                lua: Rc::as_ptr(lua),
                bools,
            })
        });
    }
}

/// Turns the fast paths off (the cord is going away).
pub(crate) fn uninstall() {
    FAST.with(|f| f.set(OFF));
}

/// Whether [`state_of`] and [`gc_running`] read `main`'s state right: on
/// LuaJIT, the threshold read in place agrees with `LUA_GCISRUNNING` while
/// the collector runs and while it is stopped (the collector is left as it
/// was).
///
/// # Safety
///
/// `main` is an idle main thread.
unsafe fn check_state(main: *mut ffi::lua_State) -> bool {
    #[cfg(feature = "luajit")]
    // SAFETY: caller's contract. `glref` is read only once it points to a
    // `global_State` whose allocator is the state's own.
    unsafe {
        const ISRUNNING: std::ffi::c_int = 9;
        let g = state_of(main).cast::<lj::Global>();
        let mut ud = std::ptr::null_mut();
        let allocf = ffi::lua_getallocf(main, &mut ud);
        let glref_ok = !g.is_null()
            && (*g).allocf == allocf as *const c_void
            && (*g).allocd == ud.cast_const();
        if !glref_ok {
            return false;
        }
        let agrees = || ((*g).threshold != lj::MAX_MEM) == (ffi::lua_gc(main, ISRUNNING, 0) != 0);
        let was_running = ffi::lua_gc(main, ISRUNNING, 0) != 0;
        let mut ok = agrees();
        ffi::lua_gc(main, ffi::LUA_GCSTOP, 0);
        ok &= agrees() && (*g).threshold == lj::MAX_MEM;
        ffi::lua_gc(main, ffi::LUA_GCRESTART, -1);
        ok &= agrees() && (*g).threshold != lj::MAX_MEM;
        if !was_running {
            ffi::lua_gc(main, ffi::LUA_GCSTOP, 0);
        }
        ok
    }
    #[cfg(not(feature = "luajit"))]
    {
        let _ = main;
        true
    }
}

/// Whether [`arg1_udata`], [`arg2_int`], [`push_bool`] and [`push_int`]
/// may use LuaJIT's layout: calls [`probe`] with a new userdata and a
/// number and asks it whether every read and write agrees with the C API
/// (always true on Lua 5.4, which uses the C API).
///
/// # Safety
///
/// `main` is an idle state with room for 3 values.
unsafe fn check_udata(main: *mut ffi::lua_State) -> bool {
    #[cfg(feature = "luajit")]
    // SAFETY: caller's contract; a failing call (out of memory) is caught
    // and reads as a failed check.
    unsafe {
        PROBED.with(|p| p.set(None));
        ffi::lua_pushcfunction(main, crate::raw::wide_cfn!(probe));
        ffi::lua_newuserdata(main, 24);
        ffi::lua_pushnumber(main, 7.0);
        let ok = ffi::lua_pcall(main, 2, 1, 0) == 0 && ffi::lua_toboolean(main, -1) != 0;
        ffi::lua_pop(main, 1);
        ok
    }
    #[cfg(not(feature = "luajit"))]
    {
        // Lua 5.4 reads it through the C API.
        let _ = main;
        PROBED.with(|p| p.set(Some([0; 2])));
        true
    }
}

/// The C function [`check_udata`] calls with a userdata and 7: checks
/// that argument 1's payload and argument 2 read through the layout are
/// what the C API reads, learns the words of `false` and `true` from
/// `lua_pushboolean`, and checks that values written at the top through
/// the layout read back through the C API; pushes whether all of it held
/// (and keeps the words in [`PROBED`] when it did).
#[cfg(feature = "luajit")]
unsafe extern "C-unwind" fn probe(l: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by `check_udata` with a userdata and a number (the
    // types and the frame are checked before the layout is read, and the
    // top is checked before anything is written through it); C functions
    // have room for 20 values.
    unsafe {
        let st = l.cast::<lj::State>();
        let reads = ffi::lua_type(l, 1) == ffi::LUA_TUSERDATA
            && ffi::lua_type(l, 2) == ffi::LUA_TNUMBER
            && ffi::lua_gettop(l) == 2
            && {
                let base = (*st).base;
                let tv = *base;
                let ud = (tv & lj::GC_MASK) as *mut u8;
                lj::itype(tv) == lj::UDATA
                    && !ud.is_null()
                    && ud.add(std::mem::size_of::<lj::Udata>()).cast() == ffi::lua_touserdata(l, 1)
                    && (*st).top.cast_const() == base.add(2)
                    && arg_word(l, 1) == ffi::lua_tonumber(l, 2).to_bits()
            };
        let ok = reads && {
            let mut bools = [0; 2];
            for (b, word) in bools.iter_mut().enumerate() {
                ffi::lua_pushboolean(l, b as std::ffi::c_int);
                *word = *(*st).top.sub(1);
                ffi::lua_settop(l, 2);
            }
            push_word(l, bools[1]);
            push_word(l, bools[0]);
            push_word(l, 5f64.to_bits());
            let ok = ffi::lua_gettop(l) == 5
                && ffi::lua_type(l, 3) == ffi::LUA_TBOOLEAN
                && ffi::lua_toboolean(l, 3) == 1
                && ffi::lua_type(l, 4) == ffi::LUA_TBOOLEAN
                && ffi::lua_toboolean(l, 4) == 0
                && ffi::lua_type(l, 5) == ffi::LUA_TNUMBER
                && ffi::lua_tonumber(l, 5) == 5.0;
            if ok {
                PROBED.with(|p| p.set(Some(bools)));
            }
            ok
        };
        ffi::lua_settop(l, 0);
        ffi::lua_pushboolean(l, std::ffi::c_int::from(ok));
        1
    }
}

/// The word of argument `i` (0-based) of the running C function.
///
/// # Safety
///
/// `l` is of the checked layout and has at least `i + 1` arguments.
#[cfg(feature = "luajit")]
unsafe fn arg_word(l: *mut ffi::lua_State, i: usize) -> u64 {
    // SAFETY: caller's contract.
    unsafe { *(*l.cast::<lj::State>()).base.add(i) }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::FAST;
    use crate::LuaRuntime;

    #[test]
    fn on_while_a_runtime_lives() {
        let rt = LuaRuntime::new().unwrap();
        let f = FAST.with(Cell::get);
        assert!(!f.state.is_null(), "the layout check failed");
        assert_eq!(f.main, rt.lua().state());
        drop(rt);
        assert!(FAST.with(Cell::get).state.is_null());
    }
}
