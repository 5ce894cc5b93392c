//! Errors: a Lua error in a detached fiber is reported and ends only that
//! fiber; the modules raise Tarantool-style error objects; an error in the
//! main chunk comes back from `run_chunk` with its traceback.

#[path = "support/luafiber_e.rs"]
mod luafiber_e;

use luafiber::{LuaRuntime, LuaRuntimeError as Error};
use luafiber_e::luafiber_e;

fn run(rt: &LuaRuntime, code: &str) {
    if let Err(e) = rt.run_chunk(code, "errors") {
        panic!("{e}");
    }
}

const DETACHED_ERRORS: &str = r#"
local fiber = require('fiber')
local progress, finished = {}, 0
for i = 1, 20 do
    fiber.new(function()
        for round = 1, 5 do
            progress[i] = round
            fiber.sleep(0.001)
        end
        finished = finished + 1
    end)
end
fiber.create(function() error('string error from a fiber') end)
fiber.create(function() error({code = 42, message = 'table error from a fiber'}) end)
fiber.create(function() fiber.sleep(0.002); error('error after a yield') end)
fiber.new(function() fiber.yield(); local t = nil; return t.field end)
fiber.create(function() error(setmetatable({}, {__tostring = function() error('tostring raised') end})) end)
fiber.create(function() error() end)
local deadline = fiber.clock() + 30
while finished < 20 and fiber.clock() < deadline do fiber.sleep(0.001) end
assert(finished == 20, finished .. ' of 20 fibers finished')
for i = 1, 20 do assert(progress[i] == 5) end
print('chunk went on')
"#;

#[test]
fn error_in_detached_fiber_spares_the_others_and_the_chunk() {
    let rt = LuaRuntime::new().unwrap();
    let before = luafiber::fiber::stats().fibers;
    run(
        &rt,
        &DETACHED_ERRORS.replace("print('chunk went on')", "CHUNK_WENT_ON = true"),
    );
    let went_on: bool = rt.lua().globals().get("CHUNK_WENT_ON").unwrap();
    assert!(went_on);
    assert_eq!(
        luafiber::fiber::stats().fibers,
        before,
        "failed fibers were released"
    );
    // The runtime still works afterwards.
    run(&rt, "local f = require('fiber').new(function() return 7 end) f:set_joinable(true) assert(select(2, f:join()) == 7)");
}

#[test]
fn error_in_detached_fiber_is_reported_on_stderr() {
    let (status, stdout, stderr) = luafiber_e(DETACHED_ERRORS);
    assert_eq!(status, 0, "stderr: {stderr}");
    assert!(stdout.contains("chunk went on"), "stdout: {stdout}");
    for needle in [
        "string error from a fiber",
        "table error from a fiber",
        "error after a yield",
        "attempt to index",
        "stack traceback",
    ] {
        assert!(
            stderr.contains(needle),
            "{needle:?} not reported; stderr:\n{stderr}"
        );
    }
    let reports = stderr
        .lines()
        .filter(|l| l.starts_with("luafiber: fiber error in fiber"))
        .count();
    assert_eq!(reports, 6, "one report per failed fiber; stderr:\n{stderr}");
    assert!(
        !stderr.contains("tostring raised"),
        "the report printed a failing __tostring's own error: {stderr}"
    );
}

#[test]
fn cancelled_fiber_is_not_reported_as_an_error() {
    let (status, _stdout, stderr) = luafiber_e(
        r#"
        local fiber = require('fiber')
        local f = fiber.new(function() fiber.sleep(10) end)
        fiber.yield()
        f:cancel()
        fiber.sleep(0.01)
        assert(f:status() == 'dead')
        "#,
    );
    assert_eq!(status, 0, "stderr: {stderr}");
    assert!(!stderr.contains("fiber error"), "stderr: {stderr}");
}

