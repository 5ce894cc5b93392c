//! The `fiber` module's semantics, Tarantool master's: creation order,
//! join results and timeouts, ids, cancel, wakeup and names.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    let before = luafiber::fiber::stats().fibers;
    if let Err(e) = rt.run_chunk(
        &format!("local fiber = require('fiber')\n{code}"),
        "semantics",
    ) {
        panic!("{e}");
    }
    assert_eq!(luafiber::fiber::stats().fibers, before, "every fiber ended");
}

#[test]
fn create_runs_child_at_once_until_its_first_yield() {
    run(r#"
        local log = {}
        local function note(s) log[#log + 1] = s end
        local f = fiber.create(function(a, b)
            note('child start ' .. a .. b)
            fiber.yield()
            note('child resumed')
        end, 'x', 'y')
        note('parent after create')
        assert(f:status() == 'suspended')
        fiber.yield()
        note('parent after yield')
        assert(table.concat(log, '|') ==
            'child start xy|parent after create|child resumed|parent after yield', table.concat(log, '|'))
        -- A child that ends without yielding is dead when create returns.
        local g = fiber.create(function() note('quick') end)
        assert(log[#log] == 'quick' and g:status() == 'dead')
        -- Arguments arrive exactly, nils included.
        local n, third
        fiber.create(function(...) n = select('#', ...); third = select(3, ...) end, 1, nil, 3, nil)
        assert(n == 4 and third == 3)
    "#);
}

#[test]
fn new_queues_fibers_in_fifo_order() {
    run(r#"
        local log = {}
        for i = 1, 5 do
            fiber.new(function()
                log[#log + 1] = 'a' .. i
                fiber.yield()
                log[#log + 1] = 'b' .. i
            end)
        end
        log[#log + 1] = 'parent'
        fiber.sleep(0.001)
        assert(table.concat(log, ' ') == 'parent a1 a2 a3 a4 a5 b1 b2 b3 b4 b5', table.concat(log, ' '))
        -- A new fiber is not running yet: it is queued.
        local started = false
        local f = fiber.new(function() started = true end)
        assert(not started and f:status() == 'suspended')
        fiber.yield()
        assert(started and f:status() == 'dead')
    "#);
}

#[test]
fn join_returns_all_results_with_nils_kept() {
    run(r#"
        local function pack(...) return {n = select('#', ...), ...} end
        local f = fiber.new(function(a) fiber.sleep(0.001); return a, nil, 'three', nil end, 'one')
        f:set_joinable(true)
        local p = pack(f:join())
        assert(p.n == 5 and p[1] == true and p[2] == 'one' and p[3] == nil and p[4] == 'three' and p[5] == nil,
            'got ' .. p.n .. ' values')
        -- A fiber returning one nil joins as `true, nil`.
        local g = fiber.new(function() return nil end)
        g:set_joinable(true)
        local q = pack(g:join())
        assert(q.n == 2 and q[1] == true and q[2] == nil, 'got ' .. q.n .. ' values')
        -- A fiber returning nothing joins as just `true`.
        local e = fiber.new(function() end)
        e:set_joinable(true)
        local r = pack(e:join())
        assert(r.n == 1 and r[1] == true, 'got ' .. r.n .. ' values')
        -- Many results.
        local unpack = unpack or table.unpack
        local m = fiber.create(function()
            fiber.yield()
            local t = {}
            for i = 1, 200 do t[i] = i end
            return unpack(t)
        end)
        m:set_joinable(true)
        local s = pack(m:join())
        assert(s.n == 201 and s[201] == 200)
    "#);
}

#[test]
fn join_returns_the_same_error_value() {
    run(r#"
        local err = {code = 7}
        local f = fiber.new(function() fiber.yield(); error(err) end)
        f:set_joinable(true)
        local ok, got = f:join()
        assert(ok == false and rawequal(got, err), 'the very error table comes back')
        local g = fiber.create(function() fiber.self():set_joinable(true); error('plain', 0) end)
        local ok2, msg = g:join()
        assert(ok2 == false and msg == 'plain', tostring(msg))
        -- A finished joinable fiber is 'suspended' until joined, then 'dead'.
        assert(g:status() == 'dead')
        -- A fiber can be joined once.
        local ok3, again = pcall(g.join, g)
        assert(not ok3, 'a second join succeeded')
    "#);
}

#[test]
fn join_timeout_gives_timed_out_and_keeps_the_fiber_joinable() {
    run(r#"
        local f = fiber.new(function() fiber.sleep(0.5); return 'late' end)
        f:set_joinable(true)
        local t0 = fiber.clock()
        local ok, err = f:join(0.005)
        local waited = fiber.clock() - t0
        assert(ok == false and type(err) == 'table' and err.type == 'TimedOut', tostring(err))
        assert(waited >= 0.004, 'waited ' .. waited)
        assert(f:status() == 'suspended')
        local ok2, v = f:join()
        assert(ok2 == true and v == 'late', tostring(v))
        -- A timeout of 0 on a fiber still running times out at once.
        local g = fiber.new(function() fiber.sleep(0.01) end)
        g:set_joinable(true)
        assert(select(2, g:join(0)).type == 'TimedOut')
        assert(g:join(1) == true)
    "#);
}

#[test]
fn join_misuse_errors() {
    run(r#"
        local self_join
        local s = fiber.create(function()
            local me = fiber.self()
            me:set_joinable(true)
            self_join = {pcall(me.join, me)}
            me:set_joinable(false)
        end)
        assert(self_join[1] == false and tostring(self_join[2]):find('cannot join itself'), tostring(self_join[2]))
        assert(s:status() == 'dead')
        local d = fiber.new(function() fiber.sleep(0.01) end)
        local ok2, err2 = pcall(d.join, d)
        assert(not ok2 and tostring(err2):find('not joinable'), tostring(err2))
        local j = fiber.new(function() fiber.sleep(0.02); return 1 end)
        j:set_joinable(true)
        local first
        fiber.create(function() first = {j:join()} end)
        local ok3, err3 = pcall(j.join, j)
        assert(not ok3 and tostring(err3):find('concurrent'), tostring(err3))
        local deadline = fiber.clock() + 30
        while first == nil and fiber.clock() < deadline do fiber.sleep(0.001) end
        assert(first[1] == true and first[2] == 1)
    "#);
}

#[test]
fn ids_start_above_100_and_grow() {
    run(r#"
        local me = fiber.self():id()
        assert(me > 100, 'main fiber id ' .. me)
        assert(fiber.id() == me)
        local last = me
        for i = 1, 1000 do
            local f = fiber.create(function() end)
            local id = f:id()
            assert(id > last, ('id %d after %d'):format(id, last))
            assert(f:status() == 'dead' and fiber.find(id) == nil)
            last = id
        end
        local f = fiber.new(function() fiber.sleep(0.001) end)
        assert(f:id() > last and fiber.find(f:id()) == f)
        assert(fiber.self() == fiber.self() and fiber.find(me) == fiber.self())
    "#);
}

#[test]
fn cancel_is_seen_at_sleep_as_fiber_is_cancelled() {
    run(r#"
        local seen, after
        local f = fiber.new(function()
            local t0 = fiber.clock()
            local ok, err = pcall(fiber.sleep, 10)
            seen = {ok = ok, err = err, waited = fiber.clock() - t0}
            -- The flag is sticky.
            local ok2, err2 = pcall(fiber.testcancel)
            after = {ok = ok2, err = err2}
            fiber.sleep(10)
            error('unreachable')
        end)
        fiber.yield()
        assert(f:status() == 'suspended')
        f:cancel()
        fiber.sleep(0.01)
        assert(seen and seen.ok == false, 'sleep was not interrupted')
        assert(type(seen.err) == 'table' and seen.err.type == 'FiberIsCancelled', tostring(seen.err))
        assert(tostring(seen.err) == seen.err.message)
        assert(seen.waited < 10, 'the sleep ran out, cancel did not wake it: ' .. seen.waited)
        assert(after.ok == false and after.err.type == 'FiberIsCancelled')
        assert(f:status() == 'dead')
        local ok, err = pcall(fiber.cancel, f)
        assert(not ok and tostring(err):find('dead'), tostring(err))
        -- Cancel also interrupts yield and a sleep(0) loop.
        local spins = 0
        local g = fiber.new(function() for _ = 1, 1e7 do spins = spins + 1; fiber.yield() end end)
        fiber.yield()
        g:cancel()
        fiber.yield(); fiber.yield()
        assert(g:status() == 'dead' and spins >= 1)
    "#);
}

#[test]
fn sleeping_fiber_is_woken_by_wakeup() {
    run(r#"
        local woke
        local f = fiber.new(function()
            local t0 = fiber.clock()
            fiber.sleep(10)
            woke = fiber.clock() - t0
        end)
        fiber.sleep(0.005)
        assert(woke == nil)
        f:wakeup()
        assert(woke == nil, 'wakeup only makes the fiber ready')
        fiber.yield()
        assert(woke and woke < 10, 'the sleep ran out, wakeup did not end it: ' .. tostring(woke))
        assert(f:status() == 'dead')
        local ok, err = pcall(fiber.wakeup, f)
        assert(not ok and tostring(err):find('the fiber is dead'), tostring(err))
        -- Waking oneself is a no-op; waking by id works.
        fiber.wakeup(fiber.self())
        local g_done = false
        local g = fiber.new(function() fiber.sleep(10); g_done = true end)
        fiber.yield()
        fiber.wakeup(g:id())
        fiber.yield()
        assert(g_done)
    "#);
}

#[test]
fn names_set_get_and_truncate() {
    run(r#"
        assert(fiber.name() == 'semantics', fiber.name())
        fiber.name('main one')
        assert(fiber.name() == 'main one' and fiber.self():name() == 'main one')
        local f = fiber.new(function() fiber.sleep(0.01) end)
        f:name('worker')
        assert(f:name() == 'worker')
        fiber.name(f, 'renamed')
        assert(fiber.name(f) == 'renamed')
        local long = string.rep('n', 300)
        local ok, err = pcall(fiber.name, long)
        assert(not ok and tostring(err) == 'Fiber name is too long', tostring(err))
        assert(fiber.name() == 'main one', 'a failed rename keeps the name')
        fiber.name(long, {truncate = true})
        assert(fiber.name() == string.rep('n', 255), #fiber.name())
        f:name(string.rep('m', 255))
        assert(#f:name() == 255)
        assert(not pcall(f.name, f, string.rep('m', 256)))
        local deadline = fiber.clock() + 30
        while f:status() ~= 'dead' and fiber.clock() < deadline do fiber.sleep(0.001) end
        local ok2, err2 = pcall(f.name, f)
        assert(not ok2 and tostring(err2):find('dead'), tostring(err2))
    "#);
}

/// Issue 13, item 4: a name is the bytes given, UTF-8 or not, in `name`,
/// `f:name`, `fiber.info` and `f:info`; 255 of them fit; `truncate` cuts by
/// bytes; a NUL ends it (Tarantool takes a C string).
#[test]
fn fiber_names_are_bytes() {
    run(r#"
        fiber.name('\255\254abc')
        assert(fiber.name() == '\255\254abc', (fiber.name():gsub('.', function(c) return ('%02x'):format(c:byte()) end)))
        local long = string.rep('\255', 255)
        fiber.name(long)
        assert(fiber.name() == long, #fiber.name())
        local ok, err = pcall(fiber.name, long .. 'x')
        assert(not ok and tostring(err) == 'Fiber name is too long', tostring(err))
        fiber.name(long .. 'xyz', {truncate = true})
        assert(fiber.name() == long)
        fiber.name(string.rep('a', 254) .. '\195\169', {truncate = true})
        assert(fiber.name() == string.rep('a', 254) .. '\195', #fiber.name())
        fiber.name('ab\0cd')
        assert(fiber.name() == 'ab', fiber.name())
        local f = fiber.new(function() fiber.sleep(10) end)
        f:name('\1\2\255')
        assert(f:name() == '\1\2\255' and fiber.name(f) == '\1\2\255')
        assert(fiber.info()[f:id()].name == '\1\2\255')
        assert(f:info().name == '\1\2\255')
        f:cancel()
    "#);
}

/// Issue 13, item 7: a fiber that ended and waits for its join keeps its
/// name (read and set), takes `set_joinable` and `wakeup` (a no-op), until
/// the join; `set_joinable(false)` frees it. Its storage raises, as in
/// Tarantool master (released when its function ended: conformance B11).
#[test]
fn dead_unjoined_fiber_keeps_name_joinable_and_wakeup() {
    run(r#"
        -- A fiber that has ended and waits for its join (its status says
        -- "suspended" then, as in Tarantool).
        local function ended(fn)
            local returned = false
            local f = fiber.new(function() local r = fn() returned = true return r end)
            f:set_joinable(true)
            while not returned do fiber.sleep(0) end
            fiber.sleep(0)
            return f
        end
        local f = ended(function() return 'result' end)
        assert(f:name() == 'lua' and fiber.name(f) == 'lua', tostring(f:name()))
        f:name('after its end')
        assert(f:name() == 'after its end')
        f:wakeup()
        fiber.wakeup(f:id())
        f:set_joinable(true)
        local ok, v = f:join()
        assert(ok and v == 'result', tostring(v))
        for _, op in ipairs({f.name, f.wakeup, function() return f.storage end}) do
            local ok2, err = pcall(op, f)
            assert(not ok2 and tostring(err) == 'the fiber is dead', tostring(err))
        end
        local g = ended(function() return 'dropped' end)
        local sok = pcall(function() return g.storage end)
        assert(not sok, 'the storage of an ended fiber')
        g:set_joinable(false)
        local jok, jerr = pcall(g.join, g)
        assert(not jok and tostring(jerr) == 'the fiber is dead', tostring(jerr))
        assert(g:status() == 'dead' and not pcall(g.name, g))
    "#);
}

#[test]
fn cancel_unwinds_through_c_callbacks() {
    run(r#"
        local where
        local f = fiber.new(function()
            local ok, err = pcall(function()
                local arr = {3, 1, 2}
                ('ab'):gsub('%a', function()
                    table.sort(arr, function(a, b)
                        local _ = setmetatable({}, {__index = function() fiber.sleep(10) end}).x
                        return a < b
                    end)
                end)
            end)
            where = {ok = ok, err = err}
            -- The flag is sticky: the next cancellation point raises again.
            local ok2, err2 = pcall(fiber.yield)
            where.again = err2
            return 'unreachable'
        end)
        f:set_joinable(true)
        fiber.yield()
        f:cancel()
        local ok, err = f:join()
        assert(where and where.ok == false, 'the cancel did not unwind the callbacks')
        assert(where.err.type == 'FiberIsCancelled', tostring(where.err))
        assert(where.again.type == 'FiberIsCancelled', tostring(where.again))
        -- The fiber returned normally after catching both errors.
        assert(ok == true and err == 'unreachable')
    "#);
}

#[test]
fn create_from_inside_a_metamethod_returns_to_it() {
    run(r#"
        local log = {}
        local t = setmetatable({}, {__index = function(_, k)
            fiber.create(function()
                log[#log + 1] = 'child ' .. k
                fiber.yield()
                log[#log + 1] = 'child resumed ' .. k
            end)
            log[#log + 1] = 'index ' .. k
            return k
        end})
        local arr = {t.b, t.a}
        table.sort(arr, function(x, y)
            fiber.create(function() log[#log + 1] = 'cmp child' end)
            return x < y
        end)
        assert(arr[1] == 'a' and arr[2] == 'b')
        assert(log[1] == 'child b' and log[2] == 'index b' and log[3] == 'child a' and log[4] == 'index a',
            table.concat(log, '|'))
        fiber.yield()
        assert(log[#log] == 'child resumed a' and log[#log - 1] == 'child resumed b', table.concat(log, '|'))
    "#);
}

#[cfg(not(feature = "lua54"))]
#[test]
fn recycled_thread_has_fresh_globals() {
    // On LuaJIT a thread has its own globals table (setfenv(0, ...)); a
    // pooled thread must not hand a fiber's sandbox to the next fiber.
    run(r#"
        marker = 'global'
        for i = 1, 50 do
            fiber.create(function()
                setfenv(0, setmetatable({marker = 'sandbox'}, {__index = _G}))
            end)
        end
        local seen = {}
        for i = 1, 200 do
            fiber.create(function()
                seen[#seen + 1] = loadstring('return marker')()
            end)
        end
        for i = 1, 200 do
            assert(seen[i] == 'global', 'fiber ' .. i .. ' saw ' .. tostring(seen[i]))
        end
    "#);
}

#[test]
fn loop_clocks_stay_still_until_the_fiber_yields() {
    run(r#"
        local c0, t0 = fiber.clock(), fiber.time()
        local c64, t64 = fiber.clock64(), fiber.time64()
        local x = 0
        for i = 1, 3e6 do x = x + i end
        assert(fiber.clock() == c0 and fiber.time() == t0, 'the loop time moved without a yield')
        assert(fiber.clock64() == c64 and fiber.time64() == t64)
        assert(math.abs(tonumber(c64) / 1e6 - c0) < 1e-3 and math.abs(tonumber(t64) / 1e6 - t0) < 1e-3)
        fiber.sleep(0.01)
        assert(fiber.clock() - c0 >= 0.009, 'the loop time moved on after a sleep')
        assert(fiber.time() > t0 and fiber.clock64() > c64)
        -- a child fiber that runs at once is a switch for its creator too
        local c1 = fiber.clock()
        fiber.create(function() local y = 0 for i = 1, 1e6 do y = y + i end end)
        assert(fiber.clock() >= c1)
    "#);
}
