//! `datetime` on both engines (Tarantool's own `datetime.test.lua` and
//! `datetime_test.lua` run on LuaJIT in `tests/tarantool`; these are their
//! main paths, on Lua 5.4 too, where a datetime is a userdata).

#[path = "support/lua_run.rs"]
mod lua_run;

fn run(code: &str) {
    lua_run::run_lua("lua_datetime", &[code]);
}

#[test]
fn datetime_new_fields_and_text() {
    run(r#"
        local dt = require('datetime')
        local d = dt.new{year = 2021, month = 8, day = 18, hour = 16, min = 57,
                         sec = 8, nsec = 981725000, tzoffset = 180}
        eq(tostring(d), '2021-08-18T16:57:08.981725+0300', 'tostring')
        eq(d.epoch, 1629295028, 'epoch')
        eq(d.nsec, 981725000, 'nsec')
        eq(d.tzoffset, 180, 'tzoffset')
        eq(d.year, 2021, 'year')
        eq(d.month, 8, 'month')
        eq(d.day, 18, 'day')
        eq(d.hour, 16, 'hour')
        eq(d.wday, 4, 'wday')
        eq(d.yday, 230, 'yday')
        eq(d:format('%d/%m/%Y %H:%M:%S.%3f %z %a'), '18/08/2021 16:57:08.981 +0300 Wed',
           'format')
        eq(tostring(dt.new()), '1970-01-01T00:00:00Z', 'epoch')
        eq(tostring(dt.new{timestamp = 1.5}), '1970-01-01T00:00:01.500Z', 'timestamp')
        local t = d:totable()
        eq(t.year, 2021, 'totable year')
        eq(t.isdst, false, 'totable isdst')
        eq(dt.is_datetime(d), true, 'is_datetime')
        eq(dt.is_datetime({}), false, 'is_datetime of a table')
        local ok, err = pcall(dt.new, {month = 13})
        eq(ok, false, 'month 13')
        assert(err:find('value 13 of month is out of allowed range %[1, 12%]'), err)
        ok, err = pcall(dt.new, 1)
        assert(err:find('datetime.new%(%): expected table, but received number'), err)
        ok, err = pcall(dt.new, {year = 2021, month = 2, day = 30})
        assert(err:find('invalid number of days 30 in month 2 for 2021'), err)
        assert(dt.now() > d, 'now')
    "#);
}

#[test]
fn datetime_parses_iso_strptime_and_zones() {
    run(r#"
        local dt = require('datetime')
        local d, len = dt.parse('1970-01-01T02:00:00+0200')
        eq(d.epoch, 0, 'iso epoch')
        eq(len, 24, 'iso length')
        d = dt.parse('2012-12-24T00:00:00 Europe/Moscow')
        eq(d.tzoffset, 240, 'Moscow in 2012')
        eq(d.tz, 'Europe/Moscow', 'tz name')
        eq(tostring(d), '2012-12-24T00:00:00 Europe/Moscow', 'named tostring')
        d = dt.parse('1970-01-01T03:00:00.125 MSK', {format = '%FT%T.%f %Z'})
        eq(tostring(d), '1970-01-01T03:00:00.125 MSK', 'strptime with %Z')
        eq(tostring(dt.parse('1998', {format = '%Y', tzoffset = '+03:00'})),
           '1998-01-01T00:00:00+0300', 'tzoffset override')
        local p, n = dt.parse_date('2012-W52-1')
        eq(tostring(p), '2012-12-24T00:00:00Z', 'week date')
        eq(n, 10, 'week date length')
        local ok, err = pcall(dt.parse, '1970-01-01T00:00:00 AT')
        assert(not ok and err:find("ambiguous timezone"), err)
        ok, err = pcall(dt.parse_date, '2012-13-24')
        assert(not ok and err:find('invalid date format 2012%-13%-24'), err)
        eq(dt.TZ.MSK, 238, 'TZ by name')
        eq(dt.TZ[238], 'MSK', 'TZ by id')
        local s = dt.new{year = 2021, month = 7, day = 1, tz = 'Europe/Moscow'}
        eq(s.isdst, false, 'Moscow has no DST since 2011')
        local ny = dt.new{year = 2021, month = 7, day = 1, tz = 'America/New_York'}
        eq(ny.tzoffset, -240, 'New York summer offset')
        eq(ny.isdst, true, 'New York summer DST')
    "#);
}

#[test]
fn datetime_arithmetic_and_intervals() {
    run(r#"
        local dt = require('datetime')
        local iv = dt.interval.new{year = 1, day = 127, min = 15}
        eq(tostring(iv), '+1 years, 127 days, 15 minutes', 'interval text')
        eq(iv.year, 1, 'interval field')
        eq(iv:totable().adjust, 'none', 'interval adjust')
        local d = dt.new{year = 2024, month = 1, day = 31}
        eq(tostring(d + dt.interval.new{month = 1}), '2024-02-29T00:00:00Z', 'month none')
        eq(tostring(d:add{month = 1, adjust = 'excess'}), '2024-03-02T00:00:00Z', 'excess')
        local feb = dt.new{year = 2023, month = 2, day = 28}
        eq(tostring(feb:add{month = 1, adjust = 'last'}), '2023-03-31T00:00:00Z', 'last')
        local a, b = dt.new{year = 2020}, dt.new{year = 2021, hour = 1}
        eq(tostring(b - a), '+1 years, 1 hours', 'datetime - datetime')
        eq(tostring(iv + iv), '+2 years, 254 days, 30 minutes', 'interval + interval')
        eq(dt.interval.is_interval(iv - iv), true, 'interval - interval')
        assert(a < b and a <= b and a ~= b, 'comparisons')
        local ok, err = pcall(function() return a < 1 end)
        assert(not ok and err:find('incompatible types for datetime comparison'), err)
        ok, err = pcall(function() return dt.new{year = 5879611} + {year = 1} end)
        assert(not ok and err:find('addition makes date greater than maximum allowed'), err)
        eq(tostring(d:set{year = 2000, day = 1}), '2000-03-01T00:00:00Z', 'set')
    "#);
}

#[test]
fn datetime_msgpack_json_yaml() {
    run(r#"
        local dt = require('datetime')
        local msgpack, json, yaml = require('msgpack'), require('json'), require('yaml')
        local d = dt.new{year = 2021, month = 8, day = 18, nsec = 5, tzoffset = 180}
        local e = msgpack.encode(d)
        eq(#e, 18, 'ext 4 with the tail')
        eq(e:sub(1, 2), '\xd8\x04', 'fixext 16 of type 4')
        eq(msgpack.decode(e), d, 'round trip')
        eq(msgpack.decode(e).tzoffset, 180, 'tzoffset kept')
        eq(#msgpack.encode(dt.new()), 10, 'ext 4 without the tail')
        local iv = dt.interval.new{year = 1, day = 127, min = 15}
        eq(msgpack.encode(iv), '\xc7\x09\x06\x04\x00\x01\x03\x7f\x05\x0f\x08\x01',
           'ext 6 as Tarantool')
        eq(msgpack.decode(msgpack.encode(iv)), iv, 'interval round trip')
        eq(json.encode({d}), '["2021-08-18T00:00:00.000000005+0300"]', 'json')
        eq(yaml.encode({iv}), '---\n- +1 years, 127 days, 15 minutes\n...\n', 'yaml')
        local ok, err = pcall(msgpack.decode, '\xd7\x04\x00\x00\x00\x00\x00\x00\x00\x80')
        assert(not ok and tostring(err):find('invalid extension'), tostring(err))
    "#);
}

#[test]
fn datetime_bad_input_is_an_error_not_a_panic() {
    run(r#"
        local dt, msgpack = require('datetime'), require('msgpack')
        math.randomseed(7)
        local alphabet = '0123456789-+:.,TWQZ zMSKEurope/Moscow%YmdHMSfzZjGgab'
        local function check(ok, err)
            assert(ok or not tostring(err):find('panic'), tostring(err))
        end
        for i = 1, 20000 do
            local t = {}
            for j = 1, math.random(0, 20) do
                local k = math.random(#alphabet)
                t[j] = alphabet:sub(k, k)
            end
            local s = table.concat(t)
            check(pcall(dt.parse, s))
            check(pcall(dt.parse_date, s))
            check(pcall(dt.parse, s, {format = s}))
            check(pcall(dt.new, {tz = s}))
            check(pcall(function() return dt.new():format(s) end))
            check(pcall(msgpack.decode, string.char(0xc7, #s, 4) .. s))
            check(pcall(msgpack.decode, string.char(0xc7, #s, 6) .. s))
        end
    "#);
}
