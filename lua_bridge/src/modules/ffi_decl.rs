//! The C types Tarantool declares to LuaJIT's FFI at start-up that
//! libraries name without declaring them.
//!
//! `struct error`: Tarantool's `src/lua/error.lua` declares it (box error
//! objects are `struct error` cdata there), and libraries test any cdata
//! against it: vshard's `error.make` and `can_retry_after_error` call
//! `ffi.istype('struct error', e)` on every cdata they meet, `box.NULL`
//! from a decoded reply among them. With the tag undeclared LuaJIT raises
//! "undeclared or implicit tag 'error'" there; declared (opaque, as
//! `struct error;`) it answers false. luafiber's error objects are tables
//! (`raw::error`), which vshard reads through its table path, so no
//! cdata is ever of this type; a later `ffi.cdef` may still complete the
//! struct with Tarantool's fields.
//!
//! Lua 5.4 has no FFI: nothing is declared there.

use crate::raw::Stack;

/// Declares `struct error` (opaque) when the FFI is there and the tag is
/// not declared yet; at setup, after `msgpack` (which loads the FFI).
/// Failures are ignored: a script without the FFI loses nothing.
pub(crate) fn declare(s: &mut Stack) {
    const CHUNK: &str = r#"
        local ok, ffi = pcall(require, 'ffi')
        if not ok or type(ffi) ~= 'table' or not ffi.cdef then return end
        if pcall(ffi.typeof, 'struct error') then return end
        pcall(ffi.cdef, 'struct error;')
    "#;
    if !cfg!(feature = "luajit") {
        return;
    }
    let top = s.top();
    if s.load(CHUNK, c"=ffi_decl").is_ok() {
        let _ = s.pcall(0, 0);
    }
    s.settop(top);
}

#[cfg(all(test, feature = "luajit"))]
mod tests {
    use crate::{LuaRuntime, Value};

    #[test]
    fn struct_error_is_declared_and_no_cdata_is_one() {
        let rt = LuaRuntime::new().unwrap();
        let v = rt
            .eval(
                "local ffi = require('ffi')
                 return ffi.istype('struct error', ffi.new('int[1]')),
                        ffi.istype('struct error', {}),
                        pcall(ffi.cdef, 'struct error { int code; };')",
                vec![],
            )
            .unwrap();
        assert_eq!(v, [false, false, true].map(Value::Boolean));
    }
}
