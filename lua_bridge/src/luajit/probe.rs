//! The start-up probe: LuaJIT's layout checked against the C API on the
//! cord's own state, once, before anything reads it in place (luajit rule
//! 1). Its result is the only source of the tokens ([`Entry`], [`Tables`],
//! [`CTypes`]) that the in-place readers are methods of.
//!
//! - the state: `G(L)` is the `global_State` whose allocator
//!   `lua_getallocf` reports, and its threshold agrees with
//!   `LUA_GCISRUNNING` while the collector runs and while it is stopped;
//!   `env` is the table `lua_topointer(L, LUA_GLOBALSINDEX)` gives;
//! - the C function frame: inside a C function called with a userdata and
//!   a number, `base` holds them as `lua_touserdata` and `lua_tonumber`
//!   read them, `top` is past them, and words written at `top` read back
//!   through the C API (the words of `false` and `true` are learnt from
//!   `lua_pushboolean`);
//! - tables: a table of known contents made through the C API reads back
//!   in place (array part, hash node, metatable, `lj_tab_getstr`);
//! - cdata: the scalar C type ids ([`cdata::learn`]), and a cdata payload
//!   where a table's word of it says.

use std::ffi::{c_int, c_void};

use mlua::ffi;

use super::cdata::{self, CTypes};
use super::entry::Entry;
use super::obj::{
    itype, Global, State, Udata, Word, CDATA, GC_MASK, LIGHTUD, LUA_GCISRUNNING, LUA_TCDATA,
    MAX_MEM, STR, TRUE, UDATA,
};
use super::table::{Tables, Tv};
use crate::raw::Stack;

/// What the probe found usable; each part is `None` when its check failed
/// (or, under `--cfg luafiber_no_fast_paths`, for every fast path).
#[derive(Clone, Copy, Default)]
pub(crate) struct Layout {
    /// The in-place entry of the blocking C functions (a fast path).
    pub entry: Option<Entry>,
    /// Tables read in place (the msgpack encoder's fast path).
    pub tables: Option<Tables>,
    /// Scalar cdata (how msgpack encodes `1LL`; not a fast path: the C API
    /// has no other way to read a cdata).
    pub ctypes: Option<CTypes>,
}

/// Probes the state of `s`, a cord's main thread at setup (outside any
/// `lua_fn` body: the probe runs Lua code under `lua_pcall`). The stack and
/// the collector are left as they were.
pub(crate) fn probe(s: &mut Stack) -> Layout {
    if !cfg!(feature = "luajit") {
        return Layout::default();
    }
    let fast = !cfg!(luafiber_no_fast_paths);
    let ctypes = cdata::learn(s);
    let layout = Layout {
        entry: (fast && state_ok(s)).then(|| entry(s)).flatten(),
        tables: fast.then(|| tables(s, ctypes.is_some())).flatten(),
        ctypes,
    };
    // SAFETY: the parts above that worked through the C API left the stack
    // as they found it.
    unsafe { s.sync() };
    layout
}

/// Whether `G(L)` and its threshold read right on the state of `s` (see
/// the module doc).
fn state_ok(s: &mut Stack) -> bool {
    let main = s.as_ptr();
    // SAFETY: `main` is a valid, idle state (the handle's). `glref` is read
    // only once it points to a `global_State` whose allocator is the
    // state's own; the stack is left as it was.
    unsafe {
        let is_main = ffi::lua_pushthread(main) == 1;
        ffi::lua_pop(main, 1);
        let g = (*main.cast::<State>()).glref;
        let env = (*main.cast::<State>()).env;
        #[cfg(feature = "luajit")]
        let env_ok = !env.is_null()
            && env.cast::<c_void>() == ffi::lua_topointer(main, ffi::LUA_GLOBALSINDEX);
        // Never probed without LuaJIT (`probe` returns first).
        #[cfg(not(feature = "luajit"))]
        let env_ok = {
            let _ = env;
            false
        };
        let mut ud = std::ptr::null_mut();
        let allocf = ffi::lua_getallocf(main, &mut ud);
        if !is_main
            || !env_ok
            || g.is_null()
            || (*g).allocf != allocf as *const c_void
            || (*g).allocd != ud.cast_const()
        {
            return false;
        }
        let threshold = || (*g.cast::<Global>()).threshold;
        let running = || ffi::lua_gc(main, LUA_GCISRUNNING, 0) != 0;
        let was_running = running();
        let mut ok = (threshold() != MAX_MEM) == was_running;
        ffi::lua_gc(main, ffi::LUA_GCSTOP, 0);
        ok &= !running() && threshold() == MAX_MEM;
        ffi::lua_gc(main, ffi::LUA_GCRESTART, -1);
        ok &= running() && threshold() != MAX_MEM;
        if !was_running {
            ffi::lua_gc(main, ffi::LUA_GCSTOP, 0);
        }
        ok
    }
}

