//! `embed-tokio-floor [seconds per case]`: the floor of benches/embed_tokio,
//! with no Lua at all: case (a) awaits `host_wait(x)` and adds 1 in Rust,
//! case (b) computes `work_call`'s answer in Rust, with the same load and
//! measures as the other sides (`common.rs`). What any embedding pays on top
//! of this line is its own; prints `floor CASE calls/s cpu_us_per_call`.

use embed_tokio_mlua::common;

fn main() {
    common::bench(
        "floor",
        |x| async move { common::host_wait(x).await + 1 },
        |x| async move { common::work_expect(x) },
    );
}
