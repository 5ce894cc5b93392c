//! The Lua `digest` module: Tarantool master's `src/lua/digest.lua` and
//! `digest.c`.
//!
//! - `digest.crc32(str)`, `digest.crc32_update(crc, str)`,
//!   `digest.crc32.new()` (`:update(str)`, `:result()`, `:clear()`,
//!   `:copy()`), `digest.crc32.crc_begin`: CRC-32C as Tarantool computes
//!   it (the register from `0xFFFFFFFF`, not inverted at the end; see
//!   [`checksum`]).
//! - `digest.md4`, `md5`, `sha1`, `sha224`, `sha256`, `sha384`, `sha512`
//!   (bytes) and their `_hex` (lower-case hex): `crypto.digest`'s.
//! - `digest.base64_encode(str [, {urlsafe, nopad, nowrap}])`,
//!   `base64_decode(str)` ([`base64`]).
//! - `digest.pbkdf2(pass, salt [, iters [, len]])` (PBKDF2-HMAC-SHA256,
//!   100000 iterations and 128 bytes by default, at most 128) and
//!   `pbkdf2_hex`: run on the cord's blocking pool while only the calling
//!   fiber waits, as master runs it on a `coio` thread.
//! - `digest.murmur(str)` (seed 13), `digest.murmur.new({seed = n})`
//!   (`:update`, `:result`, `:clear`, `:copy`).
//! - `digest.guava(state, buckets)`: Guava's consistent hash.
//! - `digest.xxhash32(str [, seed])`, `digest.xxhash64(str [, seed])`,
//!   and `.new([seed])` (`:update`, `:result`, `:clear([seed])`,
//!   `:copy()`). `xxhash64` gives a `uint64_t` cdata on LuaJIT (as
//!   master's FFI call does), an integer with the same 64 bits on Lua 5.4.
//! - `digest.urandom(n)`: `n` random bytes from the OS (`getrandom`).
//! - `digest.aes256cbc.encrypt(str, key, iv)` / `decrypt`:
//!   `crypto.cipher.aes256.cbc`'s.
//!
//! Wrong arguments raise master's errors: `IllegalParams` error objects
//! ("Usage: digest.crc32(string)", "state should be a number"), or, for
//! the digests shared with `crypto`, its strings ("Usage:
//! digest.sha1(string)" from `builtin/crypto.lua`).
//!
//! # Why these crates
//!
//! Each algorithm is a maintained crate where one fits Tarantool's
//! definition exactly: `crc32c` (hardware CRC-32C where the CPU has it;
//! only the register's inversion differs, undone in one line),
//! `xxhash-rust` (xxHash32/64 with copyable streaming states), `pbkdf2`
//! with `hmac` and `sha2` (RustCrypto, as `crypto` uses), `getrandom`
//! (the OS's generator, as master's `random_bytes`), and `base64` for
//! encoding. Two are ours, because no crate has Tarantool's behaviour:
//! the lenient base64 decoder (skips every byte outside both alphabets)
//! and MurmurHash3's incremental `PMurHash` state (the `murmur3` crate
//! hashes a whole reader, with no state to copy or resume), about 40
//! lines each; and Guava's hash, 15 lines with Tarantool's quirks.
//!
//! Hot functions (`crc32` and `crc32:update`, the digests, `murmur`,
//! `xxhash`) read the Lua string in place, with no copy.
//!
//! Differences from Tarantool:
//!
//! - A murmur object keeps its state in the number fields `h1`, `carry`
//!   and `total_length` (master: `seed` and `value`, `int[1]` cdata).
//! - An xxHash object's `value` is a userdata (master: an
//!   `XXH*_state_t` cdata).

pub(crate) mod base64;
mod checksum;

use std::ffi::c_int;

use crate::capi::lua::{push_uint64_cdata, to_uint64};
use crate::modules::crypto::ctx::{self, State};
use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};
use luafiber_runtime::io as rio;

const CHUNK: &str = include_str!("digest.lua");

