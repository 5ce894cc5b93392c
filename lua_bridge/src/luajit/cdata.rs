//! Scalar cdata in MsgPack (LuaJIT): what Tarantool's `luaL_tofield` does
//! for `int64_t` (`1LL`), `uint64_t` (`1ULL`), the other integer types,
//! `float`, `double`, `bool`, and a NULL `void *` (`msgpack.NULL`,
//! `box.NULL`), which is nil.
//!
//! A cdata value's C type is the `ctypeid` of its `GCcdata` header, 6 bytes
//! below its payload (what `lua_topointer` returns). The ids of the types
//! above are not taken on trust: the probe makes one value of each through
//! the FFI when the cord starts and learns each id from it ([`learn`]),
//! checking that the payloads read back as made; if anything is off (or
//! there is no FFI), every cdata goes the old way (`__serialize` or
//! unsupported).

use std::ffi::c_int;

use mlua::ffi;

use super::obj::{CTYPEID_BACK, LUA_TCDATA};
use super::table::Tv;
use crate::raw::Stack;

/// A scalar read from a cdata payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    F32(f32),
    F64(f64),
}

/// How to read a payload of one C type.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// A pointer: nil when NULL, else not a scalar.
    Ptr,
}

/// The probe values, each with its reader and its expected value.
const PROBE: &str = r#"
local ffi = require('ffi')
return {
    ffi.new('bool', true), ffi.new('int8_t', -2), ffi.new('uint8_t', 200),
    ffi.new('int16_t', -300), ffi.new('uint16_t', 60000),
    ffi.new('int32_t', -70000), ffi.new('uint32_t', 4000000000),
    -5000000000LL, 18446744073709551615ULL,
    ffi.new('float', 1.5), ffi.new('double', 2.5),
    ffi.cast('void *', 0), ffi.cast('const void *', 0),
}
"#;

const EXPECTED: [(Read, Scalar); 13] = [
    (Read::Bool, Scalar::Bool(true)),
    (Read::I8, Scalar::Int(-2)),
    (Read::U8, Scalar::Uint(200)),
    (Read::I16, Scalar::Int(-300)),
    (Read::U16, Scalar::Uint(60000)),
    (Read::I32, Scalar::Int(-70000)),
    (Read::U32, Scalar::Uint(4_000_000_000)),
    (Read::I64, Scalar::Int(-5_000_000_000)),
    (Read::U64, Scalar::Uint(u64::MAX)),
    (Read::F32, Scalar::F32(1.5)),
    (Read::F64, Scalar::F64(2.5)),
    (Read::Ptr, Scalar::Nil),
    (Read::Ptr, Scalar::Nil),
];

/// The C type ids of the scalar types, learnt by [`learn`] (at the start-up probe).
#[derive(Clone, Copy)]
pub(crate) struct CTypes {
    ids: [(u16, Read); 13],
}

impl CTypes {
    /// The scalar the cdata `v` holds, or `None` when `v` is no cdata or its
    /// C type is none of the scalars (or a non-NULL pointer).
    #[inline]
    pub(crate) fn read(&self, v: Tv<'_>) -> Option<Scalar> {
        // SAFETY: the payload of a live cdata (`Tv`'s lifetime).
        unsafe { self.read_payload(v.cdata()?) }
    }

    /// [`CTypes::read`] of the value at `idx` of `s`: `None` when it is no
    /// cdata or none of the scalars.
    #[inline]
    pub(crate) fn read_at(&self, s: &Stack, idx: c_int) -> Option<Scalar> {
        let payload = payload_at(s, idx)?;
        // SAFETY: the payload of a cdata on the stack, live while `s` is
        // borrowed.
        unsafe { self.read_payload(payload) }
    }

    /// [`CTypes::read`] of the cdata whose payload is at `payload`.
    ///
    /// # Safety
    ///
    /// `payload` is the payload of a live cdata value.
    #[inline]
    pub(crate) unsafe fn read_payload(&self, payload: *const u8) -> Option<Scalar> {
        // SAFETY: caller's contract; a cdata payload follows its `GCcdata`
        // head, whose `ctypeid` is `CTYPEID_BACK` bytes below it (luajit
        // rule 2), and the ids are the probe's (luajit rule 1).
        unsafe {
            let id = payload.sub(CTYPEID_BACK).cast::<u16>().read();
            let (_, how) = self.ids.iter().find(|(i, _)| *i == id)?;
            read(payload, *how)
        }
    }
}

