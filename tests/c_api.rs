//! Tarantool's C module API (`include/module.h`) from a C module built at
//! test time (`tests/cmod/fibers.c`): its Lua functions start fibers of the
//! scheduler, sleep, yield, join, wait on conds, and use the cord buffers
//! and the 64-bit helpers; the results are checked from Lua.

#[path = "support/cmod.rs"]
mod cmod;

use cmod::assert_prints;

#[test]
fn fibers_start_at_once_sleep_wait_and_join() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local log, sum = require('fibers').run(3) print(log) print(sum)",
        "start1 start2 start3 main0 slept1 slept2 slept3 broadcast0 woke1 woke2 woke3 \n60\n",
    );
}

#[test]
fn cancel_ends_a_sleep_and_wakeup_ends_a_yield() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "print(require('fibers').cancel_and_wakeup())",
        "yield0 main0 cancelled1 woken0 \t7\n",
    );
}

#[test]
fn a_timed_out_wait_is_raised_by_luat_error() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local ok, e = pcall(require('fibers').cond_timeout)
         print(ok, e.type, tostring(e))",
        "false\tTimedOut\tTimeout exceeded\n",
    );
}

#[test]
fn detached_fibers_started_by_wakeup_read_their_context() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local f, fiber = require('fibers'), require('fiber')
         print(f.detached(3))
         for _ = 1, 10000 do
             if f.ticks() == 3 then break end
             fiber.sleep(0.001)
         end
         print(f.ticks())",
        "0\n3\n",
    );
}

#[test]
fn int64_helpers() {
    let dir = cmod::build("fibers");
    let (code, want) = if cfg!(feature = "lua54") {
        (
            "local f = require('fibers')
             print(f.int64('-9007199254740993', '18446744073709551615'))
             print(f.int64(5, 2^53))
             print(pcall(f.int64, {}, 1))
             print(pcall(f.int64, 1, 'x'))",
            "1.844674407371e+19\t-9223372036854775808\t-9007199254740993\t1.844674407371e+19\n\
             1.844674407371e+19\t-9223372036854775808\t5\t9007199254740992\n\
             false\texpected int64_t as 1 argument\n\
             false\texpected uint64_t as 2 argument\n",
        )
    } else {
        (
            "local f = require('fibers')
             print(f.int64('-9007199254740993', '18446744073709551615'))
             print(f.int64(5, 2^53))
             print(select(3, f.int64(-3LL, 4ULL)))
             print(pcall(f.int64, {}, 1))
             print(pcall(f.int64, 1, 'x'))",
            "18446744073709551615ULL\t-9223372036854775808LL\t-9007199254740993LL\t18446744073709551615ULL\n\
             18446744073709551615ULL\t-9223372036854775808LL\t5\t9007199254740992ULL\n\
             -3\t4\n\
             false\texpected int64_t as 1 argument\n\
             false\texpected uint64_t as 2 argument\n",
        )
    };
    assert_prints(&dir, code, want);
}

