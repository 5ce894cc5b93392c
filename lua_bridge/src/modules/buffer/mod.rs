//! The Lua `buffer` module: Tarantool's `buffer.ibuf()` objects
//! (`src/lua/buffer.lua`) and the cord's reusable buffers
//! (`buffer.internal.cord_ibuf_take/put/drop`, over
//! [`luafiber_runtime::ibuf`]).
//!
//! An ibuf object is a userdata holding a [`Ibuf`] (from `buffer.ibuf()`) or
//! a cord buffer take (from `cord_ibuf_take()`; one object per stash slot,
//! so a take after a put gives the same object back). Methods, as in
//! Tarantool: `size()` (unread bytes), `pos()` (read offset), `capacity()`,
//! `unused()` (room after `wpos`), `reserve(n)`, `alloc(n)`, `checksize(n)`,
//! `read(n)`, `consume(n)`, `reset()`, `recycle()`; `tostring(buf)` is
//! `"<ibuf>"`. Two more that Tarantool lacks, for hosts without the FFI:
//! `buf:string([n])` (up to `n` unread bytes as a Lua string, `rpos` kept)
//! and `buf:write(s)` (appends `s` at `wpos`).
//!
//! Differences from Tarantool:
//!
//! - `buf.buf`, `buf.rpos`, `buf.wpos`, `buf.epos` are read-only views of
//!   the buffer's pointers made on each access: `char *` cdata on LuaJIT
//!   when the `ffi` module loads (so `ffi.string(buf.rpos, buf:size())`,
//!   `ffi.copy` and pointer arithmetic work), else light userdata, which
//!   compare with `==` but allow no arithmetic. They can be assigned
//!   (`buf.rpos = p`) only with a pointer inside the buffer.
//! - A method called on a cord buffer after it went back to the stash (put,
//!   or its fiber yielded) raises instead of touching whatever took it next.
//! - Pointers handed to `msgpack.decode(ptr, size)` are checked against the
//!   live ibufs of this thread; a pointer into no ibuf raises.

use std::cell::RefCell;
use std::ffi::{c_int, CStr};

use luafiber_runtime::ibuf::{self, CordIbuf, Ibuf};
use mlua::ffi;

use crate::raw::{api, LResult, Raise};

mod methods;

use methods::*;

/// `lua_type` of LuaJIT's FFI cdata.
#[cfg(feature = "luajit")]
const LUA_TCDATA: c_int = 10;

/// Per-state registry refs of the module, kept in a userdata found at
/// `registry[&CTX_KEY]` and as upvalue 1 of every module function.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    /// The ibuf metatable.
    mt: c_int,
    /// `slot + 1 -> ibuf object` of the cord buffers.
    pub(super) cord_objs: c_int,
    /// A Lua function `lightuserdata -> char *` cdata, or `LUA_NOREF`.
    to_cdata: c_int,
    /// A Lua function `cdata -> address number | nil`, or `LUA_NOREF`.
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    to_addr: c_int,
}

static CTX_KEY: u8 = 0;

pub(crate) enum Kind {
    Own(Ibuf),
    Cord(CordIbuf),
}

/// The payload of an ibuf userdata.
pub(crate) struct LuaIbuf {
    pub(super) kind: Kind,
    /// Index in `LIVE`.
    pub(super) live: usize,
}

thread_local! {
    /// Every ibuf object alive on this thread (userdata never move), so a
    /// raw pointer from Lua can be checked before it is read.
    pub(super) static LIVE: RefCell<Vec<*mut LuaIbuf>> = const { RefCell::new(Vec::new()) };
}

/// Why an ibuf operation failed.
pub(super) fn stale() -> Raise {
    Raise::illegal("the cord buffer was put back (or its fiber yielded): take it again")
}

