//! chap-sha1, Tarantool's authentication (`src/scramble.c`):
//!
//! - the server keeps `hash2 = sha1(sha1(password))` (never the password);
//! - the client sends `scramble = sha1(password) XOR sha1(salt[..20] ++ hash2)`;
//! - the server checks `sha1(scramble XOR sha1(salt[..20] ++ hash2)) == hash2`.
//!
//! SHA-1 is RustCrypto's `sha1` crate.

use sha1::{Digest, Sha1};

use crate::consts::SCRAMBLE_SIZE;

/// The method's name in AUTH's tuple.
pub const CHAP_SHA1: &[u8] = b"chap-sha1";

fn sha1(parts: &[&[u8]]) -> [u8; SCRAMBLE_SIZE] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// What a server stores for a password: `sha1(sha1(password))`
/// (Tarantool's `_user` keeps its base64).
pub fn password_hash2(password: &[u8]) -> [u8; SCRAMBLE_SIZE] {
    sha1(&[&sha1(&[password])])
}

/// The scramble a client sends for `password` under `salt` (a greeting's
/// salt: its first 20 bytes are used; a shorter salt is used whole).
///
/// ```
/// use luafiber_iproto::auth::{check_scramble, password_hash2, scramble};
/// let salt = [9u8; 32];
/// let s = scramble(&salt, b"secret");
/// assert!(check_scramble(&s, &salt, &password_hash2(b"secret")));
/// assert!(!check_scramble(&s, &salt, &password_hash2(b"other")));
/// ```
pub fn scramble(salt: &[u8], password: &[u8]) -> [u8; SCRAMBLE_SIZE] {
    let hash1 = sha1(&[password]);
    let hash2 = sha1(&[&hash1]);
    let salt = &salt[..salt.len().min(SCRAMBLE_SIZE)];
    let mask = sha1(&[salt, &hash2]);
    let mut out = [0; SCRAMBLE_SIZE];
    for i in 0..SCRAMBLE_SIZE {
        out[i] = hash1[i] ^ mask[i];
    }
    out
}

/// Whether `scramble` proves the password whose [`password_hash2`] the
/// server keeps, under the `salt` it greeted with. A scramble that is not
/// 20 bytes never does.
pub fn check_scramble(scramble: &[u8], salt: &[u8], hash2: &[u8; SCRAMBLE_SIZE]) -> bool {
    if scramble.len() != SCRAMBLE_SIZE {
        return false;
    }
    let salt = &salt[..salt.len().min(SCRAMBLE_SIZE)];
    let mask = sha1(&[salt, hash2]);
    let mut hash1 = [0; SCRAMBLE_SIZE];
    for i in 0..SCRAMBLE_SIZE {
        hash1[i] = scramble[i] ^ mask[i];
    }
    // Compared in constant time.
    let got = sha1(&[&hash1]);
    got.iter().zip(hash2).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}
