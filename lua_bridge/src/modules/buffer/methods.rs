//! The methods of ibuf objects and the `buffer.internal` functions.

use std::ffi::CStr;
use std::rc::Rc;

use luafiber_runtime::ibuf::{self, CordIbuf, Ibuf};

use super::{
    push_ibuf, push_pointer, to_ibuf, to_pointer, up_ctx, with_ibuf, Ctx, Kind, LiveIbufs, LuaIbuf,
};
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// A size argument: a non-negative integral number.
fn arg_size(s: &Stack, idx: std::ffi::c_int, method: &str) -> LResult<usize> {
    match s.to_number(idx) {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n < 9.007_199_254_740_992e15 => Ok(n as usize),
        _ => Err(Raise::illegal(format!("Usage: ibuf:{method}(size)"))),
    }
}

/// The ibuf object at 1 of a method call.
fn this(s: &mut Stack, ctx: &Ctx, method: &str) -> LResult<Rc<LuaIbuf>> {
    to_ibuf(s, ctx, 1).ok_or_else(|| {
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
            pub(super) fn $name(s: &mut Stack) {
                let ctx = up_ctx(s);
                let ud = this(s, &ctx, $method)?;
                let n = with_ibuf(&ud, |$b| $e)?;
                s.push_int(n as i64);
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
            pub(super) fn $name(s: &mut Stack) {
                let ctx = up_ctx(s);
                let ud = this(s, &ctx, $method)?;
                let $n = arg_size(s, 2, $method)?;
                let p = with_ibuf(&ud, |$b| -> LResult<*const u8> { $e })??;
                push_pointer(s, &ctx, p)?;
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
    pub(super) fn ibuf_consume(s: &mut Stack) {
        let ctx = up_ctx(s);
        let ud = this(s, &ctx, "consume")?;
        let n = arg_size(s, 2, "consume")?;
        with_ibuf(&ud, |b| if b.consume(n) { Ok(()) } else { Err(out_of_range(n, b.used())) })??;
        Ok(0)
    }
}

lua_fn! {
    /// `buf:reset()`: empties the buffer, keeps its memory.
    pub(super) fn ibuf_reset(s: &mut Stack) {
        let ctx = up_ctx(s);
        with_ibuf(&*this(s, &ctx, "reset")?, Ibuf::reset)?;
        Ok(0)
    }
}

lua_fn! {
    /// `buf:recycle()`: empties the buffer and frees its memory.
    pub(super) fn ibuf_recycle(s: &mut Stack) {
        let ctx = up_ctx(s);
        with_ibuf(&*this(s, &ctx, "recycle")?, Ibuf::recycle)?;
        Ok(0)
    }
}

lua_fn! {
    /// `buf:string([n])`: up to `n` (default all) unread bytes as a string.
    pub(super) fn ibuf_string(s: &mut Stack) {
        let ctx = up_ctx(s);
        let ud = this(s, &ctx, "string")?;
        let max = if s.is_none_or_nil(2) { usize::MAX } else { arg_size(s, 2, "string")? };
        // Copied out first: the string's allocation may run a `__gc` that
        // changes the buffer.
        let bytes = with_ibuf(&ud, |b| b.data()[..b.used().min(max)].to_vec())?;
        s.push_bytes(&bytes);
        Ok(1)
    }
}

lua_fn! {
    /// `buf:write(s)`: appends the string `s` at `wpos`.
    pub(super) fn ibuf_write(s: &mut Stack) {
        let ctx = up_ctx(s);
        let ud = this(s, &ctx, "write")?;
        let bytes = s.to_str(2).ok_or_else(|| Raise::illegal("Usage: ibuf:write(string)"))?;
        with_ibuf(&ud, |b| b.extend_from_slice(bytes))?.map_err(no_memory)?;
        Ok(0)
    }
}

lua_fn! {
    /// `__index`: the pointer fields, else the methods (upvalue 2).
    pub(super) fn ibuf_index(s: &mut Stack) {
        let ctx = up_ctx(s);
        let off: Option<fn(&Ibuf) -> usize> = match s.to_str(2) {
            Some(b"rpos") => Some(Ibuf::rpos),
            Some(b"wpos") => Some(Ibuf::wpos),
            Some(b"buf") => Some(|_| 0),
            Some(b"epos") => Some(Ibuf::capacity),
            _ => None,
        };
        if let (Some(off), Some(ud)) = (off, to_ibuf(s, &ctx, 1)) {
            let p = with_ibuf(&ud, |b| addr(b, off(b)))?;
            push_pointer(s, &ctx, p)?;
            return Ok(1);
        }
        s.settop(2);
        s.rawget(Stack::upvalue(2));
        Ok(1)
    }
}

lua_fn! {
    /// `__newindex`: `buf.rpos = p` / `buf.wpos = p` with a pointer into the
    /// buffer; nothing else can be set.
    pub(super) fn ibuf_newindex(s: &mut Stack) {
        let ctx = up_ctx(s);
        let is_rpos = match s.to_str(2) {
            Some(b"rpos") => true,
            Some(b"wpos") => false,
            _ => return Err(Raise::illegal("ibuf: only rpos and wpos can be set")),
        };
        let p = to_pointer(s, &ctx, 3)?.ok_or_else(|| Raise::illegal("ibuf: a pointer expected"))?;
        let ud = this(s, &ctx, "__newindex")?;
        let ok = with_ibuf(&ud, |b| {
            let base = b.as_ptr() as usize;
            if b.capacity() == 0 || p < base {
                return p == 0 && b.capacity() == 0;
            }
            if is_rpos { b.set_rpos(p - base) } else { b.set_wpos(p - base) }
        })?;
        if !ok {
            return Err(Raise::illegal("ibuf: the pointer is out of the buffer"));
        }
        Ok(0)
    }
}

lua_fn! {
    /// `__tostring`: `"<ibuf>"`.
    pub(super) fn ibuf_tostring(s: &mut Stack) {
        s.push_cstr(c"<ibuf>");
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: frees a `buffer.ibuf()`'s memory.
    pub(super) fn ibuf_gc(s: &mut Stack) {
        let ctx = up_ctx(s);
        // A resurrected ibuf is no ibuf any more (udata rule 2).
        if let Some(ud) = ctx.ibufs.take(s, 1) {
            LiveIbufs::try_with(|v| {
                let mut v = v.0.borrow_mut();
                let i = ud.live.get();
                v.swap_remove(i);
                if let Some(moved) = v.get(i) {
                    moved.live.set(i);
                }
            });
        }
        Ok(0)
    }
}

lua_fn! {
    /// `buffer.ibuf([size])`: a new buffer; with `size`, room for that many
    /// bytes is reserved at once.
    pub(super) fn buffer_ibuf(s: &mut Stack) {
        let ctx = up_ctx(s);
        let size = if s.is_none_or_nil(1) {
            None
        } else {
            Some(arg_size(s, 1, "ibuf").map_err(|_| Raise::illegal("Usage: ibuf([size])"))?)
        };
        let mut buf = Ibuf::new();
        if let Some(n) = size {
            buf.try_reserve(n).map_err(no_memory)?;
        }
        push_ibuf(s, &ctx, Kind::Own(buf));
        Ok(1)
    }
}

lua_fn! {
    /// `buffer.internal.cord_ibuf_take()`: an empty cord buffer; the same
    /// object for every take of the same stash slot.
    pub(super) fn cord_take(s: &mut Stack) {
        let b = ibuf::cord_ibuf_take();
        let ctx = up_ctx(s);
        s.push_ref(ctx.cord_objs);
        let objs = s.top();
        let key = b.slot() as std::ffi::c_int + 1;
        s.rawgeti(objs, key);
        if let Some(ud) = to_ibuf(s, &ctx, -1) {
            *ud.kind.try_borrow_mut().map_err(|_| Raise::illegal("ibuf: the buffer is in use"))? = Kind::Cord(b);
        } else {
            s.pop(1);
            push_ibuf(s, &ctx, Kind::Cord(b));
            s.push_value(-1);
            s.rawseti(objs, key.into());
        }
        Ok(1)
    }
}

/// The cord buffer take of the object at 1.
fn cord_arg(s: &mut Stack, what: &str) -> LResult<CordIbuf> {
    let ctx = up_ctx(s);
    let take = to_ibuf(s, &ctx, 1).and_then(|ud| match *ud.kind.borrow() {
        Kind::Cord(b) => Some(b),
        Kind::Own(_) => None,
    });
    take.ok_or_else(|| Raise::illegal(format!("Usage: buffer.internal.{what}(cord_ibuf)")))
}

lua_fn! {
    /// `buffer.internal.cord_ibuf_put(buf)`: gives the buffer back, with
    /// its memory kept. A second put is a no-op.
    pub(super) fn cord_put(s: &mut Stack) {
        ibuf::cord_ibuf_put(cord_arg(s, "cord_ibuf_put")?);
        Ok(0)
    }
}

lua_fn! {
    /// `buffer.internal.cord_ibuf_drop(buf)`: frees the buffer's memory and
    /// gives it back.
    pub(super) fn cord_drop(s: &mut Stack) {
        ibuf::cord_ibuf_drop(cord_arg(s, "cord_ibuf_drop")?);
        Ok(0)
    }
}

lua_fn! {
    /// `buffer.internal.stats()`: the stash counters (not in Tarantool).
    pub(super) fn cord_stats(s: &mut Stack) {
        let st = ibuf::stats();
        let fields: [(&CStr, u64); 8] = [
            (c"takes", st.takes),
            (c"puts", st.puts),
            (c"auto_puts", st.auto_puts),
            (c"allocations", st.allocations),
            (c"frees", st.frees),
            (c"bytes_held", st.bytes_held as u64),
            (c"taken", st.taken as u64),
            (c"free", st.free as u64),
        ];
        let t = s.new_table(0, fields.len() as std::ffi::c_int);
        for (k, v) in fields {
            s.push_number(v as f64);
            s.set_field(t, k);
        }
        Ok(1)
    }
}
