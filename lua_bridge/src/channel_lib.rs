//! `fiber.channel` and `fiber.cond`: Tarantool's `fiber_channel.c` and
//! `fiber_cond.c` over the fiber layer's [`Channel`] and [`Cond`].
//!
//! A channel holds slots of the cord's value tables (`Slots`), where the
//! values put into it stay reachable for the GC; slots still buffered when
//! the channel is collected are cleared by its `__gc`.
//!
//! On LuaJIT the hot methods (`put`, `get`, `signal`, `broadcast`) are Lua
//! wrappers (`lua/channel.lua`) that try the case that neither blocks nor
//! fails through an FFI call that cannot raise, compiled into the caller's
//! trace, and leave the rest to the C methods below; on Lua 5.4 the C
//! methods are called directly.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};

use luafiber_fiber::channel::{GetError, PutError};
use luafiber_fiber::{Channel, Cond};
use mlua::ffi;

use crate::cfunc::{LResult, Raise};
use crate::error::{self, ErrorKind};
use crate::fast_entry;
use crate::lua;
use crate::spawn;

/// Slots of the value table `VALS`, all in its array part; slots above are
/// in `OVER`.
const FAST_SLOTS: c_int = 1024;

/// The cord's free value slots (1-based): those of `VALS` (up to
/// [`FAST_SLOTS`]) and those of `OVER`.
struct Slots {
    fast: Vec<c_int>,
    over: Vec<c_int>,
    next: c_int,
}

impl Slots {
    /// A free slot of `VALS`, if any is left.
    fn take_fast(&mut self) -> Option<c_int> {
        if let Some(s) = self.fast.pop() {
            return Some(s);
        }
        (self.next <= FAST_SLOTS).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// A free slot, of `VALS` while one is left.
    fn take(&mut self) -> c_int {
        self.take_fast()
            .or_else(|| self.over.pop())
            .unwrap_or_else(|| {
                self.next += 1;
                self.next - 1
            })
    }

    fn give(&mut self, s: c_int) {
        if s <= FAST_SLOTS {
            self.fast.push(s);
        } else {
            self.over.push(s);
        }
    }
}

/// Runs `f` on this thread's free slots.
#[inline(always)]
fn with_slots<R>(f: impl FnOnce(&mut Slots) -> R) -> R {
    // Only the address is taken inside `LocalKey::with`, so `f` runs inline
    // (as in the scheduler's `with`).
    let cell: *const RefCell<Slots> = SLOTS.with(|s| s as *const _);
    // SAFETY: a thread-local lives until the thread's destructors run, and
    // `LocalKey::with` panics once they have; the reference does not
    // outlive this call.
    f(&mut unsafe { &*cell }.borrow_mut())
}

thread_local! {
    static CHANNEL_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
    static COND_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
    static SLOTS: RefCell<Slots> = const { RefCell::new(Slots { fast: Vec::new(), over: Vec::new(), next: 1 }) };
}

/// The pseudo-index of the value table that holds slot `s`: `put`, `get`
/// and `__gc` are C closures over `VALS` and `OVER`.
fn vals(s: c_int) -> c_int {
    ffi::lua_upvalueindex(if s <= FAST_SLOTS { 1 } else { 2 })
}

/// Moves the value on top of `l` into a free slot; returns the slot.
///
/// # Safety
///
/// Called by one of the closures over the value tables, with a value on
/// top.
unsafe fn store(l: *mut ffi::lua_State) -> c_int {
    let s = with_slots(Slots::take);
    // SAFETY: caller's contract. Inside a bridge C function, allocations do
    // not fail (see `memory`).
    unsafe { ffi::lua_rawseti(l, vals(s), s.into()) };
    s
}

/// Pushes the value at slot `s` onto `l` (when `push`) and frees the slot.
///
/// # Safety
///
/// Called by one of the closures over the value tables, with room for two
/// values.
unsafe fn release(l: *mut ffi::lua_State, s: c_int, push: bool) {
    // SAFETY: caller's contract; writing to a key that exists does not
    // allocate.
    unsafe {
        if push {
            lua::rawgeti(l, vals(s), s);
        }
        if s <= FAST_SLOTS {
            ffi::lua_pushboolean(l, 0);
        } else {
            ffi::lua_pushnil(l);
        }
        ffi::lua_rawseti(l, vals(s), s.into());
    }
    with_slots(|slots| slots.give(s));
}

/// The `T` userdata at `idx` whose metatable is `mt`, or `None`.
unsafe fn check_udata<'a, T>(
    l: *mut ffi::lua_State,
    idx: c_int,
    mt: *const c_void,
) -> Option<&'a T> {
    // SAFETY: caller passes a valid index; a userdata with this metatable
    // was made by `new_udata::<T>`.
    unsafe { lua::udata_with_mt(l, idx, mt).map(|p| &*p.cast::<T>()) }
}

