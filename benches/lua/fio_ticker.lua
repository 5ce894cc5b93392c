-- fio_ticker.lua: does file I/O hold up the other fibers? One fiber writes
-- a file in 64 KiB chunks (then fsyncs it), reads it back in 64 KiB chunks
-- and removes it, while another wakes every 10 ms and notes how late each
-- wake is. With every system call on the blocking pool (luafiber's fio,
-- Tarantool's coio), the ticker's lateness stays what it is with no I/O
-- at all. Runs unchanged on luafiber and on tarantool:
--
--   target/release/luafiber benches/lua/fio_ticker.lua [MiB [DIR]]
--   tarantool benches/lua/fio_ticker.lua [MiB [DIR]]
--
-- MiB: the file's size (default 1024); DIR: where it goes (default
-- $TMPDIR or /tmp). Prints one line per phase (idle: the ticker alone for
-- a second; write, fsync, read) with the phase's time and MB/s, the
-- ticks, and the ticker's largest, 99th-percentile and median lateness
-- in ms.

local fio = require('fio')
local fiber = require('fiber')
local clock = require('clock')

local mib = tonumber(arg[1]) or 1024
local dir = arg[2] or os.getenv('TMPDIR') or '/tmp'
local CHUNK = 64 * 1024
local TICK = 0.01
local chunks = mib * 1024 * 1024 / CHUNK
local path = fio.pathjoin(dir, string.format('fio_ticker.%d.tmp', math.random(1e9)))

local lates = {}
local stop = false

-- Wakes every 10 ms; records how late each wake was (seconds).
local ticker = fiber.new(function()
    while not stop do
        local t0 = clock.monotonic()
        fiber.sleep(TICK)
        lates[#lates + 1] = clock.monotonic() - t0 - TICK
    end
end)
ticker:set_joinable(true)

local function report(phase, secs, bytes, from)
    local l = {}
    for i = from, #lates do l[#l + 1] = lates[i] end
    table.sort(l)
    local max = l[#l] or 0
    local p99 = l[math.max(1, math.ceil(#l * 0.99))] or 0
    local median = l[math.max(1, math.ceil(#l * 0.5))] or 0
    print(string.format('phase=%s secs=%.2f mb_per_sec=%s ticks=%d max_late_ms=%.2f '
        .. 'p99_late_ms=%.2f median_late_ms=%.2f',
        phase, secs, bytes and string.format('%.0f', bytes / secs / 1e6) or '-',
        #l, max * 1e3, p99 * 1e3, median * 1e3))
    return max
end

local function phase(name, bytes, body)
    local from = #lates + 1
    local t0 = clock.monotonic()
    body()
    return report(name, clock.monotonic() - t0, bytes, from)
end

local worst = 0
local function note(m) worst = math.max(worst, m) end

note(phase('idle', nil, function() fiber.sleep(1) end))

local data = string.rep('x', CHUNK)
local fh = assert(fio.open(path, {'O_WRONLY', 'O_CREAT', 'O_TRUNC'}, tonumber('644', 8)))
note(phase('write', chunks * CHUNK, function()
    for _ = 1, chunks do
        assert(fh:write(data))
    end
end))
note(phase('fsync', nil, function() assert(fh:fsync()) end))
fh:close()

fh = assert(fio.open(path, {'O_RDONLY'}))
local total = 0
note(phase('read', chunks * CHUNK, function()
    while true do
        local s = assert(fh:read(CHUNK))
        if #s == 0 then break end
        total = total + #s
    end
end))
fh:close()
fio.unlink(path)
assert(total == chunks * CHUNK, 'read back ' .. total .. ' bytes')

stop = true
ticker:join()
print(string.format('rt=%s mib=%d chunk=%d worst_late_ms=%.2f',
    require('tarantool').luafiber and 'luafiber' or 'tarantool-' .. _TARANTOOL,
    mib, CHUNK, worst * 1e3))