/// The functions `digest.lua` builds on.
const INTERNAL: &[Reg] = &[
    (c"raise", digest_raise),
    (c"crc32_init", crc32_init),
    (c"crc32_update", crc32_update),
    (c"murmur", murmur),
    (c"murmur_process", murmur_process),
    (c"murmur_result", murmur_result),
    (c"guava", guava),
    (c"base64_encode", base64_encode),
    (c"base64_decode", base64_decode),
    (c"urandom", urandom),
    (c"pbkdf2", pbkdf2),
    (c"xxh", xxh),
    (c"xxh_new", xxh_new),
    (c"xxh_update", crate::modules::crypto::ctx_update),
    (c"xxh_result", xxh_result),
    (c"xxh_reset", xxh_reset),
    (c"xxh_copy", xxh_copy),
];

lua_fn! {
    /// The `digest` module's loader (`package.preload.digest`); the chunk
    /// requires `crypto`.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        s.load(CHUNK, c"@builtin/digest.lua").map_err(|()| Raise::Top)?;
        let internal = s.new_table(0, INTERNAL.len() as i32);
        s.set_funcs(internal, INTERNAL);
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}

/// An `IllegalParams` error with `msg`.
fn usage(msg: &str) -> Raise {
    Raise::illegal(msg)
}

lua_fn! {
    /// `raise(msg)`: raises an `IllegalParams` error object (master's
    /// `box.error(box.error.ILLEGAL_PARAMS, msg, 2)`); `digest.lua`
    /// tail-calls it, so the object is located at the user's call.
    fn digest_raise(s: &mut Stack) {
        let msg = s.to_str(1).map(|b| String::from_utf8_lossy(b).into_owned());
        Err(usage(msg.as_deref().unwrap_or("Illegal parameters")))
    }
}

/// A CRC as `lua_tointeger` reads it into a `uint32_t` (0 for a
/// non-number).
fn crc_arg(s: &Stack, idx: c_int) -> u32 {
    s.to_number(idx).map_or(0, |n| n as i64 as u32)
}

lua_fn! {
    /// `crc32_init(CRC32)`: master's `crc32.internal`: a table with
    /// `__call` (a closure over `CRC32`, whose `crc_begin` it starts from)
    /// and `update` (the method).
    fn crc32_init(s: &mut Stack) {
        s.settop(1);
        s.ensure(4)?;
        let t = s.new_table(0, 2);
        s.push_value(1);
        s.push_closure(crc32_call, 1);
        s.set_field(t, c"__call");
        s.push_cfunction(crc32_method_update);
        s.set_field(t, c"update");
        Ok(1)
    }
}

lua_fn! {
    /// `digest.crc32(str)` (`CRC32.__call`): the CRC of `str` from
    /// `CRC32.crc_begin`; a number is taken as its text, as
    /// `lua_tolstring` does.
    fn crc32_call(s: &mut Stack) {
        if s.coerce_str(2).is_none() {
            return Err(usage("Usage: digest.crc32(string)"));
        }
        s.rawget_field(Stack::upvalue(1), c"crc_begin");
        let begin = crc_arg(s, -1);
        let crc = checksum::crc32c(begin, s.to_str(2).unwrap_or_default());
        s.push_int(i64::from(crc));
        Ok(1)
    }
}

lua_fn! {
    /// `crc:update(str)`: feeds `str` to `self.value`.
    fn crc32_method_update(s: &mut Stack) {
        if s.coerce_str(2).is_none() {
            return Err(usage("Usage: crc32:update(string)"));
        }
        if s.type_of(1) != mlua::ffi::LUA_TTABLE {
            return Err(usage("Usage: crc32:update(string)"));
        }
        s.rawget_field(1, c"value");
        let begin = crc_arg(s, -1);
        let crc = checksum::crc32c(begin, s.to_str(2).unwrap_or_default());
        s.push_int(i64::from(crc));
        s.set_field(1, c"value");
        Ok(0)
    }
}

lua_fn! {
    /// `crc32_update(crc, str)`: the CRC of `str` from `crc` (checked by
    /// `digest.lua`).
    fn crc32_update(s: &mut Stack) {
        let begin = crc_arg(s, 1);
        let data = s.to_str(2).ok_or_else(|| usage("Usage: digest.crc32_update(string)"))?;
        let crc = checksum::crc32c(begin, data);
        s.push_int(i64::from(crc));
        Ok(1)
    }
}

/// A `uint32_t` argument as C reads a Lua number (truncated, modulo
/// 2^32).
fn u32_arg(s: &Stack, idx: c_int) -> u32 {
    s.to_number(idx).map_or(0, |n| n as i64 as u32)
}

