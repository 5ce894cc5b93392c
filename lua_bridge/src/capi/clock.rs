//! `clock_*` and `fiber_time`/`fiber_clock` of the C module API
//! (Tarantool's `src/lib/core/clock.h` and `fiber.h`): the `double`
//! variants are seconds; `clock_*64` are nanoseconds and `fiber_*64`
//! microseconds, as in Tarantool.

use luafiber_runtime::clock;

use crate::modules::clock as clock_lib;

/// `clock_realtime()`: wall-clock time since the Unix epoch, in seconds.
#[no_mangle]
pub extern "C" fn clock_realtime() -> f64 {
    clock::realtime()
}

/// `clock_monotonic()`: monotonic time, in seconds.
#[no_mangle]
pub extern "C" fn clock_monotonic() -> f64 {
    clock::monotonic()
}

/// `clock_process()`: CPU time of the process, in seconds.
#[no_mangle]
pub extern "C" fn clock_process() -> f64 {
    clock::process()
}

/// `clock_thread()`: CPU time of the calling thread, in seconds.
#[no_mangle]
pub extern "C" fn clock_thread() -> f64 {
    clock::thread()
}

/// `clock_realtime64()`: [`clock_realtime`] in nanoseconds.
#[no_mangle]
pub extern "C" fn clock_realtime64() -> i64 {
    clock::realtime64()
}

/// `clock_monotonic64()`: [`clock_monotonic`] in nanoseconds.
#[no_mangle]
pub extern "C" fn clock_monotonic64() -> i64 {
    clock::monotonic64()
}

/// `clock_process64()`: [`clock_process`] in nanoseconds.
#[no_mangle]
pub extern "C" fn clock_process64() -> i64 {
    clock::process64()
}

/// `clock_thread64()`: [`clock_thread`] in nanoseconds.
#[no_mangle]
pub extern "C" fn clock_thread64() -> i64 {
    clock::thread64()
}

/// `fiber_time()`: the loop's wall-clock time in seconds, the same until
/// the fiber yields (what Lua's `fiber.time()` returns).
#[no_mangle]
pub extern "C" fn fiber_time() -> f64 {
    clock_lib::loop_time()
}

/// `fiber_time64()`: [`fiber_time`] in microseconds.
#[no_mangle]
pub extern "C" fn fiber_time64() -> i64 {
    clock_lib::loop_time64()
}

/// `fiber_clock()`: the loop's monotonic time in seconds (Lua's
/// `fiber.clock()`).
#[no_mangle]
pub extern "C" fn fiber_clock() -> f64 {
    clock_lib::loop_clock()
}

/// `fiber_clock64()`: [`fiber_clock`] in microseconds.
#[no_mangle]
pub extern "C" fn fiber_clock64() -> i64 {
    clock_lib::loop_clock64()
}