/// Reads `payload` as `how`.
///
/// # Safety
///
/// `payload` holds a value of the C type `how` reads.
unsafe fn read(payload: *const u8, how: Read) -> Option<Scalar> {
    // SAFETY: caller's contract; cdata payloads are aligned for their type.
    unsafe {
        Some(match how {
            Read::Bool => Scalar::Bool(payload.read() != 0),
            Read::I8 => Scalar::Int(i64::from(payload.cast::<i8>().read())),
            Read::U8 => Scalar::Uint(u64::from(payload.read())),
            Read::I16 => Scalar::Int(i64::from(payload.cast::<i16>().read())),
            Read::U16 => Scalar::Uint(u64::from(payload.cast::<u16>().read())),
            Read::I32 => Scalar::Int(i64::from(payload.cast::<i32>().read())),
            Read::U32 => Scalar::Uint(u64::from(payload.cast::<u32>().read())),
            Read::I64 => Scalar::Int(payload.cast::<i64>().read()),
            Read::U64 => Scalar::Uint(payload.cast::<u64>().read()),
            Read::F32 => Scalar::F32(payload.cast::<f32>().read()),
            Read::F64 => Scalar::F64(payload.cast::<f64>().read()),
            Read::Ptr => {
                if !payload.cast::<*const u8>().read().is_null() {
                    return None;
                }
                Scalar::Nil
            }
        })
    }
}

/// Learns the scalar C type ids from one value of each, made through the
/// FFI; `None` when there is no FFI or any value reads back wrong.
///
/// `s` is an idle state's stack outside any `lua_fn` body (this runs Lua
/// code under `lua_pcall`).
pub(crate) fn learn(s: &mut Stack) -> Option<CTypes> {
    let l = s.as_ptr();
    // SAFETY: `l` is a valid, idle state (the handle's); every push is
    // popped; the payloads read are those of the probe values, alive on the
    // stack meanwhile.
    unsafe {
        ffi::lua_checkstack(l, 4);
        let top = ffi::lua_gettop(l);
        let loaded =
            ffi::luaL_loadbuffer(l, PROBE.as_ptr().cast(), PROBE.len(), c"=probe".as_ptr());
        if loaded != 0 || ffi::lua_pcall(l, 0, 1, 0) != 0 {
            ffi::lua_settop(l, top);
            return None;
        }
        let mut ids = [(0u16, Read::Bool); 13];
        let mut ok = true;
        for (i, (how, want)) in EXPECTED.iter().enumerate() {
            ffi::lua_rawgeti(l, top + 1, i as ffi::lua_Integer + 1);
            let payload = ffi::lua_topointer(l, -1).cast::<u8>();
            ok &= ffi::lua_type(l, -1) == LUA_TCDATA
                && !payload.is_null()
                && read(payload, *how) == Some(*want);
            if ok {
                ids[i] = (payload.sub(CTYPEID_BACK).cast::<u16>().read(), *how);
            }
            ffi::lua_settop(l, top + 1);
        }
        // Each type its own id.
        for (i, (id, _)) in ids.iter().enumerate() {
            ok &= ids[..i].iter().all(|(other, _)| other != id);
        }
        ffi::lua_settop(l, top);
        ok.then_some(CTypes { ids })
    }
}

/// Makes `ffi.cast('void *', 0)` (Tarantool's `NULL`, `msgpack.NULL`)
/// and returns its registry ref; `LUA_NOREF` without the FFI.
pub(crate) fn null_ref(s: &mut Stack) -> c_int {
    const CHUNK: &str =
        "local ok, ffi = pcall(require, 'ffi') return ok and ffi.cast('void *', 0) or nil";
    let top = s.top();
    if !cfg!(feature = "luajit")
        || s.load(CHUNK, c"=null").is_err()
        || s.pcall(0, 1).is_err()
        || s.is_none_or_nil(-1)
    {
        s.settop(top);
        return ffi::LUA_NOREF;
    }
    s.make_ref()
}

/// The payload of the cdata at `idx` (what `lua_topointer` gives), or
/// `None` when the value there is no cdata.
#[inline(always)]
fn payload_at(s: &Stack, idx: c_int) -> Option<*const u8> {
    (s.type_of(idx) == LUA_TCDATA).then(|| s.to_pointer(idx).cast())
}

/// The C type id of the cdata at `idx` (what [`CTypes::read`] looks up; a
/// ctype object, `ffi.typeof(...)`, has LuaJIT's `CTID_CTYPEID`, and types
/// a program declares have ids above it), or `None` when the value there is
/// no cdata.
#[cfg_attr(not(feature = "luajit"), allow(dead_code))]
pub(crate) fn ctype_id_at(s: &Stack, idx: c_int) -> Option<u16> {
    let payload = payload_at(s, idx)?;
    // SAFETY: the payload of a cdata on the stack, live while `s` is
    // borrowed; its `GCcdata` head's `ctypeid` is `CTYPEID_BACK` bytes
    // below it (luajit rule 2).
    Some(unsafe { payload.sub(CTYPEID_BACK).cast::<u16>().read() })
}

/// The C type id of the cdata whose payload is at `payload`.
///
/// # Safety
///
/// `payload` is the payload of a live cdata.
#[inline(always)]
pub(crate) unsafe fn payload_ctype_id(payload: *const u8) -> u16 {
    // SAFETY: caller's contract; its `GCcdata` head's `ctypeid` is
    // `CTYPEID_BACK` bytes below it (luajit rule 2).
    unsafe { payload.sub(CTYPEID_BACK).cast::<u16>().read() }
}
