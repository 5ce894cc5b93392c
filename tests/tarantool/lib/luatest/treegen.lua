-- `luatest.treegen` for lib/luatest.lua: the part Tarantool's tests here
-- use. `prepare_directory({}, {})` makes a fresh temporary directory (the
-- test removes it) and returns its path; luatest's also writes files from
-- templates, which no test here asks for, so anything but empty tables is
-- refused.
local fio = require('fio')

local treegen = {}

function treegen.prepare_directory(scripts, replacements)
    assert(next(scripts or {}) == nil and next(replacements or {}) == nil,
           'luatest.treegen shim: only empty directories')
    return assert(fio.tempdir())
end

return treegen
