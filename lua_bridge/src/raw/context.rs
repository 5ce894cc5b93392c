//! The cord context: every piece of per-cord state the bridge keeps
//! (registry refs, metatable kinds, module states, caches, the cord's Lua
//! fibers) lives in one value that the runtime creates with its Lua state
//! and drops as a unit, reached through one thread-local pointer. Dropping
//! a runtime and building another on the same thread starts clean by
//! construction: nothing of the old state is left to reset by name.
//!
//! The state is kept in *parts*: each file that needs per-cord state
//! declares one struct of it (its fields in `Cell`s and `RefCell`s,
//! `Default` giving the state before setup), and the context holds one of
//! each. The context's type is declared at the top of the bridge
//! (`embed/context.rs`, with [`cord_context!`]), the only place that names
//! every part; a part is reached from its own file through the [`Part`]
//! trait, which this leaf defines, so no layer imports one above it.
//!
//! # Adding per-cord state (a module, a layer)
//!
//! 1. In the file that uses it, declare the part:
//!
//!    ```ignore
//!    /// Per-cord state of `my_module` (a part of the cord context).
//!    #[derive(Default)]
//!    pub(crate) struct MyState {
//!        /// Registry ref of the module's method table.
//!        methods: RegRef,
//!        /// Open handles, by id.
//!        open: RefCell<Slab<Handle>>,
//!    }
//!    ```
//!
//!    Fields hold interior mutability (`Cell`, `RefCell`, [`RegRef`]); the
//!    part is only ever shared. `Default` is the state before setup (a
//!    registry ref is `LUA_NOREF`: [`RegRef`] defaults to it).
//! 2. Add one line for it to the `cord_context!` list in
//!    `embed/context.rs` (`my_module: crate::modules::my_module::MyState,`).
//! 3. Reach it with `MyState::with(|st| ...)` (panics when the thread has
//!    no runtime) or `MyState::try_with(|st| ...)` (`None` then), with
//!    `use crate::raw::context::Part;`. Set it up in the module's `init`
//!    or `open` (the context exists from the start of the runtime's setup).
//!
//! A part's fields drop with the context, after the Lua state has closed
//! and the context pointer is cleared (rule 3): a `Drop` there must not
//! touch Lua.
//!
//! What stays in a `thread_local!`: what belongs to the thread rather than
//! to one runtime on it (the small-block arena of [`heap`](super::heap),
//! leaked by design; the slice watchdog's signal word, read by a signal
//! handler), and the owner of a cord's runtime on a serving cord.
//!
//! # Rules
//!
//! Cited as "context rule N":
//!
//! 1. The thread's context pointer, when not null, points to the live
//!    context of the thread's runtime, at a fixed address (boxed). It is
//!    set by [`install`] once the context is made, and cleared by
//!    [`uninstall`] before the context is dropped.
//! 2. A part is reached only as a shared reference, for the length of a
//!    [`Part::with`] closure. Such a closure runs no Lua code, switches no
//!    fiber and calls no user code, so the runtime (which alone owns the
//!    context) cannot be dropped while the reference lives.
//! 3. The runtime drops its context only after its Lua state has closed:
//!    finalizers run at the close with the context installed; the parts
//!    drop with it cleared.
//! 4. [`Part::locate`] is implemented only by [`cord_context!`], which
//!    returns the address of the context's field of that type: each part
//!    type is one field of the one context type.

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi;

thread_local! {
    /// The thread's context (context rule 1); null: none. `const` and
    /// without destructor, so a read is one load.
    static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// One piece of per-cord state: a field of the cord context.
///
/// # Safety
///
/// [`locate`](Part::locate) must return a pointer to the field of type
/// `Self` of the context `cx` points to (context rule 4); only
/// [`cord_context!`] implements it.
pub(crate) unsafe trait Part: Sized + 'static {
    /// The part inside the context at `cx`.
    ///
    /// # Safety
    ///
    /// `cx` points to a live context of the type `cord_context!` declared.
    unsafe fn locate(cx: *const ()) -> *const Self;

    /// Runs `f` on this thread's part; `None` when the thread has no
    /// context (no runtime, or one being dropped).
    #[inline(always)]
    fn try_with<R>(f: impl FnOnce(&Self) -> R) -> Option<R> {
        let cx = CURRENT.with(Cell::get);
        if cx.is_null() {
            return None;
        }
        // SAFETY: context rule 1: `cx` is the live context; rule 2: the
        // reference does not outlive `f`, which cannot drop it.
        Some(f(unsafe { &*Self::locate(cx) }))
    }

    /// Runs `f` on this thread's part.
    ///
    /// # Panics
    ///
    /// When the thread has no context (no Lua runtime).
    #[inline(always)]
    fn with<R>(f: impl FnOnce(&Self) -> R) -> R {
        match Self::try_with(f) {
            Some(r) => r,
            None => no_context(),
        }
    }
}

#[cold]
#[inline(never)]
fn no_context() -> ! {
    panic!("this thread has no luafiber Lua runtime (no cord context)")
}

/// Whether this thread has a context.
#[inline]
pub(crate) fn is_installed() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// Makes `cx` this thread's context.
///
/// # Safety
///
/// `cx` points to a context of the type `cord_context!` declared, at a
/// fixed address, that lives until [`uninstall`] (context rule 1).
///
/// # Panics
///
/// When the thread has a context already.
pub(crate) unsafe fn install(cx: *const ()) {
    assert!(!is_installed(), "this thread has a cord context already");
    CURRENT.with(|c| c.set(cx));
}

/// Clears this thread's context pointer (its owner then drops it).
pub(crate) fn uninstall() {
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// A registry ref kept in a part: `LUA_NOREF` until set.
pub(crate) struct RegRef(Cell<c_int>);

impl RegRef {
    /// The ref.
    #[inline(always)]
    pub(crate) fn get(&self) -> c_int {
        self.0.get()
    }

    /// Sets the ref.
    pub(crate) fn set(&self, r: c_int) {
        self.0.set(r);
    }
}

impl Default for RegRef {
    fn default() -> RegRef {
        RegRef(Cell::new(ffi::LUA_NOREF))
    }
}

/// Declares the cord context's type: a struct with one field per part
/// (each `Default`), and each part's [`Part`] impl. Invoked once, in
/// `embed/context.rs`. A field may carry `#[cfg(...)]`.
macro_rules! cord_context {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        $vis struct $name {
            $( $(#[$fmeta])* $field: $ty, )*
        }

        $(
            $(#[$fmeta])*
            // SAFETY: the address of the context's one field of this type
            // (context rule 4); the caller of `locate` guarantees `cx` is a
            // live `$name`.
            unsafe impl $crate::raw::context::Part for $ty {
                #[inline(always)]
                unsafe fn locate(cx: *const ()) -> *const Self {
                    // SAFETY: `cx` points to a live `$name` (locate's
                    // contract); no reference is made to the whole.
                    unsafe { ::std::ptr::addr_of!((*cx.cast::<$name>()).$field) }
                }
            }
        )*
    };
}

pub(crate) use cord_context;
