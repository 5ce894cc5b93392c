//! The Lua `crypto` module: Tarantool master's `src/lua/crypto.lua` (and
//! the parts of `src/lib/crypto/crypto.c` it calls).
//!
//! - `crypto.digest.X(str)`, `crypto.digest.X.new()` (`:init()`,
//!   `:update(str)`, `:result()`, `:free()`), X one of `md4`, `md5`,
//!   `sha1`, `sha224`, `sha256`, `sha384`, `sha512`.
//! - `crypto.hmac.X(key, str)`, `crypto.hmac.X_hex(key, str)`,
//!   `crypto.hmac.X.new(key)` (`:init([key])`, `:update`, `:result`,
//!   `:free`).
//! - `crypto.cipher.A.M.encrypt(str, key, iv)` / `.decrypt(...)`, and
//!   `.new([key [, iv]])` (`:init([key [, iv]])`, `:update(str)`,
//!   `:result()`, `:free()`), A one of `aes128`, `aes192`, `aes256`,
//!   `des`, `none`, M one of `ecb`, `cbc`, `cfb`, `ofb`; ECB and CBC pad
//!   with PKCS#7. A key or IV of the wrong size raises a `CryptoError`
//!   ("key size expected 16, got 6"; ECB and `none` take an empty IV, as
//!   OpenSSL's); a wrong padding on decryption "OpenSSL error: bad
//!   decrypt".
//! - `crypto.cipher_algo`, `crypto.cipher_mode`: master's enum values.
//!
//! Errors are master's: usage errors are strings raised from
//! `builtin/crypto.lua` ("Usage: digest.sha1(string)", "Cipher not
//! initialized", 'Digest method "x" is not supported'), errors of the
//! cipher itself `CryptoError` objects.
//!
//! # Why these crates
//!
//! Master calls OpenSSL through the FFI. Here the algorithms are the
//! RustCrypto crates (`md4`, `md-5`, `sha1`, `sha2`, `hmac`, `aes`,
//! `des`, `ecb`, `cbc`, `cfb-mode`, `ofb`): maintained, audited-by-use,
//! pure Rust (no system OpenSSL to find at build time, none to link on
//! either engine), each tested against its standard's vectors; the ones
//! for MD4/MD5/SHA already in the tree (`sha1` for chap-sha1) come from
//! the same family. Only the stream bookkeeping (PKCS#7 padding, the last
//! block held back on decryption, as OpenSSL's `EVP_CipherUpdate`) is
//! ours ([`cipher`]).
//!
//! Differences from Tarantool:
//!
//! - The digests are those listed above: no `md2`, `dss`, `dss1`,
//!   `mdc2`, `ripemd160` (master offers whichever its OpenSSL has; recent
//!   OpenSSL builds have none of these but `ripemd160`).
//! - A context object's `ctx` field is a userdata, not an OpenSSL cdata.

pub(crate) mod cipher;
pub(crate) mod ctx;
pub(crate) mod md;

use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};
use ctx::State;
use md::{Algo, HmacState, MdState};

const CHUNK: &str = include_str!("crypto.lua");

/// The functions `crypto.lua` builds on.
const INTERNAL: &[Reg] = &[
    (c"digest", crypto_digest),
    (c"hmac", crypto_hmac),
    (c"md_new", crypto_md_new),
    (c"hmac_new", crypto_hmac_new),
    (c"init", crypto_init),
    (c"update", ctx_update),
    (c"result", ctx_result),
    (c"stream_new", crypto_stream_new),
    (c"stream_begin", crypto_stream_begin),
    (c"stream_append", crypto_stream_append),
    (c"stream_commit", crypto_stream_commit),
];

lua_fn! {
    /// The `crypto` module's loader (`package.preload.crypto`).
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        s.load(CHUNK, c"@builtin/crypto.lua").map_err(|()| Raise::Top)?;
        let internal = s.new_table(0, INTERNAL.len() as i32 + 1);
        s.set_funcs(internal, INTERNAL);
        let names = s.new_table(Algo::NAMES.len() as i32, 0);
        for (i, name) in Algo::NAMES.iter().enumerate() {
            s.push_str(name);
            s.rawseti(names, i as i64 + 1);
        }
        s.set_field(internal, c"digest_names");
        s.pcall(1, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}

/// The digest algorithm at `idx` (an index `crypto.lua` passes).
fn algo(s: &Stack, idx: i32) -> LResult<Algo> {
    s.to_integer(idx)
        .and_then(Algo::from_index)
        .ok_or_else(|| Raise::Message("crypto: unknown digest".into()))
}

/// The string at `idx`, or `what` raised as a string.
fn bytes<'a>(s: &'a Stack, idx: i32, what: &str) -> LResult<&'a [u8]> {
    s.to_str(idx).ok_or_else(|| Raise::Message(what.into()))
}