/// Runs `f` on the buffer of an ibuf object. No Lua code runs inside `f`.
///
/// # Errors
///
/// A stale cord buffer (see the module doc).
pub(crate) fn with_ibuf<R>(ud: *mut LuaIbuf, f: impl FnOnce(&mut Ibuf) -> R) -> LResult<R> {
    // SAFETY: `ud` points at a live ibuf userdata (callers got it from
    // `to_ibuf` on a value on the stack); no Lua code runs meanwhile.
    match unsafe { &mut (*ud).kind } {
        Kind::Own(buf) => Ok(f(buf)),
        Kind::Cord(b) => ibuf::with_cord_ibuf(*b, f).ok_or_else(stale),
    }
}

/// The context of `l`'s state, made on first use.
///
/// # Safety
///
/// `l` is a valid state with room for 4 values, not inside a `lua_fn` body
/// (setup may run Lua code under `lua_pcall` to load `ffi`).
pub(crate) unsafe fn init(l: *mut ffi::lua_State) -> Ctx {
    // SAFETY: caller's contract; every push is popped again.
    unsafe {
        if let Some(ctx) = ctx(l) {
            return ctx;
        }
        let (to_cdata, to_addr) = ffi_helpers(l);
        ffi::lua_createtable(l, 0, 0);
        let cord_objs = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<Ctx>()).cast::<Ctx>();
        let ud = ffi::lua_gettop(l);
        let mut ctx = Ctx {
            mt: ffi::LUA_NOREF,
            cord_objs,
            to_cdata,
            to_addr,
        };
        p.write(ctx);
        ffi::lua_pushlightuserdata(l, (&raw const CTX_KEY).cast_mut().cast());
        ffi::lua_pushvalue(l, ud);
        ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
        // The metatable; its functions see the context as upvalue 1.
        ffi::lua_createtable(l, 0, 6);
        let methods: &[(&CStr, ffi::lua_CFunction)] = &[
            (c"size", ibuf_size),
            (c"pos", ibuf_pos),
            (c"capacity", ibuf_capacity),
            (c"unused", ibuf_unused),
            (c"reserve", ibuf_reserve),
            (c"alloc", ibuf_alloc),
            (c"checksize", ibuf_checksize),
            (c"read", ibuf_read),
            (c"consume", ibuf_consume),
            (c"reset", ibuf_reset),
            (c"recycle", ibuf_recycle),
            (c"string", ibuf_string),
            (c"write", ibuf_write),
        ];
        ffi::lua_createtable(l, 0, methods.len() as c_int);
        set_closures(l, ud, methods);
        ffi::lua_pushvalue(l, ud);
        ffi::lua_insert(l, -2);
        ffi::lua_pushcclosure(l, ibuf_index, 2);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        set_closures(
            l,
            ud,
            &[
                (c"__newindex", ibuf_newindex),
                (c"__tostring", ibuf_tostring),
                (c"__gc", ibuf_gc),
            ],
        );
        ffi::lua_pushstring(l, c"ibuf".as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        ctx.mt = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        p.write(ctx);
        ffi::lua_pop(l, 1);
        ctx
    }
}

/// The context of `l`'s state, if [`init`] ran on it.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values.
pub(crate) unsafe fn ctx(l: *mut ffi::lua_State) -> Option<Ctx> {
    // SAFETY: caller's contract; a raw get on the registry runs no
    // metamethod.
    unsafe {
        ffi::lua_pushlightuserdata(l, (&raw const CTX_KEY).cast_mut().cast());
        ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
        let p = ffi::lua_touserdata(l, -1).cast::<Ctx>();
        ffi::lua_pop(l, 1);
        (!p.is_null()).then(|| p.read())
    }
}

