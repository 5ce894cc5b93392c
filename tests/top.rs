//! `fiber.top()`, `top_enable`, `top_disable` (Tarantool master's): the
//! shape of the result, the scheduler's entry, a busy fiber's share, and
//! the error while disabled.

use luafiber::LuaRuntime;

#[test]
fn top_reports_each_fiber_and_the_scheduler() {
    let rt = LuaRuntime::new().unwrap();
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        local ok, err = pcall(fiber.top)
        assert(not ok and tostring(err) ==
            'fiber.top() is disabled. Enable it with fiber.top_enable() first', tostring(err))
        fiber.top_enable()
        local busy = fiber.new(function()
            for _ = 1, 200 do
                for _ = 1, 10000 do end
                fiber.yield()
            end
        end)
        busy:name('busy')
        busy:set_joinable(true)
        -- Until an event loop iteration has ended with the busy fiber's
        -- time counted (bounded).
        local key = busy:id() .. '/busy'
        for _ = 1, 100 do
            local e = fiber.top().cpu[key]
            if e ~= nil and e.instant > 0 and e.time > 0 then break end
            fiber.yield()
        end
        local top = fiber.top()
        assert(top.cpu_misses == 0)
        assert(top.cpu['1/sched'] ~= nil, 'the scheduler is listed')
        local e = top.cpu[key]
        assert(e ~= nil and e.instant > 0 and e.average > 0 and e.time > 0)
        local me = fiber.self():id() .. '/' .. fiber.self():name()
        assert(top.cpu[me] ~= nil, 'the running fiber is listed')
        local sum = 0
        for _, v in pairs(top.cpu) do sum = sum + v.instant end
        assert(sum > 99 and sum < 100.1, sum)
        assert(busy:info().time > 0)
        busy:join()
        assert(fiber.top().cpu[key] == nil, 'a dead fiber is not listed')
        fiber.top_disable()
        assert(not pcall(fiber.top))
        "#,
        "top",
    )
    .unwrap();
}
