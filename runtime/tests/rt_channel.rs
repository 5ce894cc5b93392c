//! Rust producers and consumers over one channel: no value lost or
//! duplicated.

use luafiber_runtime::{spawn, yield_now, Channel, Runtime};

#[test]
fn producers_consumers_1e5_values() {
    const PRODUCERS: u64 = 10;
    const CONSUMERS: usize = 7;
    const PER: u64 = 10_000; // 1e5 values in all
    let rt = Runtime::new();
    let seen = rt.block_on(|| {
        let ch = Channel::<u64>::new(16);
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let rx = ch.clone();
                spawn(move || {
                    let mut got = Vec::new();
                    while let Ok(v) = rx.get(None) {
                        got.push(v);
                    }
                    got
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let tx = ch.clone();
                spawn(move || {
                    for i in 0..PER {
                        tx.put(p * PER + i, None).unwrap();
                        if i % 97 == 0 {
                            yield_now().unwrap();
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        ch.close();
        let mut per_consumer = Vec::new();
        let mut all = Vec::new();
        for c in consumers {
            let got = c.join().unwrap();
            per_consumer.push(got.len());
            all.extend(got);
        }
        assert!(per_consumer.iter().all(|&n| n > 0), "{per_consumer:?}");
        all
    });
    let mut seen = seen;
    assert_eq!(seen.len() as u64, PRODUCERS * PER);
    seen.sort_unstable();
    assert!(seen.iter().copied().eq(0..PRODUCERS * PER));
}

#[test]
fn per_producer_order_is_kept() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let ch = Channel::<(u8, u32)>::new(0);
        for p in 0..3u8 {
            let tx = ch.clone();
            drop(spawn(move || {
                for i in 0..1000 {
                    tx.put((p, i), None).unwrap();
                }
            }));
        }
        let mut next = [0u32; 3];
        for _ in 0..3000 {
            let (p, i) = ch.get(None).unwrap();
            assert_eq!(next[p as usize], i);
            next[p as usize] += 1;
        }
    });
}
