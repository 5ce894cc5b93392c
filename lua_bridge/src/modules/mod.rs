//! The Lua modules, as Tarantool offers them: `fiber` (with channels and
//! conds), `clock`, `buffer`, `msgpack`, `json` and `log`. Each is a folder or file of its
//! own, opened into `package.loaded` by [`register`].

pub(crate) mod buffer;
pub(crate) mod clock;
pub(crate) mod fiber;
pub(crate) mod json;
pub mod log;
pub(crate) mod msgpack;
pub(crate) mod serializer;

use mlua::ffi;

/// Makes the modules' metatables and registry refs, once per state.
///
/// # Safety
///
/// `l` is the idle main state of a new cord, not yet set up.
pub(crate) unsafe fn init(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    unsafe { fiber::init(l) };
}

/// Puts the modules into `package.loaded`.
///
/// # Safety
///
/// `l` is the idle main state of an installed cord, after [`init`].
pub(crate) unsafe fn register(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract; each module table is set and the stack is
    // left as it was.
    unsafe {
        ffi::lua_getglobal(l, c"package".as_ptr());
        ffi::lua_getfield(l, -1, c"loaded".as_ptr());
        fiber::open(l);
        ffi::lua_setfield(l, -2, c"fiber".as_ptr());
        clock::open(l);
        ffi::lua_setfield(l, -2, c"clock".as_ptr());
        buffer::open(l);
        ffi::lua_setfield(l, -2, c"buffer".as_ptr());
        msgpack::open(l);
        ffi::lua_setfield(l, -2, c"msgpack".as_ptr());
        json::open(l);
        ffi::lua_setfield(l, -2, c"json".as_ptr());
        log::open(l);
        ffi::lua_setfield(l, -2, c"log".as_ptr());
        ffi::lua_pop(l, 2);
        crate::fiber::guard::wrap_collectgarbage(l);
    }
}
