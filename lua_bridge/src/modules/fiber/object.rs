//! Fiber objects: userdata holding only the fiber id, so collecting one
//! never touches the fiber. One object per live Lua fiber is cached (a
//! registry ref), so `fiber.self() == fiber.self()` and objects work as
//! table keys; `__eq` compares ids for the rest.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use luafiber_fiber::{self as fiber, FiberId, Status};
use mlua::ffi;

use crate::cord;
use crate::raw::{api, error, lua_fn, LResult, Raise, Reg};

thread_local! {
    /// Registry ref of the methods table of fiber objects.
    static METHODS_REF: Cell<c_int> = const { Cell::new(ffi::LUA_NOREF) };
    /// Registry ref of the fiber metatable.
    static FIBER_MT_REF: Cell<c_int> = const { Cell::new(ffi::LUA_NOREF) };
}
thread_local! {
    /// The address of the fiber metatable.
    static FIBER_MT: std::cell::Cell<*const c_void> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// The fiber id of the fiber object at `idx`, or `None`.
pub(super) unsafe fn to_fiber(l: *mut ffi::lua_State, idx: c_int) -> Option<FiberId> {
    // SAFETY: caller passes a valid state and index; a userdata with the
    // fiber metatable holds a `u64` fiber id.
    unsafe {
        let p = api::udata_with_mt(l, idx, FIBER_MT.with(|m| m.get()))?;
        Some(FiberId(*p.cast::<u64>()))
    }
}

/// A fiber object or a numeric id at `idx`.
pub(super) unsafe fn to_fiber_or_id(l: *mut ffi::lua_State, idx: c_int) -> Option<FiberId> {
    // SAFETY: caller's contract.
    unsafe {
        to_fiber(l, idx).or_else(|| {
            let n = api::to_number(l, idx)?;
            (n >= 0.0 && n.fract() == 0.0).then_some(FiberId(n as u64))
        })
    }
}

/// The current fiber, or the error `what` gets outside any fiber.
pub(super) fn current(what: &str) -> LResult<FiberId> {
    fiber::current().ok_or_else(|| Raise::illegal(format!("{what}: not in a fiber")))
}

/// The Lua data index of a live Lua fiber.
pub(super) fn lua_index(id: FiberId) -> Option<usize> {
    fiber::ext(id).ok().filter(|&e| e > 0).map(|e| e - 1)
}

/// Pushes the fiber object of `id`: the cached one of a live Lua fiber, else
/// a new one.
///
/// # Safety
///
/// `l` is a thread of the cord's state with room for 2 values.
pub(crate) unsafe fn push_fiber(l: *mut ffi::lua_State, id: FiberId) {
    let idx = lua_index(id);
    if let Some(idx) = idx {
        let r = cord::with(|c| c.fibers[idx].udata);
        if r != ffi::LUA_NOREF {
            // SAFETY: caller's contract.
            unsafe { api::push_registry_ref(l, r) };
            return;
        }
    }
    // SAFETY: caller's contract; the userdata is 8 bytes, written at once.
    unsafe {
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<u64>()).cast::<u64>();
        p.write(id.0);
        api::push_registry_ref(l, FIBER_MT_REF.with(Cell::get));
        ffi::lua_setmetatable(l, -2);
        if let Some(idx) = idx {
            ffi::lua_pushvalue(l, -1);
            let r = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            cord::with(|c| c.fibers[idx].udata = r);
        }
    }
}

/// Maps the fiber layer's errors; a cancel becomes `FiberIsCancelled`.
pub(super) fn check(r: Result<(), fiber::Error>) -> LResult<()> {
    r.map_err(error::from_fiber)
}

