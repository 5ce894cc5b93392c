-- The callee of the IPROTO server benches, in Tarantool's API, the same
-- script on `tarantool` and `luafiber`:
--   iproto_callee.lua PORT [WORK_DIR]
-- Serves bench_func (returns its arguments as a table), bench_push3 (three
-- box.session.push then 'done') and the heap probes the caller's `heap`
-- mode uses. Prints "PORT n" once it listens.
function bench_func(...) return {...} end
function bench_push3()
    for i = 1, 3 do box.session.push('msg' .. i) end
    return 'done'
end
-- The Lua heap with the collector stopped (KB), before and after a counted
-- run: the founding patches' "GC KB" figure.
function bench_heap_start()
    collectgarbage('collect')
    collectgarbage('collect')
    collectgarbage('stop')
    return collectgarbage('count')
end
function bench_heap_stop()
    local kb = collectgarbage('count')
    collectgarbage('restart')
    return kb
end
local port = tonumber(arg[1]) or 3301
box.cfg{listen = '127.0.0.1:' .. port, log_level = 2,
        work_dir = arg[2] or os.getenv('TMPDIR') or '/tmp'}
box.schema.user.grant('guest', 'execute', 'universe', nil,
                      {if_not_exists = true})
io.stdout:write('PORT ' .. port .. '\n')
io.stdout:flush()
