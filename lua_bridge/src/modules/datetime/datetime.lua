-- The Lua half of luafiber's `datetime` module (see mod.rs): Tarantool
-- master's src/lua/datetime.lua API over the C functions of object.rs, for
-- LuaJIT (values are `struct datetime` / `struct interval` cdata) and Lua
-- 5.4 (userdata) alike. The argument checks and their messages are here;
-- calendar, text, parsing and zones are in Rust. Run once per Lua state by
-- the loader with the internal functions, the two metatables and the TZ
-- table; returns the module table.
local I, dt_mt, iv_mt, TZ = ...

local dt_new, dt_get, dt_set = I.dt_new, I.dt_get, I.dt_set
local iv_new, iv_get = I.iv_new, I.iv_get
local is_datetime, is_interval = I.is_dt, I.is_iv
local floor, math_modf = math.floor, math.modf

local EPOCH_RD = 719163
local SECS_PER_DAY = 86400
local TZOFFSET_MIN, TZOFFSET_MAX = -12 * 60, 14 * 60
local MIN_DATE_YEAR, MAX_DATE_YEAR = -5879610, 5879611
local INT_MAX, INT_MIN = 2147483647, -2147483648
local MIN_DATE_TEXT, MAX_DATE_TEXT = '-5879610-06-22', '5879611-07-11'
local MIN_EPOCH = INT_MIN * SECS_PER_DAY - EPOCH_RD * SECS_PER_DAY
local MAX_EPOCH = INT_MAX * SECS_PER_DAY - EPOCH_RD * SECS_PER_DAY
local YEARS = MAX_DATE_YEAR - MIN_DATE_YEAR
local RANGE = {
    year = YEARS, month = YEARS * 12, week = YEARS * 365.25 / 7,
    day = YEARS * 365.25, hour = YEARS * 365.25 * 24,
    min = YEARS * 365.25 * 24 * 60, sec = YEARS * 365.25 * SECS_PER_DAY,
    nsec = INT_MAX, usec = floor(INT_MAX / 1e3), msec = floor(INT_MAX / 1e6),
}
local TZ_AMBIGUOUS, TZ_NYI = 8, 16
-- dt_adjust_t: excess 0, none 1, last 2.
local ADJUST = {none = 1, last = 2, excess = 0}
local ADJUST_NAME = {[0] = 'excess', [1] = 'none', [2] = 'last'}

local function check(ok, level, fmt, ...)
    if not ok then error(fmt:format(...), level + 1) end
end

local function is_table(o) return type(o) == 'table' end

local function check_date(o, what)
    check(is_datetime(o), 3, '%s: expected datetime, but received %s', what, type(o))
end

local function check_table(o, what)
    check(is_table(o), 3, '%s: expected table, but received %s', what, type(o))
end

local function check_str(o, what)
    check(type(o) == 'string', 3, '%s: expected string, but received %s', what, type(o))
end

local function check_integer(v, what, up)
    check(v == nil or (type(v) == 'number' and v % 1 == 0), 4 + (up or 0),
          '%s: integer value expected, but received %s', what, type(v))
end

-- What '%d' writes of v on LuaJIT (truncated), which Lua 5.4's '%d'
-- refuses for a number with a fraction.
local function trunc(v)
    if v ~= v or v == math.huge or v == -math.huge then return v end
    return v >= 0 and floor(v) or -floor(-v)
end

local function check_range(v, from, to, what, extra, up)
    up = up or 0
    if type(v) ~= 'number' then
        error(('numeric value expected, but received %s'):format(type(v)), 3 + up)
    end
    if extra == v or (v >= from and v <= to) then return end
    if extra == nil then
        error(('value %d of %s is out of allowed range [%d, %d]'):
              format(trunc(v), what, from, to), 3 + up)
    end
    error(('value %d of %s is out of allowed range [%d, %d..%d]'):
          format(trunc(v), what, extra, from, to), 3 + up)
end