#[test]
fn error_in_main_chunk_comes_back_with_traceback() {
    let rt = LuaRuntime::new().unwrap();
    match rt.run_chunk(
        "local function inner() error('main chunk failed') end\ninner()",
        "main",
    ) {
        Err(Error::Runtime(tb)) => {
            assert!(tb.contains("main chunk failed"), "{tb}");
            assert!(tb.contains("stack traceback"), "{tb}");
            assert!(tb.contains("inner"), "{tb}");
        }
        other => panic!("expected a runtime error, got {other:?}"),
    }
    match rt.run_chunk("error({message = 'as table'})", "main") {
        Err(Error::Runtime(tb)) => assert!(tb.contains("as table"), "{tb}"),
        other => panic!("expected a runtime error, got {other:?}"),
    }
    match rt.run_chunk("local x = = 1", "bad") {
        Err(Error::Load(msg)) => assert!(msg.contains("bad"), "{msg}"),
        other => panic!("expected a load error, got {other:?}"),
    }
    // Fibers the failed chunk started still ran to their end.
    run(&rt, "DONE = false");
    let r = rt.run_chunk(
        "local fiber = require('fiber') fiber.new(function() fiber.sleep(0.005) DONE = true end) error('early')",
        "main",
    );
    assert!(matches!(r, Err(Error::Runtime(_))));
    let done: bool = rt.lua().globals().get("DONE").unwrap();
    assert!(done, "a fiber of a failed chunk was dropped");
    assert_eq!(luafiber::fiber::stats().fibers, 0);
}

#[test]
fn main_chunk_error_exits_nonzero() {
    let (status, _stdout, stderr) = luafiber_e("error('the end')");
    assert_eq!(status, 1);
    assert!(stderr.contains("the end"), "{stderr}");
}

#[test]
fn bad_arguments_raise_illegal_params_objects() {
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local function check(expected, f, ...)
            local ok, err = pcall(f, ...)
            assert(not ok, 'expected an error: ' .. expected)
            assert(type(err) == 'table', 'an error object, not ' .. type(err))
            assert(err.type == 'IllegalParams', tostring(err.type))
            assert(err.message == expected, ('message %q, want %q'):format(tostring(err.message), expected))
            assert(tostring(err) == err.message, 'tostring(err) is the message')
            assert(err .. '' == err.message and '>' .. err == '>' .. err.message, 'concat uses the message')
            local plain = err:unpack()
            assert(getmetatable(plain) == nil and plain.type == err.type and plain.message == err.message)
            local ok2, again = pcall(err.raise, err)
            assert(not ok2 and rawequal(again, err), 'raise raises the same object')
            return err
        end
        check('fiber.create(function, ...): bad arguments', fiber.create, 1)
        check('fiber.create(function, ...): bad arguments', fiber.create)
        check('fiber.create(function, ...): bad arguments', fiber.create, {})
        check('fiber.new(function, ...): bad arguments', fiber.new, 'f')
        check('Usage: fiber.sleep(delay)', fiber.sleep, 'x')
        check('Usage: fiber.sleep(delay)', fiber.sleep)
        check('Usage: fiber.sleep(delay)', fiber.sleep, 0 / 0)
        check('Usage: fiber.sleep(delay)', fiber.sleep, 0.001, 2)
        -- Issue 29, item 7: a numeric string is a number, as master's
        -- luaL_checknumber / lua_isnumber take it.
        fiber.sleep('0.001')
        fiber.sleep(' 0 ')
        check('Usage: fiber.sleep(delay)', fiber.sleep, '0.001s')
        check('fiber.name(): bad arguments', fiber.name, {})
        check('Fiber name is too long', fiber.name, string.rep('n', 256))
        check('Usage: fiber.find(id)', fiber.find)
        check('fiber.testcancel(): bad arguments', fiber.testcancel, 1)

        -- file and line point at the Lua code that made the bad call.
        local line
        local ok, err = pcall(function()
            line = debug.getinfo(1, 'l').currentline + 1
            fiber.sleep('x')
        end)
        assert(not ok and err.line == line, 'line ' .. tostring(err.line) .. ', want ' .. line)
        assert(type(err.file) == 'string' and err.file:find('errors', 1, true), tostring(err.file))

        -- Bad arguments inside a fiber raise in that fiber, joinable as the same object.
        local f = fiber.new(function() fiber.sleep('soon') end)
        f:set_joinable(true)
        local ok2, jerr = f:join()
        assert(ok2 == false and jerr.type == 'IllegalParams' and tostring(jerr) == 'Usage: fiber.sleep(delay)')
        "#,
    );
}

