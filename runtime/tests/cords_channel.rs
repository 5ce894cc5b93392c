//! `cord::Channel` between fibers of several cords and plain threads: a
//! million messages none lost or duplicated, rendezvous, timeouts, close,
//! cancels.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use luafiber_runtime::{cord, GetError, PutError, Runtime};

const LONG: Duration = Duration::from_secs(60);

fn cords(n: usize) -> cord::Runtime {
    Runtime::builder()
        .stack_size(64 * 1024)
        .cords(n)
        .build()
        .unwrap()
}

#[test]
fn a_million_messages_among_four_cords_none_lost_or_duplicated() {
    const CORDS: usize = 4;
    const PER_PRODUCER: u32 = 250_000;
    let rt = cords(CORDS);
    let ch = cord::Channel::<u32>::new(64);
    // One producer and one consumer on each cord; producer p sends
    // p, p + 4, p + 8, ...
    let producers: Vec<_> = (0..CORDS)
        .map(|p| {
            let tx = ch.clone();
            rt.spawn_on(p, move || {
                for k in 0..PER_PRODUCER {
                    tx.put(k * CORDS as u32 + p as u32, None).unwrap();
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..CORDS)
        .map(|c| {
            let rx = ch.clone();
            rt.spawn_on(c, move || {
                let mut got = Vec::new();
                for _ in 0..=CORDS as u32 * PER_PRODUCER {
                    match rx.get(None) {
                        Ok(v) => got.push(v),
                        Err(GetError::Closed) => break,
                        Err(e) => panic!("{e}"),
                    }
                }
                got
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    ch.close();
    let mut all = Vec::with_capacity(1_000_000);
    for c in consumers {
        let got = c.join().unwrap();
        // Values of one producer reach each consumer in the order sent.
        let mut last = [None::<u32>; CORDS];
        for &v in &got {
            let p = v as usize % CORDS;
            assert!(last[p].is_none_or(|l| l < v), "producer {p} out of order");
            last[p] = Some(v);
        }
        all.extend(got);
    }
    assert_eq!(all.len(), 1_000_000);
    all.sort_unstable();
    assert!(all.iter().enumerate().all(|(i, &v)| v == i as u32));
    rt.shutdown_timeout(LONG);
}

#[test]
fn rendezvous_between_cords() {
    let rt = cords(2);
    let ch = cord::Channel::<&str>::new(0);
    assert!(ch.is_full());
    // No reader: a put times out and gives its value back.
    assert!(matches!(
        ch.put("early", Some(Duration::from_millis(2))),
        Err(PutError::TimedOut("early"))
    ));
    let rx = ch.clone();
    let reader = rt.spawn_on(1, move || rx.get(None));
    let tx = ch.clone();
    let writer = rt.spawn_on(0, move || tx.put("hello", None));
    writer.join().unwrap().unwrap();
    assert_eq!(reader.join().unwrap(), Ok("hello"));
    assert_eq!(ch.count(), 0);
    rt.shutdown_timeout(LONG);
}

#[test]
fn plain_threads_put_and_get() {
    let ch = cord::Channel::<u64>::new(4);
    let tx = ch.clone();
    let t = std::thread::spawn(move || {
        for i in 0..1000 {
            tx.put(i, None).unwrap();
        }
        tx.close();
    });
    let mut sum = 0;
    for _ in 0..=1000 {
        match ch.get(None) {
            Ok(v) => sum += v,
            Err(GetError::Closed) => break,
            Err(e) => panic!("{e}"),
        }
    }
    t.join().unwrap();
    assert_eq!(sum, 999 * 1000 / 2);
}

#[test]
fn get_times_out_without_a_value() {
    let rt = cords(1);
    let ch = cord::Channel::<u8>::new(1);
    let rx = ch.clone();
    let h = rt.spawn(move || {
        let start = Instant::now();
        (rx.get(Some(Duration::from_millis(5))), start.elapsed())
    });
    let (r, waited) = h.join().unwrap();
    assert_eq!(r, Err(GetError::TimedOut));
    assert!(waited >= Duration::from_millis(5));
    assert_eq!(ch.try_get(), Err(GetError::TimedOut));
    ch.try_put(1).unwrap();
    assert!(matches!(ch.try_put(2), Err(PutError::TimedOut(2))));
    assert_eq!(ch.try_get(), Ok(1));
    rt.shutdown_timeout(LONG);
}

#[test]
fn close_wakes_blocked_readers_and_writers_on_other_cords() {
    let rt = cords(2);
    let empty = cord::Channel::<u8>::new(0);
    let full = cord::Channel::<u8>::new(1);
    full.try_put(1).unwrap();
    let (tx, started) = mpsc::channel();
    let (rx, t2) = (empty.clone(), tx.clone());
    let reader = rt.spawn_on(0, move || {
        t2.send(()).unwrap();
        rx.get(None)
    });
    let wx = full.clone();
    let writer = rt.spawn_on(1, move || {
        tx.send(()).unwrap();
        wx.put(2, None)
    });
    started.recv_timeout(LONG).unwrap();
    started.recv_timeout(LONG).unwrap();
    // Let both block (a bounded number of looks).
    for _ in 0..10_000 {
        if empty.has_readers() && full.has_writers() {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    empty.close();
    full.close();
    assert_eq!(reader.join().unwrap(), Err(GetError::Closed));
    assert!(matches!(writer.join().unwrap(), Err(PutError::Closed(2))));
    // The buffered value stays readable after the close.
    assert_eq!(full.try_get(), Ok(1));
    assert_eq!(full.try_get(), Err(GetError::Closed));
    assert!(matches!(full.try_put(3), Err(PutError::Closed(3))));
    rt.shutdown_timeout(LONG);
}

#[test]
fn a_cancelled_reader_leaves_no_trace() {
    let rt = cords(2);
    let ch = cord::Channel::<u8>::new(1);
    let rx = ch.clone();
    let (tx, started) = mpsc::channel();
    let reader = rt.spawn_on(1, move || {
        tx.send(()).unwrap();
        rx.get(None)
    });
    started.recv_timeout(LONG).unwrap();
    for _ in 0..10_000 {
        if ch.has_readers() {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    reader.cancel();
    assert_eq!(reader.join().unwrap(), Err(GetError::Cancelled));
    // A later put goes to the buffer, not to the reader that gave up.
    ch.put(7, None).unwrap();
    assert_eq!(ch.count(), 1);
    assert_eq!(ch.try_get(), Ok(7));
    rt.shutdown_timeout(LONG);
}

#[test]
fn request_reply_from_many_fibers_of_one_cord_to_another() {
    let rt = cords(2);
    let requests = cord::Channel::<(u32, cord::Channel<u32>)>::new(8);
    let rq = requests.clone();
    let server = rt.spawn_on(1, move || {
        let mut served = 0;
        while let Ok((n, reply)) = rq.get(None) {
            reply.put(n + 1, None).unwrap();
            served += 1;
        }
        served
    });
    let client = rt.spawn_on(0, move || {
        let hs: Vec<_> = (0..100u32)
            .map(|i| {
                let rq = requests.clone();
                luafiber_runtime::spawn(move || {
                    let reply = cord::Channel::new(1);
                    rq.put((i, reply.clone()), None).unwrap();
                    reply.get(None).unwrap() == i + 1
                })
            })
            .collect();
        let ok = hs.into_iter().map(|h| h.join().unwrap());
        let ok = ok.filter(|&b| b).count();
        requests.close();
        ok
    });
    assert_eq!(client.join().unwrap(), 100);
    assert_eq!(server.join().unwrap(), 100);
    rt.shutdown_timeout(LONG);
}
