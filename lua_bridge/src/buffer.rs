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

use crate::cfunc::{LResult, Raise};
use crate::error::ErrorKind;
use crate::lua;

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
    cord_objs: c_int,
    /// A Lua function `lightuserdata -> char *` cdata, or `LUA_NOREF`.
    to_cdata: c_int,
    /// A Lua function `cdata -> address number | nil`, or `LUA_NOREF`.
    #[cfg_attr(not(feature = "luajit"), allow(dead_code))]
    to_addr: c_int,
}

static CTX_KEY: u8 = 0;

enum Kind {
    Own(Ibuf),
    Cord(CordIbuf),
}

/// The payload of an ibuf userdata.
pub(crate) struct LuaIbuf {
    kind: Kind,
    /// Index in `LIVE`.
    live: usize,
}

thread_local! {
    /// Every ibuf object alive on this thread (userdata never move), so a
    /// raw pointer from Lua can be checked before it is read.
    static LIVE: RefCell<Vec<*mut LuaIbuf>> = const { RefCell::new(Vec::new()) };
}

/// Why an ibuf operation failed.
fn stale() -> Raise {
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
unsafe fn up_ctx(l: *mut ffi::lua_State) -> Ctx {
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
        lua::push_registry_ref(l, ctx.mt);
        let same = ffi::lua_rawequal(l, -1, -2) != 0;
        ffi::lua_pop(l, 2);
        same.then(|| ffi::lua_touserdata(l, idx).cast())
    }
}

