//! A Rust function that blocks its fiber (`fiber::sleep` for 100 ms),
//! registered through the bridge and called from 1000 Lua fibers at once:
//! only the calling fiber waits, so the calls overlap and the whole run
//! takes about 0.1 s, not 100 s.
//!
//! ```text
//! cargo run --release --example blocking_rust_fn
//! ```

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber::{fiber, LuaRuntime};
use luafiber_lua::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: i64 = 1000;
    let rt = LuaRuntime::new()?;
    let inside = Rc::new(Cell::new(0));
    let peak = Rc::new(Cell::new(0));
    {
        let (inside, peak) = (inside.clone(), peak.clone());
        // Unlike an mlua callback, a function registered here may switch
        // fibers: it runs on the calling Lua fiber's own stack.
        rt.register_fn("slow_lookup", move |args| {
            let key = args
                .first()
                .and_then(Value::as_i64)
                .ok_or("expected an integer key")?;
            inside.set(inside.get() + 1);
            peak.set(peak.get().max(inside.get()));
            fiber::sleep(Duration::from_millis(100))?;
            inside.set(inside.get() - 1);
            Ok(vec![Value::Integer(key * key)])
        })?;
    }
    println!(
        "registered the Rust function slow_lookup(key): sleeps its fiber 100 ms, returns key^2"
    );

    let t = Instant::now();
    let r = rt.eval(
        r#"
        local fiber = require('fiber')
        local n = ...
        local fibers = {}
        for i = 1, n do
            local f = fiber.new(function() return slow_lookup(i) end)
            f:set_joinable(true)
            fibers[i] = f
        end
        local sum = 0
        for i = 1, n do
            local ok, v = fibers[i]:join()
            assert(ok, v)
            sum = sum + v
        end
        return sum
        "#,
        vec![Value::Integer(N)],
    )?;
    let elapsed = t.elapsed();
    let expect: i64 = (1..=N).map(|i| i * i).sum();
    assert_eq!(r, [Value::Integer(expect)]);
    println!(
        "{N} Lua fibers called slow_lookup at once: sum of results {} (expected {expect})",
        r[0].as_i64().unwrap_or(0)
    );
    println!(
        "at most {} fibers were inside the Rust function together; total time {elapsed:.3?} \
         (serially it would take {:.1} s)",
        peak.get(),
        N as f64 * 0.1
    );

    // The same from Rust: 1000 calls started without waiting, then run.
    rt.eval(
        "function lookup_twice(k) return slow_lookup(k) + slow_lookup(k) end",
        vec![],
    )?;
    let t = Instant::now();
    let calls = (0..N)
        .map(|i| rt.spawn_call("lookup_twice", vec![i.into()]))
        .collect::<Result<Vec<_>, _>>()?;
    rt.run();
    let mut sum = 0;
    for c in calls {
        sum += c.join()?[0].as_i64().unwrap_or(0);
    }
    println!(
        "{N} calls of lookup_twice from Rust (two 100 ms waits each): sum {sum}, total {:.3?}",
        t.elapsed()
    );
    Ok(())
}