local function checked_max(v, what, def)
    if v == nil then return def end
    if type(v) ~= 'number' then
        error(('numeric value expected, but received %s'):format(type(v)), 2)
    end
    local max = RANGE[what]
    if v >= -max and v <= max then return v end
    error(('value %s of %s is out of allowed range [%s, %s]'):format(v, what, -max, max), 4)
end

local function rd_of_ymd(y, M, d)
    if d < 0 then
        d = I.days_in_month(y, M)
    elseif d > 28 and d > I.days_in_month(y, M) then
        error(('invalid number of days %d in month %d for %d'):format(d, M, y), 4)
    end
    local rd = I.rd_from_ymd(y, M, d)
    if rd == nil then
        error(('date %4d-%02d-%02d is invalid'):format(y, M, d))
    end
    return rd
end

local function epoch_of_rd(rd) return (rd - EPOCH_RD) * SECS_PER_DAY end

-- Intervals.

local function iv_fields(iv)
    local year, month, week, day, hour, min, sec, nsec, adjust = iv_get(iv)
    return {year = year, month = month, week = week, day = day, hour = hour,
            min = min, sec = sec, nsec = nsec, adjust = adjust}
end

local function interval_from(obj)
    if is_interval(obj) then return obj end
    local year = checked_max(obj.year, 'year', 0)
    check_integer(year, 'year')
    local month = checked_max(obj.month, 'month', 0)
    check_integer(month, 'month')
    local adjust = ADJUST[obj.adjust] or ADJUST.none
    local week = checked_max(obj.week, 'week', 0)
    local day = checked_max(obj.day, 'day', 0)
    check_integer(day, 'day')
    local hour = checked_max(obj.hour, 'hour', 0)
    check_integer(hour, 'hour')
    local min = checked_max(obj.min, 'min', 0)
    check_integer(min, 'min')
    local sec = checked_max(obj.sec, 'sec', 0)
    check_integer(sec, 'sec')
    local nsec = checked_max(obj.nsec, 'nsec')
    local usec = checked_max(obj.usec, 'usec')
    local msec = checked_max(obj.msec, 'msec')
    local n = (nsec and 1 or 0) + (usec and 1 or 0) + (msec and 1 or 0)
    if n > 1 then
        error('only one of nsec, usec or msecs may be defined simultaneously', 3)
    end
    nsec = (msec or 0) * 1e6 + (usec or 0) * 1e3 + (nsec or 0)
    return iv_new(year, month, week, day, hour, min, sec, nsec, adjust)
end

local function interval_new(obj)
    if obj == nil then return iv_new(0, 0, 0, 0, 0, 0, 0, 0, ADJUST.none) end
    check_table(obj, 'interval.new()')
    return interval_from(obj)
end

local ORDER = {'year', 'month', 'week', 'day', 'hour', 'min', 'sec', 'nsec'}

-- a op b on each field, then the range check (interval_check_args).
local function iv_combine(a, b, sign, operation)
    local r = {}
    for _, k in ipairs(ORDER) do r[k] = a[k] + sign * b[k] end
    for _, k in ipairs(ORDER) do
        local v, max = r[k], RANGE[k]
        if v < -max or v > max then
            error(('%s moves value %s of %s out of allowed range [%s, %s]'):
                  format(operation, v, k, -max, max), 4)
        end
    end
    return iv_new(r.year, r.month, r.week, r.day, r.hour, r.min, r.sec, r.nsec,
                  a.adjust)
end

local function interval_tostring(self)
    check(is_interval(self), 2, 'datetime.interval.tostring: expected interval, but received %s',
          type(self))
    return I.iv_text(self)
end

-- Datetimes.

local tostring_dt = I.dt_text

local function parse_tzoffset(str, up)
    local off, len = I.parse_offset(str)
    if len ~= #str then
        error(('invalid time-zone format %s'):format(str), 3 + (up or 0))
    end
    return off
end

local function parse_tzname(base, name)
    check_str(name, 'parse_tzname()')
    local len, off, idx = I.parse_tz(name, base)
    if len > 0 then return off, idx end
    if len == -TZ_NYI then
        error(("could not parse '%s' - nyi timezone"):format(name))
    elseif len == -TZ_AMBIGUOUS then
        error(("could not parse '%s' - ambiguous timezone"):format(name))
    end
    error(("could not parse '%s'"):format(name))
