//! LuaJIT's tagged values in GC64 mode (`lj_obj.h`), the only mode of the
//! vendored x86-64 and arm64 builds: what the code that reads LuaJIT's
//! objects in place (`fast_entry`, the msgpack encoder's fast path) shares.
//! Each reader checks the layout it relies on against the C API before it
//! uses it.

/// LuaJIT's type tags (`itype` of a `TValue`).
pub(crate) const NIL: u32 = !0;
pub(crate) const FALSE: u32 = !1;
pub(crate) const TRUE: u32 = !2;
pub(crate) const LIGHTUD: u32 = !3;
pub(crate) const STR: u32 = !4;
pub(crate) const CDATA: u32 = !10;
pub(crate) const TAB: u32 = !11;
pub(crate) const UDATA: u32 = !12;
/// Tags up to this one are numbers (the word is a double).
pub(crate) const ISNUM: u32 = !13;

/// The pointer bits of a GC object's `TValue`.
pub(crate) const GC_MASK: u64 = (1 << 47) - 1;

/// The tag of a `TValue` word.
#[inline(always)]
pub(crate) fn itype(v: u64) -> u32 {
    ((v as i64) >> 47) as u32
}

/// The GC object a `TValue` word points to.
#[inline(always)]
pub(crate) fn gcptr<T>(v: u64) -> *const T {
    (v & GC_MASK) as *const T
}
