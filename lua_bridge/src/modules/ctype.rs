//! [`ValueType`]: the Lua values of the library's value types (`uuid`,
//! `decimal`, `datetime`, `interval`), each a plain Rust value `T` (a
//! `#[repr(C)]` struct of bytes and numbers) held by a Lua object:
//!
//! - on LuaJIT, a cdata of a C struct declared to the FFI with `T`'s layout
//!   and given a metatype (`ffi.metatype`), as Tarantool's are
//!   (`struct tt_uuid`, `decimal_t`, `struct datetime`): `type(v)` is
//!   `'cdata'`, `ffi.istype` works, and the struct's fields read as
//!   Tarantool's do;
//! - on Lua 5.4 (or a LuaJIT without the FFI, or when the C type cannot be
//!   declared as `T`), a full userdata holding the `T`, with the same
//!   metatable.
//!
//! The C type is not taken on trust (luajit rule 1): its size and alignment
//! are checked against `T`'s, and its ctype ids are learnt from values made
//! through the FFI. A value is recognised by its ctype id (a cdata) or its
//! metatable (a userdata), never by anything Lua code can forge.
//!
//! Per-cord state: a `ValueType` holds registry refs of one Lua state, so
//! each module keeps it in its per-cord state, which
//! [`modules::init`](super::init) clears for every new state.

use std::ffi::{c_int, c_void, CStr};
use std::marker::PhantomData;

use mlua::ffi;

use crate::luajit::cdata::ctype_id_at;
use crate::luajit::obj::LUA_TCDATA;
use crate::raw::{LResult, Raise, Stack};

/// Declares the C type to the FFI, sets its metatype and returns what
/// [`ValueType::new`] learns from (nothing without the FFI, or when the
/// type is declared with another size or alignment already).
const CDEF: &str = r#"
local decl, name, mt, size, align = ...
local ok, ffi = pcall(require, 'ffi')
if not ok or type(ffi) ~= 'table' or not ffi.metatype then return end
if not pcall(ffi.typeof, name) then ffi.cdef(decl) end
local ct, cct = ffi.typeof(name), ffi.typeof('const ' .. name)
if ffi.sizeof(ct) ~= size or ffi.alignof(ct) ~= align then return end
ffi.metatype(ct, mt)
local new = ffi.new
return function() return new(ct) end, function() return new(cct) end,
    new(ct), new(cct)
"#;

/// How the values of a type are held.
#[derive(Clone, Copy)]
enum Repr {
    /// Cdata of a C struct; the ctype ids of the struct and of its
    /// `const` variant, and registry refs of their constructors.
    Cdata { ids: [u16; 2], ctors: [c_int; 2] },
    /// Full userdata with the metatable.
    Udata,
}

/// A value type: `T` held by cdata or userdata; see the module doc. `Copy`
/// (registry refs and an address), so a module keeps it in a `Cell`.
pub(crate) struct ValueType<T> {
    repr: Repr,
    /// The metatable (the metatype's on LuaJIT).
    mt_ref: c_int,
    mt: *const c_void,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for ValueType<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ValueType<T> {}

impl<T: Copy + 'static> ValueType<T> {
    /// Makes the type whose metatable is the table at `mt`: on LuaJIT
    /// declares `decl` (the struct `name`, e.g. `struct tt_uuid`, unless a
    /// struct of that name is declared already) and gives it the metatype
    /// `mt`; a userdata type otherwise. Runs Lua code under `lua_pcall`.
    ///
    /// `decl` must declare a struct with `T`'s layout: only the size and
    /// alignment can be checked here.
    pub(crate) fn new(s: &mut Stack, decl: &str, name: &CStr, mt: c_int) -> LResult<ValueType<T>> {
        let mt = s.abs(mt);
        s.ensure(8)?;
        let repr = if cfg!(feature = "luajit") {
            cdata_repr::<T>(s, decl, name, mt)
        } else {
            None
        };
        s.push_value(mt);
        let mt_ptr = s.to_pointer(-1);
        Ok(ValueType {
            repr: repr.unwrap_or(Repr::Udata),
            mt_ref: s.make_ref(),
            mt: mt_ptr,
            _t: PhantomData,
        })
    }

    /// Whether the values are cdata.
    pub(crate) fn is_cdata(self) -> bool {
        matches!(self.repr, Repr::Cdata { .. })
    }

    /// Pushes a new value holding `v`.
    ///
    /// # Errors
    ///
    /// [`Raise::Top`] when the FFI's constructor fails (out of memory).
    pub(crate) fn push(self, s: &mut Stack, v: T) -> LResult<()> {
        self.push_as(s, v, 0)
    }

    /// Pushes a new value holding `v` whose fields cannot be assigned (a
    /// `const` cdata; a userdata is the same as [`ValueType::push`]'s).
    ///
    /// # Errors
    ///
    /// As [`ValueType::push`].
    pub(crate) fn push_const(self, s: &mut Stack, v: T) -> LResult<()> {
        self.push_as(s, v, 1)
    }

