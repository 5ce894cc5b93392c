//! The mlua side of benches/embed_tokio (see ../README.md): the handlers of
//! `handlers.lua` called from tokio through mlua (`async`, `send`), one Lua
//! state per tokio worker thread (mlua's fastest shape: no lock is
//! contended, each call runs on the worker that polls it); the waiting
//! handler through `call_async`, the other inline with `call`.

#[path = "../../common.rs"]
pub mod common;

use mlua::{Function, Lua};

/// A Lua state with the handlers loaded and `host_wait` registered; its
/// two handlers.
fn state() -> (Lua, Function, Function) {
    let lua = Lua::new();
    let host_wait = lua
        .create_async_function(|_, x: i64| async move { Ok(common::host_wait(x).await) })
        .expect("host_wait");
    lua.globals().set("host_wait", host_wait).expect("set");
    let app: mlua::Table = lua.load(common::HANDLERS).eval().expect("handlers load");
    let wait = app.get("wait_call").expect("wait_call");
    let work = app.get("work_call").expect("work_call");
    (lua, wait, work)
}

thread_local! {
    /// This tokio worker's Lua state and handlers.
    static LUA: (Lua, Function, Function) = state();
}

/// (a): `wait_call(x)` on this worker's state, awaited.
pub async fn call_wait(x: i64) -> i64 {
    let f = LUA.with(|l| l.1.clone());
    f.call_async::<i64>(x).await.expect("wait_call")
}

/// (b): `work_call(x)` on this worker's state, inline.
pub async fn call_work(x: i64) -> i64 {
    LUA.with(|l| l.2.call::<i64>(x)).expect("work_call")
}
