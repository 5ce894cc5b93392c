//! Loads a Lua module and calls its handlers by name from Rust, each call
//! on a fresh fiber (Tarantool's iproto CALL), one at a time and 100 at
//! once, with typed arguments and results.
//!
//! ```text
//! cargo run --release --example lua_call
//! ```

use std::collections::BTreeSet;
use std::time::Instant;

use serde::Deserialize;

/// What `handlers.fetch` returns (a Lua table with these keys).
#[derive(Debug, Deserialize)]
struct Fetched {
    key: String,
    value: String,
    fiber: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lua/handlers.lua");
    let code = std::fs::read_to_string(path)?;
    let rt = luafiber::Builder::new()
        .load_module("handlers", &code)
        .build()?;
    let h = rt.handle();
    println!("loaded module 'handlers' from {path}");

    // One call, waited for.
    let sum: i64 = h.call("handlers.add", (40, 2))?;
    println!("call handlers.add(40, 2) -> {sum}");

    // A handler that yields: still one call, on its own fiber.
    let t = Instant::now();
    let f: Fetched = h.call("handlers.fetch", ("one", 0.05))?;
    println!(
        "call handlers.fetch('one') -> {{key = {}, value = {}, fiber = {}}} in {:.1?}",
        f.key,
        f.value,
        f.fiber,
        t.elapsed()
    );

    // EVAL: a chunk with `...` = the arguments; two results into a tuple.
    let (product, version): (i64, String) =
        h.eval("local a, b = ... return a * b, _VERSION", (6, 7))?;
    println!("eval 'return a * b, _VERSION' (6, 7) -> {product}, {version}");

    // Errors: one type, with a kind, the message and the call's fiber.
    let e = h.call::<()>("handlers.fail", "on purpose").unwrap_err();
    println!(
        "call handlers.fail -> {:?} error in fiber {:?}: {}",
        e.kind(),
        e.fiber_id().map(|id| id.0),
        e.message().lines().next().unwrap_or("")
    );
    let e = h.call::<()>("handlers.missing", ()).unwrap_err();
    println!("call handlers.missing -> {:?} error: {e}", e.kind());

    // 100 calls at once, as futures: each on its own fiber, all sleeping
    // together.
    const N: usize = 100;
    let t = Instant::now();
    let calls: Vec<_> = (0..N)
        .map(|i| h.call_async::<Fetched>("handlers.fetch", (format!("key{i}"), 0.05)))
        .collect();
    let mut fibers = BTreeSet::new();
    for (i, c) in calls.into_iter().enumerate() {
        let f = futures::executor::block_on(c)?;
        assert_eq!(f.value, format!("KEY{i}"));
        fibers.insert(f.fiber);
    }
    let elapsed = t.elapsed();
    println!(
        "{N} concurrent calls of handlers.fetch (50 ms each) on {} fibers: {elapsed:.1?} total \
         ({:.1} ms if run one after another)",
        fibers.len(),
        N as f64 * 50.0
    );

    // Many short calls, one after another, each from this thread to the
    // cord and back.
    const M: i64 = 100_000;
    let t = Instant::now();
    for i in 0..M {
        let _: i64 = h.call("handlers.add", (i, 1))?;
    }
    let elapsed = t.elapsed();
    println!(
        "{M} sequential calls of handlers.add: {elapsed:.1?} ({:.0} ns per call, each on a new fiber)",
        elapsed.as_nanos() as f64 / M as f64
    );
    let hits: i64 = h.call("handlers.stats", ())?;
    println!("handlers counted {hits} calls");
    Ok(())
}
