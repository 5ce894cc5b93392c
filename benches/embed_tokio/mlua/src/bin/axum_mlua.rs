//! The mlua twin of the luafiber HTTP example (benches/embed_tokio): axum
//! on tokio (2 workers) serving `GET /` with Lua's `wait_call` (one await
//! of a Rust async function per request), one Lua state per worker.
//!
//! `axum_mlua PORT SECONDS` serves for SECONDS, then prints
//! `mlua http REQUESTS CPU_US_PER_REQUEST` (process CPU from `getrusage`).

use std::sync::atomic::Ordering;

use axum::routing::get;
use axum::Router;
use embed_tokio_mlua::{call_wait, common};

async fn hello() -> String {
    let n = common::REQUESTS.fetch_add(1, Ordering::Relaxed) as i64;
    call_wait(n).await.to_string()
}

fn main() {
    common::serve("mlua", Router::new().route("/", get(hello)));
}
