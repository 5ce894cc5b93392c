//! The cdata msgpack reads and makes besides scalars: `char *` and
//! `const char *` pointers (Tarantool's `luaL_checkconstchar`, and the
//! pointer of the same C type it pushes back), and new `int64_t` and
//! `uint64_t` values (`luaL_pushint64`).
//!
//! The ctype ids are learnt from values made through the FFI at setup
//! (luajit rule 1), as [`cdata`](super::cdata) learns the scalars'; the
//! values are made by small Lua functions, called under `lua_pcall`.

use std::ffi::c_int;

use super::obj::LUA_TCDATA;
use crate::raw::{LResult, Raise, Stack};

/// Registry refs of the constructors, and the pointer ctype ids.
#[derive(Clone, Copy)]
pub(crate) struct Cdata {
    /// The ids of `char *` (kind 0) and `const char *` (kind 1).
    ptr_ids: [u16; 2],
    /// `function(lightuserdata) -> char * / const char *`.
    make_ptr: [c_int; 2],
    /// `function() -> int64_t / uint64_t` (zero, to fill in).
    pub new_i64: c_int,
    pub new_u64: c_int,
    /// `function(o) return o.__serialize end` (Tarantool's
    /// `lua_gettable_wrapper`, for cdata with a metatype), called under
    /// `lua_pcall`.
    pub index_serialize: c_int,
    /// The ctype id of ctype objects (`ffi.typeof(...)`): ids up to it are
    /// LuaJIT's built-in types, whose `__serialize` is never asked
    /// (Tarantool's `CTID_CTYPEID` rule, gh-1226).
    ctype_id: u16,
}

const CHUNK: &str = r#"
local ok, ffi = pcall(require, 'ffi')
if not ok or type(ffi) ~= 'table' or not ffi.cast then return end
local cast, new = ffi.cast, ffi.new
local charp, ccharp = ffi.typeof('char *'), ffi.typeof('const char *')
local i64, u64 = ffi.typeof('int64_t'), ffi.typeof('uint64_t')
return cast(charp, 0), cast(ccharp, 0),
    function(p) return cast(charp, p) end,
    function(p) return cast(ccharp, p) end,
    function() return new(i64) end,
    function() return new(u64) end,
    ffi.typeof('int'),
    function(o) return o.__serialize end
"#;

/// The ctype id of the cdata at `idx` (0 for any other value).
fn ctype_id(s: &Stack, idx: c_int) -> u16 {
    super::cdata::ctype_id_at(s, idx).unwrap_or(0)
}

/// Learns the pointer types and makes the constructors (at setup: this
/// runs Lua code under `lua_pcall`); `None` without the FFI.
pub(crate) fn learn(s: &mut Stack) -> Option<Cdata> {
    let top = s.top();
    let made = cfg!(feature = "luajit")
        && s.load(CHUNK, c"=msgpack.cdata").is_ok()
        && s.pcall(0, 8).is_ok()
        && s.type_of(top + 1) == LUA_TCDATA
        && s.type_of(top + 2) == LUA_TCDATA;
    if !made {
        s.settop(top);
        return None;
    }
    let ptr_ids = [ctype_id(s, top + 1), ctype_id(s, top + 2)];
    let ctype = ctype_id(s, top + 7);
    let index_serialize = s.make_ref();
    s.pop(1);
    let new_u64 = s.make_ref();
    let new_i64 = s.make_ref();
    let cptr = s.make_ref();
    let ptr = s.make_ref();
    s.settop(top);
    Some(Cdata {
        ptr_ids,
        make_ptr: [ptr, cptr],
        new_i64,
        new_u64,
        index_serialize,
        ctype_id: ctype,
    })
}

impl Cdata {
    /// Whether the cdata at `idx` is of a declared type (a struct, union,
    /// pointer or array type of the program's), whose `__serialize` the
    /// encoder looks up.
    pub(crate) fn is_declared(&self, s: &Stack, idx: c_int) -> bool {
        s.type_of(idx) == LUA_TCDATA && ctype_id(s, idx) > self.ctype_id
    }

    /// The address a `char *` or `const char *` cdata at `idx` holds, and
    /// its kind; `None` for any other value.
    pub(crate) fn read_ptr(&self, s: &Stack, idx: c_int) -> Option<(usize, usize)> {
        if s.type_of(idx) != LUA_TCDATA {
            return None;
        }
        let id = ctype_id(s, idx);
        let kind = self.ptr_ids.iter().position(|&i| i == id)?;
        // SAFETY: a pointer cdata's payload is the pointer (luajit rule 1:
        // its ctype is one the probe learnt), alive on the stack.
        let addr = unsafe { s.to_pointer(idx).cast::<usize>().read() };
        Some((addr, kind))
    }

    /// Pushes a pointer cdata of `kind` holding `addr`.
    ///
    /// # Errors
    ///
    /// [`Raise::Top`] when the constructor fails (out of memory).
    pub(crate) fn push_ptr(&self, s: &mut Stack, kind: usize, addr: usize) -> LResult<()> {
        s.push_ref(self.make_ptr[kind]);
        s.push_light(addr as *mut std::ffi::c_void);
        s.pcall(1, 1).map_err(|()| Raise::Top)
    }
}
