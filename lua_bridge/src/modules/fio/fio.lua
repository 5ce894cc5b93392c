-- The Lua half of luafiber's `fio` module (see mod.rs): Tarantool master's
-- src/lua/fio.lua and minifio.lua over the C functions of mod.rs, for
-- LuaJIT and Lua 5.4 alike (the FFI only for the buffer-pointer forms of
-- read and write, which need it). Run once per cord by the module's
-- loader, which passes the module table (its C functions set), the
-- internal functions and the handles' metatable. Errors raised here are
-- strings with this chunk's position ("builtin/fio.lua:N: ..."), as
-- master's.
local fio, internal, handle_mt = ...
local fiber = require('fiber')
local errno = require('errno')

local has_ffi, ffi = pcall(require, 'ffi')
if not has_ffi or type(ffi) ~= 'table' or ffi.copy == nil then
    ffi = nil
end

local bor, fd_of = internal.bor, internal.fd
local format = string.format

-- A buffer pointer (`ibuf:reserve(n)`, a `char *`), as master tells one
-- from a size or a string.
local function is_ptr(v)
    return ffi ~= nil and type(v) == 'cdata'
end

local function need_ffi(what)
    error(format("%s: a buffer pointer needs the FFI (LuaJIT)", what), 3)
end

local methods = {}

