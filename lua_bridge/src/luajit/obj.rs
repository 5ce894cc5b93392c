//! LuaJIT's object layout in GC64 mode (`lj_obj.h` of the vendored LuaJIT
//! 2.1): the tagged values and the heads of the objects the bridge reads in
//! place. Every mirror declares each field up to the last one read, and its
//! size and offsets are checked here at compile time (luajit rule 2); the
//! probe checks them again against the running engine (luajit rule 1).

#![allow(dead_code)] // Mirrors keep every field, read or not, for the offsets.

use std::ffi::c_void;
use std::mem::{offset_of, size_of};

/// A `TValue` in GC64 mode: a double, or a 17-bit tag over a 47-bit
/// pointer or payload.
pub(crate) type Word = u64;

/// `itype` of `nil` (`LJ_TNIL`).
pub(crate) const NIL: u32 = !0;
/// `itype` of `false`.
pub(crate) const FALSE: u32 = !1;
/// `itype` of `true`.
pub(crate) const TRUE: u32 = !2;
/// `itype` of a light userdata.
pub(crate) const LIGHTUD: u32 = !3;
/// `itype` of a string.
pub(crate) const STR: u32 = !4;
/// `itype` of a function.
pub(crate) const FUNC: u32 = !8;
/// `itype` of a cdata.
pub(crate) const CDATA: u32 = !10;
/// `itype` of a table.
pub(crate) const TAB: u32 = !11;
/// `itype` of a full userdata.
pub(crate) const UDATA: u32 = !12;
/// Tags up to this one are numbers (the word is a double): `LJ_TISNUM`.
pub(crate) const ISNUM: u32 = !13;

/// The `marked` bit of a black GC object (`LJ_GC_BLACK` of `lj_gc.h`).
pub(crate) const GC_BLACK: u8 = 0x04;

/// The pointer bits of a GC object's `TValue`.
pub(crate) const GC_MASK: u64 = (1 << 47) - 1;

/// The word of `nil` in a table slot (`setnilV`: all ones).
pub(crate) const NIL_WORD: Word = u64::MAX;

/// `lua_type` of a cdata value (`LUA_TCDATA`, LuaJIT's own type).
pub(crate) const LUA_TCDATA: std::ffi::c_int = 10;

/// `lua_gc` option `LUA_GCISRUNNING` of LuaJIT's `lua.h`.
#[cfg(feature = "luajit")]
pub(crate) use crate::raw::LUA_GCISRUNNING;
/// `lua_gc` option `LUA_GCISRUNNING` of LuaJIT's `lua.h` (never asked
/// without LuaJIT).
#[cfg(not(feature = "luajit"))]
pub(crate) const LUA_GCISRUNNING: std::ffi::c_int = 9;

/// `LJ_MAX_MEM` in GC64 mode: the GC threshold while the collector is
/// stopped or a finalizer runs.
pub(crate) const MAX_MEM: u64 = 1 << 47;

/// The tag of a `TValue` word.
#[inline(always)]
pub(crate) fn itype(v: Word) -> u32 {
    ((v as i64) >> 47) as u32
}

/// The GC object a `TValue` word points to.
#[inline(always)]
pub(crate) fn gcptr<T>(v: Word) -> *const T {
    (v & GC_MASK) as *const T
}

/// The head of `lua_State`.
#[repr(C)]
pub(crate) struct State {
    pub nextgc: u64,
    pub marked: u8,
    pub gct: u8,
    pub dummy_ffid: u8,
    pub status: u8,
    /// `G(L)`, the `global_State`.
    pub glref: *const Global,
    pub gclist: u64,
    /// The frame of the running function: its first argument in a C
    /// function.
    pub base: *const Word,
    /// The first free slot: one past the last argument or result.
    pub top: *mut Word,
    pub maxstack: u64,
    pub stack: u64,
    pub openupval: u64,
    /// The thread's globals (`LUA_GLOBALSINDEX`, `setfenv(0, t)`'s `t`):
    /// always a table.
    pub env: *const GcTab,
}

/// The head of `global_State`: the allocator, then `GCState`'s head.
#[repr(C)]
pub(crate) struct Global {
    /// The allocator (`lua_getallocf`), to check `glref`.
    pub allocf: *const c_void,
    /// Its data.
    pub allocd: *const c_void,
    pub total: u64,
    /// [`MAX_MEM`] while the collector is stopped or a finalizer runs.
    pub threshold: u64,
}

/// `GCudata`; the payload follows it.
#[repr(C)]
pub(crate) struct Udata {
    pub nextgc: u64,
    pub marked: u8,
    pub gct: u8,
    pub udtype: u8,
    pub unused2: u8,
    pub env: u64,
    pub len: u32,
    pub metatable: u64,
    pub align1: u32,
}

/// `GCstr`; the bytes follow it.
#[repr(C)]
pub(crate) struct GcStr {
    pub nextgc: u64,
    pub marked: u8,
    pub gct: u8,
    pub reserved: u8,
    pub hashalg: u8,
    pub sid: u32,
    pub hash: u32,
    pub len: u32,
}

/// `GCtab`.
#[repr(C)]
pub(crate) struct GcTab {
    pub nextgc: u64,
    pub marked: u8,
    pub gct: u8,
    pub nomm: u8,
    pub colo: i8,
    /// `TValue[asize]`: the values of keys `0..asize`.
    pub array: *const Word,
    pub gclist: u64,
    pub metatable: *const GcTab,
    /// `Node[hmask + 1]`.
    pub node: *const Node,
    pub asize: u32,
    pub hmask: u32,
    pub freetop: u64,
}

/// `Node`: one slot of a table's hash part.
#[repr(C)]
pub(crate) struct Node {
    pub val: Word,
    pub key: Word,
    pub next: u64,
}

/// `GCcdata`; the payload follows it.
#[repr(C)]
pub(crate) struct GcCdata {
    pub nextgc: u64,
    pub marked: u8,
    pub gct: u8,
    /// The C type id.
    pub ctypeid: u16,
}

/// Bytes from a cdata payload back to its `ctypeid`.
pub(crate) const CTYPEID_BACK: usize = size_of::<GcCdata>() - offset_of!(GcCdata, ctypeid);

// The layout of `lj_obj.h` in GC64 mode (luajit rule 2).
const _: () = {
    assert!(size_of::<Word>() == 8);
    assert!(offset_of!(State, glref) == 16);
    assert!(offset_of!(State, base) == 32);
    assert!(offset_of!(State, top) == 40);
    assert!(offset_of!(State, env) == 72);
    assert!(offset_of!(Global, threshold) == 24);
    assert!(size_of::<Udata>() == 48);
    assert!(size_of::<GcStr>() == 24);
    assert!(offset_of!(GcStr, len) == 20);
    assert!(offset_of!(GcTab, marked) == 8);
    assert!(offset_of!(GcTab, array) == 16);
    assert!(offset_of!(GcTab, metatable) == 32);
    assert!(offset_of!(GcTab, node) == 40);
    assert!(offset_of!(GcTab, asize) == 48);
    assert!(offset_of!(GcTab, hmask) == 52);
    assert!(size_of::<GcTab>() == 64);
    assert!(size_of::<Node>() == 24);
    assert!(size_of::<GcCdata>() == 16);
    assert!(CTYPEID_BACK == 6);
};
