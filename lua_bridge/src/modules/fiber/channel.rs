//! `fiber.channel()`: Tarantool's `fiber_channel.c` over the fiber layer's
//! [`Channel`], carrying value slots ([`super::slots`]); slots still
//! buffered when the channel is collected are cleared by its `__gc`.
//!
//! On LuaJIT `put` and `get` are Lua wrappers
//! ([`wrappers`](super::wrappers)) that try the case that neither blocks
//! nor fails through an FFI call, and call the C functions here for the
//! rest; on Lua 5.4 the C methods are called directly.

use std::cell::Cell;
use std::ffi::c_int;
use std::time::Duration;

use luafiber_fiber::channel::{GetError, PutError};
use luafiber_fiber::Channel;
use mlua::ffi;

use super::slots::{self, release, store};
use crate::fiber::check_switch;
use crate::luajit::entry;
use crate::raw::args::opt_timeout;
use crate::raw::context::Part;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};

/// Per-cord state of channel objects (a part of the cord context): their
/// kind.
#[derive(Default)]
pub(crate) struct ChannelKind(Cell<Kind<Channel<c_int>>>);

/// The kind of channel objects.
#[inline(always)]
fn channel_kind() -> Kind<Channel<c_int>> {
    ChannelKind::with(|k| k.0.get())
}

/// The channel of the object at argument 1 (checked by its metatable, in
/// place when it can be): a handle of its own, so it outlives whatever the
/// body does to the stack.
#[inline(always)]
fn channel(s: &mut Stack, usage: &str) -> LResult<Channel<c_int>> {
    entry::arg_of(s, 1, channel_kind()).ok_or_else(|| Raise::illegal(usage))
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
    pub(super) fn channel_new(s: &mut Stack) {
        let size = match s.type_of(1) {
            t if t <= ffi::LUA_TNIL => 0.0,
            ffi::LUA_TNUMBER => s.to_number(1).unwrap_or(0.0),
            _ => return Err(Raise::illegal("fiber.channel(size): bad arguments")),
        };
        if size < 0.0 {
            return Err(Raise::illegal("fiber.channel(size): negative size"));
        }
        if size.is_nan() || size > u32::MAX as f64 {
            return Err(Raise::illegal("fiber.channel(size): bad arguments"));
        }
        channel_kind().push(s, Channel::new(size as usize));
        Ok(1)
    }
}

lua_fn! {
    /// `ch:put(v [, timeout])`: true once `v` is buffered or handed over;
    /// false on timeout or when the channel is (or gets) closed. A
    /// cancellation point when it blocks.
    fn channel_put(s: &mut Stack) {
        const USAGE: &str = "usage: channel:put(var [, timeout])";
        let ch = channel(s, USAGE)?;
        if s.top() < 2 {
            return Err(Raise::illegal(USAGE));
        }
        let timeout = opt_timeout(s, 3, USAGE)?;
        if ch.is_closed() {
            s.push_bool(false);
            return Ok(1);
        }
        let blocks = !ch.has_readers() && ch.count() >= ch.size();
        if blocks && timeout != Some(Duration::ZERO) {
            check_switch(s, "channel:put")?;
        }
        s.push_value(2);
        let slot = store(s);
        put_stored(s, &ch, slot, timeout)
    }
}

/// Puts `slot`, which holds the value, into `ch` and pushes whether it went
/// in; a slot that did not is freed.
fn put_stored(
    s: &mut Stack,
    ch: &Channel<c_int>,
    slot: c_int,
    timeout: Option<Duration>,
) -> LResult {
    let ok = match ch.put(slot, timeout) {
        Ok(()) => true,
        Err(e) => {
            let cancel = matches!(e, PutError::Cancelled(_));
            release(s, e.into_inner(), false);
            if cancel {
                return Err(cancelled());
            }
            false
        }
    };
    entry::push_bool(s, ok);
    Ok(1)
}

lua_fn! {
    /// `ch:put(v)` for `wrappers.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and stored `v` at slot `s`
    /// (argument 2) that `try_put` reserved when it could not put.
    fn channel_put_slot_unchecked(s: &mut Stack) {
        // The wrapper passes the slot, a number, as argument 2.
        let slot = entry::arg2_number(s) as c_int;
        // SAFETY: the wrapper checked that argument 1 is a channel.
        let ch = unsafe { entry::arg1_of_kind(s, channel_kind()) };
        if !ch.is_closed() {
            if let Err(refused) = check_switch(s, "channel:put") {
                release(s, slot, false);
                return Err(refused);
            }
        }
        put_stored(s, &ch, slot, None)
    }
}