end

local function get_timezone(offset, what, up)
    up = up or 0
    if type(offset) == 'number' then
        check_integer(offset, 'tzoffset', up)
        return offset
    elseif type(offset) == 'string' then
        return parse_tzoffset(offset, up)
    end
    error(('%s: string or number expected, but received %s'):format(what, offset), 3 + up)
end

local function obj_tz(obj, base)
    if obj.tz ~= nil then
        return parse_tzname(base, obj.tz)
    elseif obj.tzoffset ~= nil then
        local off = get_timezone(obj.tzoffset, 'tzoffset', 1)
        check_range(off, TZOFFSET_MIN, TZOFFSET_MAX, 'tzoffset', nil, 1)
        return off, 0
    end
end

local function obj_ymd(obj)
    local y, M, d, ymd = obj.year, obj.month, obj.day, false
    if y ~= nil then
        check_range(y, MIN_DATE_YEAR, MAX_DATE_YEAR, 'year', nil, 1)
        check_integer(y, 'year', 1)
        ymd = true
    end
    if M ~= nil then
        check_range(M, 1, 12, 'month', nil, 1)
        check_integer(M, 'month', 1)
        ymd = true
    end
    if d ~= nil then
        check_range(d, 1, 31, 'day', -1, 1)
        check_integer(d, 'day', 1)
        ymd = true
    end
    return y, M, d, ymd
end

local function obj_hms(obj)
    local h, m, s, hms = obj.hour, obj.min, obj.sec, false
    for _, f in ipairs({{h, 23, 'hour'}, {m, 59, 'min'}, {s, 60, 'sec'}}) do
        if f[1] ~= nil then
            check_range(f[1], 0, f[2], f[3], nil, 2)
            check_integer(f[1], f[3], 2)
            hms = true
        end
    end
    return h, m, s, hms
end

local function obj_nsec(obj)
    local nsec, usec, msec = obj.nsec, obj.usec, obj.msec
    local n = (nsec ~= nil and 1 or 0) + (usec ~= nil and 1 or 0) + (msec ~= nil and 1 or 0)
    if n == 0 then return nil end
    if n > 1 then
        error('only one of nsec, usec or msecs may be defined simultaneously', 3)
    end
    if usec ~= nil then
        check_range(usec, 0, 1e6, 'usec', nil, 1)
        check_integer(usec, 'usec', 1)
        return usec * 1e3
    elseif msec ~= nil then
        check_range(msec, 0, 1e3, 'msec', nil, 1)
        check_integer(msec, 'msec', 1)
        return msec * 1e6
    end
    check_range(nsec, 0, 1e9, 'nsec', nil, 1)
    check_integer(nsec, 'nsec', 1)
    return nsec
end

local compat_check = false

local function obj_epoch(obj, ymd, hms, nsec, from_set)
    local ts = obj.timestamp
    if ts == nil then return nil, nsec end
    if ymd then error('timestamp is not allowed if year/month/day provided', 3) end
    if hms then error('timestamp is not allowed if hour/min/sec provided', 3) end
    if (not from_set or compat_check) and type(ts) ~= 'number' then
        error(("bad timestamp ('number' expected, got '%s')"):format(type(ts)))
    end
    local epoch, frac = math_modf(ts)
    if frac < 0 then
        epoch, frac = epoch - 1, frac + 1
    end
    if nsec == nil then
        nsec = frac * 1e9
    elseif frac ~= 0 then
        error('only integer values allowed in timestamp if nsec, usec, or msecs provided', 3)
    end
    return epoch, nsec
end

local function checked_epoch(epoch, offset)
    epoch = epoch - offset * 60
    check_range(epoch, MIN_EPOCH, MAX_EPOCH, 'timestamp', nil, 1)
    return epoch
end