#[test]
fn int64_strings_read_as_strtoll_reads_them() {
    let dir = cmod::build("fibers");
    let code = "local f = require('fibers')
         for _, s in ipairs({' 42', '+7', '-0', '12abc', '-1', 'x', '', '- 1',
                             '9223372036854775807', '9223372036854775808',
                             '-9223372036854775808', '-9223372036854775809',
                             '18446744073709551615', '18446744073709551616'}) do
             local a, b = f.toint(s)
             print(string.format('%q', s), tostring(a), tostring(b))
         end";
    let want = if cfg!(feature = "lua54") {
        "\" 42\"\t42\t42\n\"+7\"\t7\t7\n\"-0\"\t0\t0\n\"12abc\"\t12\t12\n\
         \"-1\"\t-1\t1.844674407371e+19\n\"x\"\t0\t0\n\"\"\t0\t0\n\"- 1\"\t0\t0\n\
         \"9223372036854775807\"\t9223372036854775807\t9223372036854775807\n\
         \"9223372036854775808\"\t0\t9.2233720368548e+18\n\
         \"-9223372036854775808\"\t-9223372036854775808\t9.2233720368548e+18\n\
         \"-9223372036854775809\"\t0\t9223372036854775807\n\
         \"18446744073709551615\"\t0\t1.844674407371e+19\n\
         \"18446744073709551616\"\t0\t0\n"
    } else {
        "\" 42\"\t42\t42\n\"+7\"\t7\t7\n\"-0\"\t0\t0\n\"12abc\"\t12\t12\n\
         \"-1\"\t-1\t18446744073709551615ULL\n\"x\"\t0\t0\n\"\"\t0\t0\n\"- 1\"\t0\t0\n\
         \"9223372036854775807\"\t9223372036854775807LL\t9223372036854775807ULL\n\
         \"9223372036854775808\"\t0\t9223372036854775808ULL\n\
         \"-9223372036854775808\"\t-9223372036854775808LL\t9223372036854775808ULL\n\
         \"-9223372036854775809\"\t0\t9223372036854775807ULL\n\
         \"18446744073709551615\"\t0\t18446744073709551615ULL\n\
         \"18446744073709551616\"\t0\t0\n"
    };
    assert_prints(&dir, code, want);
}

#[test]
fn tolstring_callable_null_and_call() {
    let dir = cmod::build("fibers");
    let code = "local f = require('fibers')
         local T = setmetatable({}, {__tostring = function() return 'T!' end})
         local bad = setmetatable({}, {__tostring = function() error('boom', 0) end})
         print(f.tostr(12), f.tostr(true), f.tostr(nil), f.tostr('a\\0b'), f.tostr(T))
         local t = {}
         local g = function() end
         print(f.tostr(t) == tostring(t), f.tostr(g) == tostring(g))
         print(pcall(f.tostr, bad))
         print(f.kinds(print))
         print(f.kinds(setmetatable({}, {__call = print})))
         print(f.kinds({}))
         print(f.kinds(f.null()))
         print(f.call(print, 'called'))
         local ok, e = pcall(f.call, error, 'oops', 0)
         print(ok, e.type, e.message)
         ok, e = pcall(f.call, error, {type = 'MyError', message = 'mine'})
         print(ok, e.type, e.message)
         ok, e = pcall(f.call, error, T)
         print(ok, e.type, e.message)
         print(pcall(f.call, error, bad))";
    let cdata = if cfg!(feature = "lua54") {
        "false"
    } else {
        "true"
    };
    let want = format!(
        "12\ttrue\tnil\ta\0b\tT!\t2\n\
         true\ttrue\n\
         false\tboom\n\
         true\tfalse\tfalse\n\
         true\tfalse\tfalse\n\
         false\tfalse\tfalse\n\
         false\ttrue\t{cdata}\n\
         called\n\
         true\n\
         false\tLuajitError\toops\n\
         false\tMyError\tmine\n\
         false\tLuajitError\tT!\n\
         false\tboom\n"
    );
    assert_prints(&dir, code, &want);
}

#[test]
fn cord_buffers_keep_their_memory_and_come_back_on_yield() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "print(require('fibers').buffers())",
        "hello\ttrue\ttrue\n",
    );
}

#[test]
fn fiber_self_id_and_name_match_lua() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local f, fiber = require('fibers'), require('fiber')
         local function check()
             local id, name, ok = f.self()
             return id == fiber.self():id(), name == fiber.self():name(), ok
         end
         local inner
         fiber.create(function() fiber.name('inner') inner = {check()} end)
         local x = fiber.new(function() fiber.name('x') return check() end)
         x:set_joinable(true)
         print(check())
         print((table.unpack or unpack)(inner))
         print(x:join())",
        "true\ttrue\ttrue\ntrue\ttrue\ttrue\ntrue\ttrue\ttrue\ttrue\n",
    );
}

