//! Cords that spin before they sleep (`io::reactor`'s spin) still sleep
//! when nothing happens: after a burst of cross-cord round trips, idle
//! cords use next to no CPU. Alone in its test binary, so that no other
//! test's threads add to the process's CPU time.

use std::time::Duration;

use luafiber_runtime::{cord, Runtime};

/// User + system CPU of the process so far.
fn cpu() -> Duration {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn idle_cords_sleep_after_round_trips() {
    let rt = Runtime::builder()
        .stack_size(64 * 1024)
        .cords(2)
        .build()
        .unwrap();
    let (ping, pong) = (cord::Channel::<u64>::new(1), cord::Channel::<u64>::new(1));
    let (p2, q2) = (ping.clone(), pong.clone());
    let echo = rt.spawn_on(1, move || {
        while let Ok(v) = p2.get(None) {
            q2.put(v + 1, None).unwrap();
        }
    });
    let (done_tx, done) = std::sync::mpsc::channel();
    let driver = rt.spawn_on(0, move || {
        for n in 0..10_000u64 {
            ping.put(n, None).unwrap();
            assert_eq!(pong.get(None).unwrap(), n + 1);
        }
        done_tx.send(()).unwrap();
        // Both cords stay, with a fiber waiting on each.
        let _ = pong.get(None);
        drop(ping);
    });
    done.recv_timeout(Duration::from_secs(60)).unwrap();
    // The last spins run out (they are bounded to microseconds).
    std::thread::sleep(Duration::from_millis(10));
    let before = cpu();
    std::thread::sleep(Duration::from_millis(500));
    let used = cpu() - before;
    // A cord that kept spinning would use the whole half second.
    assert!(
        used < Duration::from_millis(100),
        "idle cords used {used:?} of CPU in 500 ms"
    );
    rt.shutdown_timeout(Duration::from_secs(5));
    // Both were cancelled by the shutdown.
    let _ = (driver.join(), echo.join());
}
