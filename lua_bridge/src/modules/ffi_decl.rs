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
//! Also what master's `src/lua/init.lua` and `socket.lua` declare at
//! start-up and scripts call undeclared: `pid_t` and `getpid`, `ssize_t`,
//! `read` and `write` (a child script of the `popen` tests writes to a
//! pipe with `ffi.C.write`). Each is declared on its own, and only when
//! it is not yet.
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
        if not pcall(ffi.typeof, 'struct error') then
            pcall(ffi.cdef, 'struct error;')
        end
        if not pcall(ffi.typeof, 'pid_t') then
            pcall(ffi.cdef, 'typedef int32_t pid_t;')
        end
        if not pcall(ffi.typeof, 'ssize_t') then
            pcall(ffi.cdef, 'typedef ptrdiff_t ssize_t;')
        end
        for _, decl in ipairs({
            {'getpid', 'pid_t getpid(void);'},
            {'write', 'ssize_t write(int fd, const char *octets, size_t len);'},
            {'read', 'ssize_t read(int fd, void *buf, size_t count);'},
        }) do
            if not pcall(function() return ffi.C[decl[1]] end) then
                pcall(ffi.cdef, decl[2])
            end
        end
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
