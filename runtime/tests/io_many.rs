//! Ten thousand fibers parked on sockets while others churn: every one
//! wakes for its data, and the churn goes on meanwhile.
//!
//! 10,000 fds: 5,000 socketpairs, one reader on each end (a pair per
//! fiber would need 20,000 fds, the hard limit here).

mod support;

use std::cell::Cell;
use std::rc::Rc;

use luafiber_runtime::{fiber, spawn, task, yield_now, Builder};
use support::sock::{pair, raise_fd_limit, read, write};

const PAIRS: usize = 5_000;
const CHURN: u32 = 20_000;

#[test]
fn ten_thousand_parked_readers_while_others_churn() {
    let limit = raise_fd_limit();
    assert!(limit >= 2 * PAIRS as u64 + 100, "fd limit {limit}");
    let rt = Builder::new().stack_size(32 * 1024).build();
    let woken = Rc::new(Cell::new(0usize));
    let churned = Rc::new(Cell::new(0u32));
    let mut writers = Vec::new();
    for _ in 0..PAIRS {
        let (a, b) = pair();
        let (a, b) = (Rc::new(a), Rc::new(b));
        for fd in [a.clone(), b.clone()] {
            let woken = woken.clone();
            task::Builder::new()
                .spawn(move || {
                    let mut buf = [0; 1];
                    assert_eq!(read(&fd, &mut buf, None).unwrap(), 1);
                    woken.set(woken.get() + 1);
                })
                .unwrap();
        }
        writers.push((a, b));
    }
    let (c, w) = (churned.clone(), woken.clone());
    // Fibers that start, yield and end, while the readers are parked.
    spawn(move || {
        let mut seen_parked = 0;
        for i in 0..CHURN {
            let c = c.clone();
            spawn(move || {
                yield_now().unwrap();
                c.set(c.get() + 1);
            });
            if i % 1000 == 0 && w.get() == 0 {
                seen_parked += 1;
            }
            yield_now().unwrap();
        }
        seen_parked
    });
    // The writer wakes every reader once the churn is under way.
    let c = churned.clone();
    let writer = spawn(move || {
        while c.get() < CHURN / 2 {
            yield_now().unwrap();
        }
        let parked = fiber::stats().fibers;
        for (a, b) in &writers {
            write(a, b"a", None).unwrap();
            write(b, b"b", None).unwrap();
        }
        (parked, writers)
    });
    rt.run();
    let (parked, writers) = writer.join().unwrap();
    assert!(parked >= 2 * PAIRS, "{parked} fibers when the writes began");
    assert_eq!(woken.get(), 2 * PAIRS);
    assert_eq!(churned.get(), CHURN);
    drop(writers);
    assert_eq!(fiber::stats().fibers, 0);
}
