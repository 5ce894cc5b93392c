//! The README's embedding examples, kept compiling and correct.

use std::time::Duration;

use luafiber::{sleep, spawn, Channel, LuaRuntime, Runtime};

#[test]
fn rust_fibers_example() {
    let total = Runtime::new().block_on(|| {
        let ch = Channel::new(0);
        let tx = ch.clone();
        let producer = spawn(move || {
            for i in 1..=3u32 {
                sleep(Duration::from_millis(1)).unwrap();
                tx.put(i, None).unwrap();
            }
            tx.close();
        });
        let mut sum = 0;
        while let Ok(v) = ch.get(None) {
            sum += v;
        }
        producer.join().unwrap();
        sum
    });
    assert_eq!(total, 6);
}

#[test]
fn lua_embedding_example() -> Result<(), luafiber::Error> {
    let rt = LuaRuntime::builder().memory_limit(64 << 20).build()?;
    rt.register_fn("slow_double", |args| {
        luafiber::fiber::sleep(Duration::from_millis(10))?;
        Ok(vec![(args[0].as_f64().unwrap_or(0.0) * 2.0).into()])
    })?;
    rt.load_module(
        "handlers",
        "return { add = function(a, b) return a + b end }",
    )?;
    let sum = rt.call("handlers.add", vec![1.into(), 2.into()])?;
    assert_eq!(sum[0].as_i64(), Some(3));
    let v = rt.eval("return slow_double(...)", vec![21.into()])?;
    assert_eq!(v[0].as_f64(), Some(42.0));
    Ok(())
}

#[test]
fn lua_cords_example() -> Result<(), Box<dyn std::error::Error>> {
    let cords = LuaRuntime::builder()
        .cords(2)
        .load_module("calc", "return { add = function(a, b) return a + b end }")
        .build()?;
    // [1, 2] as MessagePack: a fixarray of two fixints; the result is [3].
    assert_eq!(cords.call("calc.add", &[0x92, 1, 2])?, [0x91, 3]);
    cords.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}
