//! The luafiber side of benches/embed_tokio (see ../README.md): the module
//! `app` of `handlers.lua` on 2 cords, called from tokio through a
//! [`luafiber::Handle`] (`call_async`: the call crosses to a cord, runs in
//! a Lua fiber there, and the cord wakes the tokio task through its
//! `Waker`); `host_wait` is registered with `register_async_fn`, so the Lua
//! fiber parks on the Rust future (polled on the cord) while the cord runs
//! other calls. With `local` ([`Handle::call_local`]) the calls run on a
//! cord of the tokio worker that polls them instead.

#[path = "../../common.rs"]
pub mod common;

use std::borrow::Borrow;

use luafiber::{Builder, Error, Handle, Runtime};

/// The runtime: 2 cords, `app` loaded and `host_wait` registered on each.
pub fn runtime() -> Runtime {
    Builder::new()
        .cords(2)
        .stack_size(64 * 1024)
        .register_async_fn("host_wait", |x: i64| async move {
            Ok::<_, Error>(common::host_wait(x).await)
        })
        .load_module("app", common::HANDLERS)
        .build()
        .expect("cords start")
}

/// (a): `app.wait_call(x)` on a cord, awaited.
pub async fn call_wait(h: impl Borrow<Handle>, x: i64) -> i64 {
    h.borrow()
        .call_async::<i64>("app.wait_call", x)
        .await
        .expect("wait_call")
}

/// (a) with [`Handle::call_local`]: on a cord of the tokio worker that
/// polls the call; the Lua fiber parks there on `host_wait`'s future.
pub async fn call_wait_local(h: impl Borrow<Handle>, x: i64) -> i64 {
    h.borrow()
        .call_local::<i64>("app.wait_call", x)
        .await
        .expect("wait_call")
}

/// (b) with [`Handle::call_local`]: ends in the first poll, on the worker.
pub async fn call_work_local(h: impl Borrow<Handle>, x: i64) -> i64 {
    h.borrow()
        .call_local::<i64>("app.work_call", x)
        .await
        .expect("work_call")
}

/// (b): `app.work_call(x)` on a cord, awaited.
pub async fn call_work(h: impl Borrow<Handle>, x: i64) -> i64 {
    h.borrow()
        .call_async::<i64>("app.work_call", x)
        .await
        .expect("work_call")
}
