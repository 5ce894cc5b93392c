//! Fiber objects: userdata holding only the fiber id, so collecting one
//! never touches the fiber. One object per live Lua fiber is cached (a
//! registry ref), so `fiber.self() == fiber.self()` and objects work as
//! table keys; `__eq` compares ids for the rest.

use std::cell::Cell;
use std::ffi::c_int;

use luafiber_fiber::{self as fiber, FiberId, Status};
use mlua::ffi;

use crate::cord;
use crate::luajit::entry;
use crate::raw::context::{Part, RegRef};
use crate::raw::{error, lua_fn, Kind, LResult, Raise, Reg, Stack};

/// Per-cord state of fiber objects (a part of the cord context).
#[derive(Default)]
pub(crate) struct FiberObjects {
    /// Registry ref of the methods table of fiber objects.
    methods: RegRef,
    /// The kind of fiber objects: a fiber id.
    kind: Cell<Kind<u64>>,
}

/// The kind of fiber objects.
#[inline(always)]
fn fiber_kind() -> Kind<u64> {
    FiberObjects::with(|o| o.kind.get())
}

/// The fiber id of the fiber object at `idx`, or `None`.
pub(super) fn to_fiber(s: &mut Stack, idx: c_int) -> Option<FiberId> {
    let kind = fiber_kind();
    let id = if idx > 0 {
        entry::arg_of(s, idx, kind)
    } else {
        kind.get(s, idx)
    };
    id.map(FiberId)
}

/// A fiber object or a numeric id at `idx`.
pub(super) fn to_fiber_or_id(s: &mut Stack, idx: c_int) -> Option<FiberId> {
    to_fiber(s, idx).or_else(|| {
        let n = s.to_number(idx)?;
        (n >= 0.0 && n.fract() == 0.0).then_some(FiberId(n as u64))
    })
}

/// The current fiber, or the error `what` gets outside any fiber.
pub(super) fn current(what: &str) -> LResult<FiberId> {
    fiber::current().ok_or_else(|| Raise::illegal(format!("{what}: not in a fiber")))
}

/// The Lua data index of a live Lua fiber.
#[inline]
pub(super) fn lua_index(id: FiberId) -> Option<usize> {
    fiber::ext(id).ok().filter(|&e| e > 0).map(|e| e - 1)
}

/// Pushes the fiber object of `id`: the cached one of a live Lua fiber, else
/// a new one.
pub(super) fn push_fiber(s: &mut Stack, id: FiberId) {
    match lua_index(id) {
        Some(idx) => push_lua_fiber(s, id, idx),
        None => {
            fiber_kind().push(s, id.0);
        }
    }
}

/// [`push_fiber`] for the live Lua fiber `id` whose index in the cord's
/// fibers is `idx`: its cached object, made and cached on first use.
pub(super) fn push_lua_fiber(s: &mut Stack, id: FiberId, idx: usize) {
    let r = cord::with(|c| c.fibers[idx].udata);
    if r != ffi::LUA_NOREF {
        s.push_ref(r);
        return;
    }
    fiber_kind().push(s, id.0);
    s.push_value(-1);
    let r = s.make_ref();
    cord::with(|c| c.fibers[idx].udata = r);
}

/// Maps the fiber layer's errors; a cancel becomes `FiberIsCancelled`.
pub(super) fn check(r: Result<(), fiber::Error>) -> LResult<()> {
    r.map_err(error::from_fiber)
}

/// Pushes the storage table of `id`, made on first use.
pub(super) fn push_storage(s: &mut Stack, id: FiberId) -> LResult<()> {
    let idx = match (fiber::status(id), lua_index(id)) {
        (Some(st), Some(idx)) if st != Status::Dead => idx,
        _ => return Err(error::from_fiber(fiber::Error::Dead(id))),
    };
    let r = cord::with(|c| c.fibers[idx].storage);
    if r != ffi::LUA_NOREF {
        s.push_ref(r);
    } else {
        s.new_table(0, 0);
        s.push_value(-1);
        let r = s.make_ref();
        cord::with(|c| c.fibers[idx].storage = r);
    }
    Ok(())
}

lua_fn! {
    /// `__index` of fiber objects: `f.storage`, else the methods.
    fn fiber_index(s: &mut Stack) {
        if s.to_str(2) == Some(b"storage") {
            let id = to_fiber(s, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
            push_storage(s, id)?;
            return Ok(1);
        }
        s.push_ref(FiberObjects::with(|o| o.methods.get()));
        s.push_value(2);
        s.rawget(-2);
        Ok(1)
    }
}

lua_fn! {
    /// `__index` of the module table: `fiber.storage` is the current fiber's.
    pub(super) fn module_index(s: &mut Stack) {
        if s.to_str(2) == Some(b"storage") {
            push_storage(s, current("fiber.storage")?)?;
        } else {
            s.push_nil();
        }
        Ok(1)
    }
}

lua_fn! {
    /// `__tostring`: "fiber: N", or "fiber: N (dead)".
    fn fiber_tostring(s: &mut Stack) {
        let id = to_fiber(s, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
        let dead = !fiber::exists(id);
        s.push_str(&if dead { format!("fiber: {id} (dead)") } else { format!("fiber: {id}") });
        Ok(1)
    }
}

lua_fn! {
    /// `__eq`: same fiber id.
    fn fiber_eq(s: &mut Stack) {
        let same = matches!((to_fiber(s, 1), to_fiber(s, 2)), (Some(a), Some(b)) if a == b);
        s.push_bool(same);
        Ok(1)
    }
}

lua_fn! {
    /// `__serialize`: `{id = N, name = S, status = S}` (no name when dead).
    fn fiber_serialize(s: &mut Stack) {
        let id = to_fiber(s, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
        let t = s.new_table(0, 3);
        s.push_int(id.0 as i64);
        s.set_field(t, c"id");
        let status = fiber::status(id).unwrap_or(Status::Dead);
        if status != Status::Dead {
            fiber::with_name(id, |n| s.push_bytes(n)).map_err(error::from_fiber)?;
            s.set_field(t, c"name");
        }
        s.push_str(status.as_str());
        s.set_field(t, c"status");
        Ok(1)
    }
}

/// Makes the fiber metatable, with `methods` as the methods of fiber
/// objects.
pub(super) fn init_metatable(s: &mut Stack, methods: &[Reg]) {
    let t = s.new_table(0, methods.len() as c_int + 3);
    s.set_funcs(t, methods);
    // Master's `lbox_fiber_index` reads the metatable: `f.__serialize`,
    // `f.__tostring` and `f.__index` are the metamethods.
    s.set_funcs(
        t,
        &[
            (c"__serialize", fiber_serialize),
            (c"__tostring", fiber_tostring),
            (c"__index", fiber_index),
        ],
    );
    FiberObjects::with(|o| o.methods.set(s.make_ref()));
    let kind = Kind::new_empty(s, 5);
    kind.push_metatable(s);
    let mt = s.top();
    s.set_funcs(
        mt,
        &[
            (c"__index", fiber_index),
            (c"__tostring", fiber_tostring),
            (c"__eq", fiber_eq),
            (c"__serialize", fiber_serialize),
        ],
    );
    s.push_cstr(c"fiber");
    s.set_field(mt, c"__name");
    s.pop(1);
    FiberObjects::with(|o| o.kind.set(kind));
}
