//! `mlua_wait_instr N [floor]`: N calls of case (a) of benches/embed_tokio
//! (`app.wait_call`, which awaits `host_wait` once) through mlua's
//! `call_async`, 64 in flight from one task of a current-thread tokio
//! runtime, after a warm-up of 1,000; with `floor`, the same load with no
//! Lua (`host_wait(x) + 1` in Rust). A fixed amount of work for callgrind:
//! run it for two N and divide the difference of their instruction counts
//! by the difference of N (the instructions of one call). The twin of the
//! luafiber side's `local_wait_instr`.

use embed_tokio_mlua::{call_wait, common};

fn main() {
    let n: i64 = common::arg(1, 10_000);
    let floor = std::env::args().nth(2).as_deref() == Some("floor");
    let rt = common::tokio_rt_current();
    let done = if floor {
        let call = |x| async move { common::host_wait(x).await + 1 };
        common::run_calls(&rt, 1000, call, common::wait_expect);
        common::run_calls(&rt, n, call, common::wait_expect)
    } else {
        common::run_calls(&rt, 1000, call_wait, common::wait_expect);
        common::run_calls(&rt, n, call_wait, common::wait_expect)
    };
    println!("{done}");
}
