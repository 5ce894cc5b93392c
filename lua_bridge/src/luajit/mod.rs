//! LuaJIT's internals, in one place: the object layout the bridge reads in
//! place, the one start-up probe that checks it, and the readers built on
//! what the probe found.
//!
//! - [`obj`]: every layout mirror, tag and magic number of `lj_obj.h`
//!   (GC64), with `const` size and offset asserts;
//! - [`probe`]: the start-up probe, whose [`Layout`] holds the tokens of the
//!   readers below;
//! - [`entry`]: the blocking C functions' arguments and results, and the
//!   switch guard's facts, read and written in place ([`Entry`]); also a
//!   thread's globals and a stack slot's word (a local call's function
//!   and results);
//! - [`table`]: tables walked in place for the msgpack encoder
//!   ([`Tables`](table::Tables)), and the raw walk of a local call's
//!   function name ([`Tables::push_path`](table::Tables::push_path));
//! - [`fill`]: tables filled in place by the msgpack decoder
//!   ([`Fill`](fill::Fill));
//! - [`cdata`]: scalar cdata payloads ([`CTypes`](cdata::CTypes)), and
//!   [`pointer`](mod@pointer): the pointer and 64-bit integer cdata msgpack reads and
//!   makes;
//! - [`cstack`]: "C stack overflow" for calls into Lua from C with too
//!   little machine stack left (wrappers of `lua_call` and `lua_pcall`),
//!   the C stack check LuaJIT lacks.
//!
//! On Lua 5.4 (and under `--cfg luafiber_no_fast_paths`, for the fast
//! paths) the probe finds nothing and every caller takes its C API path.
//!
//! # Rules
//!
//! The unsafe code that reads LuaJIT's objects cites these as "luajit rule
//! N":
//!
//! 1. Nothing of the layout is taken on trust: the probe checks each part
//!    against the C API on the cord's own state when the cord starts, and
//!    only its success makes the token ([`Entry`], `Tables`, `CTypes`)
//!    whose methods are the in-place readers. A failed check leaves its
//!    token out, and the callers go the C API way.
//! 2. A mirror declares every field up to the last one read, in
//!    `lj_obj.h`'s order; [`obj`] asserts its size and offsets at compile
//!    time. The build is gated to 64-bit targets, where LuaJIT 2.1 builds
//!    GC64 (the only layout mirrored).
//! 3. An in-place read of a table happens while nothing can run Lua code
//!    or allocate a Lua object: the walk borrows the stack its root is on
//!    ([`table`]), so no collection starts and no table changes under it.
//! 4. A value written in place holds no GC object (booleans and numbers),
//!    into a slot the stack handle counted; or it is the word of a live
//!    table's value, read with nothing run or allocated since (the
//!    function and the table [`Tables::push_path`](table::Tables::push_path)
//!    finds): LuaJIT's collector never leaves a thread black, so a stack
//!    slot takes a live object with no write barrier, as the VM's own
//!    `TGETS` writes one.
//! 5. Nothing is cached that can go stale: the facts read at a call come
//!    from the state at that call; a token holds only what is fixed for the
//!    state's life.

// The gate of luajit rule 2: the mirrored layout is GC64's.
#[cfg(all(feature = "luajit", not(target_pointer_width = "64")))]
compile_error!(
    "the LuaJIT build reads LuaJIT's GC64 object layout, which 64-bit targets have; \
     build with `--no-default-features --features lua54` here"
);

pub(crate) mod cdata;
#[cfg(feature = "luajit")]
pub mod cstack;
pub(crate) mod entry;
pub(crate) mod fill;
pub(crate) mod obj;
pub(crate) mod pointer;
pub(crate) mod probe;
pub(crate) mod table;

use std::cell::Cell;

pub(crate) use entry::Entry;
pub(crate) use probe::Layout;

use crate::raw::context::Part;

/// Per-cord state of the probe (a part of the cord context): what it found
/// of the cord's state.
#[derive(Default)]
pub(crate) struct Probed(Cell<Layout>);

/// Probes the state of `s` ([`probe::probe`]) and makes what it found
/// this thread's layout.
pub(crate) fn install(s: &mut crate::raw::Stack) {
    let layout = probe::probe(s);
    Probed::with(|l| l.0.set(layout));
    entry::set(layout.entry);
}

/// Forgets this thread's layout (its cord is going away).
pub(crate) fn uninstall() {
    Probed::try_with(|l| l.0.set(Layout::default()));
    entry::set(None);
}

/// What the probe of this thread's cord found (nothing when none ran).
pub(crate) fn layout() -> Layout {
    Probed::try_with(|l| l.0.get()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::LuaRuntime;

    #[test]
    fn the_probe_finds_the_layout_while_a_runtime_lives() {
        let rt = LuaRuntime::new().unwrap();
        let layout = super::layout();
        let on = cfg!(feature = "luajit");
        let fast = on && !cfg!(luafiber_no_fast_paths);
        assert_eq!(layout.entry.is_some(), fast, "entry");
        assert_eq!(layout.tables.is_some(), fast, "tables");
        assert_eq!(layout.ctypes.is_some(), on, "ctypes");
        drop(rt);
        assert!(super::layout().entry.is_none());
        assert!(super::entry::entry().is_none());
    }
}
