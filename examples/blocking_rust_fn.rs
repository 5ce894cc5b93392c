//! A Rust function that blocks its fiber (`sleep` for 100 ms), registered
//! as a Lua global and called from 1000 Lua fibers at once: only the
//! calling fiber waits, so the calls overlap and the whole run takes about
//! 0.1 s, not 100 s. Then the same with a Rust async function awaiting a tokio timer.
//!
//! ```text
//! cargo run --release --example blocking_rust_fn
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const N: i64 = 1000;

/// Starts `n` Lua fibers that each call `f(i)` and sums the results.
const FAN_OUT: &str = r#"
    local fiber = require('fiber')
    local fname, n = ...
    local f = _G[fname]
    local fibers = {}
    for i = 1, n do
        local fb = fiber.new(function() return f(i) end)
        fb:set_joinable(true)
        fibers[i] = fb
    end
    local sum = 0
    for i = 1, n do
        local ok, v = fibers[i]:join()
        assert(ok, v)
        sum = sum + v
    end
    return sum
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()?;
    let tk = tokio.handle().clone();
    let inside = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (i2, p2) = (inside.clone(), peak.clone());
    let rt = luafiber::Builder::new()
        // Unlike an mlua callback, a function registered here may switch
        // fibers: it runs on the calling Lua fiber's own stack.
        .register_fn("slow_lookup", move |key: i64| {
            let now = i2.fetch_add(1, Ordering::SeqCst) + 1;
            p2.fetch_max(now, Ordering::SeqCst);
            luafiber::sleep(Duration::from_millis(100))?;
            i2.fetch_sub(1, Ordering::SeqCst);
            Ok(key * key)
        })
        // The same wait as a future (a tokio timer, run by tokio): the Lua
        // fiber parks on it, woken from tokio's thread.
        .register_async_fn("async_lookup", move |key: i64| {
            let timer = tk.spawn(async { tokio::time::sleep(Duration::from_millis(100)).await });
            async move {
                timer
                    .await
                    .map_err(|e| luafiber::Error::from(e.to_string()))?;
                Ok(key * key)
            }
        })
        .build()?;
    let h = rt.handle();
    println!("registered slow_lookup(key): sleeps its fiber 100 ms, returns key^2");

    let t = Instant::now();
    let sum: i64 = h.eval(FAN_OUT, ("slow_lookup", N))?;
    let elapsed = t.elapsed();
    let expect: i64 = (1..=N).map(|i| i * i).sum();
    assert_eq!(sum, expect);
    println!("{N} Lua fibers called slow_lookup at once: sum of results {sum} (expected {expect})");
    println!(
        "at most {} fibers were inside the Rust function together; total time {elapsed:.3?} \
         (serially it would take {:.1} s)",
        peak.load(Ordering::SeqCst),
        N as f64 * 0.1
    );

    let t = Instant::now();
    let sum: i64 = h.eval(FAN_OUT, ("async_lookup", 100))?;
    println!(
        "100 Lua fibers awaited async_lookup at once: sum {sum}, total {:.3?}",
        t.elapsed()
    );
    Ok(())
}
