//! The Lua `popen` module on both engines (Tarantool's own popen tests
//! need the FFI, so Lua 5.4 runs only these): the other fibers run while
//! one waits on a pipe or for the child, timeouts, cancels, and no zombie
//! is left by `wait`, `close` or the GC of a handle.

#[path = "support/lua_run.rs"]
mod lua_run;

const PRELUDE: &str = r#"
local popen = require('popen')
local fiber = require('fiber')
-- The state letter of /proc/PID/stat ('Z' for a zombie), nil once the
-- process is reaped.
local function proc_state(pid)
    local f = io.open('/proc/' .. pid .. '/stat')
    if f == nil then return nil end
    local line = f:read('*l') or ''
    f:close()
    return line:match('^%d+ %b() (%a)')
end
-- Waits (at most 10 s, in 10 ms steps) until the process is reaped.
local function reaped(pid)
    for _ = 1, 1000 do
        if proc_state(pid) == nil then return true end
        fiber.sleep(0.01)
    end
    return false
end
"#;

fn run(code: &str) {
    lua_run::run_lua("lua_popen", &[PRELUDE, code]);
}

#[test]
fn a_read_parks_only_the_calling_fiber() {
    run(r#"
        local ph = popen.new({'/bin/cat'}, {stdin = popen.opts.PIPE,
                                            stdout = popen.opts.PIPE})
        local ticks, got = 0, nil
        local reader = fiber.new(function() got = ph:read() end)
        reader:set_joinable(true)
        -- The reader waits on the empty pipe; this fiber goes on.
        for _ = 1, 5 do ticks = ticks + 1; fiber.yield() end
        eq(got, nil, 'nothing read yet')
        eq(ticks, 5, 'the writer ran meanwhile')
        assert(ph:write('hello\n'))
        assert(reader:join())
        eq(got, 'hello\n', 'read')
        assert(ph:shutdown({stdin = true}))
        eq(ph:read(), '', 'end of stream once cat ends')
        local st = ph:wait()
        eq(st.state, popen.state.EXITED, 'state')
        eq(st.exit_code, 0, 'exit code')
        eq(ph.pid, nil, 'no pid once reaped')
        assert(ph:close())
    "#);
}

#[test]
fn timeouts_return_timed_out() {
    run(r#"
        local ph = popen.shell('sleep 30', 'r')
        local res, err = ph:read({timeout = 0.01})
        eq(res, nil, 'read')
        eq(err.type, 'TimedOut', 'read error')
        res, err = ph:wait({timeout = 0.01})
        eq(res, nil, 'wait')
        eq(err.type, 'TimedOut', 'wait error')
        eq(ph.status.state, 'alive', 'still alive')
        local pid = ph.pid
        assert(ph:close())
        assert(reaped(pid), 'the killed child is reaped')
    "#);
}

#[test]
fn kill_then_wait_gives_the_signal_and_no_zombie() {
    run(r#"
        local ph = popen.shell('while true; do sleep 10; done', 'r')
        local pid = ph.pid
        assert(ph:kill())
        local st = ph:wait()
        eq(st.state, 'signaled', 'state')
        eq(st.signo, popen.signal.SIGKILL, 'signo')
        eq(st.signame, 'SIGKILL', 'signame')
        eq(proc_state(pid), nil, 'reaped by wait')
        local ok, err = ph:signal(popen.signal.SIGTERM)
        eq(ok, nil, 'signal to a reaped child')
        eq(err.type, 'SystemError', 'its error')
        assert(ph:close())
    "#);
}

#[test]
fn a_collected_handle_kills_and_reaps_its_child() {
    run(r#"
        local ph = popen.new({'/bin/sleep', '30'})
        local pid = ph.pid
        eq(proc_state(pid) ~= nil, true, 'running')
        ph = nil -- luacheck: no unused
        collectgarbage()
        collectgarbage()
        assert(reaped(pid), 'the child of a collected handle is reaped')
    "#);
}

#[test]
fn a_cancelled_wait_raises_and_a_close_wakes_waiters() {
    run(r#"
        local ph = popen.new({'/bin/sleep', '30'})
        local ok, err
        local f = fiber.new(function() ok, err = pcall(ph.wait, ph) end)
        f:set_joinable(true)
        fiber.yield()
        f:cancel()
        f:join()
        eq(ok, false, 'cancelled wait')
        eq(err.type, 'FiberIsCancelled', 'its error')
        local res, werr
        f = fiber.new(function() res, werr = ph:wait() end)
        f:set_joinable(true)
        fiber.yield()
        local pid = ph.pid
        assert(ph:close())
        f:join()
        eq(res, nil, 'wait on a closed handle')
        eq(werr.type, 'ChannelIsClosed', 'its error')
        assert(reaped(pid), 'reaped after close')
    "#);
}

#[test]
fn argument_errors_are_masters() {
    run(r#"
        local ok, err = pcall(popen.new, 'ls')
        eq(ok, false, 'new')
        eq(err.message, 'popen.new: wrong parameter "argv": expected table, got string', 'argv')
        ok, err = pcall(popen.shell, 'true', 'x')
        eq(err.message, "popen.shell: wrong parameter \"mode\": expected 'r', 'w', 'R' or its combination, got x", 'mode')
        ok, err = pcall(popen.new, {'/bin/true'}, {group_signal = true})
        eq(err.message, 'popen: group signal without setting sid', 'group_signal')
        local ph = popen.new({'/bin/echo', 'a b', ''}, {stdout = popen.opts.DEVNULL})
        eq(ph.command, "/bin/echo 'a b' ''", 'command')
        ok, err = pcall(ph.read, ph)
        eq(err.message, 'popen: handle does not support the requested IO operation', 'read unpiped')
        ph:wait()
        ph:close()
        ok, err = pcall(ph.wait, ph)
        eq(err.message, 'popen: attempt to operate on a closed handle', 'closed')
        local none = popen.new({'/nonexistent/program'})
        local _, e = popen.new({'/nonexistent/program'})
        eq(none, nil, 'no such program')
        eq(e.type, 'SystemError', 'its error')
    "#);
}

#[test]
fn env_and_a_large_write_through_a_pipe() {
    run(r#"
        local ph = popen.new({'/bin/sh', '-c', 'printf "%s" "$FOO"; cat >/dev/null'},
            {env = {FOO = 'bar'}, stdin = popen.opts.PIPE, stdout = popen.opts.PIPE})
        eq(ph:read(), 'bar', 'env')
        -- More than a pipe holds: the write parks until cat drains it.
        assert(ph:write(string.rep('x', 1024 * 1024)))
        ph:shutdown({stdin = true})
        eq(ph:wait().exit_code, 0, 'exit code')
        ph:close()
    "#);
}
