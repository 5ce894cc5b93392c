//! The Lua `experimental.threads` module (Tarantool master's application
//! threads) through the binary: each test is a script of its own process
//! (the groups are per process), which ends with `print('ok')` when its
//! assertions held. Messages and error fields are master's
//! (`src/box/lua/app_threads.lua`).

use std::path::Path;
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_luafiber");

/// What a run gave: status, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(EXE).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Writes the script `name` with the test helpers before `code`.
fn script(name: &str, code: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("threads");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{HELPERS}\n{code}")).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Runs `code` with the groups `--threads` gives and expects `ok` last.
fn check(name: &str, groups: &[&str], code: &str) {
    let path = script(name, code);
    let mut args: Vec<&str> = groups.iter().flat_map(|g| ["--threads", g]).collect();
    args.push(&path);
    let (status, stdout, stderr) = run(&args);
    assert_eq!(
        (status, stdout.lines().last()),
        (0, Some("ok")),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

const HELPERS: &str = r#"
local threads = require('experimental.threads')
local fiber = require('fiber')
local json = require('json')

-- Deep equality, ignoring metatables (luatest's assert_equals).
local function equal(a, b)
    if type(a) ~= 'table' or type(b) ~= 'table' then
        return a == b
    end
    for k, v in pairs(a) do
        if not equal(v, b[k]) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end

local function eq(got, want, what)
    if not equal(got, want) then
        error(('%s: got %s, want %s'):format(what or 'value',
              json.encode(got), json.encode(want)), 2)
    end
end

-- The error `fn(...)` raises must have the fields of `want`
-- (luatest's assert_error_covers).
local function fails(want, fn, ...)
    local ok, err = pcall(fn, ...)
    if ok then
        error('no error, want ' .. json.encode(want), 2)
    end
    for k, v in pairs(want) do
        if type(err) ~= 'table' or not equal(err[k], v) then
            error(('error %s: want %s = %s'):format(tostring(err), k,
                  json.encode(v)), 2)
        end
    end
    return err
end

local function illegal(message, fn, ...)
    return fails({type = 'IllegalParams', message = message}, fn, ...)
end
"#;

#[test]
fn info_before_and_after_cfg() {
    check(
        "info.lua",
        &[],
        r#"
        eq(threads.info(), {thread_id = 1, group_name = 'tx',
                            groups = {{name = 'tx', size = 1}}})
        fails({type = 'ClientError', name = 'NO_SUCH_THREAD_GROUP',
               code = 302, thread_group = 'app',
               message = 'Thread group does not exist'},
              threads.eval, 'app', 'return 123')
        threads.cfg({groups = {{name = 'test1', size = 1},
                               {name = 'test2', size = 2}}})
        local want = {thread_id = 1, group_name = 'tx', groups = {
            {name = 'tx', size = 1}, {name = 'test1', size = 1},
            {name = 'test2', size = 2}}}
        eq(threads.info(), want)
        -- Every thread knows its place and the groups.
        local expr = 'return require("experimental.threads").info()'
        want.group_name, want.thread_id = 'test2', 1
        eq(threads.eval('test2', expr, {}, {target = 1}), {{want}})
        want.thread_id = 2
        eq(threads.eval('test2', expr, {}, {target = 2}), {{want}})
        want.group_name, want.thread_id = 'test1', 1
        eq(threads.eval('test1', expr), {{want}})
        print('ok')
        "#,
    );
}

#[test]
fn results_under_all_any_and_n() {
    check(
        "targets.lua",
        &["test1=3", "test2=2"],
        r#"
        local func_def = [[
            local threads = require('experimental.threads')
            threads.export('test_func_1', function()
                return threads.info().thread_id
            end)
            threads.export('echo', function(...) return ... end)
        ]]
        eq(threads.eval('test1', func_def), {{}, {}, {}})
        eq(threads.eval('test2', func_def), {{}, {}})
        local ret_all = threads.call('test1', 'test_func_1', {}, {target = 'all'})
        eq(ret_all, {{1}, {2}, {3}})
        for _ = 1, 20 do
            local ret_any = threads.call('test1', 'test_func_1', {}, {target = 'any'})
            eq(#ret_any, 1)
            assert(ret_any[1][1] >= 1 and ret_any[1][1] <= 3)
        end
        for n = 1, 3 do
            eq(threads.call('test1', 'test_func_1', {}, {target = n}), {{n}})
        end
        for n = 1, 2 do
            eq(threads.call('test2', 'test_func_1', {}, {target = n}), {{n}})
        end
        -- Default arguments, several values, tables.
        eq(threads.call('test2', 'echo'), {{}, {}})
        eq(threads.call('test2', 'echo', {1, 2, 3}), {{1, 2, 3}, {1, 2, 3}})
        eq(threads.call('test2', 'echo', {1, 2, 3}, {target = 'any'}), {{1, 2, 3}})
        eq(threads.call('test2', 'echo', {'s', {a = {1, 2}}, true}, {target = 2}),
           {{'s', {a = {1, 2}}, true}})
        -- Per-thread results differ.
        eq(threads.eval('test1', [[
            local id = require('experimental.threads').info().thread_id
            if id == 1 then return 1, 2, 3 elseif id == 3 then return {1, 2, 3} end
        ]]), {{1, 2, 3}, {}, {{1, 2, 3}}})
        -- The tx group is this thread: the call runs here.
        threads.export('here', function(x) return x, threads.info().group_name end)
        eq(threads.call('tx', 'here', {5}), {{5, 'tx'}})
        eq(threads.call('tx', 'here', {5}, {target = 'any'}), {{5, 'tx'}})
        eq(threads.eval('tx', 'return ...', {1, 2}), {{1, 2}})
        print('ok')
        "#,
    );
}

/// Issue 29: the arguments cross as `msgpack.encode(args)` would send
/// them, holes included (`unpack(args)` stopped at the first nil).
#[test]
fn arguments_after_a_nil_are_kept() {
    check(
        "holes.lua",
        &["w=1"],
        r#"
        local count = "return select('#', ...), ..."
        local ret = threads.eval('w', count, {1, nil, 3})
        eq(json.encode(ret), '[[3,1,null,3]]', 'on w')
        ret = threads.eval('tx', count, {1, nil, 3})
        eq(ret[1][1], 3, 'count on tx')
        eq(ret[1][4], 3, 'third on tx')
        threads.eval('w', [[
            require('experimental.threads').export('n', function(...)
                return select('#', ...)
            end)
        ]])
        eq(threads.call('w', 'n', {nil, nil, 'x'}), {{3}})
        eq(threads.call('w', 'n', {}), {{0}})
        illegal('threads.eval: arguments must be an array',
                threads.eval, 'w', 'return', {[100] = 1})
        print('ok')
        "#,
    );
}

#[test]
fn argument_checks_have_masters_messages() {
    check(
        "checks.lua",
        &["test1=1"],
        r#"
        for _, f in ipairs({threads.call, threads.eval}) do
            illegal('group name should be a string', f, 123)
            illegal('options should be a table', f, 'test1', 'x', {123}, 123)
            illegal("unexpected option 'foo'", f, 'test1', 'x', {123}, {foo = 'bar'})
            illegal("options parameter 'target' should be one of types: " ..
                    "string, number", f, 'test1', 'x', {123}, {target = {}})
            illegal("unexpected value for option parameter 'target': " ..
                    "got 'foo', expected 'any', 'all', or a number",
                    f, 'test1', 'x', {123}, {target = 'foo'})
            illegal("options parameter 'timeout' should be of type number",
                    f, 'test1', 'x', {}, {timeout = 'soon'})
        end
        illegal('function name should be a string', threads.call, 'test1', 123)
        illegal('function arguments should be a table', threads.call, 'test1', 'f', 123)
        illegal('expression should be a string', threads.eval, 'test1', 123)
        illegal('expression arguments should be a table',
                threads.eval, 'test1', 'return ...', 123)
        illegal('function name should be a string', threads.export, 123)
        illegal('function object should be a function', threads.export, 'f', 123)
        -- The error points at the caller's line.
        local err = illegal('group name should be a string', threads.call, 1)
        threads.export('test_func_1', function() end)
        err = fails({type = 'ClientError', name = 'FUNCTION_EXISTS', code = 52,
                     func = 'test_func_1',
                     message = "Function 'test_func_1' already exists"},
                    threads.export, 'test_func_1', function() end)
        print('ok')
        "#,
    );
}

#[test]
fn unknown_group_thread_and_function() {
    check(
        "unknown.lua",
        &["test1=3", "test2=2"],
        r#"
        for _, f in ipairs({threads.call, threads.eval}) do
            fails({type = 'ClientError', name = 'NO_SUCH_THREAD_GROUP'},
                  f, 'test3', 'return', {}, {target = 'all'})
            for _, p in ipairs({{'test1', -1}, {'test2', 0}, {'test1', 4},
                                {'test2', 3}, {'test1', 1.5}, {'tx', 2}}) do
                fails({type = 'ClientError', name = 'NO_SUCH_THREAD', code = 299,
                       thread_id = p[2], message = 'Thread does not exist'},
                      f, p[1], 'return', {}, {target = p[2]})
            end
        end
        fails({type = 'ClientError', name = 'NO_SUCH_FUNCTION', code = 51,
               func = 'test_func', message = "Function 'test_func' does not exist"},
              threads.call, 'test1', 'test_func', {}, {target = 'all'})
        fails({type = 'ClientError', name = 'NO_SUCH_FUNCTION'},
              threads.call, 'tx', 'test_func')
        -- A chunk that does not compile.
        local err = fails({type = 'LuajitError'}, threads.eval, 'test1', '123')
        assert(err.message:find("unexpected symbol near '123'"), err.message)
        err = fails({type = 'ClientError', name = 'PROC_LUA'}, threads.eval, 'tx', '123')
        assert(err.message:find("unexpected symbol near '123'"), err.message)
        print('ok')
        "#,
    );
}

#[test]
fn a_value_that_cannot_cross_is_refused() {
    check(
        "cross.lua",
        &["w=2"],
        r#"
        threads.eval('w', [[
            require('experimental.threads').export('echo', function(...) return ... end)
        ]])
        illegal('threads.call: argument 1 (a function) cannot be sent to another cord',
                threads.call, 'w', 'echo', {print})
        illegal('threads.call: argument 2 (a table holding a thread) cannot be ' ..
                'sent to another cord',
                threads.call, 'w', 'echo', {1, {coroutine.create(print)}})
        illegal('threads.eval: argument 1 (a userdata) cannot be sent to another cord',
                threads.eval, 'w', 'return ...', {io.stdout})
        if jit then
            local ffi = require('ffi')
            illegal('threads.call: argument 1 (a cdata) cannot be sent to another cord',
                    threads.call, 'w', 'echo', {ffi.cast('void *', 1)})
            -- (7LL would not compile on Lua 5.4.)
            eq(threads.call('w', 'echo', {ffi.new('int64_t', 7)}, {target = 1}), {{7}})
        end
        -- Results that cannot cross back.
        illegal('threads.eval: result 2 (a function) cannot be sent to another cord',
                threads.eval, 'w', 'return 1, print', {}, {target = 2})
        illegal('threads.eval: result 1 (a table holding a function) cannot be ' ..
                'sent to another cord',
                threads.eval, 'w', 'return {f = print}', {}, {target = 1})
        print('ok')
        "#,
    );
}

#[test]
fn a_workers_error_is_raised_again() {
    check(
        "errors.lua",
        &["test1=3"],
        r#"
        threads.eval('test1', [[
            local threads = require('experimental.threads')
            threads.export('fail', function()
                local id = threads.info().thread_id
                if id == 1 then
                    error({type = 'MyErrorType', name = 'MyError1', message = 'one'})
                elseif id == 2 then
                    error({type = 'MyErrorType', name = 'MyError2', message = 'two',
                           detail = {1, 2}})
                end
                return id
            end)
            threads.export('boom', function() error('foobar') end)
            threads.export('sleepy', function() require('fiber').sleep('x') end)
        ]])
        -- The last error of the threads that failed, with all its fields.
        local err = fails({type = 'MyErrorType', name = 'MyError2', message = 'two',
                           detail = {1, 2}},
                          threads.call, 'test1', 'fail', {}, {target = 'all'})
        eq(tostring(err), 'two')
        fails({name = 'MyError1'}, threads.call, 'test1', 'fail', {}, {target = 1})
        eq(threads.call('test1', 'fail', {}, {target = 3}), {{3}})
        -- A string error, as a LuajitError with its message.
        err = fails({type = 'LuajitError'}, threads.call, 'test1', 'boom', {}, {target = 2})
        assert(err.message:find('foobar'), err.message)
        -- A module's error object keeps its type.
        err = fails({type = 'IllegalParams'}, threads.call, 'test1', 'sleepy',
                    {}, {target = 1})
        -- The tx group: the same, run here.
        threads.export('boom', function() error('foobar') end)
        err = fails({type = 'ClientError', name = 'PROC_LUA'}, threads.call, 'tx', 'boom')
        assert(err.message:find('foobar'), err.message)
        print('ok')
        "#,
    );
}

#[test]
fn a_call_blocks_only_its_fiber() {
    check(
        "blocks.lua",
        &["w=1"],
        r#"
        local log = {}
        local caller = fiber.create(function()
            table.insert(log, 'call')
            local r = threads.eval('w', 'require("fiber").sleep(0.05) return 42')
            table.insert(log, 'answer ' .. r[1][1])
        end)
        caller:set_joinable(true)
        -- The caller is parked: this fiber runs, and so does another.
        table.insert(log, 'main')
        fiber.create(function() table.insert(log, 'other') end)
        assert(caller:join())
        eq(log, {'call', 'main', 'other', 'answer 42'})
        -- 100 fibers waiting at once on one worker.
        local ch = fiber.channel(100)
        for i = 1, 100 do
            fiber.create(function()
                local r = threads.eval('w', 'require("fiber").sleep(0.01) return ...', {i})
                ch:put(r[1][1])
            end)
        end
        local sum = 0
        for _ = 1, 100 do sum = sum + ch:get() end
        eq(sum, 5050)
        print('ok')
        "#,
    );
}

#[test]
fn a_busy_thread_does_not_get_any_calls() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (flag, started) = (
        dir.join("threads-busy-flag"),
        dir.join("threads-busy-started"),
    );
    let _ = std::fs::remove_file(&flag);
    let _ = std::fs::remove_file(&started);
    let code = format!(
        r#"
        local flag, started = {flag:?}, {started:?}
        threads.eval('w', [[
            local threads = require('experimental.threads')
            threads.export('spin', function(flag, started)
                io.open(started, 'w'):close()
                -- A loop that never yields, until the file exists.
                local n = 0
                while true do
                    local f = io.open(flag)
                    if f then f:close() break end
                    n = n + 1
                end
                return threads.info().thread_id, n
            end)
            threads.export('whoami', function() return threads.info().thread_id end)
        ]])
        local spinner = fiber.create(function()
            return threads.call('w', 'spin', {{flag, started}}, {{target = 1}})
        end)
        spinner:set_joinable(true)
        -- Calls sent before the loop began could have been taken with it.
        for _ = 1, 10000 do
            local f = io.open(started)
            if f then f:close() break end
            fiber.sleep(0.001)
        end
        -- Thread 1 is stuck in its loop: every 'any' call goes to thread 2.
        for _ = 1, 100 do
            eq(threads.call('w', 'whoami', {{}}, {{target = 'any'}}), {{{{2}}}})
        end
        eq(spinner:status(), 'suspended')
        io.open(flag, 'w'):close()
        local ok, r = spinner:join()
        assert(ok, r)
        eq(r[1][1], 1)
        os.remove(flag)
        os.remove(started)
        print('ok')
        "#
    );
    check("busy.lua", &["w=2"], &code);
}

#[test]
fn timeouts_and_calls_between_groups() {
    check(
        "timeout.lua",
        &["a=1", "b=2"],
        r#"
        fails({type = 'TimedOut', message = 'threads.eval: timed out'},
              threads.eval, 'a', 'require("fiber").sleep(10)', {}, {timeout = 0.01})
        eq(threads.eval('a', 'return 1', {}, {timeout = 10}), {{1}})
        -- A thread of one group calls another group.
        threads.eval('b', [[
            require('experimental.threads').export('id', function()
                return require('experimental.threads').info().thread_id
            end)
        ]])
        eq(threads.eval('a', [[
            local threads = require('experimental.threads')
            local r = threads.call('b', 'id')
            return r[1][1], r[2][1], threads.info().group_name
        ]]), {{1, 2, 'a'}})
        -- The main thread takes no requests from the others.
        local err = fails({type = 'IllegalParams'}, threads.eval, 'a', [[
            return require('experimental.threads').eval('tx', 'return 1')
        ]])
        assert(err.message:find('the tx group cannot be called'), err.message)
        print('ok')
        "#,
    );
}

#[test]
fn cfg_checks_and_runs_once() {
    check(
        "cfg.lua",
        &[],
        r#"
        illegal('threads.cfg: the config should be a table', threads.cfg, 1)
        illegal('Thread group name "tx" is reserved', threads.cfg,
                {groups = {{name = 'tx', size = 1}}})
        illegal('Duplicate thread group name: "a"', threads.cfg,
                {groups = {{name = 'a', size = 1}, {name = 'a', size = 1}}})
        illegal('Thread group "a" has invalid size: must be > 0', threads.cfg,
                {groups = {{name = 'a', size = 0}}})
        illegal('threads.cfg: groups[1] should be {name = string, size = integer}',
                threads.cfg, {groups = {{name = 'a'}}})
        illegal('threads.cfg: at most 1000 threads in all', threads.cfg,
                {groups = {{name = 'a', size = 1001}}})
        threads.cfg({groups = {{name = 'a', size = 1}}})
        illegal('threads.cfg: the thread groups are configured already',
                threads.cfg, {groups = {{name = 'b', size = 1}}})
        local err = fails({type = 'IllegalParams'}, threads.eval, 'a', [[
            require('experimental.threads').cfg({groups = {}})
        ]])
        assert(err.message:find('configured already') or
               err.message:find('only the main thread'), err.message)
        print('ok')
        "#,
    );
}

#[test]
fn the_threads_flag() {
    let path = script(
        "flag.lua",
        "local i = threads.info() print(#i.groups, i.groups[2].name, i.groups[3].size)",
    );
    let (status, stdout, stderr) = run(&["--threads", "w=2", "--threads", "x=3", &path]);
    assert_eq!((status, stdout.as_str()), (0, "3\tw\t3\n"), "{stderr}");
    let (status, _, stderr) = run(&["--threads", "w", &path]);
    assert_eq!(status, 2);
    assert!(stderr.contains("expected NAME=SIZE"), "{stderr}");
}

/// Issue 29, item 7: a `--threads` value that `threads.cfg` refuses (size
/// 0 or negative, a reserved or duplicate name, too many threads) printed
/// an internal traceback with status 1, and `=2` (no name) was accepted.
/// Each is a usage error of one line, status 2, and nothing runs.
#[test]
fn bad_threads_flags_are_usage_errors() {
    let path = script("flag_bad.lua", "print('ran')");
    for (args, says) in [
        (&["w=0"][..], "must be at least 1"),
        (&["w=-1"], "must be at least 1"),
        (&["=2"], "the group name is empty"),
        (&["tx=1"], r#"Thread group name "tx" is reserved"#),
        (&["w=1", "w=2"], r#"Duplicate thread group name: "w""#),
        (&["w=600", "x=600"], "at most 1000 threads in all"),
    ] {
        let mut argv: Vec<&str> = args.iter().flat_map(|g| ["--threads", g]).collect();
        argv.push(&path);
        let (status, stdout, stderr) = run(&argv);
        assert_eq!(status, 2, "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("traceback"), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(
            stderr
                .lines()
                .next()
                .is_some_and(|l| l.starts_with("error: ")),
            "{stderr}"
        );
    }
}

#[test]
fn the_example_script_runs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/threads.lua");
    let (status, stdout, stderr) = run(&[path]);
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.ends_with("all answers checked\n"), "{stdout}");
}

/// Issue 29, item 6: a sleeping fiber or a server on a thread group's
/// worker died as soon as the main script ended (exit 0, no message). The
/// process now stays alive while fibers on any cord are ready, sleep or
/// wait on I/O, as for the main cord's own; an exit on an error says which
/// groups' work it drops.
#[test]
fn work_on_thread_groups_keeps_the_process_alive() {
    // A fiber that sleeps on a worker.
    let path = script(
        "alive_sleep.lua",
        r#"
        threads.eval('w', [[
            local fiber = require('fiber')
            fiber.create(function()
                fiber.sleep(0.2)
                io.stderr:write('worker ' .. require('experimental.threads').info().thread_id .. ' done\n')
            end)
        ]])
        io.stderr:write('main done\n')
        "#,
    );
    let (status, stdout, stderr) = run(&["--threads", "w=2", &path]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    let mut lines: Vec<_> = stderr.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["main done", "worker 1 done", "worker 2 done"],
        "{stderr}"
    );

    // A server on a worker serves until a client tells it to stop.
    let path = script(
        "alive_server.lua",
        r#"
        local port = threads.eval('w', [[
            local socket = require('socket')
            SRV = socket.tcp_server('127.0.0.1', 0, function(s)
                local line = s:read('\n', 10)
                s:write('echo ' .. line)
                if line == 'stop\n' then SRV:close() end
            end)
            return SRV:name().port
        ]], {}, {target = 1})[1][1]
        io.stdout:write(port, '\n')
        io.stdout:flush()
        "#,
    );
    let mut child = Command::new(EXE)
        .args(["--threads", "w=1", &path])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let port: u16 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("port: {line:?}"));
    let ask = |what: &str| {
        use std::io::{BufRead, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        c.write_all(what.as_bytes()).unwrap();
        let mut answer = String::new();
        std::io::BufReader::new(c).read_line(&mut answer).unwrap();
        answer
    };
    // The main script is done by now: the worker still serves.
    assert_eq!(ask("hello\n"), "echo hello\n");
    assert_eq!(ask("again\n"), "echo again\n");
    assert_eq!(ask("stop\n"), "echo stop\n");
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {stderr}");

    // An error in the main script ends the process: the worker's sleeping
    // fiber is dropped, and the exit says so.
    let path = script(
        "alive_error.lua",
        r#"
        threads.eval('w', "require('fiber').create(function() require('fiber').sleep(60) end)")
        error('main failed')
        "#,
    );
    let (status, _, stderr) = run(&["--threads", "w=1", &path]);
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("main failed"), "{stderr}");
    assert!(
        stderr.contains("exiting drops the work of thread groups w"),
        "{stderr}"
    );
}

/// Issue 29: a negative timeout is refused saying what is wrong with it
/// (it said "must be a number"), as Tarantool words timeouts.
#[test]
fn a_negative_timeout_says_so() {
    check(
        "neg_timeout.lua",
        &["w=1"],
        r#"
        illegal('threads.eval: timeout must be a number greater than or equal to 0',
                threads.eval, 'w', 'return 1', {}, {timeout = -1})
        eq(threads.eval('w', 'return 1', {}, {timeout = 0.5}), {{1}})
        print('ok')
        "#,
    );
}
