-- C12: fiber slices enforced without the script's help (luafiber beyond
-- Tarantool, whose slices are checked only in fiber.check_slice() and box
-- iterators): once a slice is set, a fiber that runs Lua past its `err`
-- limit without yielding gets FiberSliceIsExceeded raised in it, and the
-- other fibers go on.
--
-- Expected behaviour (luafiber; Tarantool's API and messages):
--  * with fiber.set_max_slice(0.5), `while true do end` in a fiber ends
--    with an error whose type is FiberSliceIsExceeded and whose tostring is
--    "fiber slice is exceeded"; a loop that would spin 3 s ends well before
--    (about 0.5 s after its start); compiled LuaJIT loops included;
--  * a fiber sleeping meanwhile keeps its schedule: all its ticks come, in
--    order, and it ends normally;
--  * the slice is reset at every switch: a fiber that spins 0.3 s, yields,
--    and spins 0.3 s again is not stopped;
--  * pcall catches the error; fiber.extend_slice and a fiber's own
--    f:set_max_slice apply to the enforcement as to check_slice;
--  * fiber.self():info().max_slice reports the fiber's limits.
-- Tarantool 2.6 fails it (no slices).

-- ==== common preamble ====================================================
io.stdout:setvbuf('no')
local has_fiber, fiber = pcall(require, 'fiber')
if not has_fiber then
    print('FAIL: cannot load the fiber module: ' .. (tostring(fiber):match('[^\n]*')))
    os.exit(1)
end
local unpack = table.unpack or unpack
local function pack(...) return {n = select('#', ...), ...} end
local problems = {}
local current_section = '(start)'
local function check(cond, what)
    if not cond then
        problems[#problems + 1] = current_section .. ': ' .. tostring(what)
    end
    return cond
end
local function finish()
    if #problems == 0 then
        print('ok')
        os.exit(0)
    end
    print((('FAIL: ' .. table.concat(problems, '; ')):gsub('\n', ' ')))
    os.exit(1)
end
local function section(name, body)
    current_section = name
    local ran, err = pcall(body)
    if not ran then check(false, 'unexpected error: ' .. tostring(err)) end
    current_section = '(between sections)'
end
-- Polls pred every 10 ms (fiber.sleep only, no clock); false after ~limit s.
local function eventually(pred, limit)
    for _ = 1, math.ceil((limit or 1) / 0.01) do
        if pred() then return true end
        fiber.sleep(0.01)
    end
    return pred() and true or false
end
local function skip(what) io.stderr:write('skip: ' .. what .. '\n') end
local WATCHDOG_S = 20
fiber.create(function()
    fiber.sleep(WATCHDOG_S)
    check(false, 'watchdog: case still running after ' .. WATCHDOG_S .. ' s')
    finish()
end)
-- ==== end of preamble ====================================================

local clock = require('clock')
local function spin(secs)
    local t = clock.monotonic()
    while clock.monotonic() - t < secs do end
end
local function joined(fn)
    local f = fiber.new(fn)
    f:set_joinable(true)
    return f
end
local function is_slice_error(err)
    return type(err) == 'table' and err.type == 'FiberSliceIsExceeded'
        and tostring(err) == 'fiber slice is exceeded'
end

fiber.set_max_slice(0.5)

section('while true do end ends; a sleeper keeps its schedule', function()
    local ticks = {}
    local sleeper = joined(function()
        for i = 1, 30 do fiber.sleep(0.05); ticks[#ticks + 1] = i end
        return 'slept'
    end)
    local t0 = clock.monotonic()
    local spinner = joined(function() while true do end end)
    local ok, err = spinner:join()
    local took = clock.monotonic() - t0
    io.stderr:write(string.format('while true do end ended after %.3f s\n', took))
    check(not ok and is_slice_error(err), 'spinner: ' .. tostring(ok) .. ' ' .. tostring(err))
    local sok, res = sleeper:join()
    check(sok and res == 'slept', 'sleeper: ' .. tostring(sok) .. ' ' .. tostring(res))
    check(#ticks == 30, 'sleeper ticks: ' .. #ticks)
    for i = 1, #ticks do check(ticks[i] == i, 'tick order') end
end)

section('a 3 s loop ends about 0.5 s after its start', function()
    local t0 = clock.monotonic()
    local ok, err = joined(function() spin(3) end):join()
    local took = clock.monotonic() - t0
    io.stderr:write(string.format('3 s loop ended after %.3f s\n', took))
    check(not ok and is_slice_error(err), 'loop: ' .. tostring(ok) .. ' ' .. tostring(err))
    check(took < 2, string.format('it ran %.3f s', took))
end)

section('reset at every switch', function()
    local ok, err = joined(function()
        spin(0.3); fiber.yield(); spin(0.3); fiber.sleep(0); spin(0.3)
        return 'done'
    end):join()
    check(ok and err == 'done', 'yielding spinner: ' .. tostring(ok) .. ' ' .. tostring(err))
end)

section('pcall catches it; the fiber goes on after a yield', function()
    local ok, res = joined(function()
        local pok, err = pcall(function() while true do end end)
        fiber.yield()
        return pok, is_slice_error(err)
    end):join()
    check(ok and res == false, 'pcall result: ' .. tostring(ok) .. ' ' .. tostring(res))
end)

section('extend_slice and a fiber\'s own max slice', function()
    local ok, res = joined(function()
        fiber.extend_slice(1)
        spin(0.8)
        return 'extended'
    end):join()
    check(ok and res == 'extended', 'extended: ' .. tostring(ok) .. ' ' .. tostring(res))
    local f = fiber.new(function() spin(3) end)
    f:set_joinable(true)
    f:set_max_slice(0.2)
    local t0 = clock.monotonic()
    local fok, err = f:join()
    local took = clock.monotonic() - t0
    check(not fok and is_slice_error(err), 'own slice: ' .. tostring(fok) .. ' ' .. tostring(err))
    check(took < 1.5, string.format('own slice: it ran %.3f s', took))
    local info = joined(function() return fiber.self():info().max_slice end)
    local iok, ms = info:join()
    check(iok and ms and ms.err == 0.5 and ms.warn == nil, 'info().max_slice')
end)

finish()
