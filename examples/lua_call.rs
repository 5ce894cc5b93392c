//! Loads a Lua module and calls its handlers by name from Rust, each call
//! on a fresh fiber (Tarantool's iproto CALL), one at a time and 100 at
//! once.
//!
//! ```text
//! cargo run --release --example lua_call
//! ```

use std::time::Instant;

use luafiber::LuaRuntime;
use luafiber_lua::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = LuaRuntime::new()?;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lua/handlers.lua");
    rt.load_module_file("handlers", path)?;
    println!("loaded module 'handlers' from {path}");

    // One call, waited for: the scheduler runs until its fiber ends.
    let r = rt.call("handlers.add", vec![40.into(), 2.into()])?;
    println!("call handlers.add(40, 2) -> {}", r[0]);

    // A handler that yields: still one call, on its own fiber.
    let t = Instant::now();
    let r = rt.call("handlers.fetch", vec!["one".into(), 0.05.into()])?;
    println!(
        "call handlers.fetch('one') -> {} in {:.1?}",
        r[0],
        t.elapsed()
    );

    // EVAL: a chunk with `...` = the arguments.
    let r = rt.eval(
        "local a, b = ... return a * b, _VERSION",
        vec![6.into(), 7.into()],
    )?;
    println!("eval 'return a * b, _VERSION' (6, 7) -> {}, {}", r[0], r[1]);

    // Errors come back with the Lua traceback.
    match rt.call("handlers.fail", vec!["on purpose".into()]) {
        Err(e) => println!(
            "call handlers.fail -> error: {}",
            e.to_string().lines().next().unwrap_or("")
        ),
        Ok(r) => println!("call handlers.fail -> unexpected {r:?}"),
    }
    match rt.call("handlers.missing", vec![]) {
        Err(e) => println!("call handlers.missing -> error: {e}"),
        Ok(r) => println!("call handlers.missing -> unexpected {r:?}"),
    }

    // 100 calls at once: each on its own fiber, all sleeping together.
    const N: usize = 100;
    let t = Instant::now();
    let calls = (0..N)
        .map(|i| {
            rt.spawn_call(
                "handlers.fetch",
                vec![format!("key{i}").into(), 0.05.into()],
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    rt.run();
    let mut fibers = std::collections::BTreeSet::new();
    for (i, c) in calls.into_iter().enumerate() {
        let r = c.join()?;
        let v = &r[0];
        assert_eq!(
            v.get("value").and_then(Value::as_str),
            Some(format!("KEY{i}").as_str())
        );
        fibers.insert(v.get("fiber").and_then(Value::as_i64).unwrap_or(0));
    }
    let elapsed = t.elapsed();
    println!(
        "{N} concurrent calls of handlers.fetch (50 ms each) on {} fibers: {elapsed:.1?} total \
         ({:.1} ms if run one after another)",
        fibers.len(),
        N as f64 * 50.0
    );

    // Many short calls, one after another.
    const M: i64 = 100_000;
    let t = Instant::now();
    for i in 0..M {
        rt.call("handlers.add", vec![i.into(), 1.into()])?;
    }
    let elapsed = t.elapsed();
    println!(
        "{M} sequential calls of handlers.add: {elapsed:.1?} ({:.0} ns per call, each on a new fiber)",
        elapsed.as_nanos() as f64 / M as f64
    );
    let hits = rt.call("handlers.stats", vec![])?;
    println!("handlers counted {} calls", hits[0]);
    Ok(())
}