/// Loads the FFI pointer helpers (LuaJIT with `ffi` only).
unsafe fn ffi_helpers(l: *mut ffi::lua_State) -> (c_int, c_int) {
    #[cfg(feature = "luajit")]
    {
        const CHUNK: &str = r#"
            local ok, ffi = pcall(require, 'ffi')
            if not ok or type(ffi) ~= 'table' or not ffi.cast then return end
            local cast, istype, tonumber = ffi.cast, ffi.istype, tonumber
            local charp, ucharp = ffi.typeof('char *'), ffi.typeof('unsigned char *')
            local ccharp, voidp = ffi.typeof('const char *'), ffi.typeof('void *')
            local cvoidp, uintptr = ffi.typeof('const void *'), ffi.typeof('uintptr_t')
            return function(p) return cast(charp, p) end, function(p)
                if istype(charp, p) or istype(ccharp, p) or istype(ucharp, p)
                        or istype(voidp, p) or istype(cvoidp, p) then
                    return tonumber(cast(uintptr, p))
                end
            end
        "#;
        // SAFETY: `l` is valid and outside any `lua_fn` body (caller); the
        // chunk runs under lua_pcall.
        unsafe {
            let top = ffi::lua_gettop(l);
            let loaded =
                ffi::luaL_loadbuffer(l, CHUNK.as_ptr().cast(), CHUNK.len(), c"=buffer".as_ptr())
                    == 0
                    && ffi::lua_pcall(l, 0, 2, 0) == 0
                    && ffi::lua_type(l, -1) == ffi::LUA_TFUNCTION;
            if !loaded {
                ffi::lua_settop(l, top);
                return (ffi::LUA_NOREF, ffi::LUA_NOREF);
            }
            let to_addr = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            let to_cdata = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            (to_cdata, to_addr)
        }
    }
    #[cfg(not(feature = "luajit"))]
    {
        let _ = l;
        (ffi::LUA_NOREF, ffi::LUA_NOREF)
    }
}

/// Sets each function as a closure over the value at `up` into the table on
/// top.
unsafe fn set_closures(l: *mut ffi::lua_State, up: c_int, fns: &[(&CStr, ffi::lua_CFunction)]) {
    // SAFETY: caller's contract: a table on top, a value at `up`.
    unsafe {
        let up = ffi::lua_absindex(l, up);
        for (name, f) in fns {
            ffi::lua_pushvalue(l, up);
            ffi::lua_pushcclosure(l, *f, 1);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
    }
}

/// Pushes the `buffer` module table.
///
/// # Safety
///
/// `l` is a valid state with room for 8 values, not inside a `lua_fn` body.
pub(crate) unsafe fn open(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    unsafe {
        init(l);
        ffi::lua_createtable(l, 0, 4);
        let module = ffi::lua_gettop(l);
        push_ctx(l);
        let ctx = ffi::lua_gettop(l);
        ffi::lua_pushvalue(l, module);
        set_closures(l, ctx, &[(c"ibuf", buffer_ibuf)]);
        ffi::lua_pop(l, 1);
        ffi::lua_pushinteger(l, ibuf::READAHEAD as ffi::lua_Integer);
        ffi::lua_setfield(l, module, c"READAHEAD".as_ptr());
        ffi::lua_createtable(l, 0, 4);
        set_closures(
            l,
            ctx,
            &[
                (c"cord_ibuf_take", cord_take),
                (c"cord_ibuf_put", cord_put),
                (c"cord_ibuf_drop", cord_drop),
                (c"stats", cord_stats),
            ],
        );
        ffi::lua_setfield(l, module, c"internal".as_ptr());
        ffi::lua_pop(l, 1);
    }
}

/// Pushes the context userdata.
unsafe fn push_ctx(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract (a valid state with room for 2 values).
    unsafe {
        ffi::lua_pushlightuserdata(l, (&raw const CTX_KEY).cast_mut().cast());
        ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    }
}

/// The context a module function sees as upvalue 1.
pub(super) unsafe fn up_ctx(l: *mut ffi::lua_State) -> Ctx {
    // SAFETY: every function of this module is a closure over the context
    // userdata (set up in `init`/`open`).
    unsafe {
        ffi::lua_touserdata(l, ffi::lua_upvalueindex(1))
            .cast::<Ctx>()
            .read()
    }
}

/// The ibuf object at `idx`, or `None` when the value is not one.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values; `ctx` is its context.
pub(crate) unsafe fn to_ibuf(
    l: *mut ffi::lua_State,
    ctx: &Ctx,
    idx: c_int,
) -> Option<*mut LuaIbuf> {
    // SAFETY: caller's contract; raw reads only.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TUSERDATA || ffi::lua_getmetatable(l, idx) == 0 {
            return None;
        }
        api::push_registry_ref(l, ctx.mt);
        let same = ffi::lua_rawequal(l, -1, -2) != 0;
        ffi::lua_pop(l, 2);
        same.then(|| ffi::lua_touserdata(l, idx).cast())
    }
}

