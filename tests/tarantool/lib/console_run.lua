-- Runs one of Tarantool's console tests (test/app/NAME.test.lua with its
-- NAME.result) the way test-run drives them: each statement goes to a
-- console, whose YAML answer is compared with the one in the .result file.
--   luafiber console_run.lua NAME.test.lua
--
-- Statements are split as test-run splits them: one a line, a line ending
-- in `\` going on on the next, and, after test_run:cmd("setopt delimiter
-- ';'"), up to a line ending in the delimiter; comment and empty lines are
-- not sent. Each runs in this fiber (as in the console's own) with
-- globals kept, after a yield (the console's read of it); its answer is luafiber's console YAML (src/console/yaml.lua,
-- found through LUAFIBER_CONSOLE_YAML): its values, or `- error: message`.
-- Each answer is recorded in LUAFIBER_TAP_LOG as "ok<TAB>N: STATEMENT" or
-- "not ok<TAB>N: STATEMENT" (N: the statement's line), a mismatch printed
-- with both answers. `test_run` has `new()`, `cmd('setopt delimiter ...')`
-- `cmd('push filter ...')`, `cmd('clear filter')`, `wait_cond(fn [,
-- timeout])`, `grep_log` and `wait_log` (over this process's output).

local fiber = require('fiber')
local loadstring = loadstring or load
local unpack = table.unpack or unpack
local pack = table.pack or function(...) return {n = select('#', ...), ...} end

local file = assert(arg[1], 'usage: console_run.lua NAME.test.lua')
local yaml = assert(loadfile(assert(os.getenv('LUAFIBER_CONSOLE_YAML'))))()
local log_path = os.getenv('LUAFIBER_TAP_LOG')
local log_file = log_path and io.open(log_path, 'a')

local delimiter = ''

local test_run = {}
test_run.__index = test_run
function test_run.new() return setmetatable({}, test_run) end
-- Output filters of `push filter 'REGEX' to 'REPL'`: test-run's are
-- Python regular expressions; the ones the tests push are Lua patterns
-- once `\N` becomes `%N` in the replacement (and `[0-9]` means the same).
local filters = {}

function test_run:cmd(c)
    local d = c:match('^setopt delimiter [\'"](.*)[\'"]$')
    if d ~= nil then
        delimiter = d
        return true
    end
    local from, to = c:match("^push filter '(.*)' to '(.*)'$")
    if from ~= nil then
        -- A Python escape of a punctuation character (`\.`) is Lua's `%.`.
        from = from:gsub('\\(%p)', '%%%1')
        filters[#filters + 1] = {from, (to:gsub('\\(%d)', '%%%1'))}
        return true
    end
    -- test-run's `create server NAME with script = ...` only records
    -- the server (starting it is not supported here).
    if c:match('^create server [%w_]+ with script = ') then
        return true
    end
    if c == 'clear filter' then
        filters = {}
        return true
    end
    error('test_run:cmd: not supported here: ' .. c)
end
-- `grep_log(server, pattern[, bytes])` searches what this process wrote
-- (run.sh names the file in LUAFIBER_TEST_OUT; the last `bytes` of it);
-- `wait_log(server, pattern, _, timeout)` until it is there.
function test_run:grep_log(_, pattern, bytes)
    io.stderr:flush()
    io.stdout:flush()
    local path = os.getenv('LUAFIBER_TEST_OUT')
    local f = path and io.open(path)
    if f == nil then return nil end
    local text = f:read('*a')
    f:close()
    if bytes and #text > bytes then text = text:sub(-bytes) end
    return text:match(pattern)
end
function test_run:wait_log(server, pattern, bytes, timeout)
    local deadline = fiber.clock() + (timeout or 60)
    while fiber.clock() < deadline do
        local r = self:grep_log(server, pattern, bytes)
        if r then return r end
        fiber.sleep(0.01)
    end
    return nil
end
function test_run:wait_cond(cond, timeout)
    local deadline = fiber.clock() + (timeout or 60)
    while fiber.clock() < deadline do
        local r = cond()
        if r then return r end
        fiber.sleep(0.01)
    end
    return false
end
package.loaded.test_run = test_run

-- The expected answers: the `---` ... `...` blocks of the .result file, in
-- order.
local function blocks(text)
    local out, cur = {}, nil
    -- Version 2 files prefix each answer line with " | ".
    local v2 = text:find('^%-%- test%-run result file version 2') ~= nil
    for line in (text .. '\n'):gmatch('(.-)\n') do
        if v2 then line = line:match('^ | (.*)$') or line:match('^ |$') and '' or '' end
        if cur == nil and line == '---' then
            cur = {line}
        elseif cur ~= nil then
            cur[#cur + 1] = line
            if line == '...' then
                out[#out + 1] = table.concat(cur, '\n')
                cur = nil
            end
        end
    end
    return out
end

local function read(path)
    local f = assert(io.open(path))
    local s = f:read('*a')
    f:close()
    return s
end

local expected = blocks(read((file:gsub('%.test%.lua$', '.result'))))

-- test/box's tests run on test-run's box/box.lua instance, which
-- box.cfg{listen}s first (run.sh gives the URI).
local box_listen = os.getenv('LUAFIBER_BOX_LISTEN')
if box_listen and box_listen ~= '' then
    box.cfg{listen = box_listen}
end

-- The console's answer to `stmt`.
local function eval(stmt)
    -- test-run sends each statement with a space after it, which chunk
    -- names show ('[string "return x "]:1: ...').
    stmt = stmt .. ' '
    local fn, err = loadstring('return ' .. stmt)
    if fn == nil then fn, err = loadstring(stmt) end
    if fn == nil then return yaml({{error = tostring(err)}}, 1) end
    local r = pack(pcall(fn))
    if not r[1] then return yaml({{error = tostring(r[2])}}, 1) end
    return yaml({unpack(r, 2, r.n)}, r.n - 1)
end

local failed, n = 0, 0
local function answer(stmt, line_no)
    -- The console yields while it reads the next statement: the fibers the
    -- last one woke run first.
    fiber.sleep(0)
    n = n + 1
    local got = eval(stmt):gsub('\n$', '')
    for _, f in ipairs(filters) do
        got = got:gsub(f[1], f[2])
    end
    local want = expected[n] or '(no answer in the .result file)'
    local ok = got == want
    local name = (line_no .. ': ' .. stmt):gsub('[\t\n]', ' ')
    if not ok then
        failed = failed + 1
        io.write('not ok - ', name, '\n  expected:\n', want, '\n  got:\n', got, '\n')
    end
    if log_file then
        log_file:write(ok and 'ok' or 'not ok', '\t', name, '\n')
        log_file:flush()
    end
end

-- run.sh's LUAFIBER_TEST_STOP_AT (skips.tsv's '(stop at N)'): no
-- statement from line N on runs.
local stop_at = tonumber(os.getenv('LUAFIBER_TEST_STOP_AT') or '')

local buf, first = nil, nil
local line_no = 0
for line in (read(file) .. '\n'):gmatch('(.-)\n') do
    line_no = line_no + 1
    if stop_at and line_no >= stop_at then break end
    if buf == nil and (line:match('^%s*$') or line:match('^%s*%-%-')) then
        -- not sent
    elseif delimiter ~= '' then
        buf = (buf and buf .. '\n' or '') .. line
        first = first or line_no
        if line:sub(-#delimiter) == delimiter then
            answer(buf:sub(1, -#delimiter - 1), first)
            buf, first = nil, nil
        end
    elseif line:sub(-1) == '\\' then
        buf = (buf and buf .. '\n' or '') .. line:sub(1, -2)
        first = first or line_no
    else
        buf = (buf and buf .. '\n' or '') .. line
        answer(buf, first or line_no)
        buf, first = nil, nil
    end
end

os.exit(failed == 0 and 0 or 1)
