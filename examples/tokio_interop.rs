//! A tokio multi-thread runtime beside luafiber: fibers await a tokio
//! task's `JoinHandle` and a `tokio::sync::oneshot` with
//! `block_on_future`, which parks only the awaiting fiber (the others of
//! its cord run meanwhile); tokio's workers wake the fiber from their
//! threads through its cord's inbox.
//!
//! Run with `cargo run --release --example tokio_interop`.

use std::time::{Duration, Instant};

use luafiber::runtime::{block_on_future, cord, sleep, spawn, Runtime};

fn main() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("tokio runtime");
    let cords = Runtime::builder()
        .stack_size(64 * 1024)
        .cords(2)
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

    // 3. And the other way: a tokio task awaits a luafiber task's result,
    //    which a plain join would block on; here it is awaited on tokio's
    //    blocking pool.
    let h = cords.handle().clone();
    let from_tokio = tokio.block_on(async move {
        tokio::task::spawn_blocking(move || h.spawn(|| 6 * 7).join().unwrap())
            .await
            .unwrap()
    });
    println!("[{:>3} ms] tokio got {from_tokio} from a cord", ms());

    let (sum, ticks) = joined.join().unwrap();
    let replies = oneshots.join().unwrap();
    assert_eq!(sum, 55);
    assert_eq!(ticks, 5);
    assert_eq!(replies.len(), 3);
    assert_eq!(from_tokio, 42);
    cords.shutdown_timeout(Duration::from_secs(1));
    tokio.shutdown_timeout(Duration::from_secs(1));
    println!("done");
}
