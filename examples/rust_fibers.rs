//! Rust fibers without Lua: a producer and two consumers over a channel,
//! sleeps, joins, a panic caught by its join, and a cancel.
//!
//! Run with `cargo run --release --example rust_fibers`.

use std::time::{Duration, Instant};

use luafiber::runtime::task;
use luafiber::runtime::Builder;
use luafiber::{sleep, spawn, Channel};

fn main() {
    // A panic is caught inside its fiber; the hook only reports where.
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        let fid = luafiber::runtime::current().map(|id| id.to_string());
        eprintln!(
            "[panic hook] fiber {} panicked at {}",
            fid.unwrap_or_default(),
            at.unwrap_or_default()
        );
    }));
    let rt = Builder::new().stack_size(64 * 1024).build();
    let start = Instant::now();
    let ms = move || start.elapsed().as_millis();

    let report = rt.block_on(move || {
        // A producer puts 6 jobs on a channel; two consumers take them.
        let jobs = Channel::<u32>::new(2);
        let tx = jobs.clone();
        let producer = task::Builder::new()
            .name("producer")
            .spawn(move || {
                for job in 1..=6 {
                    tx.put(job, None).expect("channel open");
                    println!("[{:>3} ms] producer put job {job}", ms());
                }
                tx.close();
                println!("[{:>3} ms] producer closed the channel", ms());
            })
            .expect("a stack");
        let consumers: Vec<_> = ["alice", "bob"]
            .into_iter()
            .map(|who| {
                let rx = jobs.clone();
                spawn(move || {
                    let mut done = 0;
                    while let Ok(job) = rx.get(None) {
                        // Each job "takes" 10 ms; the other consumer runs meanwhile.
                        sleep(Duration::from_millis(10)).expect("not cancelled");
                        println!("[{:>3} ms] {who} finished job {job}", ms());
                        done += job;
                    }
                    (who, done)
                })
            })
            .collect();

        // A fiber that would sleep for an hour, cancelled after 5 ms.
        let sleeper = spawn(move || {
            let r = sleep(Duration::from_secs(3600));
            println!("[{:>3} ms] sleeper woke: {r:?}", ms());
            r
        });
        sleep(Duration::from_millis(5)).expect("not cancelled");
        println!("[{:>3} ms] main cancels fiber {}", ms(), sleeper.id());
        sleeper.cancel();
        let slept = sleeper.join().expect("the sleeper returned");
        println!(
            "[{:>3} ms] sleeper joined: cancelled = {}",
            ms(),
            slept.is_err_and(|e| e.is_cancelled())
        );

        // A fiber that panics: the panic stays in that fiber.
        let crasher = spawn(|| -> u32 { panic!("crasher gave up") });
        match crasher.join() {
            Ok(_) => unreachable!(),
            Err(e) => println!("[{:>3} ms] join of a panicking fiber: {e}", ms()),
        }

        producer.join().expect("producer ran");
        let mut total = 0;
        for c in consumers {
            let (who, done) = c.join().expect("consumer ran");
            println!("[{:>3} ms] {who} did jobs worth {done}", ms());
            total += done;
        }
        total
    });
    println!(
        "total {report} (1+2+...+6 = 21) in {} ms: two consumers overlapped their 10 ms jobs",
        ms()
    );
    assert_eq!(report, 21);
}
