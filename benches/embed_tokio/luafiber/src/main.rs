//! `cargo run --release -- [seconds per case] [local]`: cases (a) and (b)
//! of benches/embed_tokio on luafiber; prints
//! `luafiber CASE calls/s cpu_us_per_call` (`luafiber-local` with `local`:
//! the calls are `Handle::call_local`s, run on the tokio workers).

use embed_tokio_luafiber::{
    call_wait, call_wait_local, call_work, call_work_local, common, runtime,
};

fn main() {
    let lua = runtime();
    let (h, h2) = (lua.handle(), lua.handle());
    if std::env::args().nth(2).as_deref() == Some("local") {
        // Each worker drives its local cord before it sleeps.
        let _ = common::ON_PARK.set(luafiber::drive_local);
        common::bench(
            "luafiber-local",
            move |x| call_wait_local(h.clone(), x),
            move |x| call_work_local(h2.clone(), x),
        );
        return;
    }
    common::bench(
        "luafiber",
        move |x| call_wait(h.clone(), x),
        move |x| call_work(h2.clone(), x),
    );
}