lua_fn! {
    /// `digest(algo, str)`: the digest of `str` at once (no context).
    fn crypto_digest(s: &mut Stack) {
        let algo = algo(s, 1)?;
        let out = md::digest(algo, bytes(s, 2, "Usage: digest(string)")?);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `hmac(algo, key, str)`: the HMAC of `str` at once.
    fn crypto_hmac(s: &mut Stack) {
        let algo = algo(s, 1)?;
        let key = bytes(s, 2, "Usage: hmac(key, string): key should be a string")?;
        let out = md::hmac(algo, key, bytes(s, 3, "Usage: hmac(key, string)")?);
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `md_new(algo)`: a digest context.
    fn crypto_md_new(s: &mut Stack) {
        let algo = algo(s, 1)?;
        ctx::push(s, State::Md(MdState::new(algo)))?;
        Ok(1)
    }
}

lua_fn! {
    /// `hmac_new(algo, key)`: an HMAC context.
    fn crypto_hmac_new(s: &mut Stack) {
        let algo = algo(s, 1)?;
        let key = bytes(s, 2, "HMAC key should be a string")?;
        let st = HmacState::new(algo, key);
        ctx::push(s, State::Hmac(st))?;
        Ok(1)
    }
}

lua_fn! {
    /// `init(ctx [, key])`: starts a digest or HMAC context again (an
    /// HMAC with `key`, or the key it had).
    fn crypto_init(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: ctx:init()")?;
        let key = match s.type_of(2) {
            t if t <= mlua::ffi::LUA_TNIL => None,
            _ => Some(bytes(s, 2, "HMAC key should be a string")?),
        };
        match &mut *c.borrow_mut() {
            State::Md(m) => m.reset(),
            State::Hmac(h) => h.init(key),
            _ => return Err(Raise::Message("Usage: ctx:init()".into())),
        }
        Ok(0)
    }
}

lua_fn! {
    /// `update(ctx, str)`: feeds a digest, HMAC or xxHash context.
    pub(crate) fn ctx_update(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: ctx:update(string)")?;
        let data = bytes(s, 2, "Usage: ctx:update(string)")?;
        match &mut *c.borrow_mut() {
            State::Md(m) => m.update(data),
            State::Hmac(h) => h.update(data),
            State::Xxh32(x) => x.update(data),
            State::Xxh64(x) => x.update(data),
            State::Cipher(_) => return Err(Raise::Message("Usage: ctx:update(string)".into())),
        }
        Ok(0)
    }
}

lua_fn! {
    /// `result(ctx)`: the digest or HMAC of what was fed (the context
    /// starts again).
    fn ctx_result(s: &mut Stack) {
        let c = ctx::get(s, 1, "Usage: ctx:result()")?;
        let out = match &mut *c.borrow_mut() {
            State::Md(m) => m.finish(),
            State::Hmac(h) => h.finish(),
            _ => return Err(Raise::Message("Usage: ctx:result()".into())),
        };
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `stream_new(algo, mode, dir)`: a cipher stream, not yet keyed.
    fn crypto_stream_new(s: &mut Stack) {
        let a = s.to_integer(1).and_then(cipher::Algo::from_int);
        let m = s.to_integer(2).and_then(cipher::Mode::from_int);
        let (Some(a), Some(m)) = (a, m) else {
            return Err(Raise::Error(ErrorKind::CryptoError, "unknown crypto algorithm".into()));
        };
        let encrypt = s.to_integer(3) == Some(1);
        ctx::push(s, State::Cipher(cipher::Stream::new(a, m, encrypt)))?;
        Ok(1)
    }
}

/// The cipher stream of the context at argument 1.
fn stream(s: &mut Stack) -> LResult<ctx::Shared> {
    let c = ctx::get(s, 1, "Cipher context isn't usable")?;
    if !matches!(&*c.borrow(), State::Cipher(_)) {
        return Err(Raise::Message("Cipher context isn't usable".into()));
    }
    Ok(c)
}

/// Runs `f` on the cipher stream of `c` (a `State::Cipher`).
fn on_stream<R>(c: &ctx::Shared, f: impl FnOnce(&mut cipher::Stream) -> R) -> R {
    match &mut *c.borrow_mut() {
        State::Cipher(st) => f(st),
        _ => unreachable!("checked by `stream`"),
    }
}

lua_fn! {
    /// `stream_begin(ctx, key, iv)`: keys the stream; a `CryptoError` for
    /// a key or IV of the wrong size.
    fn crypto_stream_begin(s: &mut Stack) {
        let c = stream(s)?;
        let key = bytes(s, 2, "Usage: cipher:init(key, iv)")?;
        let iv = bytes(s, 3, "Usage: cipher:init(key, iv)")?;
        on_stream(&c, |st| st.begin(key, iv)).map_err(|m| Raise::Error(ErrorKind::CryptoError, m))?;
        Ok(0)
    }
}

lua_fn! {
    /// `stream_append(ctx, str)`: the output for `str`.
    fn crypto_stream_append(s: &mut Stack) {
        let c = stream(s)?;
        let input = bytes(s, 2, "Usage: cipher:update(string)")?;
        let out = on_stream(&c, |st| st.append(input))
            .map_err(|m| Raise::Error(ErrorKind::CryptoError, m))?;
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `stream_commit(ctx)`: the last output; a `CryptoError` for a bad
    /// padding ("OpenSSL error: bad decrypt").
    fn crypto_stream_commit(s: &mut Stack) {
        let c = stream(s)?;
        let out = on_stream(&c, cipher::Stream::commit)
            .map_err(|m| Raise::Error(ErrorKind::CryptoError, m))?;
        s.push_bytes(&out);
        Ok(1)
    }
}
