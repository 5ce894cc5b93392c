//! On LuaJIT, the hot methods of channels and conds (`put`, `get`, `wait`,
//! `signal`, `broadcast`) as Lua functions (`wrappers.lua`) that try the
//! case that neither blocks nor fails through an FFI call that cannot
//! raise, compiled into the caller's trace, and leave the rest to the C
//! methods; the FFI primitives they call are here.

use std::ffi::{c_int, c_void};
use std::rc::Rc;

use luafiber_fiber::{Channel, Cond};

use super::slots::{self, FAST_SLOTS};
use crate::raw::{Kind, Stack};

/// The primitive `try_put` of `wrappers.lua`: puts a free slot `s` of
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
    let Some(s) = slots::take_fast() else {
        return 0;
    };
    match ch.try_put(s) {
        Ok(()) => s,
        Err(e) if reserve != 0 => -e.into_inner(),
        Err(e) => {
            slots::give(e.into_inner());
            0
        }
    }
}

/// The primitive `try_get` of `wrappers.lua`: takes the oldest value's
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
            slots::give(s);
            s
        }
        Err(_) => -1,
    }
}

/// The primitive `signal` of `wrappers.lua`.
///
/// # Safety
///
/// `c` points to a live cond object's box (the caller checked the
/// metatable).
unsafe extern "C" fn signal(c: *const Rc<Cond>) {
    // SAFETY: caller's contract.
    unsafe { &*c }.signal();
}

/// The primitive `broadcast` of `wrappers.lua`.
///
/// # Safety
///
/// As [`signal`].
unsafe extern "C" fn broadcast(c: *const Rc<Cond>) {
    // SAFETY: caller's contract.
    unsafe { &*c }.broadcast();
}

/// Runs `wrappers.lua` over the channel and cond metatables (of the kinds
/// `ch` and `cond`) on LuaJIT; when it fails, or elsewhere (or under
/// `--cfg luafiber_no_fast_paths`), the C methods stay as they are.
pub(super) fn init(s: &mut Stack, ch: Kind<Channel<c_int>>, cond: Kind<Rc<Cond>>) {
    const CHUNK: &str = include_str!("wrappers.lua");
    // The wrappers pay only with FFI: on Lua 5.4 a Lua function in front of
    // the C method costs more than it saves.
    if !cfg!(feature = "luajit") || cfg!(luafiber_no_fast_paths) {
        return;
    }
    s.run_setup_chunk(CHUNK, c"=fiber.channel", |s| {
        ch.push_metatable(s);
        cond.push_metatable(s);
        slots::push_tables(s);
        s.push_int(FAST_SLOTS.into());
        for p in [
            try_put as *mut c_void,
            try_get as *mut c_void,
            signal as *mut c_void,
            broadcast as *mut c_void,
        ] {
            s.push_light(p);
        }
        s.push_cfunction(super::cond::cond_wait_unchecked);
        super::channel::push_unchecked(s);
        12
    });
}
