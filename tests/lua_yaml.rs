//! `yaml` and the global `tonumber64` on both engines (Tarantool's own
//! `yaml.test.lua` is LuaJIT code, and master tests `tonumber64` in
//! `box/misc.test.lua`, which needs storage): the cases of those tests,
//! with what Lua 5.4 gives where LuaJIT gives cdata.

#[path = "support/lua_run.rs"]
mod lua_run;

const PRELUDE: &str = r#"
local lua54 = jit == nil
"#;

fn run(code: &str) {
    lua_run::run_lua("lua_yaml", &[PRELUDE, code]);
}

#[test]
fn yaml_encodes_as_tarantool() {
    run(r#"
        local yaml = require('yaml')
        eq(yaml.encode({10, 15, 20}), '---\n- 10\n- 15\n- 20\n...\n', 'block array')
        eq(yaml.encode({setmetatable({10, 15}, {__serialize = 'seq'})}),
           '---\n- [10, 15]\n...\n', 'flow array')
        eq(yaml.encode({setmetatable({k = 'v'}, {__serialize = 'map'})}),
           "---\n- {'k': 'v'}\n...\n", 'flow map')
        eq(yaml.encode({k = 'v'}), '---\nk: v\n...\n', 'block map')
        eq(yaml.encode({'10', 'true', 'null', 'x'}),
           "---\n- '10'\n- 'true'\n- 'null'\n- x\n...\n", 'quoted strings')
        eq(yaml.encode('a\nb'), '--- |-\n  a\n  b\n...\n', 'literal block')
        eq(yaml.encode({1.5, 2^53, -3, yaml.NULL, true}),
           '---\n- 1.5\n- 9007199254740992\n- -3\n- null\n- true\n...\n', 'scalars')
        local t = {}
        eq(yaml.encode({t, t}), '---\n- &0 []\n- *0\n...\n', 'anchors')
        eq(yaml.encode(300, {tag_handle = '!push!', tag_prefix = 'tag:x,2018'}),
           '%TAG !push! tag:x,2018\n--- 300\n...\n', 'tag')
        local r, err = yaml.encode(1, {tag_handle = '!push', tag_prefix = 'p'})
        eq(r, nil, 'refused tag')
        eq(err, "tag handle must end with '!'", 'refused tag message')
        eq(yaml.encode('\xff\xfe'), '--- !!binary //4=\n...\n', 'not UTF-8')
        local ok, e = pcall(yaml.encode, function() end)
        eq(ok, false, 'function')
        eq(e, "unsupported Lua type 'function'", 'function message')
        local s = yaml.new()
        s.cfg{encode_use_tostring = true}
        assert(s.encode(function() end):find('^%-%-%- .function: '), 'use_tostring')
        eq(s.cfg.encode_use_tostring, true, 'cfg field')
        eq(yaml.cfg.encode_use_tostring, false, 'module cfg untouched')
    "#);
}

#[test]
fn yaml_decodes_as_tarantool() {
    run(r#"
        local yaml = require('yaml')
        local v = yaml.decode('---\n- 1\n- a\n- {x: 2}\n- yes\n- ~\n- 1.5\n...')
        eq(v[1], 1, 'int')
        eq(v[2], 'a', 'str')
        eq(v[3].x, 2, 'map')
        eq(v[4], true, 'yes')
        eq(v[5], yaml.NULL, 'null')
        eq(v[6], 1.5, 'float')
        eq(getmetatable(v).__serialize, 'seq', 'array_mt')
        local big = yaml.decode('9223372036854775807')
        if lua54 then
            eq(math.type(big), 'integer', 'big integer')
            eq(big, math.maxinteger, 'big value')
        else
            eq(type(big), 'cdata', 'big cdata')
            eq(tostring(big), '9223372036854775807ULL', 'big value (strtoll stops at LLONG_MAX)')
        end
        eq(yaml.decode('99999999999999'), 99999999999999, 'below DBL_INT_MAX')
        local a = yaml.decode('a: &x [1]\nb: *x\n')
        eq(a.a, a.b, 'alias')
        local x, y = yaml.decode('--- 1\n--- 2\n')
        eq(x, 1, 'first document')
        eq(y, 2, 'second document')
        eq(yaml.decode('!!binary aGVsbG8='), 'hello', 'binary')
        local ok, e = pcall(yaml.decode, 'a: b: c')
        eq(ok, false, 'malformed')
        eq(e, 'mapping values are not allowed in this context at document: 1, line: 1, column: 5\n',
           'message')
        ok, e = pcall(yaml.decode)
        eq(e, 'Usage: yaml.decode(document, [{tag_only = boolean}])', 'usage')
        local h, p = yaml.decode('%TAG !t! tag:x\n--- 1\n', {tag_only = true})
        eq(h, '!t!', 'handle')
        eq(p, 'tag:x', 'prefix')
        local s = yaml.new()
        s.cfg{decode_invalid_numbers = false}
        ok, e = pcall(s.decode, 'inf')
        eq(e, 'number must not be NaN or Inf', 'invalid numbers')
        -- Deep nesting is an error, never a crash.
        ok = pcall(yaml.decode, string.rep('[', 100000))
        eq(ok, false, 'deep nesting')
    "#);
}

#[test]
fn tonumber64_reads_as_tarantool() {
    run(r#"
        eq(tonumber64(1), 1, 'number')
        eq(tonumber64('123'), 123, 'string')
        eq(tonumber64('invalid number'), nil, 'invalid')
        eq(tonumber64('0x12'), 18, 'hex')
        eq(tonumber64('0x12', 16), 18, 'hex base 16')
        eq(tonumber64('0x12', 17), nil, 'hex base 17')
        eq(tonumber64('0b01'), 1, 'binary')
        eq(tonumber64('0b01', 3), nil, 'binary base 3')
        eq(tonumber64('  0b1  '), 1, 'spaces')
        eq(tonumber64('0b111111111111111111'), 262143, 'long binary')
        eq(tonumber64('20', 36), 72, 'base 36')
        eq(tonumber64('', 10), nil, 'empty')
        eq(tonumber64(' -0x16 '), -22, 'negative hex')
        eq(tonumber64('-0b11'), -3, 'negative binary')
        eq(tonumber64('18446744073709551616'), nil, 'past uint64')
        eq(tonumber64('-9223372036854775809'), nil, 'past int64')
        eq(tonumber64('0'), 0, 'zero')
        eq(tonumber64({}), nil, 'table')
        local ok, e = pcall(tonumber64)
        eq(tostring(e), 'Usage: tonumber64(arg)', 'usage')
        ok, e = pcall(tonumber64, '0b1', 'badbase')
        eq(tostring(e), 'expected integer as 2 argument', 'bad base')
        ok, e = pcall(tonumber64, '12345', 123)
        eq(tostring(e), 'invalid argument 2, base out of range', 'big base')
        ok, e = pcall(tonumber64, 100, 16)
        eq(tostring(e), 'argument 1 is not a string', 'number in base 16')
        if lua54 then
            eq(math.type(tonumber64('12345678901234567')), 'integer', 'integer')
            eq(tonumber64('18446744073709551615'), -1, 'uint64 bits')
            eq(tonumber64('-1ULL'), -1, 'ULL wraps')
            eq(tonumber64('-9223372036854775808'), math.mininteger, 'int64 min')
        else
            -- LuaJIT's 64-bit literals, which Lua 5.4 cannot compile.
            assert(load([[
            local eq = ...
            eq(type(tonumber64('4294967296')), 'number', 'small is a number')
            eq(tostring(tonumber64('12345678901234')), '12345678901234', '14 digits')
            eq(tostring(tonumber64('123456789012345')), '123456789012345ULL', '15 digits')
            eq(tostring(tonumber64('18446744073709551615')), '18446744073709551615ULL', 'max')
            eq(tostring(tonumber64('-9223372036854775808')), '-9223372036854775808LL', 'min')
            eq(tonumber64('-1ULL') == -1ULL, true, '-1ULL')
            eq(tonumber64('-1LL') == -1LL, true, '-1LL')
            eq(tonumber64('12345678910ULL') == 12345678910ULL, true, 'ULL')
            eq(tonumber64(-1ULL) == -1ULL, true, 'cdata as it is')
            eq(tonumber64(100LL, 10) == 100LL, true, 'cdata base 10')
            eq(tostring(tonumber64(tonumber64(3))), '3', 'transitive')
            ]]))(eq)
        end
    "#);
}
