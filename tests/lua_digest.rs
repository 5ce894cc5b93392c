//! The library modules of issue 27 beyond what Tarantool's own tests
//! check: `digest.pbkdf2` runs on the blocking pool while the other fibers
//! go on, a cipher stream gives the same bytes however its input is cut,
//! a crc32 object resumes where another stopped, `csv` reads a value back
//! from its `dump`, `pickle` round-trips, `utf8` walks ill-formed bytes as
//! one unit each.

#[path = "support/lua_run.rs"]
mod lua_run;

const PRELUDE: &str = r#"
local fiber = require('fiber')
"#;

fn run(code: &str) {
    lua_run::run_lua("lua_digest", &[PRELUDE, code]);
}

#[test]
fn pbkdf2_lets_other_fibers_run() {
    run(r#"
        local digest = require('digest')
        local ticks, done = 0, false
        local ticker = fiber.new(function()
            while not done and ticks < 1e7 do ticks = ticks + 1; fiber.yield() end
        end)
        ticker:set_joinable(true)
        fiber.yield()
        local before = ticks
        -- The main fiber parks until a pool thread has the key.
        local key = digest.pbkdf2('password', 'salt', 20000, 32)
        eq(#key, 32, 'key length')
        assert(ticks > before, 'the ticker ran while pbkdf2 worked')
        eq(digest.pbkdf2_hex('password', 'salt', 4096, 32),
           'c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a',
           'RFC 7914 vector')
        done = true
        ticker:join()
    "#);
}

#[test]
fn cipher_streams_do_not_depend_on_how_input_is_cut() {
    run(r#"
        local crypto = require('crypto')
        local msg = string.rep('0123456789abcdef', 5) .. 'tail'
        for _, algo in ipairs({'aes128', 'aes192', 'aes256', 'des'}) do
            local klen = ({aes128 = 16, aes192 = 24, aes256 = 32, des = 8})[algo]
            local key = string.rep('k', klen)
            for _, mode in ipairs({'ecb', 'cbc', 'cfb', 'ofb'}) do
                local iv = mode == 'ecb' and '' or string.rep('i', algo == 'des' and 8 or 16)
                local whole = crypto.cipher[algo][mode].encrypt(msg, key, iv)
                local c = crypto.cipher[algo][mode].encrypt.new(key, iv)
                local parts = {}
                for i = 1, #msg, 7 do
                    parts[#parts + 1] = c:update(msg:sub(i, i + 6))
                end
                parts[#parts + 1] = c:result()
                eq(table.concat(parts), whole, algo .. '.' .. mode .. ' in pieces')
                eq(crypto.cipher[algo][mode].decrypt(whole, key, iv), msg,
                   algo .. '.' .. mode .. ' round trip')
            end
        end
        local ok, err = pcall(crypto.cipher.aes128.cbc.decrypt, 'short', string.rep('k', 16),
                              string.rep('i', 16))
        eq(ok, false, 'a partial block')
        eq(err.type, 'CryptoError', 'its error type')
        eq(err.message, 'OpenSSL error: wrong final block length', 'its message')
    "#);
}

#[test]
fn crc32_objects_resume_and_match_vshard() {
    run(r#"
        local digest = require('digest')
        local c = digest.crc32.new()
        c:update('db095e64-9972-400b-a65b-d44047fcb812')
        -- vshard's bucket_id_strcrc32 of that key, 30000 buckets
        -- (master's digest_crc32_recording_test).
        eq(c:result() % 30000 + 1, 29526, 'bucket id')
        local d = digest.crc32.new()
        d.value = digest.crc32('db095e64-')
        d:update('9972-400b-a65b-d44047fcb812')
        eq(d:result(), c:result(), 'resumed from a value')
        eq(digest.crc32(12345), digest.crc32('12345'), 'a number is its text')
        local ok, err = pcall(c.update, c, {})
        eq(ok, false, 'a table')
        eq(tostring(err), 'Usage: crc32:update(string)', 'its message')
    "#);
}

#[test]
fn csv_and_pickle_round_trip() {
    run(r#"
        local csv, pickle = require('csv'), require('pickle')
        local rows = {{'a b', ' lead', 'q"uote'}, {'x,y', 'line\nbreak', ''}}
        local back = csv.load(csv.dump(rows))
        eq(#back, 2, 'rows')
        eq(back[1][1], 'a b', 'inner space kept')
        eq(back[1][3], 'q"uote', 'quote')
        eq(back[2][1], 'x,y', 'delimiter quoted')
        eq(back[2][2], 'line\nbreak', 'line break quoted')
        local n = 0
        for i, row in csv.iterate('h1,h2\n1,2\n3,4', {skip_head_lines = 1}) do
            n = n + 1
            eq(row[1], tostring(2 * i - 1), 'iterated row ' .. i)
        end
        eq(n, 2, 'iterated rows')
        local a, b, c, d, s = pickle.unpack('bnNda', pickle.pack('bnNda', 7, 513, 65536, 0.5, 'end'))
        eq(a, 7, 'b'); eq(b, 513, 'n'); eq(c, 65536, 'N'); eq(d, 0.5, 'd'); eq(s, 'end', 'a')
        eq(pickle.pack('n', 1), '\0\1', 'big-endian 16')
        local ok, err = pcall(pickle.pack, 'i', 1.5)
        eq(ok, false, 'a fraction')
        eq(err.message, 'pickle.pack: expected 32-bit int', 'its message')
    "#);
}

#[test]
fn utf8_counts_ill_formed_bytes_as_units() {
    run(r#"
        eq(utf8.len('ab\xFFc'), nil, 'len stops')
        eq(select(2, utf8.len('ab\xFFc')), 3, 'the bad byte (1-based)')
        eq(utf8.sub('ёжик', 2, 3), 'жи', 'sub')
        eq(utf8.sub('a\xE2\x82b', 2, 2), '\xE2\x82', 'a truncated sequence is one unit')
        eq(utf8.upper('straße'), 'STRASSE', 'full case mapping')
        eq(utf8.lower('a\xFFB'), 'a\xFFb', 'bad bytes pass through')
        eq(utf8.casecmp('Ёж', 'ёЖ'), 0, 'casecmp')
        eq(utf8.cmp('a', 'B'), -1, 'collation, not bytes')
        local codes = {}
        for _, c in utf8.next, 'aё' do codes[#codes + 1] = c end
        eq(#codes, 2, 'next walks'); eq(codes[2], 0x451, 'code')
    "#);
}
