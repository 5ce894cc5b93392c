//! Message digests and HMACs (master's `crypto.digest` and `crypto.hmac`
//! over OpenSSL's `EVP_MD` and `HMAC`): MD4, MD5, SHA-1 and SHA-2, each
//! from its RustCrypto crate, dispatched by [`Algo`].

use hmac::{Hmac, KeyInit, Mac};
use sha2::Digest;

/// A digest algorithm, by the index `crypto.lua` passes (its order in
/// [`Algo::NAMES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    Md4,
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Algo {
    /// The names `crypto.digest` and `crypto.hmac` offer, in index order
    /// (1-based in Lua).
    pub(crate) const NAMES: [&'static str; 7] =
        ["md4", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"];

    /// The algorithm of the 1-based Lua index `i`.
    pub(crate) fn from_index(i: i64) -> Option<Algo> {
        Some(match i {
            1 => Algo::Md4,
            2 => Algo::Md5,
            3 => Algo::Sha1,
            4 => Algo::Sha224,
            5 => Algo::Sha256,
            6 => Algo::Sha384,
            7 => Algo::Sha512,
            _ => return None,
        })
    }
}

/// Runs `$body` with `$D` the digest type of `$algo`.
macro_rules! with_algo {
    ($algo:expr, $D:ident => $body:expr) => {
        match $algo {
            Algo::Md4 => {
                type $D = md4::Md4;
                $body
            }
            Algo::Md5 => {
                type $D = md5::Md5;
                $body
            }
            Algo::Sha1 => {
                type $D = sha1::Sha1;
                $body
            }
            Algo::Sha224 => {
                type $D = sha2::Sha224;
                $body
            }
            Algo::Sha256 => {
                type $D = sha2::Sha256;
                $body
            }
            Algo::Sha384 => {
                type $D = sha2::Sha384;
                $body
            }
            Algo::Sha512 => {
                type $D = sha2::Sha512;
                $body
            }
        }
    };
}

/// The digest of `data` at once (at most 64 bytes).
pub(crate) fn digest(algo: Algo, data: &[u8]) -> Vec<u8> {
    with_algo!(algo, D => D::digest(data).to_vec())
}

/// An incremental digest (`crypto.digest.X.new()`).
#[derive(Clone)]
pub(crate) enum MdState {
    Md4(md4::Md4),
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

/// Runs `$body` on the hasher `$h` inside `$state`, of whatever type.
macro_rules! on_state {
    ($state:expr, $h:ident => $body:expr) => {
        match $state {
            MdState::Md4($h) => $body,
            MdState::Md5($h) => $body,
            MdState::Sha1($h) => $body,
            MdState::Sha224($h) => $body,
            MdState::Sha256($h) => $body,
            MdState::Sha384($h) => $body,
            MdState::Sha512($h) => $body,
        }
    };
}

impl MdState {
    /// A fresh digest of `algo`.
    pub(crate) fn new(algo: Algo) -> MdState {
        match algo {
            Algo::Md4 => MdState::Md4(Default::default()),
            Algo::Md5 => MdState::Md5(Default::default()),
            Algo::Sha1 => MdState::Sha1(Default::default()),
            Algo::Sha224 => MdState::Sha224(Default::default()),
            Algo::Sha256 => MdState::Sha256(Default::default()),
            Algo::Sha384 => MdState::Sha384(Default::default()),
            Algo::Sha512 => MdState::Sha512(Default::default()),
        }
    }

    /// Starts again (what was fed is dropped).
    pub(crate) fn reset(&mut self) {
        on_state!(self, h => sha2::digest::Reset::reset(h))
    }

    /// Feeds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        on_state!(self, h => Digest::update(h, data))
    }

    /// The digest of what was fed; the state starts again.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        on_state!(self, h => h.finalize_reset().to_vec())
    }
}

/// An incremental HMAC (`crypto.hmac.X.new(key)`), with its key kept for
/// `init` without a new key (OpenSSL's `HMAC_Init_ex` with a NULL key).
#[derive(Clone)]
pub(crate) struct HmacState {
    algo: Algo,
    key: Vec<u8>,
    mac: HmacAny,
}

/// An HMAC of any of the algorithms.
#[derive(Clone)]
enum HmacAny {
    Md4(Hmac<md4::Md4>),
    Md5(Hmac<md5::Md5>),
    Sha1(Hmac<sha1::Sha1>),
    Sha224(Hmac<sha2::Sha224>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
    Sha512(Hmac<sha2::Sha512>),
}

/// An HMAC of `algo` keyed with `key` (any length is a valid HMAC key).
fn hmac_new(algo: Algo, key: &[u8]) -> HmacAny {
    macro_rules! keyed {
        ($v:ident) => {
            HmacAny::$v(KeyInit::new_from_slice(key).expect("HMAC takes a key of any length"))
        };
    }
    match algo {
        Algo::Md4 => keyed!(Md4),
        Algo::Md5 => keyed!(Md5),
        Algo::Sha1 => keyed!(Sha1),
        Algo::Sha224 => keyed!(Sha224),
        Algo::Sha256 => keyed!(Sha256),
        Algo::Sha384 => keyed!(Sha384),
        Algo::Sha512 => keyed!(Sha512),
    }
}

/// Runs `$body` on the MAC `$m` inside `$any`.
macro_rules! on_mac {
    ($any:expr, $m:ident => $body:expr) => {
        match $any {
            HmacAny::Md4($m) => $body,
            HmacAny::Md5($m) => $body,
            HmacAny::Sha1($m) => $body,
            HmacAny::Sha224($m) => $body,
            HmacAny::Sha256($m) => $body,
            HmacAny::Sha384($m) => $body,
            HmacAny::Sha512($m) => $body,
        }
    };
}

impl HmacState {
    /// An HMAC of `algo` keyed with `key`.
    pub(crate) fn new(algo: Algo, key: &[u8]) -> HmacState {
        HmacState {
            algo,
            key: key.to_vec(),
            mac: hmac_new(algo, key),
        }
    }

    /// Starts again, with `key` or the key it had.
    pub(crate) fn init(&mut self, key: Option<&[u8]>) {
        if let Some(key) = key {
            self.key = key.to_vec();
        }
        self.mac = hmac_new(self.algo, &self.key);
    }

    /// Feeds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        on_mac!(&mut self.mac, m => Mac::update(m, data))
    }

    /// The MAC of what was fed; the state starts again with the same key.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let fresh = hmac_new(self.algo, &self.key);
        let done = std::mem::replace(&mut self.mac, fresh);
        on_mac!(done, m => m.finalize().into_bytes().to_vec())
    }
}

/// The HMAC of `data` with `key` at once.
pub(crate) fn hmac(algo: Algo, key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut st = HmacState::new(algo, key);
    st.update(data);
    st.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn digests_match_tarantools_results() {
        assert_eq!(
            hex(&digest(Algo::Md4, b"tarantool")),
            "c7eb52e6ded7ce718ee8da48d9de5c49"
        );
        assert_eq!(
            hex(&digest(Algo::Sha1, b"")),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
        let mut st = MdState::new(Algo::Md5);
        st.update(b"tara");
        st.update(b"ntool");
        assert_eq!(hex(&st.finish()), "9c6985632370720e4ef67330e363c3fb");
        assert_eq!(hex(&st.finish()), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
