//! `fiber.channel` and `fiber.cond`: Tarantool's `fiber_channel.c` and
//! `fiber_cond.c` over the fiber layer's [`Channel`] and [`Cond`].
//!
//! A channel holds registry refs of the values put into it, so the GC keeps
//! them; refs still buffered when the channel is collected are released by
//! its `__gc`.

use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};

use luafiber_fiber::channel::{GetError, PutError};
use luafiber_fiber::{Channel, Cond};
use mlua::ffi;

use crate::cfunc::{LResult, Raise};
use crate::error::{self, ErrorKind};
use crate::lua;
use crate::spawn;

thread_local! {
    static CHANNEL_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
    static COND_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
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
            let r = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            let ok = match ch.put(r, timeout) {
                Ok(()) => true,
                Err(e) => {
                    let cancel = matches!(e, PutError::Cancelled(_));
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, e.into_inner());
                    if cancel {
                        return Err(cancelled());
                    }
                    false
                }
            };
            ffi::lua_pushboolean(l, c_int::from(ok));
        }
        Ok(1)
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
            let blocks = ch.count() == 0 && !ch.has_writers() && !ch.is_closed();
            if blocks && timeout != Some(std::time::Duration::ZERO) {
                spawn::check_switch(l, "channel:get")?;
            }
            match ch.get(timeout) {
                Ok(r) => {
                    lua::push_registry_ref(l, r);
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
                }
                Err(GetError::Cancelled) => return Err(cancelled()),
                Err(GetError::NotInFiber) => {
                    return Err(error::from_fiber(luafiber_fiber::Error::NotInFiber))
                }
                Err(_) => ffi::lua_pushnil(l),
            }
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
    /// `__gc`: releases the refs of values still buffered, then the channel.
    fn channel_gc(l) {
        // SAFETY: `__gc` of a channel userdata made by `channel_new`; it is
        // never used again after this.
        unsafe {
            if let Some(ch) = check_udata::<Channel<c_int>>(l, 1, CHANNEL_MT.with(Cell::get).1) {
                while let Ok(r) = ch.try_get() {
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
                }
                std::ptr::drop_in_place(ffi::lua_touserdata(l, 1).cast::<Channel<c_int>>());
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
    /// `FiberIsCancelled` when the fiber is cancelled. "Usage:
    /// cond:wait([timeout])" for a bad timeout.
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
            }
        }
        Ok(0)
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
        ffi::lua_createtable(l, 0, meta.len() as c_int + 2);
        crate::fiber_lib::set_funcs(l, meta);
        ffi::lua_createtable(l, 0, methods.len() as c_int);
        crate::fiber_lib::set_funcs(l, methods);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
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
                (c"put", channel_put),
                (c"get", channel_get),
                (c"count", channel_count),
                (c"size", channel_size),
                (c"is_full", channel_is_full),
                (c"is_empty", channel_is_empty),
                (c"has_readers", channel_has_readers),
                (c"has_writers", channel_has_writers),
                (c"close", channel_close),
                (c"is_closed", channel_is_closed),
            ],
            &[(c"__tostring", channel_tostring), (c"__gc", channel_gc)],
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
    }
}
