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

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use luafiber_runtime::ibuf::{self, CordIbuf, Ibuf};
use mlua::ffi;

use crate::luajit::obj::LUA_TCDATA;
use crate::raw::context::Part;
use crate::raw::{Kind as UdataKind, LResult, Raise, Reg, Stack};

mod methods;

use methods::*;

/// Per-state registry refs of the module, kept in a userdata found at
/// `registry[&CTX_KEY]` and as upvalue 1 of every module function.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    /// The kind of ibuf objects.
    ibufs: UdataKind<Rc<LuaIbuf>>,
    /// `slot + 1 -> ibuf object` of the cord buffers.
    cord_objs: c_int,
    /// A Lua function `lightuserdata -> char *` cdata, or `LUA_NOREF`.
    to_cdata: c_int,
    /// A Lua function `cdata -> address number | nil`, or `LUA_NOREF`.
    to_addr: c_int,
}

static CTX_KEY: u8 = 0;

/// What an ibuf object holds.
enum Kind {
    Own(Ibuf),
    Cord(CordIbuf),
}

/// An ibuf object's buffer. The userdata holds an `Rc` of it, so a method
/// works on a handle of its own, whatever happens to the object meanwhile.
pub(crate) struct LuaIbuf {
    kind: RefCell<Kind>,
    /// Index in [`LiveIbufs`].
    live: Cell<usize>,
}

/// Per-cord state of `buffer` (a part of the cord context): every ibuf
/// object alive on the cord, so a raw pointer from Lua can be checked
/// before it is read.
#[derive(Default)]
pub(crate) struct LiveIbufs(pub(super) RefCell<Vec<Rc<LuaIbuf>>>);

/// Why an ibuf operation failed.
fn stale() -> Raise {
    Raise::illegal("the cord buffer was put back (or its fiber yielded): take it again")
}

/// Runs `f` on the buffer of an ibuf object. No Lua code runs inside `f`.
///
/// # Errors
///
/// A stale cord buffer (see the module doc).
pub(crate) fn with_ibuf<R>(ud: &LuaIbuf, f: impl FnOnce(&mut Ibuf) -> R) -> LResult<R> {
    let mut kind = ud
        .kind
        .try_borrow_mut()
        .map_err(|_| Raise::illegal("ibuf: the buffer is in use"))?;
    match &mut *kind {
        Kind::Own(buf) => Ok(f(buf)),
        Kind::Cord(b) => ibuf::with_cord_ibuf(*b, f).ok_or_else(stale),
    }
}