/// Pushes a new userdata holding `v`, with the metatable of registry ref
/// `mt` (whose `__gc` drops it).
unsafe fn new_udata<T>(l: *mut ffi::lua_State, v: T, mt: c_int) {
    // SAFETY: Lua aligns userdata for any type; the memory is written once
    // here and dropped once by `__gc`.
    unsafe {
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<T>()).cast::<T>();
        p.write(v);
        lua::push_registry_ref(l, mt);
        ffi::lua_setmetatable(l, -2);
    }
}

fn channel<'a>(l: *mut ffi::lua_State, usage: &str) -> LResult<&'a Channel<c_int>> {
    // SAFETY: argument 1 of a lua_fn body.
    unsafe { check_udata(l, 1, CHANNEL_MT.with(Cell::get).1) }.ok_or_else(|| Raise::illegal(usage))
}

fn cond<'a>(l: *mut ffi::lua_State, usage: &str) -> LResult<&'a Cond> {
    // SAFETY: argument 1 of a lua_fn body.
    unsafe { check_udata(l, 1, COND_MT.with(Cell::get).1) }.ok_or_else(|| Raise::illegal(usage))
}

/// What a failed get raises: a cancel or a get outside a fiber; `Ok` for
/// a timeout or a closed channel, which give nil.
fn get_failed(e: GetError) -> LResult<()> {
    match e {
        GetError::Cancelled => Err(cancelled()),
        GetError::NotInFiber => Err(error::from_fiber(luafiber_fiber::Error::NotInFiber)),
        GetError::TimedOut | GetError::Closed => Ok(()),
    }
}

fn cancelled() -> Raise {
    Raise::Error(ErrorKind::FiberIsCancelled, "fiber is cancelled".into())
}