-- read() -> str; read(size) -> str; read(buf) -> len; read(buf, size) -> len
function methods.read(self, buf, size)
    if is_ptr(buf) then
        if size == nil then
            local st, err = internal.fstat(self)
            if st == nil then return nil, err end
            size = st.size
        end
        local data, err = internal.read(self, size)
        if data == nil then return nil, err end
        ffi.copy(buf, data, #data)
        return #data
    end
    if type(buf) == 'userdata' then need_ffi('fh:read()') end
    size = buf or size
    if size == nil then
        local st, err = internal.fstat(self)
        if st == nil then return nil, err end
        size = st.size
    end
    return internal.read(self, size)
end

-- write(str); write(buf, len)
function methods.write(self, data, len)
    if is_ptr(data) then
        data = ffi.string(data, len)
    elseif type(data) == 'userdata' then
        need_ffi('fh:write()')
    else
        data = tostring(data)
    end
    return internal.write(self, data)
end

-- pwrite(str, offset); pwrite(buf, len, offset)
function methods.pwrite(self, data, len, offset)
    if is_ptr(data) then
        data = ffi.string(data, len)
    elseif type(data) == 'userdata' then
        need_ffi('fh:pwrite()')
    else
        data = tostring(data)
        offset = len
    end
    return internal.pwrite(self, data, nil, offset)
end

-- pread(size, offset) -> str; pread(buf, size, offset) -> len
function methods.pread(self, buf, size, offset)
    local has_buf = is_ptr(buf)
    if not has_buf then
        offset = size
        size = buf
    end
    if type(size) ~= 'number' or (type(offset) ~= 'number' and offset ~= nil) then
        error('Usage: fh:pread(buf, size[, offset]) or fh:pread(size[, offset])')
    end
    local data, err = internal.pread(self, size, offset or 0)
    if data == nil then
        return nil, err
    end
    if not has_buf then
        return data
    end
    ffi.copy(buf, data, #data)
    return #data
end

function methods.truncate(self, length)
    return internal.ftruncate(self, length or 0)
end

function methods.seek(self, offset, whence)
    if whence == nil then
        whence = 'SEEK_SET'
    end
    if type(whence) == 'string' then
        if fio.c.seek[whence] == nil then
            error(format("fio.seek(): unknown whence: %s", whence))
        end
        whence = fio.c.seek[whence]
    else
        whence = tonumber(whence)
    end
    return internal.lseek(self, tonumber(offset), whence)
end

function methods.close(self)
    return internal.close(self)
end

function methods.fsync(self)
    return internal.fsync(self)
end

function methods.fdatasync(self)
    return internal.fdatasync(self)
end

function methods.stat(self)
    return internal.fstat(self)
end

handle_mt.__index = function(self, key)
    if key == 'fh' then
        return fd_of(self)
    end
    return methods[key]
end
handle_mt.__serialize = function(self)
    return {fh = fd_of(self)}
end
handle_mt.__tostring = function(self)
    return format('fh: %d', fd_of(self))
end

function fio.open(path, flags, mode)
    if type(path) ~= 'string' then
        error("Usage: fio.open(path[, flags[, mode]])")
    end
    if type(flags) ~= 'table' then
        flags = {flags}
    end
    if type(mode) ~= 'table' then
        mode = {mode or tonumber('666', 8)}
    end
    local iflag, imode = 0, 0
    for _, flag in pairs(flags) do
        if type(flag) ~= 'number' then
            if fio.c.flag[flag] == nil then
                error(format("fio.open(): unknown flag: %s", flag))
            end
            flag = fio.c.flag[flag]
        end
        iflag = bor(iflag, flag)
    end
    for _, m in pairs(mode) do
        if type(m) == 'string' then
            if fio.c.mode[m] == nil then
                error(format("fio.open(): unknown mode: %s", m))
            end
            m = fio.c.mode[m]
        end
        imode = bor(imode, tonumber(m))
    end
    return internal.open(path, iflag, imode)
end

function fio.pathjoin(...)
    local n = select('#', ...)
    local path, i = nil, 1
    while i <= n do
        local part = select(i, ...)
        if part == nil then
            error("fio.pathjoin(): undefined path part " .. i, 0)
        end
        part = tostring(part)
        i = i + 1
        if part ~= '' then
            path = part
            break
        end
    end
    if path == nil then
        return '.'
    end
    while i <= n do
        local part = select(i, ...)
        if part == nil then
            error("fio.pathjoin(): undefined path part " .. i, 0)
        end
        part = tostring(part)
        if part ~= '' then
            path = path .. '/' .. part
        end
        i = i + 1
    end
    path = path:gsub('/+', '/')
    if path ~= '/' then
        path = path:gsub('/$', '')
    end
    return path
end

function fio.abspath(path)
    if path == nil then
        error("Usage: fio.abspath(path)", 0)
    end
    local joined = path
    if path:sub(1, 1) ~= '/' then
        joined = fio.pathjoin(fio.cwd(), path)
    end
    local parts = {}
    for part in joined:gmatch('[^/]+') do
        if part == '..' then
            table.remove(parts)
        elseif part ~= '.' then
            table.insert(parts, part)
        end
    end
    return '/' .. table.concat(parts, '/')
end

function fio.basename(path, suffix)
    if type(path) ~= 'string' then
        error("Usage: fio.basename(path[, suffix])")
    end
    path = path:gsub('.*/', '')
    if suffix ~= nil then
        suffix = tostring(suffix)
        if #suffix > 0 then
            -- Each character of the suffix as a class: the suffix
            -- matched literally (master's gsub).
            path = path:gsub(suffix:gsub('(.)', '[%1]'), '')
        end
    end
    return path
end

function fio.dirname(path)
    if type(path) ~= 'string' then
        error("Usage: fio.dirname(path)")
    end
    return internal.dirname(path)
end

function fio.umask(umask)
    return internal.umask(umask ~= nil and tonumber(umask) or nil)
end

function fio.chdir(path)
    if type(path) ~= 'string' then
        error("Usage: fio.chdir(path)")
    end
    return internal.chdir(path)
end

function fio.listdir(path)
    if type(path) ~= 'string' then
        error("Usage: fio.listdir(path)")
    end
    local names, err = internal.listdir(path)
    if names == nil then
        return nil, format("can't listdir %s: %s", path, tostring(err))
    end
    return names
end

local function split_path(path)
    local parts = {}
    for part in path:gmatch('[^/]+') do
        parts[#parts + 1] = part
    end
    return parts
end

function fio.mktree(path, mode)
    if type(path) ~= 'string' then
        error("Usage: fio.mktree(path[, mode])")
    end
    local current = '/'
    for _, dir in ipairs(split_path(fio.abspath(path))) do
        current = fio.pathjoin(current, dir)
        local st = fio.stat(current)
        if st == nil then
            local _, err = fio.mkdir(current, mode)
            -- Another process may have made it since the stat.
            if err ~= nil and not fio.path.is_dir(current) then
                return false, format("Error creating directory %s: %s",
                    current, tostring(err))
            end
        elseif not st:is_dir() then
            return false, format("Error creating directory %s: %s",
                current, errno.strerror(errno.EEXIST))
        end
    end
    return true
end

function fio.rmtree(path)
    if type(path) ~= 'string' then
        error("Usage: fio.rmtree(path)")
    end
    path = fio.abspath(path)
    local names, err = fio.listdir(path)
    if names == nil then
        return nil, err
    end
    for _, name in ipairs(names) do
        local sub = fio.pathjoin(path, name)
        local st = fio.lstat(sub)
        if st then
            if st:is_dir() then
                _, err = fio.rmtree(sub)
            else
                _, err = fio.unlink(sub)
            end
            if err ~= nil then
                return nil, err
            end
        end
    end
    local _, rm_err = fio.rmdir(path)
    if rm_err ~= nil then
        return false, format("failed to remove %s: %s", path, tostring(rm_err))
    end
    return true
end

function fio.copyfile(from, to)
    if type(from) ~= 'string' or type(to) ~= 'string' then
        error('Usage: fio.copyfile(from, to)')
    end
    local st = fio.stat(to)
    if st and st:is_dir() then
        to = fio.pathjoin(to, fio.basename(from))
    end
    local _, err = internal.copyfile(from, to)
    if err ~= nil then
        return false, format("failed to copy %s to %s: %s", from, to, tostring(err))
    end
    return true
end

function fio.copytree(from, to)
    if type(from) ~= 'string' or type(to) ~= 'string' then
        error('Usage: fio.copytree(from, to)')
    end
    local st = fio.stat(from)
    if not st then
        return false, format("Directory %s does not exist", from)
    end
    if not st:is_dir() then
        return false, errno.strerror(errno.ENOTDIR)
    end
    local names, err = fio.listdir(from)
    if names == nil then
        return false, err
    end
    local _, reason = fio.mktree(to)
    if reason ~= nil then
        return false, reason
    end
    for _, name in ipairs(names) do
        local src, dst = fio.pathjoin(from, name), fio.pathjoin(to, name)
        local sst = fio.lstat(src)
        if sst and sst:is_dir() then
            _, reason = fio.copytree(src, dst)
            if reason ~= nil then
                return false, reason
            end
        elseif sst and sst:is_reg() then
            _, reason = fio.copyfile(src, dst)
            if reason ~= nil then
                return false, reason
            end
        elseif sst and sst:is_link() then
            local target
            target, reason = fio.readlink(src)
            if target == nil then
                return false, reason
            end
            _, reason = fio.symlink(target, dst)
            if reason ~= nil then
                return false, "can't create symlink in place of existing file " .. dst
            end
        end
    end
    return true
end

local function check_time(time, name)
    if time ~= nil and type(time) ~= 'number' then
        error('fio.utime: ' .. name .. ' should be a number', 2)
    end
end

function fio.utime(path, atime, mtime)
    if type(path) ~= 'string' then
        error('Usage: fio.utime(filepath[, atime[, mtime]])')
    end
    check_time(atime, 'atime')
    check_time(mtime, 'mtime')
    atime = atime or fiber.time()
    mtime = mtime or atime
    return internal.utime(path, atime, mtime)
end

fio.path = {}

function fio.path.is_file(filename)
    local st = fio.stat(filename)
    return st ~= nil and st:is_reg() or false
end

function fio.path.is_link(filename)
    local st = fio.lstat(filename)
    return st ~= nil and st:is_link() or false
end

function fio.path.is_dir(filename)
    local st = fio.stat(filename)
    return st ~= nil and st:is_dir() or false
end

function fio.path.exists(filename)
    return fio.stat(filename) ~= nil
end

function fio.path.lexists(filename)
    return fio.lstat(filename) ~= nil
end

return fio
