//! What Lua reports but cannot raise, written to stderr: an error in a
//! `__gc` finalizer (Lua drops it after the finalizer's `pcall`), and on
//! Lua 5.4 the warnings of `warn()`.
//!
//! - LuaJIT sends a finalizer's error to the `errfin` VM event, whose
//!   default handler (`ERROR in finalizer: ...`, what Tarantool prints) only
//!   `luaL_newstate` installs; mlua makes its states without it, so
//!   [`init`] attaches [`gc_error`]: `luafiber: error in __gc finalizer:
//!   MSG`.
//! - Lua 5.4 turns it into the warning `error in __gc (MSG)`; a state has
//!   no warning function until one is set, so [`init`] sets one that writes
//!   `Lua warning: ...` as `lua -W` does. Warnings are on from the start
//!   (`lua` starts with them off); `warn('@off')` and `warn('@on')` switch
//!   them.
//!
//! The finalized object is not known to either hook, only the error value.

#[cfg(not(feature = "luajit"))]
use std::ffi::c_int;
use std::io::Write;

#[cfg(not(feature = "luajit"))]
use mlua::ffi;

use super::{lua_fn, Stack};

/// Installs the reports on a new state (`s`: its idle main thread).
pub fn init(s: &mut Stack) {
    #[cfg(feature = "luajit")]
    s.run_setup_chunk(
        "local handler = ... if jit and jit.attach then jit.attach(handler, 'errfin') end",
        c"=gc_errors",
        |s| {
            s.push_cfunction(gc_error);
            1
        },
    );
    #[cfg(not(feature = "luajit"))]
    // SAFETY: `s` is a valid state; `warn` ignores its user data and lets
    // no panic out.
    unsafe {
        ffi::lua_setwarnf(s.as_ptr(), Some(warn), std::ptr::null_mut());
    }
}

lua_fn! {
    /// LuaJIT's `errfin` event handler: the finalizer's error at 1.
    #[cfg(feature = "luajit")]
    fn gc_error(s: &mut Stack) {
        let msg = s.describe_tostring(1);
        let _ = writeln!(std::io::stderr(), "luafiber: error in __gc finalizer: {msg}");
        Ok(0)
    }
}

/// Per-cord state of Lua 5.4's warnings (a part of the cord context):
/// whether they are on, and the pieces of the one being written.
#[cfg(not(feature = "luajit"))]
pub(crate) struct Warnings(std::cell::RefCell<(bool, Vec<u8>)>);

#[cfg(not(feature = "luajit"))]
impl Default for Warnings {
    fn default() -> Warnings {
        Warnings(std::cell::RefCell::new((true, Vec::new())))
    }
}

/// Lua 5.4's warning function: `msg` is a piece of a warning, `tocont` says
/// whether more follow; a one-piece warning starting with `@` is a control
/// (`@on`, `@off`).
#[cfg(not(feature = "luajit"))]
unsafe extern "C-unwind" fn warn(
    _ud: *mut std::ffi::c_void,
    msg: *const std::ffi::c_char,
    tocont: c_int,
) {
    // SAFETY: Lua passes a NUL-terminated string.
    let piece = unsafe { std::ffi::CStr::from_ptr(msg) }.to_bytes();
    // No panic may cross into Lua (raw rule 1): nothing below panics, and a
    // re-entered borrow (a warning inside a warning) is dropped, and so is
    // a warning with no context.
    use super::context::Part;
    Warnings::try_with(|w| {
        let Ok(mut w) = w.0.try_borrow_mut() else {
            return;
        };
        let (on, text) = &mut *w;
        if text.is_empty() && tocont == 0 && piece.first() == Some(&b'@') {
            match piece {
                b"@on" => *on = true,
                b"@off" => *on = false,
                _ => {}
            }
            return;
        }
        text.extend_from_slice(piece);
        if tocont == 0 {
            if *on {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(b"Lua warning: ");
                let _ = err.write_all(text);
                let _ = err.write_all(b"\n");
            }
            text.clear();
        }
    });
}
