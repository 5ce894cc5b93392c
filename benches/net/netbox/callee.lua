-- The callee of the net.box benches, in Tarantool's API: `tarantool
-- callee.lua PORT` (and `luafiber callee.lua PORT` once luafiber's IPROTO
-- server serves box.cfg{listen}). Prints "PORT n" once it listens.
function bench_func(...) return {...} end
function bench_push3()
    for i = 1, 3 do box.session.push('msg' .. i) end
    return 'done'
end
local port = tonumber(arg[1]) or 3301
box.cfg{listen = '127.0.0.1:' .. port, log_level = 2,
        work_dir = arg[2] or os.getenv('TMPDIR') or '/tmp'}
if box.schema and box.schema.user and box.schema.user.grant then
    pcall(box.schema.user.grant, 'guest', 'execute', 'universe', nil,
          {if_not_exists = true})
end
io.stdout:write('PORT ' .. port .. '\n')
io.stdout:flush()
