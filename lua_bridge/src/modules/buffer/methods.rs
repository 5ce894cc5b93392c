//! The methods of ibuf objects and the `buffer.internal` functions.

use std::ffi::{c_int, CStr};

use luafiber_runtime::ibuf::{self, CordIbuf, Ibuf};
use mlua::ffi;

use super::{
    push_ibuf, push_pointer, to_ibuf, to_pointer, up_ctx, with_ibuf, Ctx, Kind, LuaIbuf, LIVE,
};
use crate::raw::error::ErrorKind;
use crate::raw::{api, lua_fn, LResult, Raise};

/// A size argument: a non-negative integral number.
unsafe fn arg_size(l: *mut ffi::lua_State, idx: c_int, method: &str) -> LResult<usize> {
    // SAFETY: caller's contract.
    match unsafe { api::to_number(l, idx) } {
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
        lua_fn! {
            pub(super) fn $name(l) {
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
        lua_fn! {
            pub(super) fn $name(l) {
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

lua_fn! {
    /// `buf:consume(n)` (Tarantool master): moves `rpos` by `n`.
    pub(super) fn ibuf_consume(l) {
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

lua_fn! {
    /// `buf:reset()`: empties the buffer, keeps its memory.
    pub(super) fn ibuf_reset(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let ctx = up_ctx(l);
            with_ibuf(this(l, &ctx, "reset")?, Ibuf::reset)?;
        }
        Ok(0)
    }
}

lua_fn! {
    /// `buf:recycle()`: empties the buffer and frees its memory.
    pub(super) fn ibuf_recycle(l) {
        // SAFETY: a module closure called by Lua.
        unsafe {
            let ctx = up_ctx(l);
            with_ibuf(this(l, &ctx, "recycle")?, Ibuf::recycle)?;
        }
        Ok(0)
    }
}

lua_fn! {
    /// `buf:string([n])`: up to `n` (default all) unread bytes as a string.
    pub(super) fn ibuf_string(l) {
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

lua_fn! {
    /// `buf:write(s)`: appends the string `s` at `wpos`.
    pub(super) fn ibuf_write(l) {
        // SAFETY: a module closure called by Lua; `s` stays on the stack.
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "write")?;
            let s = api::to_str(l, 2).ok_or_else(|| Raise::illegal("Usage: ibuf:write(string)"))?;
            with_ibuf(ud, |b| b.extend_from_slice(s))?.map_err(no_memory)?;
        }
        Ok(0)
    }
}

lua_fn! {
    /// `__index`: the pointer fields, else the methods (upvalue 2).
    pub(super) fn ibuf_index(l) {
        // SAFETY: a closure over (context, methods) called by Lua with
        // (object, key).
        unsafe {
            let ctx = up_ctx(l);
            if let (Some(ud), Some(key)) = (to_ibuf(l, &ctx, 1), api::to_str(l, 2)) {
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

lua_fn! {
    /// `__newindex`: `buf.rpos = p` / `buf.wpos = p` with a pointer into the
    /// buffer; nothing else can be set.
    pub(super) fn ibuf_newindex(l) {
        // SAFETY: a module closure called by Lua with (object, key, value).
        unsafe {
            let ctx = up_ctx(l);
            let ud = this(l, &ctx, "__newindex")?;
            let key = api::to_str(l, 2).unwrap_or_default();
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

lua_fn! {
    pub(super) fn ibuf_tostring(l) {
        // SAFETY: room for 1 result.
        unsafe { ffi::lua_pushstring(l, c"<ibuf>".as_ptr()) };
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: frees a `buffer.ibuf()`'s memory.
    pub(super) fn ibuf_gc(l) {
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

lua_fn! {
    /// `buffer.ibuf([size])`: a new buffer; with `size`, room for that many
    /// bytes is reserved at once.
    pub(super) fn buffer_ibuf(l) {
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

lua_fn! {
    /// `buffer.internal.cord_ibuf_take()`: an empty cord buffer; the same
    /// object for every take of the same stash slot.
    pub(super) fn cord_take(l) {
        let b = ibuf::cord_ibuf_take();
        // SAFETY: a module closure called by Lua; room for 3 values.
        unsafe {
            let ctx = up_ctx(l);
            api::push_registry_ref(l, ctx.cord_objs);
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

lua_fn! {
    /// `buffer.internal.cord_ibuf_put(buf)`: gives the buffer back, with
    /// its memory kept. A second put is a no-op.
    pub(super) fn cord_put(l) {
        // SAFETY: a module closure called by Lua.
        ibuf::cord_ibuf_put(unsafe { cord_arg(l, "cord_ibuf_put")? });
        Ok(0)
    }
}

lua_fn! {
    /// `buffer.internal.cord_ibuf_drop(buf)`: frees the buffer's memory and
    /// gives it back.
    pub(super) fn cord_drop(l) {
        // SAFETY: a module closure called by Lua.
        ibuf::cord_ibuf_drop(unsafe { cord_arg(l, "cord_ibuf_drop")? });
        Ok(0)
    }
}

lua_fn! {
    /// `buffer.internal.stats()`: the stash counters (not in Tarantool).
    pub(super) fn cord_stats(l) {
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