    fn push_as(self, s: &mut Stack, v: T, which: usize) -> LResult<()> {
        match self.repr {
            Repr::Cdata { ctors, .. } => {
                s.ensure(2)?;
                s.push_ref(ctors[which]);
                s.pcall(0, 1).map_err(|()| Raise::Top)?;
                let p = s.to_pointer(-1).cast::<T>().cast_mut();
                // SAFETY: a new cdata of the C type checked to have `T`'s
                // size and alignment (luajit rule 1), on the stack; its
                // payload is `lua_topointer`'s (luajit rule 2), written
                // once before Lua code can read it.
                unsafe { p.write(v) };
            }
            Repr::Udata => {
                s.push_userdata_with(v, self.mt_ref);
            }
        }
        Ok(())
    }

    /// The address of the `T` held by the value at `idx` and whether it is
    /// `const`, when the value is one of this type. The address is valid
    /// while the value stays on the stack (raw rule 6).
    pub(crate) fn ptr(self, s: &mut Stack, idx: c_int) -> Option<(*mut T, bool)> {
        match self.repr {
            Repr::Cdata { ids, .. } => {
                if s.type_of(idx) != LUA_TCDATA {
                    return None;
                }
                let id = ctype_id_at(s, idx)?;
                let which = ids.iter().position(|&i| i == id)?;
                Some((s.to_pointer(idx).cast::<T>().cast_mut(), which == 1))
            }
            Repr::Udata => Some((s.udata_with_mt(idx, self.mt)?.cast(), false)),
        }
    }

    /// A copy of the `T` of the value at `idx`, when it is one of this
    /// type.
    pub(crate) fn get(self, s: &mut Stack, idx: c_int) -> Option<T> {
        let (p, _) = self.ptr(s, idx)?;
        // SAFETY: the payload or block of a value of this type on the stack
        // (checked by its ctype id or metatable), which holds a `T`.
        Some(unsafe { p.read() })
    }

    /// A copy of the `T` held by a cdata of ctype `id` whose payload is at
    /// `payload` (the encoder's in-place walk), when `id` is this type's.
    ///
    /// # Safety
    ///
    /// `payload` is the payload of a live cdata whose ctype id is `id`.
    pub(crate) unsafe fn read_payload(self, id: u16, payload: *const u8) -> Option<T> {
        match self.repr {
            Repr::Cdata { ids, .. } if ids.contains(&id) => {
                // SAFETY: caller's contract; the id is one of this type's,
                // whose payload holds a `T` (luajit rule 1).
                Some(unsafe { payload.cast::<T>().read() })
            }
            _ => None,
        }
    }
}

/// Declares the C type and learns its ids (see [`CDEF`]); `None` when it
/// cannot be had.
fn cdata_repr<T>(s: &mut Stack, decl: &str, name: &CStr, mt: c_int) -> Option<Repr> {
    let top = s.top();
    let ok = s.load(CDEF, c"=ctype").is_ok() && {
        s.push_str(decl);
        s.push_cstr(name);
        s.push_value(mt);
        s.push_int(std::mem::size_of::<T>() as i64);
        s.push_int(std::mem::align_of::<T>() as i64);
        s.pcall(5, 4).is_ok()
    };
    let ids = [ctype_id_at(s, top + 3), ctype_id_at(s, top + 4)];
    let made = ok && s.type_of(top + 1) == ffi::LUA_TFUNCTION;
    let (Some(plain), Some(konst), true) = (ids[0], ids[1], made) else {
        s.settop(top);
        return None;
    };
    s.settop(top + 2);
    let konst_ctor = s.make_ref();
    let ctor = s.make_ref();
    Some(Repr::Cdata {
        ids: [plain, konst],
        ctors: [ctor, konst_ctor],
    })
}

/// A module's per-cord value type: set when the module is loaded, cleared
/// for a new Lua state.
pub(crate) struct Slot<T: 'static> {
    /// Reads the type from its part of the cord context.
    get: fn() -> Option<ValueType<T>>,
    /// Writes it there.
    set: fn(Option<ValueType<T>>),
    /// The module's name, for the error of a value pushed before it loaded.
    name: &'static str,
}

impl<T: Copy + 'static> Slot<T> {
    /// The slot kept in a part of the cord context, read by `get` and
    /// written by `set`, of the module `name`.
    pub(crate) const fn in_context(
        get: fn() -> Option<ValueType<T>>,
        set: fn(Option<ValueType<T>>),
        name: &'static str,
    ) -> Slot<T> {
        Slot { get, set, name }
    }

    /// This cord's type, if the module was loaded.
    pub(crate) fn get(&self) -> Option<ValueType<T>> {
        (self.get)()
    }

    /// Makes `t` this cord's type.
    pub(crate) fn install(&self, t: ValueType<T>) {
        (self.set)(Some(t))
    }

    /// Forgets the type (a new Lua state on this thread).
    pub(crate) fn reset(&self) {
        (self.set)(None)
    }

    /// The `T` of the value at `idx`, if it is one of the type.
    pub(crate) fn value_at(&self, s: &mut Stack, idx: c_int) -> Option<T> {
        self.get()?.get(s, idx)
    }

    /// Pushes a new value holding `v`.
    ///
    /// # Errors
    ///
    /// Out of memory, or no type (the module was not loaded).
    pub(crate) fn push(&self, s: &mut Stack, v: T) -> LResult<()> {
        match self.get() {
            Some(t) => t.push(s, v),
            None => Err(Raise::illegal(format!(
                "the {} module is not loaded",
                self.name
            ))),
        }
    }
}