/// Pushes a new ibuf object of `kind`.
unsafe fn push_ibuf(l: *mut ffi::lua_State, ctx: &Ctx, kind: Kind) -> *mut LuaIbuf {
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
        lua::push_registry_ref(l, ctx.mt);
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
        lua::push_registry_ref(l, ctx.to_cdata);
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
                lua::push_registry_ref(l, ctx.to_addr);
                ffi::lua_pushvalue(l, idx);
                if ffi::lua_pcall(l, 1, 1, 0) != 0 {
                    return Err(Raise::Top);
                }
                let addr = lua::to_number(l, -1);
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

/// A size argument: a non-negative integral number.
unsafe fn arg_size(l: *mut ffi::lua_State, idx: c_int, method: &str) -> LResult<usize> {
    // SAFETY: caller's contract.
    match unsafe { lua::to_number(l, idx) } {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n < 9.007_199_254_740_992e15 => Ok(n as usize),
        _ => Err(Raise::illegal(format!("Usage: ibuf:{method}(size)"))),
    }
}

/// The ibuf object at 1 of a method call.
unsafe fn this(l: *mut ffi::lua_State, ctx: &Ctx, method: &str) -> LResult<*mut LuaIbuf> {
    // SAFETY: caller's contract.
    unsafe { to_ibuf(l, ctx, 1) }.ok_or_else(|| {
        Raise::illegal(format!(
            "Attempt to call method without object, use ibuf:{method}()"
        ))
    })
}

fn out_of_range(needed: usize, size: usize) -> Raise {
    Raise::illegal(format!(
        "Attempt to read out of range bytes: needed={needed} size={size}"
    ))
}

fn no_memory(e: ibuf::ReserveError) -> Raise {
    Raise::Error(ErrorKind::OutOfMemory, e.to_string())
}

/// Address of offset `off` in `b` (NULL while it has no memory).
fn addr(b: &Ibuf, off: usize) -> *const u8 {
    if b.capacity() == 0 {
        std::ptr::null()
    } else {
        b.as_ptr().wrapping_add(off)
    }
}

macro_rules! getter {
    ($name:ident, $method:literal, |$b:ident| $e:expr) => {
        crate::lua_fn! {
            fn $name(l) {
                // SAFETY: a module closure called by Lua; room for 1 result.
                unsafe {
                    let ctx = up_ctx(l);
                    let ud = this(l, &ctx, $method)?;
                    let n = with_ibuf(ud, |$b| $e)?;
                    ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                }
                Ok(1)
            }
        }
    };
}

getter!(ibuf_size, "size", |b| b.used());
getter!(ibuf_pos, "pos", |b| b.rpos());
getter!(ibuf_capacity, "capacity", |b| b.capacity());
getter!(ibuf_unused, "unused", |b| b.unused());

/// The pointer methods: each runs `op(buf, n)` and pushes the offset it
/// returns as a pointer.
macro_rules! pointer_method {
    ($name:ident, $method:literal, |$b:ident, $n:ident| $e:expr) => {
        crate::lua_fn! {
            fn $name(l) {
                // SAFETY: a module closure called by Lua; room for 1 result.
                unsafe {
                    let ctx = up_ctx(l);
                    let ud = this(l, &ctx, $method)?;
                    let $n = arg_size(l, 2, $method)?;
                    let p = with_ibuf(ud, |$b| -> LResult<*const u8> { $e })??;
                    push_pointer(l, &ctx, p)?;
                }
                Ok(1)
            }
        }
    };
}

pointer_method!(ibuf_reserve, "reserve", |b, n| {
    b.try_reserve(n).map_err(no_memory)?;
    Ok(addr(b, b.wpos()))
});
pointer_method!(ibuf_alloc, "alloc", |b, n| {
    b.try_alloc(n).map_err(no_memory)?;
    Ok(addr(b, b.wpos() - n))
});
pointer_method!(ibuf_checksize, "checksize", |b, n| {
    if n > b.used() {
        return Err(out_of_range(n, b.used()));
    }
    Ok(addr(b, b.rpos()))
});
pointer_method!(ibuf_read, "read", |b, n| {
    let (r, used) = (b.rpos(), b.used());
    b.read(n).ok_or_else(|| out_of_range(n, used))?;
    Ok(addr(b, r))
});

crate::lua_fn! {
    /// `buf:consume(n)` (Tarantool master): moves `rpos` by `n`.
    fn ibuf_consume(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "consume")?;
            let n = arg_size(l, 2, "consume")?;
            with_ibuf(ud, |b| if b.consume(n) { Ok(()) } else { Err(out_of_range(n, b.used())) })??;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buf:reset()`: empties the buffer, keeps its memory.
    fn ibuf_reset(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let ctx = up_ctx(l);
            with_ibuf(this(l, &ctx, "reset")?, Ibuf::reset)?;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buf:recycle()`: empties the buffer and frees its memory.
    fn ibuf_recycle(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let ctx = up_ctx(l);
            with_ibuf(this(l, &ctx, "recycle")?, Ibuf::recycle)?;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buf:string([n])`: up to `n` (default all) unread bytes as a string.
    fn ibuf_string(l) {
        // SAFETY: a module closure called by Lua; the bytes are copied by
        // lua_pushlstring before anything can change the buffer.
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "string")?;
            let max = if ffi::lua_type(l, 2) <= ffi::LUA_TNIL { usize::MAX } else { arg_size(l, 2, "string")? };
            let (p, n) = with_ibuf(ud, |b| (b.data().as_ptr(), b.used().min(max)))?;
            ffi::lua_pushlstring(l, p.cast(), n);
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `buf:write(s)`: appends the string `s` at `wpos`.
    fn ibuf_write(l) {
        // SAFETY: a module closure called by Lua; `s` stays on the stack.
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "write")?;
            let s = lua::to_str(l, 2).ok_or_else(|| Raise::illegal("Usage: ibuf:write(string)"))?;
            with_ibuf(ud, |b| b.extend_from_slice(s))?.map_err(no_memory)?;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `__index`: the pointer fields, else the methods (upvalue 2).
    fn ibuf_index(l) {
        // SAFETY: a closure over (context, methods) called by Lua with
        // (object, key).
        unsafe {
            let ctx = up_ctx(l);
            if let (Some(ud), Some(key)) = (to_ibuf(l, &ctx, 1), lua::to_str(l, 2)) {
                let off: Option<fn(&Ibuf) -> usize> = match key {
                    b"rpos" => Some(Ibuf::rpos),
                    b"wpos" => Some(Ibuf::wpos),
                    b"buf" => Some(|_| 0),
                    b"epos" => Some(Ibuf::capacity),
                    _ => None,
                };
                if let Some(off) = off {
                    let p = with_ibuf(ud, |b| addr(b, off(b)))?;
                    push_pointer(l, &ctx, p)?;
                    return Ok(1);
                }
            }
            ffi::lua_settop(l, 2);
            ffi::lua_rawget(l, ffi::lua_upvalueindex(2));
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__newindex`: `buf.rpos = p` / `buf.wpos = p` with a pointer into the
    /// buffer; nothing else can be set.
    fn ibuf_newindex(l) {
        // SAFETY: a module closure called by Lua with (object, key, value).
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "__newindex")?;
            let key = lua::to_str(l, 2).unwrap_or_default();
            let is_rpos = match key {
                b"rpos" => true,
                b"wpos" => false,
                _ => return Err(Raise::illegal("ibuf: only rpos and wpos can be set")),
            };
            let p = to_pointer(l, &ctx, 3)?.ok_or_else(|| Raise::illegal("ibuf: a pointer expected"))?;
            let ok = with_ibuf(ud, |b| {
                let base = b.as_ptr() as usize;
                if b.capacity() == 0 || p < base {
                    return p == 0 && b.capacity() == 0;
                }
                if is_rpos { b.set_rpos(p - base) } else { b.set_wpos(p - base) }
            })?;
            if !ok {
                return Err(Raise::illegal("ibuf: the pointer is out of the buffer"));
            }
        }
        Ok(0)
    }
}

