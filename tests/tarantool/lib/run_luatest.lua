-- Runs one luatest file (run.sh: `INTERP -e "require('compat')"
-- run_luatest.lua FILE`): the file defines its groups, then every test of
-- them runs (lib/luatest.lua).
local file = assert(arg[1], 'usage: run_luatest.lua FILE')
arg[0] = file
local chunk = assert(loadfile(file))
chunk()
require('luatest').run()