lua_fn! {
    /// `murmur(seed, str)`: `PMurHash32` at once.
    fn murmur(s: &mut Stack) {
        let seed = u32_arg(s, 1);
        let data = s.to_str(2).ok_or_else(|| usage("Usage: digest.murmur(string)"))?;
        let (h1, carry) = checksum::murmur_process(seed, 0, data);
        let h = checksum::murmur_result(h1, carry, data.len() as u32);
        s.push_int(i64::from(h));
        Ok(1)
    }
}

lua_fn! {
    /// `murmur_process(h1, carry, str)`: the state after `str`: `h1,
    /// carry`.
    fn murmur_process(s: &mut Stack) {
        let (h1, carry) = (u32_arg(s, 1), u32_arg(s, 2));
        let data = s.to_str(3).ok_or_else(|| usage("Usage: murhash:update(string)"))?;
        let (h1, carry) = checksum::murmur_process(h1, carry, data);
        s.push_int(i64::from(h1));
        s.push_int(i64::from(carry));
        Ok(2)
    }
}

lua_fn! {
    /// `murmur_result(h1, carry, total_length)`: the hash.
    fn murmur_result(s: &mut Stack) {
        let h = checksum::murmur_result(u32_arg(s, 1), u32_arg(s, 2), u32_arg(s, 3));
        s.push_int(i64::from(h));
        Ok(1)
    }
}

lua_fn! {
    /// `guava(state, buckets)`: numbers, checked by `digest.lua`; `state`
    /// may be a 64-bit integer cdata.
    fn guava(s: &mut Stack) {
        let state = to_uint64(s, 1).unwrap_or(0);
        let buckets = s.to_number(2).map_or(0, |n| n as i64 as i32);
        s.push_int(i64::from(checksum::guava(state, buckets)));
        Ok(1)
    }
}

lua_fn! {
    /// `base64_encode(str, options)`: `options` the mask of Tarantool's
    /// bits.
    fn base64_encode(s: &mut Stack) {
        let options = u32_arg(s, 2);
        let bin = s.to_str(1).ok_or_else(|| usage("Usage: digest.base64_encode(string[, table])"))?;
        let out = base64::encode(bin, options);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `base64_decode(str)`.
    fn base64_decode(s: &mut Stack) {
        let text = s.to_str(1).ok_or_else(|| usage("Usage: digest.base64_decode(string)"))?;
        let out = base64::decode(text);
        s.push_bytes(&out);
        Ok(1)
    }
}

/// Largest `digest.urandom` (1 GiB): a larger request is surely a mistake
/// and would only fail on memory.
const URANDOM_MAX: f64 = (1u64 << 30) as f64;

lua_fn! {
    /// `urandom(n)`: `n` bytes from the OS's generator.
    fn urandom(s: &mut Stack) {
        let n = s
            .to_number_coerced(1)
            .filter(|n| (0.0..=URANDOM_MAX).contains(n))
            .ok_or_else(|| usage("Usage: digest.urandom(len)"))? as usize;
        let mut buf = vec![0u8; n];
        getrandom::fill(&mut buf)
            .map_err(|e| Raise::Error(ErrorKind::SystemError, format!("getrandom: {e}")))?;
        s.push_bytes(&buf);
        Ok(1)
    }
}

lua_fn! {
    /// `pbkdf2(pass, salt, iters, len)`: PBKDF2-HMAC-SHA256 on the
    /// blocking pool; nil where OpenSSL's `PKCS5_PBKDF2_HMAC` fails (no
    /// iteration, a negative length). Arguments checked by `digest.lua`.
    fn pbkdf2(s: &mut Stack) {
        let iters = s.to_number(3).map_or(0, |n| n as i64);
        let len = s.to_number(4).map_or(0, |n| n as i64);
        let (Some(pass), Some(salt)) = (s.to_str(1), s.to_str(2)) else {
            return Err(usage("Usage: digest.pbkdf2(pass, salt[,iters][,digest_len])"));
        };
        if iters < 1 || iters > i64::from(u32::MAX) || !(0..=128).contains(&len) {
            s.push_nil();
            return Ok(1);
        }
        // The pool thread owns what it works on (the fiber may be
        // cancelled and the strings collected meanwhile).
        let (pass, salt) = (pass.to_vec(), salt.to_vec());
        let work = move || {
            let mut out = vec![0u8; len as usize];
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&pass, &salt, iters as u32, &mut out);
            out
        };
        let out = if crate::fiber::check_switch(s, "digest.pbkdf2").is_err() {
            work()
        } else {
            let r = rio::run_blocking(work, None);
            // SAFETY: the stack is as the C API left it: the switch ran
            // other fibers on their own Lua threads, and nothing wrote to
            // this one.
            unsafe { s.sync() };
            match r {
                Ok(out) => out,
                Err(e) if rio::is_cancelled(&e) => {
                    return Err(Raise::Error(ErrorKind::FiberIsCancelled, "fiber is cancelled".into()));
                }
                Err(e) => return Err(Raise::Error(ErrorKind::SystemError, format!("digest.pbkdf2: {e}"))),
            }
        };
        s.push_bytes(&out);
        Ok(1)
    }
}