lua_fn! {
    /// `ch:get([timeout])`: the oldest value, waiting for one; nil on timeout
    /// or once the channel is closed and drained. A cancellation point when
    /// it blocks.
    fn channel_get(s: &mut Stack) {
        const USAGE: &str = "usage: channel:get([timeout])";
        let ch = channel(s, USAGE)?;
        let timeout = opt_timeout(s, 2, USAGE)?;
        let blocks = ch.count() == 0 && !ch.has_writers() && !ch.is_closed();
        if blocks && timeout != Some(Duration::ZERO) {
            check_switch(s, "channel:get")?;
        }
        match ch.get(timeout) {
            Ok(slot) => release(s, slot, true),
            Err(e) => {
                get_failed(e)?;
                s.push_nil();
            }
        }
        Ok(1)
    }
}

lua_fn! {
    /// `ch:get()` for `wrappers.lua`, which checked that argument 1 is a
    /// channel and that no timeout is given, and found no value to take at
    /// once: returns the slot of the value it waited for, freed (the caller
    /// reads and clears it before anything else runs), or 0 once the channel
    /// is closed and drained.
    fn channel_get_unchecked(s: &mut Stack) {
        // SAFETY: the wrapper checked that argument 1 is a channel.
        let ch = unsafe { entry::arg1_of_kind(s, channel_kind()) };
        if !ch.is_closed() {
            check_switch(s, "channel:get")?;
        }
        let slot = match ch.get(None) {
            Ok(slot) => {
                slots::give(slot);
                slot
            }
            Err(e) => {
                get_failed(e)?;
                0
            }
        };
        entry::push_int(s, slot);
        Ok(1)
    }
}

macro_rules! channel_query {
    ($($name:ident: $method:ident -> $push:ident;)*) => {$(
        lua_fn! {
            fn $name(s: &mut Stack) {
                let ch = channel(s, concat!("usage: channel:", stringify!($method), "()"))?;
                let v = ch.$method();
                s.$push(v as _);
                Ok(1)
            }
        }
    )*};
}

channel_query! {
    channel_count: count -> push_int;
    channel_size: size -> push_int;
    channel_is_full: is_full -> push_bool;
    channel_is_empty: is_empty -> push_bool;
    channel_has_readers: has_readers -> push_bool;
    channel_has_writers: has_writers -> push_bool;
    channel_is_closed: is_closed -> push_bool;
}

lua_fn! {
    /// `ch:close()`: graceful close: buffered values stay readable, blocked
    /// writers get false, blocked readers drain then get nil.
    fn channel_close(s: &mut Stack) {
        channel(s, "usage: channel:close()")?.close();
        Ok(0)
    }
}

lua_fn! {
    /// `__tostring`: "channel: COUNT", or "channel: closed".
    fn channel_tostring(s: &mut Stack) {
        let ch = channel(s, "usage: tostring(channel)")?;
        let text = if ch.is_closed() { "channel: closed".to_owned() } else { format!("channel: {}", ch.count()) };
        s.push_str(&text);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: frees the slots of values still buffered, then the channel.
    fn channel_gc(s: &mut Stack) {
        // A resurrected channel is no channel any more (udata rule 2).
        let Some(ch) = channel_kind().take(s, 1) else {
            return Ok(0);
        };
        while let Ok(slot) = ch.try_get() {
            release(s, slot, false);
        }
        Ok(0)
    }
}

/// Makes the channel metatable and its closures over the value tables;
/// returns the kind.
pub(super) fn init(s: &mut Stack) -> Kind<Channel<c_int>> {
    let kind = Kind::new(
        s,
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
    ChannelKind::with(|k| k.0.set(kind));
    // put, get and __gc: closures over VALS and OVER
    kind.push_metatable(s);
    let mt_idx = s.top();
    s.rawget_field(mt_idx, c"__index");
    let index = s.top();
    for (table, name, f) in [
        (index, c"put", channel_put),
        (index, c"get", channel_get),
        (mt_idx, c"__gc", channel_gc),
    ] {
        slots::push_tables(s);
        s.push_closure(f, 2);
        s.set_field(table, name);
    }
    s.pop(2);
    kind
}

/// Pushes the C functions the Lua wrappers call: `get` and `put_slot`
/// (closures over the value tables).
pub(super) fn push_unchecked(s: &mut Stack) {
    for f in [channel_get_unchecked, channel_put_slot_unchecked] {
        slots::push_tables(s);
        s.push_closure(f, 2);
    }
}
