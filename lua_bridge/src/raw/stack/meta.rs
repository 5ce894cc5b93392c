//! What a [`Stack`] offers the C module API beyond the bridge's own needs:
//! metafields, a value's address as `tostring` writes it, and whether a
//! function runs on the thread.

use std::ffi::{c_int, CStr};

use mlua::ffi;

use super::Stack;

impl Stack<'_> {
    /// Pushes field `name` of the metatable of the value at `idx`, read
    /// raw, and returns its type; pushes nothing and returns `LUA_TNIL`
    /// when there is no metatable or the field is nil
    /// (`luaL_getmetafield`).
    pub fn get_metafield(&mut self, idx: c_int, name: &CStr) -> c_int {
        if !self.get_metatable(idx) {
            return ffi::LUA_TNIL;
        }
        let t = self.rawget_field(-1, name);
        if t == ffi::LUA_TNIL {
            self.pop(2);
        } else {
            self.remove(-2);
        }
        t
    }

    /// Pushes `TYPE: ADDRESS` for the value at `idx`, as `tostring` writes
    /// a value without `__tostring` (`lua_typename`, and the engine's `%p`
    /// of `lua_pushfstring`: LuaJIT and Lua 5.4 write it differently).
    pub fn push_type_address(&mut self, idx: c_int) {
        let t = self.type_of(idx);
        let p = self.to_pointer(idx);
        self.slot();
        // SAFETY: a free slot; `lua_typename` of a type (`LUA_TNONE`
        // included) is a static string, `%s` and `%p` are given a C string
        // and a pointer; the allocation does not fail on the limit in a
        // body (raw rule 3).
        unsafe {
            let name = ffi::lua_typename(self.l, t);
            ffi::lua_pushfstring(self.l, c"%s: %p".as_ptr(), name, p);
        }
    }

    /// Whether a function runs on this thread (it has a call frame).
    pub fn is_running(&self) -> bool {
        // SAFETY: all-zero is a valid `lua_Debug`; `lua_getstack` only
        // reads the thread's call frames into it.
        unsafe {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            ffi::lua_getstack(self.l, 0, &mut ar) != 0
        }
    }
}
