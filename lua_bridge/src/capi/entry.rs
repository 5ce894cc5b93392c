//! How an exported function of the C module API meets its C caller (capi
//! rule 5): [`FromC`] turns a C argument into the safe value the body
//! works on, and `capi!` declares the exported function, converting its
//! arguments once, under one SAFETY argument: the function's own
//! `# Safety` section, which is its C caller's contract.

use std::ffi::{c_char, CStr};

/// A C argument as the safe value a body works on.
pub trait FromC<Raw>: Sized {
    /// Converts `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is what the impl requires (its doc); every exported function
    /// that converts an argument requires it in its `# Safety`.
    unsafe fn from_c(raw: Raw) -> Self;
}

/// NULL, or a live `T` that nothing else reads or writes during the call
/// (C may keep pointers into it, and use them after).
impl<T> FromC<*mut T> for Option<&mut T> {
    unsafe fn from_c(raw: *mut T) -> Self {
        // SAFETY: caller's contract: NULL or a live, unaliased `T`.
        unsafe { raw.as_mut() }
    }
}

/// NULL, or a live `T` that nothing writes during the call but through
/// its own shared methods (a cond other fibers signal meanwhile).
impl<T> FromC<*const T> for Option<&T> {
    unsafe fn from_c(raw: *const T) -> Self {
        // SAFETY: caller's contract: NULL or a live `T`, only shared.
        unsafe { raw.as_ref() }
    }
}

/// NULL, or a `T` from `Box::into_raw` that C gives up (a `*_delete`).
impl<T> FromC<*mut T> for Option<Box<T>> {
    unsafe fn from_c(raw: *mut T) -> Self {
        // SAFETY: caller's contract: from `Box::into_raw`, owned by no one
        // else from now on.
        (!raw.is_null()).then(|| unsafe { Box::from_raw(raw) })
    }
}

/// NULL, or a NUL-terminated string that stays put during the call.
impl FromC<*const c_char> for Option<&CStr> {
    unsafe fn from_c(raw: *const c_char) -> Self {
        // SAFETY: caller's contract: a NUL-terminated string, unchanged
        // during the call.
        (!raw.is_null()).then(|| unsafe { CStr::from_ptr(raw) })
    }
}

/// Converts `arg` when a safe type is given for it (`capi!`).
macro_rules! capi_arg {
    ($arg:ident) => {
        $arg
    };
    ($arg:ident, $safe:ty) => {
        <$safe as $crate::capi::FromC<_>>::from_c($arg)
    };
}

/// The type the body of a `capi!` function sees an argument as.
macro_rules! capi_ty {
    ($raw:ty) => {
        $raw
    };
    ($raw:ty, $safe:ty) => {
        $safe
    };
}

/// Declares an exported function of the C module API (capi rule 5):
/// `#[no_mangle] pub unsafe extern fn`, its doc (with the `# Safety` of its
/// C caller) and its body as given, each argument written `arg: RAW`
/// (passed as it is) or `arg: RAW => SAFE` (converted with [`FromC`]
/// before the body runs).
///
/// A function whose first argument is `s: &mut Stack` takes the C
/// caller's `lua_State *` there, and its body gets the caller's stack and
/// returns an [`LResult`](crate::raw::LResult) of the function's result
/// (an error is raised after the body returned: raw rule 2); it is
/// `extern "C-unwind"`, as Lua's own functions, since it may raise. Any
/// other is `extern "C"`, and its body (which returns the result itself)
/// runs its own `guard` where it could panic (capi rule 1).
macro_rules! capi {
    (
        $(#[$m:meta])*
        fn $name:ident($s:ident: &mut Stack $(, $arg:ident: $raw:ty $(=> $safe:ty)?)* $(,)?)
            $(-> $ret:ty)? $body:block
    ) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C-unwind" fn $name(
            l: *mut mlua::ffi::lua_State $(, $arg: $raw)*
        ) $(-> $ret)? {
            // The body, outside the unsafe block: safe code.
            let body = |$s: &mut $crate::raw::Stack<'_> $(, $arg: capi_ty!($raw $(, $safe)?))*|
                -> $crate::raw::LResult<_> { $body };
            // SAFETY: the function's `# Safety`, its C caller's contract,
            // gives each converted argument what its `FromC` impl requires
            // and says that `l` is a valid state that the caller waits on,
            // where a Lua error may be raised; `protect_c` is all the
            // function does.
            unsafe {
                $crate::raw::frame::protect_c(l, |s| body(s $(, capi_arg!($arg $(, $safe)?))*))
            }
        }
    };
    (
        $(#[$m:meta])*
        fn $name:ident($($arg:ident: $raw:ty $(=> $safe:ty)?),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$m])*
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $raw),*) $(-> $ret)? {
            // SAFETY: the function's `# Safety`, its C caller's contract,
            // gives each converted argument what its `FromC` impl requires.
            let ($($arg,)*) = unsafe { ($(capi_arg!($arg $(, $safe)?),)*) };
            $body
        }
    };
}