#[test]
fn error_objects_of_other_kinds() {
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local f = fiber.new(function() fiber.sleep(10) end)
        f:set_joinable(true)
        local ok, err = f:join(0.001)
        assert(not ok and err.type == 'TimedOut' and tostring(err) == err.message, tostring(err))
        f:cancel()
        local ok2, cerr = f:join()
        assert(not ok2 and cerr.type == 'FiberIsCancelled' and tostring(cerr) == cerr.message, tostring(cerr))
        local ok3, derr = pcall(fiber.wakeup, f)
        assert(not ok3 and derr.type == 'IllegalParams' and derr.message:find('dead'), tostring(derr))
        "#,
    );
}

/// A runtime with `rust_sleep(seconds)`, which passes the fiber layer's
/// error on (`?`: a cancel keeps its kind).
fn runtime_with_rust_sleep() -> LuaRuntime {
    let rt = LuaRuntime::new().unwrap();
    rt.register_fn("rust_sleep", |args| {
        let secs = args.first().and_then(|v| v.as_f64()).unwrap_or(0.0);
        luafiber::fiber::sleep(std::time::Duration::from_secs_f64(secs))?;
        Ok(vec![true.into()])
    })
    .unwrap();
    rt
}

#[test]
fn cancel_interrupts_a_blocking_rust_function() {
    let rt = runtime_with_rust_sleep();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local seen
        local f = fiber.new(function()
            local t0 = fiber.clock()
            local ok, err = pcall(rust_sleep, 10)
            seen = {ok = ok, err = err, waited = fiber.clock() - t0}
            local ok2, err2 = pcall(fiber.testcancel)
            seen.sticky = err2
        end)
        fiber.yield()
        f:cancel()
        local deadline = fiber.clock() + 30
        while seen == nil and fiber.clock() < deadline do fiber.sleep(0.001) end
        assert(seen and seen.ok == false, 'the Rust function was not interrupted')
        assert(seen.waited < 5, 'cancel woke the Rust function late: ' .. seen.waited)
        assert(tostring(seen.err):find('cancelled'), tostring(seen.err))
        assert(seen.sticky.type == 'FiberIsCancelled', tostring(seen.sticky))
        "#,
    );
}

#[test]
fn cancel_inside_a_rust_function_raises_fiber_is_cancelled() {
    let rt = runtime_with_rust_sleep();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local seen
        local f = fiber.new(function() seen = select(2, pcall(rust_sleep, 10)) end)
        fiber.yield()
        f:cancel()
        local deadline = fiber.clock() + 30
        while seen == nil and fiber.clock() < deadline do fiber.sleep(0.001) end
        assert(type(seen) == 'table' and seen.type == 'FiberIsCancelled',
            'a cancelled Rust call raised ' .. tostring(seen and seen.type) .. ': ' .. tostring(seen))
        "#,
    );
}

#[test]
fn chunk_that_detaches_itself_still_succeeds() {
    let rt = LuaRuntime::new().unwrap();
    let r = rt.run_chunk(
        "require('fiber').self():set_joinable(false) DETACHED_RAN = true",
        "detached",
    );
    let ran: bool = rt.lua().globals().get("DETACHED_RAN").unwrap();
    assert!(ran);
    assert!(r.is_ok(), "a chunk that raised nothing failed: {r:?}");
}

