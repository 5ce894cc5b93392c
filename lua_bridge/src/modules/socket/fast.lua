-- On LuaJIT, s:read() and s:write() as Lua functions (see fast.rs) that
-- try the case that neither waits nor fails through an FFI call compiled
-- into the caller's trace: a read the read-ahead buffer can answer, a write
-- the socket takes whole. Anything else goes to a C function, which checks,
-- waits and raises. The options of a read are taken apart here (`opts.x`,
-- as Tarantool reads them), so the C function gets them as arguments.
local MT, methods, read_args, write_from, try_read, try_write = ...
local ok, ffi = pcall(require, 'ffi')
if not ok or type(ffi) ~= 'table' or not ffi.cast then return end
try_read = ffi.cast('double (*)(void *, const char *, size_t, double, const char **)', try_read)
try_write = ffi.cast('double (*)(void *, const char *, size_t)', try_write)
local out = ffi.new('const char *[1]')
local ffi_string, getmetatable, type = ffi.string, getmetatable, type
local c_read, c_write = methods.read, methods.write
-- Tarantool's LIMIT_INFINITY.
local INFINITY = 2147483647

function methods.read(self, opts, timeout)
    if type(self) == 'userdata' and getmetatable(self) == MT then
        local limit, delim
        local t = type(opts)
        if t == 'table' then
            limit = opts.chunk or opts.size
            delim = opts.delimiter or opts.line
        elseif t == 'string' then
            delim = opts
        elseif t == 'number' then
            limit = opts
        else
            return c_read(self, opts, timeout)
        end
        if (limit == nil or type(limit) == 'number') and
                (delim == nil or type(delim) == 'string') then
            local n = try_read(self, delim, delim and #delim or 0, limit or INFINITY, out)
            if n >= 0 then
                return ffi_string(out[0], n)
            end
            return read_args(self, limit, delim, timeout)
        end
    end
    return c_read(self, opts, timeout)
end

function methods.write(self, octets, timeout)
    if type(self) == 'userdata' and getmetatable(self) == MT and
            type(octets) == 'string' and (timeout == nil or type(timeout) == 'number') then
        local len = #octets
        local n = try_write(self, octets, len)
        if n == len then
            return len
        end
        if n == -1 then
            return nil
        end
        if n >= 0 then
            return write_from(self, octets, timeout, n)
        end
    end
    return c_write(self, octets, timeout)
end
