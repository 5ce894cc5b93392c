//! Calling Lua from Rust on a fresh fiber per call (Tarantool's iproto
//! CALL/EVAL): the handler C function fetched by its registry ref (the
//! default) vs. pushed with `lua_pushcfunction` on every call (Tarantool
//! before e88c0d21ab), for `call` of a global function and for `eval`.
//!
//! ```text
//! benches/bench.sh --bench call_eval                              # LuaJIT
//! benches/bench.sh --bench call_eval --no-default-features --features lua54
//! ```
//!
//! `benches/bench.sh` is `cargo bench` with `--cfg luafiber_bench` (in a
//! target dir of its own), which the `push_per_call` variants need; a plain
//! `cargo bench` runs the cached-ref ones only.
//!
//! Before the timings, it prints the Lua memory each variant allocates per
//! call: `collectgarbage('count')` (through `Lua::used_memory`) before and
//! after 1e5 calls with the collector stopped, divided by 1e5.

use criterion::{criterion_group, criterion_main, Criterion};
use luafiber::LuaRuntime;
#[cfg(luafiber_bench)]
use luafiber_lua::Handlers;
use luafiber_lua::Value;

/// Calls per memory measurement.
const CALLS: usize = 100_000;

const SETUP: &str = r#"
function bench_add(a, b) return a + b end
bench = { nested = { add = bench_add } }
"#;

fn args() -> Vec<Value> {
    vec![Value::Integer(1), Value::Integer(2)]
}

/// The variants: label, then one call.
type Variant = (&'static str, fn(&LuaRuntime));

/// The product's calls (handlers fetched by their registry refs).
const VARIANTS: [Variant; 3] = [
    ("call/cached_ref", |rt| {
        rt.call("bench_add", args()).unwrap();
    }),
    ("call_dotted/cached_ref", |rt| {
        rt.call("bench.nested.add", args()).unwrap();
    }),
    ("eval/cached_ref", |rt| {
        rt.eval("local a, b = ... return a + b", args()).unwrap();
    }),
];

/// The "before" variants: a handler pushed per call (`--cfg luafiber_bench`).
#[cfg(luafiber_bench)]
const BEFORE: [Variant; 2] = [
    ("call/push_per_call", |rt| {
        rt.call_by(Handlers::PushPerCall, "bench_add", args())
            .unwrap();
    }),
    ("eval/push_per_call", |rt| {
        rt.eval_by(
            Handlers::PushPerCall,
            "local a, b = ... return a + b",
            args(),
        )
        .unwrap();
    }),
];

/// Every variant this build has.
fn variants() -> Vec<Variant> {
    #[cfg_attr(not(luafiber_bench), allow(unused_mut))]
    let mut v = VARIANTS.to_vec();
    #[cfg(luafiber_bench)]
    v.extend(BEFORE);
    v
}

/// Lua bytes allocated per call, with the collector stopped.
fn bytes_per_call(rt: &LuaRuntime, call: fn(&LuaRuntime)) -> f64 {
    for _ in 0..1000 {
        call(rt); // warm the pools and the eval cache
    }
    rt.eval("collectgarbage('collect') collectgarbage('stop')", vec![])
        .unwrap();
    let before = rt.lua().used_memory();
    for _ in 0..CALLS {
        call(rt);
    }
    let after = rt.lua().used_memory();
    rt.eval("collectgarbage('restart')", vec![]).unwrap();
    (after as f64 - before as f64) / CALLS as f64
}

fn call_eval(c: &mut Criterion) {
    let rt = LuaRuntime::new().unwrap();
    rt.eval(SETUP, vec![]).unwrap();
    println!("Lua memory allocated per call ({CALLS} calls, GC stopped):");
    for (name, call) in variants() {
        println!("  {name:<24} {:>8.1} bytes/call", bytes_per_call(&rt, call));
    }
    let mut g = c.benchmark_group("call_eval");
    for (name, call) in variants() {
        g.bench_function(name, |b| b.iter(|| call(&rt)));
    }
    // Baseline: the same function called through mlua on the main thread
    // (no fiber, no new Lua thread).
    let f: luafiber::mlua::Function = rt.lua().globals().get("bench_add").unwrap();
    g.bench_function("mlua_call_no_fiber", |b| {
        b.iter(|| f.call::<i64>((1, 2)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, call_eval);
criterion_main!(benches);
