//! `local_wait_instr N`: N [`luafiber::Handle::call_local`]s of case (a) of
//! benches/embed_tokio (`app.wait_call`, which awaits `host_wait` once),
//! 64 in flight from one task of a current-thread tokio runtime (its
//! `on_thread_park` drives the local cord), after a warm-up of 1,000. A
//! fixed amount of work for callgrind: run it for two N and divide the
//! difference of their instruction counts by the difference of N (the
//! instructions of one call). Its twin on mlua is that side's
//! `mlua_wait_instr` (with `floor`: the same load with no Lua).

use embed_tokio_luafiber::{call_wait_local, common, runtime};
use luafiber::Handle;

fn main() {
    let n: i64 = common::arg(1, 10_000);
    let lua = runtime();
    let h: &'static Handle = Box::leak(Box::new(lua.handle()));
    let _ = common::ON_PARK.set(luafiber::drive_local);
    let rt = common::tokio_rt_current();
    let call = move |x| call_wait_local(h, x);
    common::run_calls(&rt, 1000, call, common::wait_expect);
    println!("{}", common::run_calls(&rt, n, call, common::wait_expect));
}