/// Pushes the storage table of `id`, made on first use.
pub(super) unsafe fn push_storage(l: *mut ffi::lua_State, id: FiberId) -> LResult<()> {
    let idx = match (fiber::status(id), lua_index(id)) {
        (Some(s), Some(idx)) if s != Status::Dead => idx,
        _ => return Err(error::from_fiber(fiber::Error::Dead(id))),
    };
    let r = cord::with(|c| c.fibers[idx].storage);
    // SAFETY: caller's contract: room for 2 values.
    unsafe {
        if r != ffi::LUA_NOREF {
            api::push_registry_ref(l, r);
        } else {
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushvalue(l, -1);
            let r = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            cord::with(|c| c.fibers[idx].storage = r);
        }
    }
    Ok(())
}

fn is_key(l: *mut ffi::lua_State, idx: c_int, key: &[u8]) -> bool {
    // SAFETY: called with a valid index of a lua_fn body.
    unsafe { api::to_str(l, idx) == Some(key) }
}

lua_fn! {
    /// `__index` of fiber objects: `f.storage`, else the methods.
    fn fiber_index(l) {
        // SAFETY: `__index` gets the object and the key.
        unsafe {
            if is_key(l, 2, b"storage") {
                let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
                push_storage(l, id)?;
                return Ok(1);
            }
            api::push_registry_ref(l, METHODS_REF.with(Cell::get));
            ffi::lua_pushvalue(l, 2);
            ffi::lua_rawget(l, -2);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__index` of the module table: `fiber.storage` is the current fiber's.
    pub(super) fn module_index(l) {
        // SAFETY: `__index` gets the module and the key.
        unsafe {
            if is_key(l, 2, b"storage") {
                push_storage(l, current("fiber.storage")?)?;
            } else {
                ffi::lua_pushnil(l);
            }
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__tostring`: "fiber: N", or "fiber: N (dead)".
    fn fiber_tostring(l) {
        // SAFETY: called with the object at 1.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
            let dead = !fiber::exists(id);
            let s = if dead { format!("fiber: {id} (dead)") } else { format!("fiber: {id}") };
            api::push_str(l, &s);
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__eq`: same fiber id.
    fn fiber_eq(l) {
        // SAFETY: called with two operands.
        unsafe {
            let same = matches!((to_fiber(l, 1), to_fiber(l, 2)), (Some(a), Some(b)) if a == b);
            ffi::lua_pushboolean(l, c_int::from(same));
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__serialize`: `{id = N, name = S, status = S}` (no name when dead).
    fn fiber_serialize(l) {
        // SAFETY: called with the object at 1.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
            ffi::lua_createtable(l, 0, 3);
            ffi::lua_pushinteger(l, id.0 as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, c"id".as_ptr());
            let status = fiber::status(id).unwrap_or(Status::Dead);
            if status != Status::Dead {
                fiber::with_name(id, |n| api::push_bytes(l, n)).map_err(error::from_fiber)?;
                ffi::lua_setfield(l, -2, c"name".as_ptr());
            }
            api::push_str(l, status.as_str());
            ffi::lua_setfield(l, -2, c"status".as_ptr());
        }
        Ok(1)
    }
}

/// Makes the fiber metatable, with `methods` as the methods of fiber
/// objects.
///
/// # Safety
///
/// `l` is the cord's main state, at setup.
pub(crate) unsafe fn init_metatable(l: *mut ffi::lua_State, methods: &[Reg]) {
    // SAFETY: caller's contract.
    unsafe {
        ffi::lua_createtable(l, 0, methods.len() as c_int);
        api::set_funcs(l, methods);
        METHODS_REF.with(|r| r.set(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)));
        ffi::lua_createtable(l, 0, 5);
        api::set_funcs(
            l,
            &[
                (c"__index", fiber_index),
                (c"__tostring", fiber_tostring),
                (c"__eq", fiber_eq),
                (c"__serialize", fiber_serialize),
            ],
        );
        ffi::lua_pushstring(l, c"fiber".as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        FIBER_MT.with(|m| m.set(ffi::lua_topointer(l, -1)));
        FIBER_MT_REF.with(|r| r.set(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)));
    }
}