crate::lua_fn! {
    fn ibuf_tostring(l) {
        // SAFETY: room for 1 result.
        unsafe { ffi::lua_pushstring(l, c"<ibuf>".as_ptr()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__gc`: frees a `buffer.ibuf()`'s memory.
    fn ibuf_gc(l) {
        // SAFETY: called by the collector with the object at 1; it is never
        // used again, so its payload is dropped here.
        unsafe {
            let ctx = up_ctx(l);
            if let Some(ud) = to_ibuf(l, &ctx, 1) {
                LIVE.with(|v| {
                    let mut v = v.borrow_mut();
                    let i = (*ud).live;
                    v.swap_remove(i);
                    if let Some(&moved) = v.get(i) {
                        (*moved).live = i;
                    }
                });
                std::ptr::drop_in_place(ud);
            }
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buffer.ibuf([size])`: a new buffer; with `size`, room for that many
    /// bytes is reserved at once.
    fn buffer_ibuf(l) {
        // SAFETY: a module closure called by Lua; room for 2 values.
        unsafe {
            let ctx = up_ctx(l);
            let size = match ffi::lua_type(l, 1) {
                ffi::LUA_TNONE | ffi::LUA_TNIL => None,
                _ => Some(arg_size(l, 1, "ibuf").map_err(|_| Raise::illegal("Usage: ibuf([size])"))?),
            };
            let mut buf = Ibuf::new();
            if let Some(n) = size {
                buf.try_reserve(n).map_err(no_memory)?;
            }
            push_ibuf(l, &ctx, Kind::Own(buf));
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `buffer.internal.cord_ibuf_take()`: an empty cord buffer; the same
    /// object for every take of the same stash slot.
    fn cord_take(l) {
        let b = ibuf::cord_ibuf_take();
        // SAFETY: a module closure called by Lua; room for 3 values.
        unsafe {
            let ctx = up_ctx(l);
            lua::push_registry_ref(l, ctx.cord_objs);
            let key = b.slot() as ffi::lua_Integer + 1;
            if ffi::lua_rawgeti(l, -1, key) == ffi::LUA_TUSERDATA {
                let ud = ffi::lua_touserdata(l, -1).cast::<LuaIbuf>();
                (*ud).kind = Kind::Cord(b);
            } else {
                ffi::lua_pop(l, 1);
                push_ibuf(l, &ctx, Kind::Cord(b));
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, -3, key);
            }
        }
        Ok(1)
    }
}

/// The cord buffer take of the object at 1.
unsafe fn cord_arg(l: *mut ffi::lua_State, what: &str) -> LResult<CordIbuf> {
    // SAFETY: a module closure's state (caller).
    unsafe {
        let ctx = up_ctx(l);
        match to_ibuf(l, &ctx, 1).map(|ud| &(*ud).kind) {
            Some(Kind::Cord(b)) => Ok(*b),
            _ => Err(Raise::illegal(format!(
                "Usage: buffer.internal.{what}(cord_ibuf)"
            ))),
        }
    }
}

crate::lua_fn! {
    /// `buffer.internal.cord_ibuf_put(buf)`: gives the buffer back, with
    /// its memory kept. A second put is a no-op.
    fn cord_put(l) {
        // SAFETY: a module closure called by Lua.
        ibuf::cord_ibuf_put(unsafe { cord_arg(l, "cord_ibuf_put")? });
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buffer.internal.cord_ibuf_drop(buf)`: frees the buffer's memory and
    /// gives it back.
    fn cord_drop(l) {
        // SAFETY: a module closure called by Lua.
        ibuf::cord_ibuf_drop(unsafe { cord_arg(l, "cord_ibuf_drop")? });
        Ok(0)
    }
}

crate::lua_fn! {
    /// `buffer.internal.stats()`: the stash counters (not in Tarantool).
    fn cord_stats(l) {
        let s = ibuf::stats();
        let fields: [(&CStr, u64); 8] = [
            (c"takes", s.takes),
            (c"puts", s.puts),
            (c"auto_puts", s.auto_puts),
            (c"allocations", s.allocations),
            (c"frees", s.frees),
            (c"bytes_held", s.bytes_held as u64),
            (c"taken", s.taken as u64),
            (c"free", s.free as u64),
        ];
        // SAFETY: room for 2 values; a fresh table has no metatable.
        unsafe {
            ffi::lua_createtable(l, 0, fields.len() as c_int);
            for (k, v) in fields {
                ffi::lua_pushnumber(l, v as f64);
                ffi::lua_setfield(l, -2, k.as_ptr());
            }
        }
        Ok(1)
    }
}
