//! `cargo run --release -- [seconds per case]`: cases (a) and (b) of
//! benches/embed_tokio on mlua; prints `mlua CASE calls/s cpu_us_per_call`.

use embed_tokio_mlua::{call_wait, call_work, common};

fn main() {
    common::bench("mlua", call_wait, call_work);
}