crate::lua_fn! {
    /// `fiber.channel([size])`: a channel buffering `size` values (0: direct
    /// hand-over). "fiber.channel(size): negative size", or "...: bad
    /// arguments" for a non-number.
    pub(crate) fn channel_new(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            let size = match ffi::lua_type(l, 1) {
                t if t <= ffi::LUA_TNIL => 0.0,
                ffi::LUA_TNUMBER => ffi::lua_tonumber(l, 1),
                _ => return Err(Raise::illegal("fiber.channel(size): bad arguments")),
            };
            if size < 0.0 {
                return Err(Raise::illegal("fiber.channel(size): negative size"));
            }
            if size.is_nan() || size > u32::MAX as f64 {
                return Err(Raise::illegal("fiber.channel(size): bad arguments"));
            }
            new_udata(l, Channel::<c_int>::new(size as usize), CHANNEL_MT.with(Cell::get).0);
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `ch:put(v [, timeout])`: true once `v` is buffered or handed over;
    /// false on timeout or when the channel is (or gets) closed. A
    /// cancellation point when it blocks.
    fn channel_put(l) {
        const USAGE: &str = "usage: channel:put(var [, timeout])";
        let ch = channel(l, USAGE)?;
        // SAFETY: arguments are on `l`.
        unsafe {
            if ffi::lua_gettop(l) < 2 {
                return Err(Raise::illegal(USAGE));
            }
            let timeout = lua::opt_timeout(l, 3, USAGE)?;
            if ch.is_closed() {
                ffi::lua_pushboolean(l, 0);
                return Ok(1);
            }
            let blocks = !ch.has_readers() && ch.count() >= ch.size();
            if blocks && timeout != Some(std::time::Duration::ZERO) {
                spawn::check_switch(l, "channel:put")?;
            }
            ffi::lua_pushvalue(l, 2);
            let s = store(l);
            put_stored(l, ch, s, timeout)
        }
    }
}

/// Puts slot `s`, which holds the value, into `ch` and pushes whether it
/// went in; a slot that did not is freed.
///
/// # Safety
///
/// Called by a closure over the value tables, with room for two values.
unsafe fn put_stored(
    l: *mut ffi::lua_State,
    ch: &Channel<c_int>,
    s: c_int,
    timeout: Option<std::time::Duration>,
) -> LResult {
    let ok = match ch.put(s, timeout) {
        Ok(()) => true,
        Err(e) => {
            let cancel = matches!(e, PutError::Cancelled(_));
            // SAFETY: caller's contract.
            unsafe { release(l, e.into_inner(), false) };
            if cancel {
                return Err(cancelled());
            }
            false
        }
    };
    // SAFETY: caller's contract.
    unsafe { fast_entry::push_bool(l, ok) };
    Ok(1)
}

crate::lua_fn! {
    /// `ch:put(v)` for `lua/channel.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and stored `v` at slot `s`
    /// (argument 2) that `try_put` reserved when it could not put.
    fn channel_put_slot_unchecked(l) {
        // SAFETY: argument 1 is a channel userdata (the caller checked its
        // metatable), alive while it is on the stack; argument 2 is the
        // reserved slot, which holds the value.
        unsafe {
            let ch = &*fast_entry::arg1_udata(l).cast::<Channel<c_int>>();
            let s = fast_entry::arg2_int(l);
            if !ch.is_closed() {
                if let Err(refused) = spawn::check_switch(l, "channel:put") {
                    release(l, s, false);
                    return Err(refused);
                }
            }
            put_stored(l, ch, s, None)
        }
    }
}

crate::lua_fn! {
    /// `ch:get([timeout])`: the oldest value, waiting for one; nil on timeout
    /// or once the channel is closed and drained. A cancellation point when
    /// it blocks.
    fn channel_get(l) {
        const USAGE: &str = "usage: channel:get([timeout])";
        let ch = channel(l, USAGE)?;
        // SAFETY: arguments are on `l`.
        unsafe {
            let timeout = lua::opt_timeout(l, 2, USAGE)?;
            get(l, ch, timeout)
        }
    }
}

/// The body of `ch:get([timeout])` once its arguments are checked.
///
/// # Safety
///
/// Called by a closure over the value tables, with room for two values.
unsafe fn get(
    l: *mut ffi::lua_State,
    ch: &Channel<c_int>,
    timeout: Option<std::time::Duration>,
) -> LResult {
    // SAFETY: caller's contract.
    unsafe {
        let blocks = ch.count() == 0 && !ch.has_writers() && !ch.is_closed();
        if blocks && timeout != Some(std::time::Duration::ZERO) {
            spawn::check_switch(l, "channel:get")?;
        }
        match ch.get(timeout) {
            Ok(s) => release(l, s, true),
            Err(e) => {
                get_failed(e)?;
                ffi::lua_pushnil(l);
            }
        }
    }
    Ok(1)
}

crate::lua_fn! {
    /// `ch:get()` for `lua/channel.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and found no value to take at
    /// once: returns the slot of the value it waited for, freed (the caller
    /// reads and clears it before anything else runs), or 0 once the channel
    /// is closed and drained.
    fn channel_get_unchecked(l) {
        // SAFETY: argument 1 is a channel userdata (the caller checked its
        // metatable), alive while it is on the stack; room for one result.
        unsafe {
            let ch = &*fast_entry::arg1_udata(l).cast::<Channel<c_int>>();
            if !ch.is_closed() {
                spawn::check_switch(l, "channel:get")?;
            }
            let s = match ch.get(None) {
                Ok(s) => {
                    with_slots(|slots| slots.give(s));
                    s
                }
                Err(e) => {
                    get_failed(e)?;
                    0
                }
            };
            fast_entry::push_int(l, s);
        }
        Ok(1)
    }
}

macro_rules! channel_query {
    ($($name:ident: $method:ident -> $push:ident;)*) => {$(
        crate::lua_fn! {
            fn $name(l) {
                let ch = channel(l, concat!("usage: channel:", stringify!($method), "()"))?;
                let v = ch.$method();
                // SAFETY: room for one result.
                unsafe { ffi::$push(l, v as _) };
                Ok(1)
            }
        }
    )*};
}

channel_query! {
    channel_count: count -> lua_pushinteger;
    channel_size: size -> lua_pushinteger;
    channel_is_full: is_full -> lua_pushboolean;
    channel_is_empty: is_empty -> lua_pushboolean;
    channel_has_readers: has_readers -> lua_pushboolean;
    channel_has_writers: has_writers -> lua_pushboolean;
    channel_is_closed: is_closed -> lua_pushboolean;
}

crate::lua_fn! {
    /// `ch:close()`: graceful close: buffered values stay readable, blocked
    /// writers get false, blocked readers drain then get nil.
    fn channel_close(l) {
        channel(l, "usage: channel:close()")?.close();
        Ok(0)
    }
}

crate::lua_fn! {
    /// `__tostring`: "channel: COUNT", or "channel: closed".
    fn channel_tostring(l) {
        let ch = channel(l, "usage: tostring(channel)")?;
        let s = if ch.is_closed() { "channel: closed".to_owned() } else { format!("channel: {}", ch.count()) };
        // SAFETY: room for one result.
        unsafe { lua::push_str(l, &s) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__gc`: frees the slots of values still buffered, then the channel.
    fn channel_gc(l) {
        // SAFETY: `__gc` of a channel userdata made by `channel_new`; it is
        // never used again after this.
        unsafe {
            if let Some(ch) = check_udata::<Channel<c_int>>(l, 1, CHANNEL_MT.with(Cell::get).1) {
                while let Ok(s) = ch.try_get() {
                    release(l, s, false);
                }
                std::ptr::drop_in_place(ffi::lua_touserdata(l, 1).cast::<Channel<c_int>>());
                // A resurrected channel is no channel any more.
                ffi::lua_pushnil(l);
                ffi::lua_setmetatable(l, 1);
            }
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.cond()`: a condition variable.
    pub(crate) fn cond_new(l) {
        // SAFETY: room for one result.
        unsafe { new_udata(l, Cond::new(), COND_MT.with(Cell::get).0) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `cond:wait([timeout])`: true when signalled, false on timeout; raises
    /// `FiberIsCancelled` when the fiber is cancelled. `"Usage:
    /// cond:wait([timeout])"` for a bad timeout.
    fn cond_wait(l) {
        const USAGE: &str = "Usage: cond:wait([timeout])";
        let c = cond(l, USAGE)?;
        // SAFETY: arguments are on `l`.
        let timeout = unsafe { lua::opt_timeout(l, 2, USAGE)? };
        // SAFETY: `l` is the calling state.
        unsafe { spawn::check_switch(l, "cond:wait")? };
        let signalled = c.wait(timeout).map_err(error::from_fiber)?;
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushboolean(l, c_int::from(signalled)) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `cond:wait()` for `lua/channel.lua`, which checked that argument 1 is
    /// a cond and that no timeout is given. Returns nothing: with no
    /// timeout, a wait that returns was signalled (the wrapper returns
    /// `true`).
    fn cond_wait_unchecked(l) {
        // SAFETY: argument 1 is a cond userdata (the caller checked its
        // metatable); the cond lives while it is on the stack.
        let c = unsafe { &*fast_entry::arg1_udata(l).cast::<Cond>() };
        // SAFETY: `l` is the calling state.
        unsafe { spawn::check_switch(l, "cond:wait")? };
        let signalled = c.wait(None).map_err(error::from_fiber)?;
        debug_assert!(signalled, "a wait with no timeout ends signalled");
        Ok(0)
    }
}

crate::lua_fn! {
    /// `cond:signal()`: wakes the first waiter.
    fn cond_signal(l) {
        cond(l, "Usage: cond:signal()")?.signal();
        Ok(0)
    }
}

crate::lua_fn! {
    /// `cond:broadcast()`: wakes every waiter.
    fn cond_broadcast(l) {
        cond(l, "Usage: cond:broadcast()")?.broadcast();
        Ok(0)
    }
}

crate::lua_fn! {
    /// `__tostring`: "cond", as in Tarantool.
    fn cond_tostring(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushstring(l, c"cond".as_ptr()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__gc`: drops the cond.
    fn cond_gc(l) {
        // SAFETY: `__gc` of a cond userdata, never used again after this.
        unsafe {
            if check_udata::<Cond>(l, 1, COND_MT.with(Cell::get).1).is_some() {
                std::ptr::drop_in_place(ffi::lua_touserdata(l, 1).cast::<Cond>());
                ffi::lua_pushnil(l);
                ffi::lua_setmetatable(l, 1);
            }
        }
        Ok(0)
    }
}

/// The primitive `try_put` of `lua/channel.lua`: puts a free slot `s` of
/// `VALS` into the channel when that neither blocks nor fails, and returns
/// it (the caller stores the value there before anything else runs). Else,
/// with `reserve`, returns `-s`, the slot kept for the caller to store the
/// value in and pass to `channel_put_slot_unchecked`; else 0 (also when no
/// slot of `VALS` is free).
///
/// # Safety
///
/// `ch` points to a live channel (the caller checked the metatable).
unsafe extern "C" fn try_put(ch: *const Channel<c_int>, reserve: c_int) -> c_int {
    // SAFETY: caller's contract.
    let ch = unsafe { &*ch };
    let Some(s) = with_slots(Slots::take_fast) else {
        return 0;
    };
    match ch.try_put(s) {
        Ok(()) => s,
        Err(e) if reserve != 0 => -e.into_inner(),
        Err(e) => {
            with_slots(|slots| slots.give(e.into_inner()));
            0
        }
    }
}

/// The primitive `try_get` of `lua/channel.lua`: takes the oldest value's
/// slot when that neither blocks nor fails, frees it and returns it (the
/// caller reads and clears it before anything else runs); else -1.
///
/// # Safety
///
/// As [`try_put`].
unsafe extern "C" fn try_get(ch: *const Channel<c_int>) -> c_int {
    // SAFETY: caller's contract.
    match unsafe { &*ch }.try_get() {
        Ok(s) => {
            with_slots(|slots| slots.give(s));
            s
        }
        Err(_) => -1,
    }
}

/// The primitive `signal` of `lua/channel.lua`.
///
/// # Safety
///
/// `c` points to a live cond (the caller checked the metatable).
unsafe extern "C" fn signal(c: *const Cond) {
    // SAFETY: caller's contract.
    unsafe { &*c }.signal();
}

/// The primitive `broadcast` of `lua/channel.lua`.
///
/// # Safety
///
/// As [`signal`].
unsafe extern "C" fn broadcast(c: *const Cond) {
    // SAFETY: caller's contract.
    unsafe { &*c }.broadcast();
}

/// Makes the value tables and the C methods over them; on LuaJIT, runs
/// `lua/channel.lua` over the channel and cond metatables (when it fails,
/// the C methods stay as they are).
///
/// # Safety
///
/// `l` is the cord's main state, at setup.
unsafe fn init_wrappers(l: *mut ffi::lua_State, ch_mt: c_int, cond_mt: c_int) {
    const CHUNK: &str = include_str!("lua/channel.lua");
    // SAFETY: caller's contract; the stack is left as it was.
    unsafe {
        let top = ffi::lua_gettop(l);
        ffi::lua_createtable(l, FAST_SLOTS, 0);
        for s in 1..=FAST_SLOTS {
            ffi::lua_pushboolean(l, 0);
            ffi::lua_rawseti(l, -2, s.into());
        }
        ffi::lua_createtable(l, 0, 0);
        // put, get and __gc: closures over VALS and OVER
        lua::push_registry_ref(l, ch_mt);
        ffi::lua_getfield(l, -1, c"__index".as_ptr());
        for (table, name, f) in [
            (-1, c"put", channel_put),
            (-1, c"get", channel_get),
            (-2, c"__gc", channel_gc),
        ] {
            ffi::lua_pushvalue(l, top + 1);
            ffi::lua_pushvalue(l, top + 2);
            ffi::lua_pushcclosure(l, f, 2);
            ffi::lua_setfield(l, table - 1, name.as_ptr());
        }
        ffi::lua_settop(l, top + 2);
        // The wrappers pay only with FFI: on Lua 5.4 a Lua function in
        // front of the C method costs more than it saves.
        if cfg!(feature = "luajit") {
            lua::run_setup_chunk(l, CHUNK, c"=fiber.channel", || {
                lua::push_registry_ref(l, ch_mt);
                lua::push_registry_ref(l, cond_mt);
                ffi::lua_pushvalue(l, top + 1);
                ffi::lua_pushvalue(l, top + 2);
                ffi::lua_pushinteger(l, FAST_SLOTS.into());
                for p in [
                    try_put as *mut c_void,
                    try_get as *mut c_void,
                    signal as *mut c_void,
                    broadcast as *mut c_void,
                ] {
                    ffi::lua_pushlightuserdata(l, p);
                }
                ffi::lua_pushcfunction(l, cond_wait_unchecked);
                for f in [channel_get_unchecked, channel_put_slot_unchecked] {
                    ffi::lua_pushvalue(l, top + 1);
                    ffi::lua_pushvalue(l, top + 2);
                    ffi::lua_pushcclosure(l, f, 2);
                }
                12
            });
        }
        ffi::lua_settop(l, top);
    }
}

type Reg = (&'static CStr, ffi::lua_CFunction);

/// Makes a metatable with `__index` = `methods` plus the metamethods;
/// returns its registry ref and address.
unsafe fn make_mt(
    l: *mut ffi::lua_State,
    name: &CStr,
    methods: &[Reg],
    meta: &[Reg],
) -> (c_int, *const c_void) {
    // SAFETY: the cord's main state at setup (caller).
    unsafe {
        ffi::lua_createtable(l, 0, meta.len() as c_int + 3);
        crate::fiber_lib::set_funcs(l, meta);
        ffi::lua_createtable(l, 0, methods.len() as c_int);
        crate::fiber_lib::set_funcs(l, methods);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        // `getmetatable` gives the metatable itself, as without the field,
        // but finds it at a known place (a trace then looks it up by its
        // slot, not by walking a hash chain that the string seed changes).
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, -2, c"__metatable".as_ptr());
        let p = ffi::lua_topointer(l, -1);
        (ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX), p)
    }
}

/// Makes the channel and cond metatables.
///
/// # Safety
///
/// `l` is the cord's main state, at setup.
pub(crate) unsafe fn init(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    unsafe {
        let ch = make_mt(
            l,
            c"fiber.channel",
            &[
                (c"count", channel_count),
                (c"size", channel_size),
                (c"is_full", channel_is_full),
                (c"is_empty", channel_is_empty),
                (c"has_readers", channel_has_readers),
                (c"has_writers", channel_has_writers),
                (c"close", channel_close),
                (c"is_closed", channel_is_closed),
            ],
            &[(c"__tostring", channel_tostring)],
        );
        CHANNEL_MT.with(|m| m.set(ch));
        let cd = make_mt(
            l,
            c"fiber.cond",
            &[
                (c"wait", cond_wait),
                (c"signal", cond_signal),
                (c"broadcast", cond_broadcast),
            ],
            &[(c"__tostring", cond_tostring), (c"__gc", cond_gc)],
        );
        COND_MT.with(|m| m.set(cd));
        init_wrappers(l, ch.0, cd.0);
    }
}

#[cfg(test)]
mod tests {
    //! The blocking methods' entry (`fast_entry` on the hot path) refuses a
    //! switch exactly where `spawn::check_switch_slow` does, with its
    //! message; on LuaJIT these calls go through the unchecked C functions.

    use std::cell::Cell;
    use std::rc::Rc;

    use mlua::ffi;

    use crate::LuaRuntime;

    /// Defines `attempts()`: each blocking method as `{name, fn}`, on a
    /// cond nobody signals and an unbuffered channel nobody reads or
    /// writes; `try_all(wrap)` runs each through `wrap` and returns a line
    /// "name: error" for each (`ok` for one that did not raise).
    const ATTEMPTS: &str = r#"
        local fiber = require('fiber')
        local cond, ch = fiber.cond(), fiber.channel()
        function try_all(wrap)
            local out = {}
            for _, case in ipairs({
                {'cond:wait', function() return cond:wait() end},
                {'channel:get', function() return ch:get() end},
                {'channel:put', function() return ch:put(1) end},
            }) do
                local ok, err = wrap(case[2])
                err = ok and 'ok' or tostring(err):gsub('\n', ' ')
                out[#out + 1] = case[1] .. ': ' .. err
            end
            return table.concat(out, '\n')
        end
    "#;

    fn runtime() -> LuaRuntime {
        let rt = LuaRuntime::new().unwrap();
        rt.lua().load(ATTEMPTS).exec().unwrap();
        rt
    }

    /// Checks that every line of `out` refuses with `why` after its name.
    fn refused(out: &str, why: &str) {
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        for line in lines {
            let (name, err) = line.split_once(": ").unwrap();
            assert!(err.contains(&format!("{name}: {why}")), "{line}");
        }
    }

    #[test]
    fn outside_a_fiber() {
        let rt = runtime();
        let out: String = rt.lua().load("return try_all(pcall)").eval().unwrap();
        refused(&out, "cannot yield outside a fiber");
    }

    #[test]
    fn on_the_main_thread_inside_a_fiber() {
        // mlua runs this chunk on the main thread, from a (Rust) fiber.
        let rt = Rc::new(runtime());
        let out = Rc::new(Cell::new(String::new()));
        let (rt2, out2) = (rt.clone(), out.clone());
        luafiber_fiber::Builder::new()
            .spawn_ready(move || out2.set(rt2.lua().load("return try_all(pcall)").eval().unwrap()))
            .unwrap();
        luafiber_fiber::run();
        refused(&out.take(), "cannot yield on the main Lua thread");
    }

    #[test]
    fn on_a_foreign_state() {
        // `cond:wait()`'s C function called on another state, in a fiber:
        // refused before its argument is used.
        let _rt = runtime();
        let foreign = mlua::Lua::new();
        let out = Rc::new(Cell::new(String::new()));
        let out2 = out.clone();
        luafiber_fiber::Builder::new()
            .spawn_ready(move || {
                let l = foreign.state();
                // SAFETY: `l` is `foreign`'s idle main state; a new thread
                // calls the C function with a userdata it does not read.
                unsafe {
                    let t = ffi::lua_newthread(l);
                    ffi::lua_pushcfunction(t, super::cond_wait_unchecked);
                    ffi::lua_newuserdata(t, 64);
                    assert_ne!(ffi::lua_pcall(t, 1, 0, 0), 0);
                    ffi::lua_getfield(t, -1, c"message".as_ptr());
                    out2.set(
                        crate::lua::to_str(t, -1)
                            .map(|s| String::from_utf8_lossy(s).into_owned())
                            .unwrap_or_default(),
                    );
                    ffi::lua_pop(l, 1);
                }
            })
            .unwrap();
        luafiber_fiber::run();
        let out = out.take();
        assert!(
            out.contains("cond:wait: cannot yield on a foreign Lua state"),
            "{out}"
        );
    }

    #[test]
    fn inside_a_gc_finalizer() {
        let rt = runtime();
        rt.run_chunk(
            r#"
            local out
            local function hook()
                out = try_all(pcall)
            end
            if newproxy then
                local p = newproxy(true)
                getmetatable(p).__gc = hook
            else
                setmetatable({}, {__gc = hook})
            end
            collectgarbage('collect')
            collectgarbage('collect')
            GC_OUT = out
            "#,
            "gc",
        )
        .unwrap();
        let out: String = rt.lua().globals().get("GC_OUT").unwrap();
        refused(&out, "cannot yield inside a __gc finalizer");
    }

    #[test]
    fn under_an_mlua_callback() {
        let rt = runtime();
        let via = rt
            .lua()
            .create_function(|_, f: mlua::Function| f.call::<mlua::MultiValue>(()))
            .unwrap();
        rt.lua().globals().set("via_mlua", via).unwrap();
        rt.run_chunk(
            "MLUA_OUT = try_all(function(f) return pcall(via_mlua, f) end)",
            "mlua",
        )
        .unwrap();
        let out: String = rt.lua().globals().get("MLUA_OUT").unwrap();
        refused(&out, "cannot yield under an mlua callback");
    }

    #[test]
    fn allowed_in_a_fiber_also_with_the_gc_stopped() {
        // LuaJIT cannot tell a stopped collector from a running finalizer;
        // `collectgarbage("stop")` is tracked so that blocking still works.
        let rt = LuaRuntime::new().unwrap();
        rt.run_chunk(
            r#"
            local fiber = require('fiber')
            for _, stop in ipairs({false, true, false}) do
                collectgarbage(stop and 'stop' or 'restart')
                local cond, ch, got = fiber.cond(), fiber.channel(), {}
                local f = fiber.new(function()
                    got[1] = ch:get()
                    assert(ch:put('back'))
                    cond:signal()
                end)
                fiber.yield()
                assert(ch:put('there'))
                got[2] = ch:get()
                fiber.new(function() cond:signal() end)
                assert(cond:wait())
                assert(got[1] == 'there' and got[2] == 'back')
            end
            "#,
            "gc_stopped",
        )
        .unwrap();
    }
}