#[test]
fn clocks() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local same, moved, now = require('fibers').clocks()
         print(same, moved, math.abs(now - os.time()) < 5)",
        "true\ttrue\ttrue\n",
    );
}

#[test]
fn a_wait_inside_a_gc_finalizer_is_refused() {
    let dir = cmod::build("fibers");
    let code = if cfg!(feature = "lua54") {
        "local f = require('fibers') local ok, e
         local t = setmetatable({}, {__gc = function() ok, e = pcall(f.cond_timeout) end})
         t = nil collectgarbage() collectgarbage()
         print(ok, e.message)"
    } else {
        // LuaJIT calls __gc of userdata only: a newproxy carries it.
        "local f = require('fibers') local ok, e
         local p = newproxy(true)
         getmetatable(p).__gc = function() ok, e = pcall(f.cond_timeout) end
         p = nil collectgarbage() collectgarbage()
         print(ok, e.message)"
    };
    assert_prints(
        &dir,
        code,
        "false\tfiber_cond_wait: cannot yield inside a __gc finalizer\n",
    );
}

#[test]
fn coio_wait_times_out_and_wakes_on_write_and_on_coio_close() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "print(require('fibers').pipes())",
        "timeout0 writable2 write1 ready1 close0 ready0 \t1\t0\n",
    );
}

#[test]
fn a_wait_on_the_main_lua_thread_is_refused() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "print(require('fibers').on_main_thread())",
        "fiber_cond_wait: cannot yield on the main Lua thread\n",
    );
}

#[cfg(feature = "luajit")]
#[test]
fn the_c_api_is_reachable_through_ffi_c() {
    let run = cmod::luafiber(
        "local ffi, fiber = require('ffi'), require('fiber')
         ffi.cdef[[
             double clock_monotonic(void);
             int64_t fiber_time64(void);
             uint64_t fiber_id(void *f);
             void *fiber_self(void);
             int lua_gettop(void *L);
         ]]
         print(ffi.C.clock_monotonic() > 0, ffi.C.fiber_time64() > 0)
         print(tonumber(ffi.C.fiber_id(nil)) == fiber.self():id(),
               tonumber(ffi.C.fiber_id(ffi.C.fiber_self())) == fiber.self():id())
         print(ffi.C.lua_gettop ~= nil)",
        &[],
    );
    assert_eq!(
        run.stdout, "true\ttrue\ntrue\ttrue\ntrue\n",
        "stderr: {}",
        run.stderr
    );
}

/// Issue 29, item 7: `fiber_sleep`, `fiber_cond_wait_timeout`, `coio_wait`
/// and `fiber_join_timeout` with a NaN timeout waited for ever (the
/// process hung, or said its main fiber was blocked); they refuse it, as
/// Lua's `fiber.sleep(0/0)` does, with an `IllegalParams` error.
#[test]
fn a_nan_timeout_is_refused_by_the_c_api() {
    let dir = cmod::build("fibers");
    assert_prints(
        &dir,
        "local fiber = require('fiber')
         -- a guard: a wait that never ends must not hang the test
         fiber.create(function() fiber.sleep(60) print('hung') os.exit(3) end)
         for _, what in ipairs({'sleep', 'cond', 'coio', 'join'}) do
             local ok, e = pcall(require('fibers').nan_timeouts, what)
             print(what, ok, e.type, e.message)
         end
         os.exit(0)",
        "sleep\tfalse\tIllegalParams\tfiber_sleep: the timeout is NaN\n\
         cond\tfalse\tIllegalParams\tfiber_cond_wait: the timeout is NaN\n\
         coio\tfalse\tIllegalParams\tcoio_wait: the timeout is NaN\n\
         join\tfalse\tIllegalParams\tfiber_join_timeout: the timeout is NaN\n",
    );
}