/// Issue 13, item 11: a cancel needs no traceback, so a cancelled call's
/// error is the message alone (building one cost 30 µs a fiber).
#[test]
fn cancelled_fiber_builds_no_traceback() {
    let rt = LuaRuntime::new().unwrap();
    rt.load_module(
        "waits",
        "local c = require('fiber').cond() return { forever = function() c:wait() end }",
    )
    .unwrap();
    let call = rt.spawn_call("waits.forever", vec![]).unwrap();
    let id = call.id();
    rt.run();
    luafiber::fiber::cancel(id).unwrap();
    match call.join() {
        Err(e) => {
            assert_eq!(e.kind(), luafiber::runtime::ErrorKind::Cancelled, "{e}");
            assert!(!e.to_string().contains("stack traceback"), "{e}");
        }
        other => panic!("expected the cancel, got {other:?}"),
    }
}

/// Issue 13, item 11: a cancelled Lua fiber's error is read by no one, so
/// its message handler builds no traceback: cancelling deep fibers grows the
/// heap by far less than one traceback each (measured beside fibers that
/// build one at the same depth and end normally).
#[test]
fn cancelled_lua_fiber_builds_no_traceback() {
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local N, DEPTH = 100, 30
        -- every traceback line names the fiber's own chunk (its id first: a
        -- traceback cuts chunk names to 60 bytes), so no two tracebacks are
        -- the same string
        local deep = {}
        for i = 1, N do
            deep[i] = load('local function d(n, k) if n == 0 then return k() end ' ..
                'return (d(n - 1, k)) end return d', '=' .. i .. string.rep('n', 50))()
        end
        -- N fibers DEPTH calls deep, waiting on a cond; `finish` ends them;
        -- the heap's growth while they end, per fiber
        local function grown(body, finish)
            local cond, fs = fiber.cond(), {}
            for i = 1, N do fs[i] = fiber.create(deep[i], DEPTH, function() body(cond) end) end
            collectgarbage('collect')
            collectgarbage('stop')
            local before = collectgarbage('count')
            finish(cond, fs)
            for _ = 1, 100 do
                if fs[N]:status() == 'dead' then break end
                fiber.sleep(0)
            end
            assert(fs[N]:status() == 'dead')
            local g = (collectgarbage('count') - before) * 1024 / N
            collectgarbage('restart')
            return g
        end
        local function cancelled()
            return grown(function(cond) cond:wait() end,
                function(_, fs) for i = 1, N do fs[i]:cancel() end end)
        end
        local function traced()
            return grown(function(cond) cond:wait() local _ = debug.traceback('x', 1) end,
                function(cond) cond:broadcast() end)
        end
        cancelled() traced() -- pools the Lua threads, grown to the depth
        local c, t = cancelled(), traced()
        assert(t > 1000, ('%.0f bytes a traceback'):format(t))
        assert(c < t / 2,
            ('%.0f bytes a cancelled fiber, %.0f a traceback: one was built'):format(c, t))
        "#,
    );
}

/// Issue 13, item 11: the error of a fiber joined in Lua goes to `join` as
/// it is, so no traceback (a copy of the message and more) is built for it:
/// the heap does not grow by one per fiber.
#[test]
fn joined_fiber_error_builds_no_traceback() {
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local N, LEN = 200, 2000
        local msgs = {}
        for i = 1, N do msgs[i] = string.rep('x', LEN - 8) .. string.format('%08d', i) end
        local function round()
            local fs = {}
            for i = 1, N do
                fs[i] = fiber.new(function() error(msgs[i], 0) end)
                fs[i]:set_joinable(true)
            end
            for i = 1, N do
                local ok, err = fs[i]:join()
                assert(not ok and err == msgs[i])
            end
        end
        round() -- pools the Lua threads, grown for the message handler
        collectgarbage('collect')
        collectgarbage('stop')
        local before = collectgarbage('count')
        round()
        local grown = (collectgarbage('count') - before) * 1024 / N
        collectgarbage('restart')
        assert(grown < LEN / 2, ('%.0f bytes a fiber: a traceback was built'):format(grown))
        "#,
    );
}

