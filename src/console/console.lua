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

local function read_chunk()
    local buf = ''
    local prompt = PROMPT .. '> '
    while true do
        local line = C.read(prompt)
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

local function print_error(err)
    io.write(C.yaml({ { error = tostring(err) } }, 1), '\n')
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
    io.write(C.yaml({ unpack(r, 2, r.n) }, r.n - 1), '\n')
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
