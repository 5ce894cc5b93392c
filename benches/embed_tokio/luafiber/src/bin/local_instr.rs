//! `local_instr N`: N `Handle::call_local`s of `app.work_call` (case (b)
//! of benches/embed_tokio) on this thread, each polled once with a no-op
//! waker, after a warm-up of 1,000: a fixed amount of work for callgrind
//! (run it for two N and divide the difference of their instruction
//! counts by the difference of N: the instructions of one call).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use embed_tokio_luafiber::runtime;

fn main() {
    let n: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let lua = runtime();
    let h = lua.handle();
    let cx = &mut Context::from_waker(Waker::noop());
    let mut sum = 0i64;
    for i in 0..1000 + n {
        let mut call = pin!(h.call_local::<i64>("app.work_call", i));
        match call.as_mut().poll(cx) {
            Poll::Ready(r) => sum = sum.wrapping_add(r.expect("work_call")),
            Poll::Pending => panic!("work_call does not wait"),
        }
    }
    println!("{sum}");
}