/// Issue 13, item 8: an error value with `__tostring` is reported with its
/// text, as `lua` and Tarantool print it, in a detached fiber's report, in
/// the main chunk's and in a Rust caller's error.
#[test]
fn error_report_uses_tostring() {
    const CUSTOM: &str = "setmetatable({}, {__tostring = function() return 'custom text' end})";
    let (status, _stdout, stderr) = luafiber_e(&format!(
        "require('fiber').create(function() error({CUSTOM}) end)"
    ));
    assert_eq!(status, 0, "stderr: {stderr}");
    assert!(stderr.contains("custom text"), "stderr: {stderr}");
    assert!(!stderr.contains("table: 0x"), "stderr: {stderr}");
    let (status, _stdout, stderr) = luafiber_e(&format!("error({CUSTOM})"));
    assert_eq!(status, 1, "stderr: {stderr}");
    assert!(stderr.contains("custom text"), "stderr: {stderr}");
    let rt = LuaRuntime::new().unwrap();
    match rt.eval(&format!("error({CUSTOM})"), vec![]) {
        Err(Error::Fiber(e)) => assert!(e.to_string().contains("custom text"), "{e}"),
        other => panic!("expected the error, got {other:?}"),
    }
}

/// Issue 13, item 9: an error in a `__gc` finalizer is reported on stderr
/// (Lua drops it after the finalizer's pcall), and the program goes on.
#[test]
fn gc_finalizer_error_is_reported() {
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local function boom() error('gc boom') end
        if newproxy then
            local p = newproxy(true)
            getmetatable(p).__gc = boom
            p = nil
        else
            setmetatable({}, {__gc = boom})
        end
        collectgarbage()
        collectgarbage()
        print('went on')
        "#,
    );
    assert_eq!(status, 0, "stderr: {stderr}");
    assert!(stdout.contains("went on"), "stdout: {stdout}");
    assert!(stderr.contains("gc boom"), "stderr: {stderr}");
    assert!(stderr.contains("__gc"), "stderr: {stderr}");
}

/// Issue 13, item 4: a detached fiber's error report names it by its bytes,
/// as Tarantool writes them.
#[test]
fn error_report_names_the_fiber_by_its_bytes() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg("require('fiber').create(function() require('fiber').name('\\255\\254abc') error('named') end)")
        .output()
        .unwrap();
    assert!(
        out.stderr
            .windows(b"(\xff\xfeabc): ".len())
            .any(|w| w == b"(\xff\xfeabc): "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 13, item 12: this repository's build compiles the vendored Lua
/// engine with `-fstack-clash-protection` (`.cargo/config.toml`), and the
/// build says so (a program depending on luafiber without the flag sees
/// `false` and a warning from `build()`).
#[test]
fn vendored_lua_is_built_with_stack_clash_protection() {
    assert!(std::hint::black_box(luafiber::STACK_CLASH_PROTECTION));
}

/// Issue 29: a system error reaches Lua as Tarantool words it, strerror's
/// text only: a busy port is `Address already in use`, without Rust's
/// ` (os error 98)`.
#[test]
fn a_busy_port_is_reported_without_rusts_os_error_suffix() {
    let (status, stdout, stderr) = luafiber_e(
        "local s = require('socket').tcp_server('127.0.0.1', 0, function() end) \
         local port = s:name().port \
         local ok, err = pcall(box.cfg, {listen = '127.0.0.1:' .. port}) \
         print(ok, tostring(err)) io.stdout:flush() os.exit(0)",
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.starts_with("false\t"), "{stdout}");
    assert!(stdout.contains(": Address already in use\n"), "{stdout}");
    assert!(!stdout.contains("os error"), "{stdout}");
}