/// The seed at `idx` (nil: 0) as a `uint64_t`.
fn seed_arg(s: &mut Stack, idx: c_int) -> u64 {
    if s.is_none_or_nil(idx) {
        0
    } else {
        to_uint64(s, idx).unwrap_or(0)
    }
}

/// Pushes an xxHash result: a number for 32 bits, a `uint64_t` for 64.
fn push_xxh(s: &mut Stack, wide: bool, h: u64) -> LResult<()> {
    if wide {
        push_uint64_cdata(s, h)
    } else {
        s.push_int(h as i64);
        Ok(())
    }
}

lua_fn! {
    /// `xxh(bits, str, seed)`: `XXH32` or `XXH64` at once.
    fn xxh(s: &mut Stack) {
        let wide = s.to_integer(1) == Some(64);
        let seed = seed_arg(s, 3);
        let data = s.to_str(2).ok_or_else(|| usage("Usage: digest.xxhash(string[, unsigned number])"))?;
        let h = if wide {
            xxhash_rust::xxh64::xxh64(data, seed)
        } else {
            u64::from(xxhash_rust::xxh32::xxh32(data, seed as u32))
        };
        s.ensure(4)?;
        push_xxh(s, wide, h)?;
        Ok(1)
    }
}

lua_fn! {
    /// `xxh_new(bits, seed)`: a streaming xxHash state.
    fn xxh_new(s: &mut Stack) {
        let seed = seed_arg(s, 2);
        let st = if s.to_integer(1) == Some(64) {
            State::Xxh64(xxhash_rust::xxh64::Xxh64::new(seed))
        } else {
            State::Xxh32(xxhash_rust::xxh32::Xxh32::new(seed as u32))
        };
        ctx::push(s, st)?;
        Ok(1)
    }
}

lua_fn! {
    /// `xxh_result(state)`: the hash of what was fed (the state goes on).
    fn xxh_result(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: xxhash:result()")?;
        let (wide, h) = match &*c.borrow() {
            State::Xxh32(x) => (false, u64::from(x.digest())),
            State::Xxh64(x) => (true, x.digest()),
            _ => return Err(usage("Usage: xxhash:result()")),
        };
        s.ensure(4)?;
        push_xxh(s, wide, h)?;
        Ok(1)
    }
}

lua_fn! {
    /// `xxh_reset(state, seed)`: starts again with `seed`.
    fn xxh_reset(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: xxhash:clear([seed])")?;
        let seed = seed_arg(s, 2);
        match &mut *c.borrow_mut() {
            State::Xxh32(x) => x.reset(seed as u32),
            State::Xxh64(x) => x.reset(seed),
            _ => return Err(usage("Usage: xxhash:clear([seed])")),
        }
        Ok(0)
    }
}

lua_fn! {
    /// `xxh_copy(state)`: a new state equal to `state`.
    fn xxh_copy(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: xxhash:copy()")?;
        let copy = match &*c.borrow() {
            State::Xxh32(x) => State::Xxh32(x.clone()),
            State::Xxh64(x) => State::Xxh64(x.clone()),
            _ => return Err(usage("Usage: xxhash:copy()")),
        };
        ctx::push(s, copy)?;
        Ok(1)
    }
}
