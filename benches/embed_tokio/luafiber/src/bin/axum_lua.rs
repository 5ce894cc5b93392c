//! An HTTP service whose handler is Lua, on 2 luafiber cords, served by
//! axum on tokio (2 workers): `GET /` calls `app.wait_call(n)` with
//! `Handle::call_async`, and the Lua handler awaits a Rust async function
//! (`host_wait`: a tokio task answering through a oneshot) once per
//! request. Its mlua twin is `../mlua/src/bin/axum_mlua.rs`.
//!
//! `axum_lua PORT SECONDS` serves for SECONDS, then prints
//! `luafiber http REQUESTS CPU_US_PER_REQUEST` (process CPU from
//! `getrusage`). Try it: `curl 127.0.0.1:PORT/`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use embed_tokio_luafiber::{call_wait, common, runtime};
use luafiber::Handle;

async fn hello(State(h): State<Handle>) -> String {
    let n = common::REQUESTS.fetch_add(1, Ordering::Relaxed) as i64;
    call_wait(h, n).await.to_string()
}

fn main() {
    let lua = runtime();
    let app = Router::new()
        .route("/", get(hello))
        .with_state(lua.handle());
    common::serve("luafiber", app);
}