local function datetime_new(obj)
    if obj == nil then return dt_new(0, 0, 0, 0) end
    check_table(obj, 'datetime.new()')
    local y, M, d, ymd = obj_ymd(obj)
    local h, m, s, hms = obj_hms(obj)
    local nsec = obj_nsec(obj)
    local epoch
    epoch, nsec = obj_epoch(obj, ymd, hms, nsec)
    nsec = nsec or 0
    if epoch ~= nil then
        local off, idx = obj_tz(obj, epoch)
        off, idx = off or 0, idx or 0
        return dt_new(checked_epoch(epoch, off), nsec, off, idx)
    end
    local rd = EPOCH_RD
    if ymd then rd = rd_of_ymd(y or 1970, M or 1, d or 1) end
    local off, idx = obj_tz(obj, epoch_of_rd(rd))
    off, idx = off or 0, idx or 0
    local secs = hms and ((h or 0) * 3600 + (m or 0) * 60 + (s or 0)) or 0
    return dt_new(epoch_of_rd(rd) + secs - off * 60, nsec, off, idx)
end

local function local_secs(self)
    local epoch, _, off = dt_get(self)
    return epoch + off * 60
end

local datetime_set

local function datetime_cmp(a, b, raising)
    if not is_datetime(a) or not is_datetime(b) then
        if raising then error('incompatible types for datetime comparison', 3) end
        return nil
    end
    local ea, na = dt_get(a)
    local eb, nb = dt_get(b)
    local d = ea - eb
    return d ~= 0 and d or na - nb
end

local function increment(self, dir, iv)
    local rc = I.increment(self, dir, iv)
    if rc == 0 then return self end
    local op = dir >= 0 and 'addition' or 'subtraction'
    if rc < 0 then
        error(('%s makes date less than minimum allowed %s'):format(op, MIN_DATE_TEXT), 3)
    end
    error(('%s makes date greater than maximum allowed %s'):format(op, MAX_DATE_TEXT), 3)
end

local function copy_dt(d) return dt_new(dt_get(d)) end

local function totable_iv(d)
    local y, M, day, h, m, s = I.fields(d)
    local _, nsec = dt_get(d)
    return {year = y, month = M, week = 0, day = day, hour = h, min = m, sec = s,
            nsec = nsec, adjust = ADJUST.none}
end

local function datetime_sub_dt(a, b)
    local l, r = totable_iv(a), totable_iv(b)
    local _, _, oa = dt_get(a)
    local _, _, ob = dt_get(b)
    l.min = l.min - (oa - ob)
    return iv_combine(l, r, -1, 'subtraction')
end

local function check_dt_or_iv(o, what)
    check(is_datetime(o) or is_interval(o), 3,
          '%s: expected datetime or interval, but received %s', what, type(o))
end

local function sub(a, b)
    check_dt_or_iv(a, 'operator -')
    check(is_table(b) or is_datetime(b) or is_interval(b), 2,
          '%s: expected datetime, interval or table, but received %s', 'operator -', type(b))
    local a_iv = is_interval(a)
    local b_iv = is_table(b) or is_interval(b)
    if not a_iv and b_iv then
        return increment(copy_dt(a), -1, interval_from(b))
    elseif not a_iv and not b_iv then
        return datetime_sub_dt(a, b)
    elseif a_iv and b_iv then
        return iv_combine(iv_fields(a), iv_fields(interval_from(b)), -1, 'subtraction')
    end
    error('datetime:operator -() - incompatible type of arguments', 2)
end

local function add(a, b)
    if is_datetime(b) then a, b = b, a end
    check_dt_or_iv(a, 'operator +')
    check(is_table(b) or is_interval(b), 2,
          '%s: expected interval or table, but received %s', 'operator +', type(b))
    if not is_interval(a) then
        return increment(copy_dt(a), 1, interval_from(b))
    end
    return iv_combine(iv_fields(a), iv_fields(interval_from(b)), 1, 'addition')
end

local function datetime_parse_date(str)
    check_str(str, 'datetime.parse_date()')
    local rd, len = I.parse_date(str)
    if rd == nil then
        error(('invalid date format %s'):format(str), 2)
    end
    return dt_new(epoch_of_rd(rd), 0, 0, 0), len
