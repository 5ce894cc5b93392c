//! `fiber.channel()`: Tarantool's `fiber_channel.c` over the fiber layer's
//! [`Channel`], carrying value slots ([`slots`](super::slots)); slots still
//! buffered when the channel is collected are cleared by its `__gc`.
//!
//! On LuaJIT `put` and `get` are Lua wrappers
//! ([`wrappers`](super::wrappers)) that try the case that neither blocks
//! nor fails through an FFI call, and call the C functions here for the
//! rest; on Lua 5.4 the C methods are called directly.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use luafiber_fiber::channel::{GetError, PutError};
use luafiber_fiber::Channel;
use mlua::ffi;

use super::slots::{self, release, store};
use crate::raw::error::{self, ErrorKind};
use crate::raw::{api, lua_fn, LResult, Raise};

thread_local! {
    /// The channel metatable: its registry ref and address.
    static CHANNEL_MT: Cell<(c_int, *const c_void)> = const { Cell::new((ffi::LUA_NOREF, std::ptr::null())) };
}

fn channel<'a>(l: *mut ffi::lua_State, usage: &str) -> LResult<&'a Channel<c_int>> {
    // SAFETY: argument 1 of a lua_fn body.
    unsafe { api::check_udata(l, 1, CHANNEL_MT.with(Cell::get).1) }
        .ok_or_else(|| Raise::illegal(usage))
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

lua_fn! {
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
            api::new_udata(l, Channel::<c_int>::new(size as usize), CHANNEL_MT.with(Cell::get).0);
        }
        Ok(1)
    }
}

lua_fn! {
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
            let timeout = api::opt_timeout(l, 3, USAGE)?;
            if ch.is_closed() {
                ffi::lua_pushboolean(l, 0);
                return Ok(1);
            }
            let blocks = !ch.has_readers() && ch.count() >= ch.size();
            if blocks && timeout != Some(std::time::Duration::ZERO) {
                crate::fiber::check_switch(l, "channel:put")?;
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
    unsafe { crate::luajit::entry::push_bool(l, ok) };
    Ok(1)
}

lua_fn! {
    /// `ch:put(v)` for `lua/channel.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and stored `v` at slot `s`
    /// (argument 2) that `try_put` reserved when it could not put.
    fn channel_put_slot_unchecked(l) {
        // SAFETY: argument 1 is a channel userdata (the caller checked its
        // metatable), alive while it is on the stack; argument 2 is the
        // reserved slot, which holds the value.
        unsafe {
            let ch = &*crate::luajit::entry::arg1_udata(l).cast::<Channel<c_int>>();
            let s = crate::luajit::entry::arg2_int(l);
            if !ch.is_closed() {
                if let Err(refused) = crate::fiber::check_switch(l, "channel:put") {
                    release(l, s, false);
                    return Err(refused);
                }
            }
            put_stored(l, ch, s, None)
        }
    }
}

lua_fn! {
    /// `ch:get([timeout])`: the oldest value, waiting for one; nil on timeout
    /// or once the channel is closed and drained. A cancellation point when
    /// it blocks.
    fn channel_get(l) {
        const USAGE: &str = "usage: channel:get([timeout])";
        let ch = channel(l, USAGE)?;
        // SAFETY: arguments are on `l`.
        unsafe {
            let timeout = api::opt_timeout(l, 2, USAGE)?;
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
            crate::fiber::check_switch(l, "channel:get")?;
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

lua_fn! {
    /// `ch:get()` for `lua/channel.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and found no value to take at
    /// once: returns the slot of the value it waited for, freed (the caller
    /// reads and clears it before anything else runs), or 0 once the channel
    /// is closed and drained.
    fn channel_get_unchecked(l) {
        // SAFETY: argument 1 is a channel userdata (the caller checked its
        // metatable), alive while it is on the stack; room for one result.
        unsafe {
            let ch = &*crate::luajit::entry::arg1_udata(l).cast::<Channel<c_int>>();
            if !ch.is_closed() {
                crate::fiber::check_switch(l, "channel:get")?;
            }
            let s = match ch.get(None) {
                Ok(s) => {
                    slots::give(s);
                    s
                }
                Err(e) => {
                    get_failed(e)?;
                    0
                }
            };
            crate::luajit::entry::push_int(l, s);
        }
        Ok(1)
    }
}

macro_rules! channel_query {
    ($($name:ident: $method:ident -> $push:ident;)*) => {$(
        lua_fn! {
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

lua_fn! {
    /// `ch:close()`: graceful close: buffered values stay readable, blocked
    /// writers get false, blocked readers drain then get nil.
    fn channel_close(l) {
        channel(l, "usage: channel:close()")?.close();
        Ok(0)
    }
}

lua_fn! {
    /// `__tostring`: "channel: COUNT", or "channel: closed".
    fn channel_tostring(l) {
        let ch = channel(l, "usage: tostring(channel)")?;
        let s = if ch.is_closed() { "channel: closed".to_owned() } else { format!("channel: {}", ch.count()) };
        // SAFETY: room for one result.
        unsafe { api::push_str(l, &s) };
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: frees the slots of values still buffered, then the channel.
    fn channel_gc(l) {
        // SAFETY: `__gc` of a channel userdata made by `channel_new`; it is
        // never used again after this.
        unsafe {
            if let Some(ch) = api::check_udata::<Channel<c_int>>(l, 1, CHANNEL_MT.with(Cell::get).1) {
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

/// Makes the channel metatable and its closures over the value tables;
/// returns the metatable's registry ref.
///
/// # Safety
///
/// `l` is the cord's main state, at setup, after [`slots::init`].
pub(super) unsafe fn init(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: caller's contract; the stack is left as it was.
    unsafe {
        let mt = api::make_mt(
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
        CHANNEL_MT.with(|m| m.set(mt));
        // put, get and __gc: closures over VALS and OVER
        api::push_registry_ref(l, mt.0);
        ffi::lua_getfield(l, -1, c"__index".as_ptr());
        for (table, name, f) in [
            (-1, c"put", channel_put),
            (-1, c"get", channel_get),
            (-2, c"__gc", channel_gc),
        ] {
            slots::push_tables(l);
            ffi::lua_pushcclosure(l, f, 2);
            ffi::lua_setfield(l, table - 1, name.as_ptr());
        }
        ffi::lua_pop(l, 2);
        mt.0
    }
}

/// Pushes the C functions the Lua wrappers call: `get` and `put_slot`
/// (closures over the value tables).
///
/// # Safety
///
/// `l` is the cord's main state, at setup, with room for 4 values.
pub(super) unsafe fn push_unchecked(l: *mut ffi::lua_State) {
    for f in [channel_get_unchecked, channel_put_slot_unchecked] {
        // SAFETY: caller's contract.
        unsafe {
            slots::push_tables(l);
            ffi::lua_pushcclosure(l, f, 2);
        }
    }
}
