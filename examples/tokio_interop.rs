//! A tokio multi-thread runtime beside luafiber, both ways: fibers await a
//! tokio task's `JoinHandle` and a `tokio::sync::oneshot` with
//! `block_on_future`, which parks only the awaiting fiber (the others of
//! its cord run meanwhile), and tokio's workers wake the fiber from their
//! threads through its cord's inbox; Lua awaits a tokio task through a
//! registered Rust async function; and tokio tasks await Lua calls
//! (`Handle::call_async`), woken by the cord that answers.
//!
//! Run with `cargo run --release --example tokio_interop`.

use std::time::{Duration, Instant};

use luafiber::runtime::{block_on_future, cord};
use luafiber::{sleep, spawn, Builder, Error};

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("tokio runtime");
    let tk = tokio.handle().clone();
    let cords = Builder::new()
        .stack_size(64 * 1024)
        .cords(2)
        .load_module(
            "app",
            "return { greet = function(id) return 'hello, ' .. user_name(id) end }",
        )
        // Lua awaits a tokio task: the calling Lua fiber parks, its cord
        // runs other fibers meanwhile.
        .register_async_fn("user_name", move |id: i64| {
            let task = tk.spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                format!("user {id}")
            });
            async move { task.await.map_err(|e| Error::from(e.to_string())) }
        })
        .build()
        .expect("cords");
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();

    // 1. A fiber on cord 0 awaits a tokio task's JoinHandle.
    let handle = tokio.handle().clone();
    let joined = cords.spawn_on(0, move || {
        let task = handle.spawn(async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            (1..=10u64).sum::<u64>()
        });
        // Another fiber of this cord runs while the first one waits.
        let ticker = spawn(move || {
            let mut ticks = 0;
            for _ in 0..5 {
                sleep(Duration::from_millis(2)).unwrap();
                ticks += 1;
            }
            ticks
        });
        let sum = block_on_future(task)
            .expect("not cancelled")
            .expect("tokio task ran");
        println!(
            "[{:>3} ms] cord {:?}: tokio task's JoinHandle gave {sum}",
            ms(),
            cord::current()
        );
        (sum, ticker.join().unwrap())
    });

    // 2. Fibers on cord 1 await oneshots that tokio tasks fill.
    let handle = tokio.handle().clone();
    let oneshots = cords.spawn_on(1, move || {
        let waiters: Vec<_> = (0..3u32)
            .map(|i| {
                let (tx, rx) = tokio::sync::oneshot::channel::<String>();
                handle.spawn(async move {
                    tokio::time::sleep(Duration::from_millis(10 * (3 - i as u64))).await;
                    let _ = tx.send(format!("reply {i} from a tokio worker"));
                });
                spawn(move || {
                    let v = block_on_future(rx).expect("not cancelled").expect("sent");
                    println!(
                        "[{:>3} ms] cord {:?}, fiber {i}: {v}",
                        ms(),
                        cord::current()
                    );
                    v
                })
            })
            .collect();
        waiters
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });

    // 3. And the other way: tokio tasks await Lua calls, 16 in flight,
    //    each Lua handler awaiting a tokio task in turn.
    let h = cords.handle();
    let greetings = tokio.block_on(async move {
        let calls: Vec<_> = (0..16)
            .map(|i| h.call_async::<String>("app.greet", i))
            .collect();
        let mut out = Vec::new();
        for c in calls {
            out.push(c.await.expect("the call"));
        }
        out
    });
    println!(
        "[{:>3} ms] tokio awaited {} Lua calls: {:?}, ...",
        ms(),
        greetings.len(),
        &greetings[..2]
    );
    let from_tokio = greetings.len();

    let (sum, ticks) = joined.join().unwrap();
    let replies = oneshots.join().unwrap();
    assert_eq!(sum, 55);
    assert_eq!(ticks, 5);
    assert_eq!(replies.len(), 3);
    assert_eq!(from_tokio, 16);
    cords.shutdown_timeout(Duration::from_secs(1));
    tokio.shutdown_timeout(Duration::from_secs(1));
    println!("done");
}
