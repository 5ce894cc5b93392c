//! An HTTP service whose handler is Lua, on 2 luafiber cords, served by
//! axum on tokio (2 workers): `GET /` calls `app.wait_call(n)` with
//! `Handle::call_async`, and the Lua handler awaits a Rust async function
//! (`host_wait`: a tokio task answering through a oneshot) once per
//! request. Its mlua twin is `../mlua/src/bin/axum_mlua.rs`.
//!
//! `axum_lua PORT SECONDS [local]` serves for SECONDS, then prints
//! `luafiber http REQUESTS CPU_US_PER_REQUEST` (process CPU from
//! `getrusage`); with `local`, the handler's call is a
//! `Handle::call_local` on the tokio worker that serves the request
//! (`luafiber-local http ...`). Try it: `curl 127.0.0.1:PORT/`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use embed_tokio_luafiber::{call_wait, call_wait_local, common, runtime};
use luafiber::Handle;

async fn hello(State(h): State<Handle>) -> String {
    let n = common::REQUESTS.fetch_add(1, Ordering::Relaxed) as i64;
    call_wait(&h, n).await.to_string()
}

async fn hello_local(State(h): State<Handle>) -> String {
    let n = common::REQUESTS.fetch_add(1, Ordering::Relaxed) as i64;
    call_wait_local(&h, n).await.to_string()
}

fn main() {
    let lua = runtime();
    if std::env::args().nth(3).as_deref() == Some("local") {
        // Each worker drives its local cord before it sleeps.
        let _ = common::ON_PARK.set(luafiber::drive_local);
        let app = Router::new()
            .route("/", get(hello_local))
            .with_state(lua.handle());
        common::serve("luafiber-local", app);
        return;
    }
    let app = Router::new()
        .route("/", get(hello))
        .with_state(lua.handle());
    common::serve("luafiber", app);
}
