//! `mlua_instr N`: N calls of `app.work_call` (case (b) of
//! benches/embed_tokio) through mlua's `Function::call` on this thread,
//! after a warm-up of 1,000: a fixed amount of work for callgrind, the
//! twin of the luafiber side's `local_instr` (run it for two N and divide
//! the difference of their instruction counts by the difference of N: the
//! instructions of one call).

use embed_tokio_mlua::common;
use mlua::{Function, Lua, Table};

fn main() {
    let n: i64 = common::arg(1, 10_000);
    let lua = Lua::new();
    let app: Table = lua.load(common::HANDLERS).eval().expect("handlers load");
    let work: Function = app.get("work_call").expect("work_call");
    let mut sum = 0i64;
    for i in 0..1000 + n {
        sum = sum.wrapping_add(work.call::<i64>(i).expect("work_call"));
    }
    println!("{sum}");
}