end

local function parse_full(str)
    local d, len = I.parse_full(str)
    if d ~= nil then return d, len end
    if len == -TZ_NYI then
        error(("could not parse '%s' - nyi timezone"):format(str))
    elseif len == -TZ_AMBIGUOUS then
        error(("could not parse '%s' - ambiguous timezone"):format(str))
    end
    error(("could not parse '%s'"):format(str))
end

local function datetime_parse(str, obj)
    check_str(str, 'datetime.parse()')
    local fmt, tzoffset, tzname = '', nil, nil
    if obj ~= nil then
        check_table(obj, 'datetime.parse()')
        fmt, tzoffset, tzname = obj.format, obj.tzoffset, obj.tz
    end
    check(fmt == nil or type(fmt) == 'string', 2,
          '%s: expected string, but received %s', 'datetime.parse()', type(fmt))
    if tzoffset ~= nil then
        local off = get_timezone(tzoffset, 'tzoffset')
        check_range(off, TZOFFSET_MIN, TZOFFSET_MAX, 'tzoffset')
    end
    if tzname ~= nil then check_str(tzname, 'datetime.parse()') end
    if tzoffset and tzname then
        error('ambiguous timezone: both tzoffset and tz are specified')
    end
    local d, len
    if not fmt or fmt == '' or fmt == 'iso8601' or fmt == 'rfc3339' then
        d, len = parse_full(str)
    else
        d, len = I.strptime(str, fmt)
        if d == nil then
            error(("could not parse '%s' using '%s' format"):format(str, fmt))
        end
    end
    local _, _, off, idx = dt_get(d)
    if idx == 0 and off == 0 then
        datetime_set(d, {tzoffset = tzoffset, tz = tzname})
    end
    return d, len
end

local function shift(self, o, dir)
    check(is_table(o) or is_interval(o), 3, '%s: expected interval or table, but received %s',
          dir > 0 and 'datetime.add' or 'datetime.sub', type(o))
    return increment(self, dir, interval_from(o))
end

local function datetime_totable(self)
    check_date(self, 'datetime.totable()')
    local y, M, d, h, m, s, yday, wday, isdst = I.fields(self)
    local epoch, nsec, off = dt_get(self)
    return {year = y, month = M, yday = yday, wday = wday, day = d, hour = h,
            min = m, sec = s, isdst = isdst, nsec = nsec, tzoffset = off,
            tz = I.strftime(self, '%Z'), timestamp = epoch + nsec / 1e9}
end

function datetime_set(self, obj)
    check_date(self, 'datetime.set()')
    check_table(obj, 'datetime.set()')
    local y, M, d, ymd = obj_ymd(obj)
    local h, m, s, hms = obj_hms(obj)
    local nsec = obj_nsec(obj)
    local epoch
    epoch, nsec = obj_epoch(obj, ymd, hms, nsec, true)
    local _, nsec0, off0, idx0 = dt_get(self)
    if epoch ~= nil then
        local off, idx = obj_tz(obj, epoch)
        off = off or off0
        dt_set(self, checked_epoch(epoch, off), nsec, off, idx or idx0)
        return self
    end
    local y0, M0, d0 = I.fields(self)
    local lsecs = local_secs(self)
    local h0, m0, s0 = floor(lsecs / 3600) % 24, floor(lsecs / 60) % 60, lsecs % 60
    if ymd then
        local rd = rd_of_ymd(y or y0, M or M0, d or d0)
        lsecs = (rd - EPOCH_RD) * SECS_PER_DAY + lsecs % SECS_PER_DAY
    end
    local off, idx = obj_tz(obj, lsecs)
    if hms then
        lsecs = lsecs - lsecs % SECS_PER_DAY + (h or h0) * 3600 + (m or m0) * 60 + (s or s0)
    end
    off = off or off0
    dt_set(self, lsecs - off * 60, nsec or nsec0, off, idx or idx0)
    return self
end

