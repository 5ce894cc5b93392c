//! Lua fibers' life: creation on a pooled or new Lua thread ([`spawn`](mod@spawn)),
//! the fiber entry and its error report ([`entry`]), join ([`join`](mod@join)), the
//! guard every switch from Lua goes through ([`guard`]), the report of
//! fibers blocked forever ([`blocked`]), the end of them all when the
//! runtime goes ([`shutdown`]), and the CALL/EVAL handlers a fiber made
//! from Rust runs, by their cached registry refs ([`handlers`]: used by
//! `LuaRuntime::call`/`eval` and by the IPROTO server).
//!
//! A Lua fiber's thread stack while it runs: `[msgh, fn, args...]`; after its
//! function returns: `[msgh, results...]` or `[msgh, error]`, kept there for
//! `join` when the fiber is joinable. A script's main fiber may start with
//! chunks to run first (the binary's `-e`): `[msgh, chunk1.., fn, args...]`.

pub(crate) mod blocked;
pub(crate) mod entry;
pub(crate) mod guard;
pub(crate) mod handlers;
pub(crate) mod join;
pub(crate) mod shutdown;
pub(crate) mod spawn;

pub(crate) use entry::{call_found, request_call, worker_end, worker_serves_again, worker_woken};
pub(crate) use guard::check_switch;
pub(crate) use join::join;
pub(crate) use spawn::{
    spawn, spawn_at, spawn_main, spawn_request_in, spawn_worker_in, spawn_worker_started, Start,
    Unfilled,
};
