//! Clocks, as Tarantool's `clock` module reads them (`clock_gettime`).

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