/// Whether the metatable word of `ud`, argument 1 of the running C function
/// on `l`, is the address of the metatable the C API gives for it (which
/// the probe's userdata has); leaves the stack as it was.
///
/// # Safety
///
/// `ud` is the `GCudata` head of argument 1 of the C function running on
/// `l`, which has room for one more value.
unsafe fn udata_metatable_reads(l: *mut ffi::lua_State, ud: *const Udata) -> bool {
    // SAFETY: the function's contract.
    unsafe {
        if ffi::lua_getmetatable(l, 1) != 1 {
            return false;
        }
        let word = (*ud).metatable;
        let same = word != 0 && word as *const c_void == ffi::lua_topointer(l, -1);
        ffi::lua_pop(l, 1);
        same
    }
}

/// Calls [`frame_probe`] with a new userdata (with a metatable) and 7; its words of `false`
/// and `true` when every read and write agreed with the C API.
fn entry(s: &mut Stack) -> Option<Entry> {
    let main = s.as_ptr();
    let mut bools: [Word; 2] = [0; 2];
    // SAFETY: `main` is a valid, idle state (the handle's); a failing call
    // (out of memory) is caught and reads as a failed check; `bools`
    // outlives the call; the stack is left as it was.
    unsafe {
        ffi::lua_checkstack(main, 4);
        ffi::lua_pushcfunction(main, crate::raw::wide_cfn!(frame_probe));
        ffi::lua_newuserdata(main, 24);
        ffi::lua_createtable(main, 0, 0);
        ffi::lua_setmetatable(main, -2);
        ffi::lua_pushnumber(main, 7.0);
        ffi::lua_pushlightuserdata(main, (&raw mut bools).cast());
        let ok = ffi::lua_pcall(main, 3, 1, 0) == 0 && ffi::lua_toboolean(main, -1) != 0;
        ffi::lua_pop(main, 1);
        ok.then_some(Entry { bools })
    }
}

/// The C function [`entry`] calls with `(userdata, 7, out)`: checks that
/// argument 1's payload and metatable and argument 2 read in place are what the C API
/// reads, learns the words of `false` and `true` into `out`, and checks that
/// words written at the top read back through the C API; returns whether
/// all of it held.
///
/// # Safety
///
/// Called by [`entry`] only (the types and the frame are checked before the
/// layout is read, and the top before anything is written through it; a C
/// function has room for 20 values).
unsafe extern "C-unwind" fn frame_probe(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the function's contract.
    unsafe {
        let st = l.cast::<State>();
        let out = ffi::lua_touserdata(l, 3).cast::<[Word; 2]>();
        let reads = ffi::lua_type(l, 1) == ffi::LUA_TUSERDATA
            && ffi::lua_type(l, 2) == ffi::LUA_TNUMBER
            && !out.is_null()
            && ffi::lua_gettop(l) == 3
            && {
                let base = (*st).base;
                let tv = *base;
                let ud = (tv & GC_MASK) as *mut Udata;
                itype(tv) == UDATA
                    && !ud.is_null()
                    && ud.add(1).cast() == ffi::lua_touserdata(l, 1)
                    && udata_metatable_reads(l, ud)
                    && (*st).top.cast_const() == base.add(3)
                    && *base.add(1) == ffi::lua_tonumber(l, 2).to_bits()
            };
        let ok = reads && {
            let mut bools = [0; 2];
            for (b, word) in bools.iter_mut().enumerate() {
                ffi::lua_pushboolean(l, b as c_int);
                *word = *(*st).top.sub(1);
                ffi::lua_settop(l, 3);
            }
            for word in [bools[1], bools[0], 5f64.to_bits()] {
                *(*st).top = word;
                (*st).top = (*st).top.add(1);
            }
            let ok = ffi::lua_gettop(l) == 6
                && ffi::lua_type(l, 4) == ffi::LUA_TBOOLEAN
                && ffi::lua_toboolean(l, 4) == 1
                && ffi::lua_type(l, 5) == ffi::LUA_TBOOLEAN
                && ffi::lua_toboolean(l, 5) == 0
                && ffi::lua_type(l, 6) == ffi::LUA_TNUMBER
                && ffi::lua_tonumber(l, 6) == 5.0;
            if ok {
                *out = bools;
            }
            ok
        };
        ffi::lua_settop(l, 0);
        ffi::lua_pushboolean(l, c_int::from(ok));
        1
    }
}