/// The context of `s`'s state, made on first use (at setup: this may run
/// Lua code under `lua_pcall` to load `ffi`).
pub(crate) fn init(s: &mut Stack) -> Ctx {
    if let Some(ctx) = ctx(s) {
        return ctx;
    }
    let (to_cdata, to_addr) = ffi_helpers(s);
    s.new_table(0, 0);
    let cord_objs = s.make_ref();
    // The metatable, filled below: its functions see the context as
    // upvalue 1, and the context holds its ref.
    let ctx = Ctx {
        ibufs: UdataKind::new_empty(s, 6),
        cord_objs,
        to_cdata,
        to_addr,
    };
    s.push_userdata(ctx);
    let ud = s.top();
    s.push_light((&raw const CTX_KEY).cast_mut().cast());
    s.push_value(ud);
    let _ = s.rawset(ffi::LUA_REGISTRYINDEX);
    ctx.ibufs.push_metatable(s);
    let mt = s.top();
    let methods: &[Reg] = &[
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
    s.push_value(ud);
    let index = s.new_table(0, methods.len() as c_int);
    set_closures(s, index, ud, methods);
    s.push_closure(ibuf_index, 2);
    s.set_field(mt, c"__index");
    set_closures(
        s,
        mt,
        ud,
        &[
            (c"__newindex", ibuf_newindex),
            (c"__tostring", ibuf_tostring),
            (c"__gc", ibuf_gc),
        ],
    );
    s.push_cstr(c"ibuf");
    s.set_field(mt, c"__name");
    s.pop(2);
    ctx
}

/// The context of `s`'s state, if [`init`] ran on it.
fn ctx(s: &mut Stack) -> Option<Ctx> {
    push_ctx(s);
    let ctx = ctx_at(s, -1);
    s.pop(1);
    ctx
}

/// The context in the userdata at `idx`: `registry[&CTX_KEY]` or upvalue 1
/// of a module function, the only places this module reads it from.
fn ctx_at(s: &Stack, idx: c_int) -> Option<Ctx> {
    let p = s.to_userdata(idx).cast::<Ctx>();
    // SAFETY: both places hold the context userdata `init` made, which holds
    // a `Ctx`; it is on the stack (or an upvalue) while it is read.
    (!p.is_null()).then(|| unsafe { p.read() })
}

/// Loads the FFI pointer helpers (LuaJIT with `ffi` only).
fn ffi_helpers(s: &mut Stack) -> (c_int, c_int) {
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
    if !cfg!(feature = "luajit") {
        return (ffi::LUA_NOREF, ffi::LUA_NOREF);
    }
    let top = s.top();
    let loaded = s.load(CHUNK, c"=buffer").is_ok()
        && s.pcall(0, 2).is_ok()
        && s.type_of(-1) == ffi::LUA_TFUNCTION;
    if !loaded {
        s.settop(top);
        return (ffi::LUA_NOREF, ffi::LUA_NOREF);
    }
    let to_addr = s.make_ref();
    let to_cdata = s.make_ref();
    (to_cdata, to_addr)
}

/// Sets each function as a closure over the value at `up` into table `t`.
fn set_closures(s: &mut Stack, t: c_int, up: c_int, fns: &[Reg]) {
    let (t, up) = (s.abs(t), s.abs(up));
    for (name, f) in fns {
        s.push_value(up);
        s.push_closure(*f, 1);
        s.set_field(t, name);
    }
}

/// Pushes the `buffer` module table (at setup).
pub(crate) fn open(s: &mut Stack) {
    init(s);
    let module = s.new_table(0, 4);
    push_ctx(s);
    let ctx = s.top();
    set_closures(s, module, ctx, &[(c"ibuf", buffer_ibuf)]);
    s.push_int(ibuf::READAHEAD as i64);
    s.set_field(module, c"READAHEAD");
    let internal = s.new_table(0, 4);
    set_closures(
        s,
        internal,
        ctx,
        &[
            (c"cord_ibuf_take", cord_take),
            (c"cord_ibuf_put", cord_put),
            (c"cord_ibuf_drop", cord_drop),
            (c"stats", cord_stats),
        ],
    );
    s.set_field(module, c"internal");
    s.pop(1);
}

/// Pushes the context userdata.
fn push_ctx(s: &mut Stack) {
    s.push_light((&raw const CTX_KEY).cast_mut().cast());
    s.rawget(ffi::LUA_REGISTRYINDEX);
}

/// The context a module function sees as upvalue 1 (every function of
/// this module is a closure over it: `init` and `open` make them all).
fn up_ctx(s: &Stack) -> Ctx {
    ctx_at(s, Stack::upvalue(1)).expect("a buffer function without its context")
}

/// The ibuf object at `idx`, or `None` when the value is not one.
pub(crate) fn to_ibuf(s: &mut Stack, ctx: &Ctx, idx: c_int) -> Option<Rc<LuaIbuf>> {
    ctx.ibufs.get(s, idx)
}

/// Pushes a new ibuf object of `kind`; returns its buffer.
fn push_ibuf(s: &mut Stack, ctx: &Ctx, kind: Kind) -> Rc<LuaIbuf> {
    let ud = Rc::new(LuaIbuf {
        kind: RefCell::new(kind),
        live: Cell::new(0),
    });
    ctx.ibufs.push(s, ud.clone());
    // Listed after the allocation, which may have run a `__gc` that
    // changed the list.
    LiveIbufs::with(|v| {
        let mut v = v.0.borrow_mut();
        ud.live.set(v.len());
        v.push(ud.clone());
    });
    ud
}

/// Pushes the address `p` as a pointer value: `char *` cdata when the FFI
/// is there, else light userdata. A null `p` is pushed as NULL.
///
/// # Errors
///
/// [`Raise::Top`] when the FFI helper fails (out of memory).
pub(crate) fn push_pointer(s: &mut Stack, ctx: &Ctx, p: *const u8) -> LResult<()> {
    if ctx.to_cdata == ffi::LUA_NOREF {
        s.push_light(p.cast_mut().cast());
        return Ok(());
    }
    s.push_ref(ctx.to_cdata);
    s.push_light(p.cast_mut().cast::<c_void>());
    s.pcall(1, 1).map_err(|()| Raise::Top)
}

/// The address a pointer value at `idx` holds (light userdata, or pointer
/// cdata on LuaJIT); `None` when the value is no pointer.
///
/// # Errors
///
/// [`Raise::Top`] when the FFI helper fails.
pub(crate) fn to_pointer(s: &mut Stack, ctx: &Ctx, idx: c_int) -> LResult<Option<usize>> {
    match s.type_of(idx) {
        ffi::LUA_TLIGHTUSERDATA => Ok(Some(s.to_userdata(idx) as usize)),
        LUA_TCDATA if ctx.to_addr != ffi::LUA_NOREF => {
            let idx = s.abs(idx);
            s.push_ref(ctx.to_addr);
            s.push_value(idx);
            s.pcall(1, 1).map_err(|()| Raise::Top)?;
            let addr = s.to_number(-1);
            s.pop(1);
            Ok(addr.map(|a| a as usize))
        }
        _ => Ok(None),
    }
}

/// Checks that `len` bytes from `addr` lie in the memory of a live ibuf
/// (or, for `len == None`, that `addr` does) and returns how many bytes
/// from `addr` up to that buffer's `wpos` are readable.
pub(crate) fn readable(addr: usize, len: Option<usize>) -> Option<usize> {
    LiveIbufs::try_with(|v| {
        v.0.borrow().iter().find_map(|ud| {
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
    .flatten()
}
