//! `cargo run --release -- [seconds per case] [local]`: cases (a) and (b)
//! of benches/embed_tokio on luafiber; prints
//! `luafiber CASE calls/s cpu_us_per_call` (`luafiber-local` with `local`:
//! the calls are `Handle::call_local`s, run on the tokio workers). With
//! `EMBED_TOKIO_CLONE=1` each call clones the handle and drops it after (as
//! this bench did before 2026-12-07), to compare with older builds.

use embed_tokio_luafiber::{
    call_wait, call_wait_local, call_work, call_work_local, common, runtime,
};
use luafiber::Handle;

fn main() {
    let lua = runtime();
    // One handle for the whole run, as a service keeps it: no per-call
    // clone of its shared counts (mlua's side keeps its state per worker).
    let h: &'static Handle = Box::leak(Box::new(lua.handle()));
    let local = std::env::args().nth(2).as_deref() == Some("local");
    if local {
        // Each worker drives its local cord before it sleeps.
        let _ = common::ON_PARK.set(luafiber::drive_local);
    }
    let side = if local { "luafiber-local" } else { "luafiber" };
    match (local, std::env::var_os("EMBED_TOKIO_CLONE").is_some()) {
        (true, false) => common::bench(
            side,
            move |x| call_wait_local(h, x),
            move |x| call_work_local(h, x),
        ),
        (true, true) => common::bench(
            side,
            move |x| call_wait_local(h.clone(), x),
            move |x| call_work_local(h.clone(), x),
        ),
        (false, false) => common::bench(side, move |x| call_wait(h, x), move |x| call_work(h, x)),
        (false, true) => common::bench(
            side,
            move |x| call_wait(h.clone(), x),
            move |x| call_work(h.clone(), x),
        ),
    }
}
