-- The interactive console (Tarantool's src/box/lua/console.lua, local
-- mode): reads a chunk (more lines while it is incomplete), runs it in a
-- fiber of its own and prints its results as YAML. `C` holds the binary's
-- functions: read(prompt) -> line | nil (end of input) | false (Ctrl-C at
-- the prompt), history(chunk), wait() -> 'interrupt' | 'wake', wake(),
-- and the YAML formatter.
local C = ...
local fiber = require('fiber')
local interrupt = require('luafiber.interrupt')
local loadstring = loadstring or load
local unpack = unpack or table.unpack
local pack = table.pack or function(...)
    return { n = select('#', ...), ... }
end

-- A Ctrl-C interrupts the chunk, or a fiber that runs when it comes: never
-- the console itself.
interrupt.shield()

local PROMPT = 'luafiber'

-- Whether `buf` is a chunk that more lines could complete (its syntax
-- error is at the end of input), as Tarantool's `local_check_lua`.
local function incomplete(buf)
    local fn, err = loadstring(buf)
    if fn ~= nil or not tostring(err):find("near '?<eof>'?$") then
        return false
    end
    return loadstring('return ' .. buf) == nil
end

-- Lines read but not yet taken: a read that gives several lines at once
-- (text pasted into the line, which the line editor keeps as one) is taken
-- a line at a time, as if typed.
local pending = {}

local function read_line(prompt)
    if #pending == 0 then
        local line = C.read(prompt)
        if type(line) ~= 'string' or not line:find('\n', 1, true) then
            return line
        end
        for l in (line .. '\n'):gmatch('(.-)\n') do
            pending[#pending + 1] = l
        end
    end
    return table.remove(pending, 1)
end

local function read_chunk()
    local buf = ''
    local prompt = PROMPT .. '> '
    while true do
        local line = read_line(prompt)
        if line == nil then
            return nil
        elseif line == false then
            return ''
        end
        buf = buf .. line
        if not incomplete(buf) then
            break
        end
        buf = buf .. '\n'
        prompt = string.rep(' ', #PROMPT) .. '> '
    end
    if buf:find('%S') then
        C.history(buf)
    end
    return buf
end

-- Master's message when a value cannot be printed (its `__serialize` or
-- `__tostring` raised): printed as an error, and the console goes on.
local FORMAT_FAILED = 'console: exception while formatting the output: "%s"'

-- An error value is printed as any value (a table as its fields, as
-- Tarantool 2.6 prints `error({code = 5})`; an error object as its message).
local function print_error(err)
    local ok, text = pcall(C.yaml, { { error = err } }, 1)
    if not ok then
        text = C.yaml({ { error = FORMAT_FAILED:format(tostring(text)) } }, 1)
    end
    io.write(text, '\n')
end

-- Runs `fn` in a fiber of its own, which Ctrl-C interrupts; returns what
-- pcall returned, packed.
local function run(fn)
    local done
    local f = fiber.new(function()
        done = pack(interrupt.pcall(fn))
        C.wake()
    end)
    f:name('interactive')
    while done == nil do
        if C.wait() == 'interrupt' and done == nil then
            pcall(fiber.cancel, f)
        end
    end
    return done
end

local function eval(buf)
    local fn, err = loadstring('return ' .. buf)
    if fn == nil then
        fn, err = loadstring(buf)
    end
    if fn == nil then
        return print_error(err)
    end
    if jit ~= nil then
        -- Hooks do not run in compiled code: keep loops typed here
        -- interruptible.
        jit.off(fn, true)
    end
    local r = run(fn)
    if not r[1] then
        return print_error(r[2])
    end
    local ok, out = pcall(C.yaml, { unpack(r, 2, r.n) }, r.n - 1)
    if not ok then
        return print_error(FORMAT_FAILED:format(tostring(out)))
    end
    io.write(out, '\n')
end

while true do
    local buf = read_chunk()
    if buf == nil then
        break
    end
    if buf:find('%S') then
        eval(buf)
    end
    io.flush()
end
io.flush()
os.exit(0)