/// Pushes a new ibuf object of `kind`.
pub(super) unsafe fn push_ibuf(l: *mut ffi::lua_State, ctx: &Ctx, kind: Kind) -> *mut LuaIbuf {
    // SAFETY: caller's contract (room for 2 values); the userdata is written
    // before anything can see it.
    unsafe {
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<LuaIbuf>()).cast::<LuaIbuf>();
        let live = LIVE.with(|v| {
            let mut v = v.borrow_mut();
            v.push(p);
            v.len() - 1
        });
        p.write(LuaIbuf { kind, live });
        api::push_registry_ref(l, ctx.mt);
        ffi::lua_setmetatable(l, -2);
        p
    }
}

/// Pushes the address `p` as a pointer value: `char *` cdata when the FFI
/// is there, else light userdata. A null `p` is pushed as NULL.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values; `ctx` is its context.
pub(crate) unsafe fn push_pointer(l: *mut ffi::lua_State, ctx: &Ctx, p: *const u8) -> LResult<()> {
    // SAFETY: caller's contract; the helper runs under lua_pcall.
    unsafe {
        if ctx.to_cdata == ffi::LUA_NOREF {
            ffi::lua_pushlightuserdata(l, p.cast_mut().cast());
            return Ok(());
        }
        api::push_registry_ref(l, ctx.to_cdata);
        ffi::lua_pushlightuserdata(l, p.cast_mut().cast());
        if ffi::lua_pcall(l, 1, 1, 0) != 0 {
            return Err(Raise::Top);
        }
        Ok(())
    }
}

/// The address a pointer value at `idx` holds (light userdata, or pointer
/// cdata on LuaJIT); `None` when the value is no pointer.
///
/// # Safety
///
/// `l` is a valid state with room for 2 values; `ctx` is its context.
pub(crate) unsafe fn to_pointer(
    l: *mut ffi::lua_State,
    ctx: &Ctx,
    idx: c_int,
) -> LResult<Option<usize>> {
    // SAFETY: caller's contract; the helper runs under lua_pcall.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TLIGHTUSERDATA => Ok(Some(ffi::lua_touserdata(l, idx) as usize)),
            #[cfg(feature = "luajit")]
            LUA_TCDATA if ctx.to_addr != ffi::LUA_NOREF => {
                let idx = ffi::lua_absindex(l, idx);
                api::push_registry_ref(l, ctx.to_addr);
                ffi::lua_pushvalue(l, idx);
                if ffi::lua_pcall(l, 1, 1, 0) != 0 {
                    return Err(Raise::Top);
                }
                let addr = api::to_number(l, -1);
                ffi::lua_pop(l, 1);
                Ok(addr.map(|a| a as usize))
            }
            _ => {
                let _ = ctx;
                Ok(None)
            }
        }
    }
}

/// Checks that `len` bytes from `addr` lie in the memory of a live ibuf
/// (or, for `len == None`, that `addr` does) and returns how many bytes
/// from `addr` up to that buffer's `wpos` are readable.
pub(crate) fn readable(addr: usize, len: Option<usize>) -> Option<usize> {
    LIVE.with(|v| {
        v.borrow().iter().find_map(|&ud| {
            let (base, wpos) = with_ibuf(ud, |b| (b.as_ptr() as usize, b.wpos())).ok()?;
            if base == 0 || addr < base || addr > base + wpos {
                return None;
            }
            let avail = base + wpos - addr;
            match len {
                Some(n) if n > avail => None,
                _ => Some(avail),
            }
        })
    })
}
