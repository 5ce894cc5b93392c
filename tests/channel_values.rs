//! Values through `fiber.channel` on both paths: the Lua wrappers' fast path
//! (a value slot handed over without blocking) and the C methods (blocking,
//! closed, full, and more values in flight than the fast slots), plus the
//! wrappers' handling of wrong arguments.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(
        &format!("local fiber = require('fiber')\n{code}"),
        "channel_values",
    ) {
        panic!("{e}");
    }
}

#[test]
fn every_kind_of_value_passes_unchanged_and_in_order() {
    run(r#"
        local t, f = {}, function() end
        local vals = {1, 'two', t, f, false, 2.5, true}
        local ch = fiber.channel(#vals)
        for _, v in ipairs(vals) do assert(ch:put(v)) end
        for i, v in ipairs(vals) do assert(ch:get() == v, i) end
        -- nil goes through like any value
        assert(ch:put(nil) == true)
        assert(ch:count() == 1)
        assert(ch:get(0) == nil and ch:count() == 0)
    "#);
}

#[test]
fn more_values_in_flight_than_fast_slots_are_kept() {
    run(r#"
        local n = 5000
        local chs = {}
        for i = 1, 4 do chs[i] = fiber.channel(n) end
        for i = 1, n do
            for c = 1, 4 do assert(chs[c]:put({i, c})) end
        end
        collectgarbage()
        for i = 1, n do
            for c = 1, 4 do
                local v = chs[c]:get(0)
                assert(v[1] == i and v[2] == c, i)
            end
        end
        assert(chs[1]:get(0) == nil)
    "#);
}

#[test]
fn values_handed_to_blocked_readers_and_from_blocked_writers() {
    run(r#"
        local ch = fiber.channel(0)
        local got = {}
        local r = fiber.create(function()
            for i = 1, 3 do got[i] = ch:get() end
        end)
        for i = 1, 3 do assert(ch:put({i})) end
        fiber.yield()
        assert(got[1][1] == 1 and got[2][1] == 2 and got[3][1] == 3)
        -- a blocked writer's value is taken by a later get
        fiber.create(function() ch:put('late') end)
        assert(ch:get(0) == 'late')
    "#);
}

#[test]
fn a_collected_channel_frees_its_values() {
    run(r#"
        local weak = setmetatable({}, {__mode = 'v'})
        do
            local ch = fiber.channel(10)
            local v = {}
            weak[1] = v
            ch:put(v)
        end
        collectgarbage(); collectgarbage()
        assert(weak[1] == nil, 'the buffered value was freed with its channel')
        -- slots freed by the collected channel are reused correctly
        local ch = fiber.channel(2000)
        for i = 1, 2000 do ch:put(i) end
        for i = 1, 2000 do assert(ch:get(0) == i) end
    "#);
}

#[test]
fn wrong_arguments_raise_through_the_wrappers() {
    run(r#"
        local ch, c = fiber.channel(1), fiber.cond()
        local function err(f, ...)
            local ok, e = pcall(f, ...)
            assert(not ok)
            return tostring(e), type(e) == 'cdata' or type(e) == 'userdata' or type(e) == 'table'
        end
        assert(err(ch.put, ch):match('usage: channel:put'))
        assert(err(ch.put, 1, 2):match('usage: channel:put'))
        assert(err(ch.put, c, 2):match('usage: channel:put'))
        assert(err(ch.put, ch, 1, 'x'):match('usage: channel:put'))
        assert(err(ch.put, ch, 1, 0/0):match('usage: channel:put'))
        assert(err(ch.get, c):match('usage: channel:get'))
        assert(err(ch.get, ch, 'x'):match('usage: channel:get'))
        assert(err(c.signal, ch):match('Usage: cond:signal'))
        assert(err(c.broadcast, 42):match('Usage: cond:broadcast'))
        -- nothing was lost on the way
        assert(ch:count() == 0 and ch:put(7) and ch:get() == 7)
    "#);
}

#[test]
fn buffered_put_and_get_allocate_no_lua_memory() {
    run(r#"
        local ch, c = fiber.channel(4), fiber.cond()
        local v = {}
        for _ = 1, 1000 do ch:put(v); ch:get(); c:signal() end
        collectgarbage('collect')
        collectgarbage('stop')
        local before = collectgarbage('count')
        for _ = 1, 100000 do
            ch:put(v); ch:put(1); ch:get(); ch:get()
            c:signal(); c:broadcast()
        end
        local grew = collectgarbage('count') - before
        collectgarbage('restart')
        assert(grew < 64, ('200000 puts and gets grew the Lua heap by %.1f KB'):format(grew))
    "#);
}

#[test]
fn blocked_puts_and_gets_keep_and_free_their_values() {
    run(r#"
        local weak = setmetatable({}, {__mode = 'v'})
        -- a blocked put (its value in a reserved slot) on a channel that
        -- gets closed returns false and lets the value go
        local ch = fiber.channel(0)
        local res = {}
        fiber.create(function()
            local v = {}
            weak[1] = v
            res[1] = ch:put(v)
        end)
        ch:close()
        fiber.yield()
        assert(res[1] == false)
        -- a cancelled blocked put raises and lets its value go
        ch = fiber.channel(0)
        local f = fiber.create(function()
            local v = {}
            weak[2] = v
            local ok, e = pcall(ch.put, ch, v)
            res[2] = not ok and tostring(e)
        end)
        f:cancel()
        fiber.yield()
        assert(res[2] and res[2]:match('cancel'), tostring(res[2]))
        collectgarbage(); collectgarbage()
        assert(weak[1] == nil and weak[2] == nil, 'values of failed puts were freed')
        -- a blocked get gets nil when the channel is closed
        ch = fiber.channel(0)
        fiber.create(function() res[3] = ch:get(); res[4] = 'got' end)
        ch:close()
        fiber.yield()
        assert(res[3] == nil and res[4] == 'got')
        -- more blocked writers than fast slots, read by blocked readers
        local n = 3000
        ch = fiber.channel(0)
        for i = 1, n do fiber.create(function() assert(ch:put({i})) end) end
        for i = 1, n do assert(ch:get()[1] == i, i) end
        -- and the other way round: readers wait, writers hand over
        local got = {}
        for i = 1, n do fiber.create(function() got[i] = ch:get()[1] end) end
        for i = 1, n do assert(ch:put({i})) end
        fiber.yield()
        for i = 1, n do assert(got[i] == i, i) end
    "#);
}

#[test]
fn blocked_puts_past_the_fast_slots_fail_cleanly_on_cancel_and_close() {
    run(r#"
        local weak = setmetatable({}, {__mode = 'k'})
        local n, third = 1500, 500
        local ch = fiber.channel(0)
        local writers, res = {}, {}
        -- The first 1024 reserve a slot of VALS, the rest go the C way.
        for i = 1, n do
            writers[i] = fiber.create(function()
                local v = {i}
                weak[v] = true
                local ok, r = pcall(ch.put, ch, v)
                res[i] = ok and tostring(r) or 'raised'
            end)
        end
        assert(ch:has_writers())
        -- every third is cancelled, the rest see the close
        for i = 3, n, 3 do writers[i]:cancel() end
        fiber.yield()
        -- one of the survivors is still handed over
        local got = ch:get()
        assert(type(got) == 'table' and got[1] % 3 ~= 0, tostring(got and got[1]))
        ch:close()
        fiber.yield()
        local counts = {}
        for i = 1, n do counts[res[i]] = (counts[res[i]] or 0) + 1 end
        assert(counts.raised == third, tostring(counts.raised))
        assert(counts['true'] == 1, tostring(counts['true']))
        assert(counts['false'] == n - third - 1, tostring(counts['false']))
        got = nil
        collectgarbage(); collectgarbage()
        assert(next(weak) == nil, 'every value was let go')
        -- and the slots they held are free again: the channel works on
        local ch2 = fiber.channel(2000)
        for i = 1, 2000 do assert(ch2:put(i)) end
        for i = 1, 2000 do assert(ch2:get(0) == i) end
    "#);
}