/// Builds `{[1] = 1.5, [2] = "__serialize", [3] = NULL, [4] = cdata,
/// __serialize = true}`, its own metatable, through the C API and reads it
/// back in place; the token when everything agrees. `cdata`: whether the
/// FFI is there to make element 4 (`ffi.cast('void *', 0)`).
///
fn tables(s: &mut Stack, cdata: bool) -> Option<Tables> {
    let top = s.top();
    s.push_cstr(c"__serialize");
    // Anchors the interned string for the state's life.
    s.push_value(-1);
    s.make_ref();
    let key = top + 1;
    let t = s.new_table(4, 1);
    s.push_number(1.5);
    s.rawseti(t, 1);
    s.push_value(key);
    s.rawseti(t, 2);
    s.push_light(std::ptr::null_mut());
    s.rawseti(t, 3);
    let payload = (cdata && push_cdata_null(s)).then(|| {
        let p = s.to_pointer(-1);
        s.rawseti(t, 4);
        p
    });
    s.push_value(key);
    s.push_bool(true);
    let _ = s.rawset(t);
    s.push_value(t);
    s.set_metatable(t);
    let probe = Tables {
        null: 0,
        serialize: s.to_pointer(key).cast(),
    };
    let bytes = s.to_str(key).map(<[u8]>::as_ptr);
    let found = read_back(&probe, s, t, bytes, payload);
    s.settop(top);
    found
}

/// Pushes `ffi.cast('void *', 0)`; false (nothing pushed) without the FFI.
fn push_cdata_null(s: &mut Stack) -> bool {
    const CHUNK: &str =
        "local ok, ffi = pcall(require, 'ffi') return ok and ffi.cast('void *', 0) or nil";
    let top = s.top();
    if s.load(CHUNK, c"=probe").is_err() || s.pcall(0, 1).is_err() || s.type_of(-1) != LUA_TCDATA {
        s.settop(top);
        return false;
    }
    true
}

/// [`tables`]' reads of the probe table at `t`.
fn read_back(
    probe: &Tables,
    s: &Stack,
    t: c_int,
    bytes: Option<*const u8>,
    payload: Option<*const c_void>,
) -> Option<Tables> {
    let tab = probe.root(s, t)?;
    let key_word = (u64::from(STR) << 47) | probe.serialize as u64;
    let a = tab.array();
    let key_ok = a
        .get(2)
        .and_then(|v| v.str())
        .is_some_and(|b| b == b"__serialize" && Some(b.as_ptr()) == bytes);
    let mt_ok = tab.metatable().is_some_and(|m| m.same(&tab));
    if !key_ok
        || !mt_ok
        || a.len() != 5
        || !a[0].is_nil()
        || a[1].number() != Some(1.5)
        || a[2].word() != key_word
        || a[3].tag() != LIGHTUD
    {
        return None;
    }
    let in_node = tab
        .slots()
        .iter()
        .any(|n| n.key().word() == key_word && n.val().tag() == TRUE);
    if !in_node || tab.serialize_field().tag() != TRUE {
        return None;
    }
    if let Some(p) = payload {
        let v: Tv<'_> = a[4];
        if v.tag() != CDATA || v.cdata() != Some(p.cast()) {
            return None;
        }
    }
    Some(Tables {
        null: a[3].word(),
        serialize: probe.serialize,
    })
}
