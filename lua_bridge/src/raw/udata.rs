//! [`Kind`]: full userdata holding a Rust value of one type `T`, told apart
//! by a metatable that only the kind makes. The contract every module
//! wrote at each cast of a userdata block (`&*p.cast::<T>()`, `p.read()`,
//! `drop_in_place`) is written once, here.
//!
//! Rules, cited as "udata rule N":
//!
//! 1. A kind's metatable is a table the kind made ([`Kind::new`],
//!    [`Kind::new_empty`]), and a userdata gets it only from
//!    [`Kind::push`], which has just written a `T` into the block. (Lua
//!    code cannot set a userdata's metatable; the debug library can, which
//!    breaks memory safety in other ways too; no code of the bridge sets a
//!    metatable it got from Lua on a userdata.)
//! 2. The `T` stays in the block until [`Kind::take`] moves it out, which
//!    takes the metatable away first: a `__gc` that runs again, a
//!    resurrected userdata or a `__gc` called by hand on a live one
//!    (`__metatable` hands the metatable to Lua code) finds no `T` after.
//! 3. No reference into a block leaves this module: [`Kind::get`] clones
//!    the value out (an `Rc`, a handle, a few words). So a `take`, which Lua
//!    code may cause at any switch, never leaves a borrow dangling.
//! 4. A block is read while its userdata is on the stack (raw rule 6).

use std::ffi::{c_int, c_void, CStr};
use std::marker::PhantomData;

use mlua::ffi;

use super::{Reg, Stack};

/// A kind of full userdata holding a `T`; see the module doc. A registry
/// ref and the address of its metatable, so it is `Copy` (kept in a
/// thread-local `Cell`).
pub struct Kind<T> {
    mt_ref: c_int,
    mt: *const c_void,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Kind<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Kind<T> {}

impl<T: 'static> Default for Kind<T> {
    /// [`Kind::NONE`], so that a part of the cord context holding a kind
    /// in a `Cell` derives `Default`.
    fn default() -> Self {
        Kind::NONE
    }
}

impl<T: 'static> Kind<T> {
    /// The kind of no userdata (before setup): it finds none.
    pub const NONE: Kind<T> = Kind {
        mt_ref: ffi::LUA_NOREF,
        mt: std::ptr::null(),
        _t: PhantomData,
    };

    /// A kind whose metatable is made as [`Stack::make_metatable`] makes
    /// one (`__index` = `methods`, the metamethods `meta`, `__name`,
    /// `__metatable`).
    pub fn new(s: &mut Stack, name: &CStr, methods: &[Reg], meta: &[Reg]) -> Kind<T> {
        // A new table (udata rule 1).
        let (mt_ref, mt) = s.make_metatable(name, methods, meta);
        Kind {
            mt_ref,
            mt,
            _t: PhantomData,
        }
    }

    /// A kind whose metatable is a new empty table with room for `nrec`
    /// fields, which the caller fills ([`Kind::push_metatable`]).
    pub fn new_empty(s: &mut Stack, nrec: c_int) -> Kind<T> {
        let t = s.new_table(0, nrec);
        let mt = s.to_pointer(t);
        Kind {
            mt_ref: s.make_ref(),
            mt,
            _t: PhantomData,
        }
    }

    /// Pushes the metatable (to fill it, or for Lua code to compare with).
    pub fn push_metatable(self, s: &mut Stack) {
        s.push_ref(self.mt_ref);
    }

    /// The metatable's address (`lua_topointer`), for a check made in place
    /// ([`Kind::clone_from_block`]).
    #[inline(always)]
    pub fn metatable_ptr(self) -> *const c_void {
        self.mt
    }

    /// Pushes a new userdata of this kind holding `v`.
    #[inline]
    pub fn push(self, s: &mut Stack, v: T) {
        // A block that holds `v`, then the kind's metatable (udata rule 1).
        s.push_userdata_with(v, self.mt_ref);
    }

    /// A clone of the `T` of the userdata at `idx`, when it is one of this
    /// kind.
    #[inline]
    pub fn get(self, s: &mut Stack, idx: c_int) -> Option<T>
    where
        T: Clone,
    {
        let p = s.udata_with_mt(idx, self.mt)?;
        // SAFETY: the block of a userdata with this kind's metatable, on the
        // stack (udata rules 1, 2 and 4).
        Some(unsafe { self.clone_from_block(p) })
    }

    /// A clone of the `T` in the block `p`.
    ///
    /// # Safety
    ///
    /// `p` is the block of a userdata whose metatable is this kind's
    /// (checked in place, e.g. against [`Kind::metatable_ptr`]), on the
    /// stack of the running C function.
    #[inline(always)]
    pub unsafe fn clone_from_block(self, p: *mut c_void) -> T
    where
        T: Clone,
    {
        // SAFETY: caller's contract: the block holds a live `T` (udata
        // rules 1 and 2); the reference ends with the clone (udata rule 3).
        unsafe { &*p.cast::<T>() }.clone()
    }

    /// Moves the `T` out of the userdata at `idx` when it is one of this
    /// kind, and takes its metatable away (its `__gc`).
    pub fn take(self, s: &mut Stack, idx: c_int) -> Option<T> {
        let idx = s.abs(idx);
        let p = s.udata_with_mt(idx, self.mt)?;
        s.push_nil();
        s.set_metatable(idx);
        // SAFETY: the block holds a live `T` (udata rules 1 and 2), read
        // once: the metatable is gone, so nothing reads it again, and no
        // reference into it is alive (udata rule 3).
        Some(unsafe { p.cast::<T>().read() })
    }
}
