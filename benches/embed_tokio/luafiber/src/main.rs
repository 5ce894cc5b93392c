//! `cargo run --release -- [seconds per case]`: cases (a) and (b) of
//! benches/embed_tokio on luafiber; prints
//! `luafiber CASE calls/s cpu_us_per_call`.

use embed_tokio_luafiber::{call_wait, call_work, common, runtime};

fn main() {
    let lua = runtime();
    let (h, h2) = (lua.handle(), lua.handle());
    common::bench(
        "luafiber",
        move |x| call_wait(h.clone(), x),
        move |x| call_work(h2.clone(), x),
    );
}
