-- Runs one luatest file (run.sh: `INTERP -e "require('compat')"
-- run_luatest.lua FILE`): the file defines its groups, then every test of
-- them runs (lib/luatest.lua), in the main fiber, named 'luatest'.
local file = assert(arg[1], 'usage: run_luatest.lua FILE')
arg[0] = file
-- luatest's own fiber is named so (fiber_test.lua's test_serialize
-- asserts it).
pcall(function() require('fiber').self():name('luatest') end)
local chunk = assert(loadfile(file))
chunk()
require('luatest').run()
-- A listening server keeps the process running (as Tarantool's instance):
-- the "server" of luatest.server is this process, so stop here.
if type(box) == 'table' and type(box.cfg) == 'table' and box.cfg.listen ~= nil then
    os.exit(0)
end