local function datetime_format(self, fmt)
    check_date(self, 'datetime.format()')
    if fmt == nil then return tostring_dt(self) end
    check_str(fmt, 'datetime.strftime()')
    return I.strftime(self, fmt)
end

local dt_fields = {
    epoch = function(self) return (dt_get(self)) end,
    nsec = function(self) return select(2, dt_get(self)) end,
    tzoffset = function(self) return select(3, dt_get(self)) end,
    tzindex = function(self) return select(4, dt_get(self)) end,
    timestamp = function(self)
        local epoch, nsec = dt_get(self)
        return epoch + nsec / 1e9
    end,
    year = function(self) return (I.fields(self)) end,
    month = function(self) return select(2, I.fields(self)) end,
    day = function(self) return select(3, I.fields(self)) end,
    yday = function(self) return select(7, I.fields(self)) end,
    wday = function(self) return select(8, I.fields(self)) end,
    hour = function(self) return floor((local_secs(self) / 3600) % 24) end,
    min = function(self) return floor((local_secs(self) / 60) % 60) end,
    sec = function(self) return (dt_get(self)) % 60 end,
    usec = function(self) return select(2, dt_get(self)) / 1e3 end,
    msec = function(self) return select(2, dt_get(self)) / 1e6 end,
    isdst = function(self) return select(9, I.fields(self)) end,
    tz = function(self) return I.strftime(self, '%Z') end,
}

local dt_methods = {
    format = datetime_format,
    totable = datetime_totable,
    set = datetime_set,
    add = function(self, o) return shift(self, o, 1) end,
    sub = function(self, o) return shift(self, o, -1) end,
}

dt_mt.__tostring = tostring_dt
dt_mt.__eq = function(a, b) return datetime_cmp(a, b, false) == 0 end
dt_mt.__lt = function(a, b) return datetime_cmp(a, b, true) < 0 end
dt_mt.__le = function(a, b) return datetime_cmp(a, b, true) <= 0 end
dt_mt.__sub = sub
dt_mt.__add = add
dt_mt.__index = function(self, key)
    local f = dt_fields[key]
    if f ~= nil then return f(self) end
    return dt_methods[key]
end

local function interval_totable(self)
    if not is_interval(self) then
        return error('interval.totable(): expected interval, but received ' .. type(self), 2)
    end
    local t = iv_fields(self)
    t.adjust = ADJUST_NAME[t.adjust]
    return t
end

local function interval_cmp(a, b, raising)
    if not is_interval(a) or not is_interval(b) then
        if raising then error('incompatible types for interval comparison', 3) end
        return nil
    end
    local fa, fb = iv_fields(a), iv_fields(b)
    for _, k in ipairs(ORDER) do
        local d = fa[k] - fb[k]
        if d ~= 0 then return d end
    end
    return 0
end

local IV_INDEX = {year = 1, month = 2, week = 3, day = 4, hour = 5, min = 6, sec = 7,
                  nsec = 8, adjust = 9}
local iv_methods = {totable = interval_totable, __serialize = interval_tostring}

iv_mt.__tostring = interval_tostring
iv_mt.__eq = function(a, b) return interval_cmp(a, b, false) == 0 end
iv_mt.__lt = function(a, b) return interval_cmp(a, b, true) < 0 end
iv_mt.__le = function(a, b) return interval_cmp(a, b, true) <= 0 end
iv_mt.__sub = sub
iv_mt.__add = add
iv_mt.__index = function(self, key)
    if key == 'usec' then return floor(select(8, iv_get(self)) / 1e3) end
    if key == 'msec' then return floor(select(8, iv_get(self)) / 1e6) end
    local n = IV_INDEX[key]
    if n ~= nil and not rawequal(type(self), 'cdata') then
        return (select(n, iv_get(self)))
    end
    return iv_methods[key]
end

local interval = {new = interval_new, is_interval = is_interval}

return setmetatable({
    new = datetime_new,
    interval = setmetatable(interval, interval),
    now = I.now,
    parse = datetime_parse,
    parse_date = datetime_parse_date,
    is_datetime = is_datetime,
    TZ = TZ,
}, {})
