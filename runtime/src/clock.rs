//! Clocks, as Tarantool's `clock` module reads them (`clock_gettime`), and
//! the cached loop time behind `fiber.clock()` and `fiber.time()`.

use std::cell::Cell;
use std::thread::LocalKey;

fn read(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the clock ids used are supported
    // on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Wall-clock time since the Unix epoch, in nanoseconds.
pub fn realtime64() -> i64 {
    read(libc::CLOCK_REALTIME)
}

/// Wall-clock time since the Unix epoch, in seconds.
pub fn realtime() -> f64 {
    realtime64() as f64 / 1e9
}

/// Monotonic time (from an arbitrary start), in nanoseconds.
pub fn monotonic64() -> i64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Monotonic time, in seconds.
pub fn monotonic() -> f64 {
    monotonic64() as f64 / 1e9
}

/// CPU time of the process, in nanoseconds.
pub fn process64() -> i64 {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time of the process, in seconds.
pub fn process() -> f64 {
    process64() as f64 / 1e9
}

/// CPU time of the calling OS thread, in nanoseconds.
pub fn thread64() -> i64 {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the calling OS thread, in seconds.
pub fn thread() -> f64 {
    thread64() as f64 / 1e9
}

/// One cached reading per clock: (switch count it was read at, nanoseconds).
#[derive(Clone, Copy)]
struct Cached(u64, i64);

thread_local! {
    static LOOP_MONOTONIC: Cell<Cached> = const { Cell::new(Cached(u64::MAX, 0)) };
    static LOOP_REALTIME: Cell<Cached> = const { Cell::new(Cached(u64::MAX, 0)) };
}

fn cached(cache: &'static LocalKey<Cell<Cached>>, read: fn() -> i64) -> i64 {
    let Some(epoch) = luafiber_fiber::switch_count() else {
        return read();
    };
    cache.with(|c| {
        let Cached(at, ns) = c.get();
        if at == epoch {
            return ns;
        }
        let ns = read();
        c.set(Cached(epoch, ns));
        ns
    })
}

/// [`monotonic64`] as the current fiber's loop time: read once, then the
/// same until the fiber yields (Tarantool's cached event-loop time behind
/// `fiber.clock()`). Outside any fiber, the clock itself.
pub fn loop_monotonic64() -> i64 {
    cached(&LOOP_MONOTONIC, monotonic64)
}

/// [`realtime64`] as the current fiber's loop time (see
/// [`loop_monotonic64`]), behind `fiber.time()`.
pub fn loop_realtime64() -> i64 {
    cached(&LOOP_REALTIME, realtime64)
}
