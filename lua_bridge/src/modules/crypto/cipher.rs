//! Block and stream ciphers (master's `crypto.cipher` over
//! `src/lib/crypto/crypto.c`'s `crypto_stream`, OpenSSL's `EVP_Cipher*`):
//! AES-128/192/256 and DES in ECB, CBC, CFB and OFB modes, and `none`,
//! from the RustCrypto crates `aes`, `des`, `ecb`, `cbc`, `cfb-mode` and
//! `ofb`. ECB and CBC pad with PKCS#7 as OpenSSL does by default (a
//! decryption holds the last block back until [`Stream::commit`], which
//! checks the padding: "bad decrypt"); CFB (full-block feedback, OpenSSL's
//! `cfb128` for AES, `cfb64` for DES) and OFB are stream modes.

use cipher::{
    BlockCipherDecrypt, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt, KeyInit, KeyIvInit,
    StreamCipher,
};

/// `enum crypto_algo` (the values `crypto.cipher_algo` shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algo {
    None = 0,
    Aes128 = 1,
    Aes192 = 2,
    Aes256 = 3,
    Des = 4,
}

/// `enum crypto_mode` (the values `crypto.cipher_mode` shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Ecb = 0,
    Cbc = 1,
    Cfb = 2,
    Ofb = 3,
}

impl Algo {
    /// The algorithm of `crypto_algo` value `v`.
    pub(crate) fn from_int(v: i64) -> Option<Algo> {
        Some(match v {
            0 => Algo::None,
            1 => Algo::Aes128,
            2 => Algo::Aes192,
            3 => Algo::Aes256,
            4 => Algo::Des,
            _ => return None,
        })
    }

    /// Key length in bytes (`EVP_CIPHER_key_length`).
    fn key_len(self) -> usize {
        match self {
            Algo::None => 0,
            Algo::Aes128 => 16,
            Algo::Aes192 => 24,
            Algo::Aes256 => 32,
            Algo::Des => 8,
        }
    }

    /// The cipher's block size in bytes.
    fn block_len(self) -> usize {
        match self {
            Algo::None => 1,
            Algo::Des => 8,
            _ => 16,
        }
    }
}

impl Mode {
    /// The mode of `crypto_mode` value `v`.
    pub(crate) fn from_int(v: i64) -> Option<Mode> {
        Some(match v {
            0 => Mode::Ecb,
            1 => Mode::Cbc,
            2 => Mode::Cfb,
            3 => Mode::Ofb,
            _ => return None,
        })
    }
}

/// One step of a cipher: bytes in, bytes out.
trait Engine {
    /// Processes `input`; returns what is ready.
    fn update(&mut self, input: &[u8]) -> Vec<u8>;
    /// Ends the message: the last bytes, or OpenSSL's reason.
    fn finish(&mut self) -> Result<Vec<u8>, &'static str>;
}

/// `none`: the bytes as they are.
struct Identity;

impl Engine for Identity {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        input.to_vec()
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        Ok(Vec::new())
    }
}

/// ECB or CBC encryption with PKCS#7 padding.
struct PadEnc<M> {
    mode: M,
    pending: Vec<u8>,
}

impl<M: BlockModeEncrypt> PadEnc<M> {
    fn blocks(&mut self, data: &[u8], out: &mut Vec<u8>) {
        for chunk in data.chunks_exact(M::block_size()) {
            let mut b = cipher::Block::<M>::default();
            b.copy_from_slice(chunk);
            self.mode.encrypt_block(&mut b);
            out.extend_from_slice(&b);
        }
    }
}

impl<M: BlockModeEncrypt> Engine for PadEnc<M> {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        let bs = M::block_size();
        self.pending.extend_from_slice(input);
        let n = self.pending.len() / bs * bs;
        let ready: Vec<u8> = self.pending.drain(..n).collect();
        let mut out = Vec::with_capacity(n);
        self.blocks(&ready, &mut out);
        out
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        let bs = M::block_size();
        let mut last = std::mem::take(&mut self.pending);
        let pad = bs - last.len();
        last.resize(bs, pad as u8);
        let mut out = Vec::with_capacity(bs);
        self.blocks(&last, &mut out);
        Ok(out)
    }
}

/// ECB or CBC decryption, checking PKCS#7 padding.
struct PadDec<M> {
    mode: M,
    pending: Vec<u8>,
}

impl<M: BlockModeDecrypt> PadDec<M> {
    fn blocks(&mut self, data: &[u8], out: &mut Vec<u8>) {
        for chunk in data.chunks_exact(M::block_size()) {
            let mut b = cipher::Block::<M>::default();
            b.copy_from_slice(chunk);
            self.mode.decrypt_block(&mut b);
            out.extend_from_slice(&b);
        }
    }
}

impl<M: BlockModeDecrypt> Engine for PadDec<M> {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        let bs = M::block_size();
        self.pending.extend_from_slice(input);
        // The last whole block waits for `finish` (it holds the padding).
        let mut n = self.pending.len() / bs * bs;
        if n == self.pending.len() && n > 0 {
            n -= bs;
        }
        let ready: Vec<u8> = self.pending.drain(..n).collect();
        let mut out = Vec::with_capacity(n);
        self.blocks(&ready, &mut out);
        out
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        let bs = M::block_size();
        let last = std::mem::take(&mut self.pending);
        if last.len() != bs {
            return Err("wrong final block length");
        }
        let mut out = Vec::with_capacity(bs);
        self.blocks(&last, &mut out);
        let pad = usize::from(out[bs - 1]);
        if pad == 0 || pad > bs || out[bs - pad..].iter().any(|&b| usize::from(b) != pad) {
            return Err("bad decrypt");
        }
        out.truncate(bs - pad);
        Ok(out)
    }
}

/// CFB encryption (`BufEncryptor`: any length at a time).
struct CfbEnc<C: BlockCipherEncrypt>(cfb_mode::BufEncryptor<C>);

impl<C: BlockCipherEncrypt> Engine for CfbEnc<C> {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        self.0.encrypt(&mut out);
        out
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        Ok(Vec::new())
    }
}

/// CFB decryption.
struct CfbDec<C: BlockCipherEncrypt>(cfb_mode::BufDecryptor<C>);

impl<C: BlockCipherEncrypt> Engine for CfbDec<C> {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        self.0.decrypt(&mut out);
        out
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        Ok(Vec::new())
    }
}

/// OFB, either way (a key stream: `S` is an `ofb::Ofb` of a concrete
/// cipher).
struct OfbAny<S>(S);

impl<S: StreamCipher> Engine for OfbAny<S> {
    fn update(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        self.0.apply_keystream(&mut out);
        out
    }
    fn finish(&mut self) -> Result<Vec<u8>, &'static str> {
        Ok(Vec::new())
    }
}

/// The engine of block cipher `C` in `mode`, keyed (lengths checked by
/// the caller).
fn engine_of<C>(mode: Mode, encrypt: bool, key: &[u8], iv: &[u8]) -> Option<Box<dyn Engine>>
where
    C: BlockCipherEncrypt + BlockCipherDecrypt + KeyInit + 'static,
{
    Some(match (mode, encrypt) {
        (Mode::Ecb, true) => Box::new(PadEnc {
            mode: ecb::Encryptor::<C>::new_from_slice(key).ok()?,
            pending: Vec::new(),
        }),
        (Mode::Ecb, false) => Box::new(PadDec {
            mode: ecb::Decryptor::<C>::new_from_slice(key).ok()?,
            pending: Vec::new(),
        }),
        (Mode::Cbc, true) => Box::new(PadEnc {
            mode: cbc::Encryptor::<C>::new_from_slices(key, iv).ok()?,
            pending: Vec::new(),
        }),
        (Mode::Cbc, false) => Box::new(PadDec {
            mode: cbc::Decryptor::<C>::new_from_slices(key, iv).ok()?,
            pending: Vec::new(),
        }),
        (Mode::Cfb, true) => Box::new(CfbEnc(
            cfb_mode::BufEncryptor::<C>::new_from_slices(key, iv).ok()?,
        )),
        (Mode::Cfb, false) => Box::new(CfbDec(
            cfb_mode::BufDecryptor::<C>::new_from_slices(key, iv).ok()?,
        )),
        (Mode::Ofb, _) => return None,
    })
}

/// The OFB engine of `algo` (not `none`), keyed.
fn ofb_of(algo: Algo, key: &[u8], iv: &[u8]) -> Option<Box<dyn Engine>> {
    Some(match algo {
        Algo::None => return None,
        Algo::Aes128 => Box::new(OfbAny(
            ofb::Ofb::<aes::Aes128>::new_from_slices(key, iv).ok()?,
        )),
        Algo::Aes192 => Box::new(OfbAny(
            ofb::Ofb::<aes::Aes192>::new_from_slices(key, iv).ok()?,
        )),
        Algo::Aes256 => Box::new(OfbAny(
            ofb::Ofb::<aes::Aes256>::new_from_slices(key, iv).ok()?,
        )),
        Algo::Des => Box::new(OfbAny(ofb::Ofb::<des::Des>::new_from_slices(key, iv).ok()?)),
    })
}

/// A cipher stream (master's `struct crypto_stream`): made for an
/// algorithm, a mode and a direction, keyed by [`Stream::begin`].
pub(crate) struct Stream {
    algo: Algo,
    mode: Mode,
    encrypt: bool,
    engine: Option<Box<dyn Engine>>,
}

impl Stream {
    /// `crypto_stream_new`: a stream not yet keyed.
    pub(crate) fn new(algo: Algo, mode: Mode, encrypt: bool) -> Stream {
        Stream {
            algo,
            mode,
            encrypt,
            engine: None,
        }
    }

    /// `EVP_CIPHER_iv_length`: none for ECB and `none`, a block otherwise.
    fn iv_len(&self) -> usize {
        if self.algo == Algo::None || self.mode == Mode::Ecb {
            0
        } else {
            self.algo.block_len()
        }
    }

    /// `crypto_stream_begin`: keys the stream (again, from the start).
    ///
    /// # Errors
    ///
    /// "key size expected N, got M", "IV size expected N, got M".
    pub(crate) fn begin(&mut self, key: &[u8], iv: &[u8]) -> Result<(), String> {
        let need = self.algo.key_len();
        if key.len() != need {
            return Err(format!("key size expected {need}, got {}", key.len()));
        }
        let need = self.iv_len();
        if iv.len() != need {
            return Err(format!("IV size expected {need}, got {}", iv.len()));
        }
        let (mode, enc) = (self.mode, self.encrypt);
        self.engine = match self.algo {
            Algo::None => Some(Box::new(Identity)),
            algo if mode == Mode::Ofb => ofb_of(algo, key, iv),
            Algo::Aes128 => engine_of::<aes::Aes128>(mode, enc, key, iv),
            Algo::Aes192 => engine_of::<aes::Aes192>(mode, enc, key, iv),
            Algo::Aes256 => engine_of::<aes::Aes256>(mode, enc, key, iv),
            Algo::Des => engine_of::<des::Des>(mode, enc, key, iv),
        };
        match self.engine {
            Some(_) => Ok(()),
            None => Err("OpenSSL error: invalid key length".into()),
        }
    }

    /// `crypto_stream_append`: the output for `input` (whole blocks).
    ///
    /// # Errors
    ///
    /// "Cipher not initialized" before [`Stream::begin`].
    pub(crate) fn append(&mut self, input: &[u8]) -> Result<Vec<u8>, String> {
        match &mut self.engine {
            Some(e) => Ok(e.update(input)),
            None => Err("Cipher not initialized".into()),
        }
    }

    /// `crypto_stream_commit`: the last output (padding added or checked);
    /// the stream needs [`Stream::begin`] again after it.
    ///
    /// # Errors
    ///
    /// "OpenSSL error: bad decrypt" (wrong padding: a wrong key or IV),
    /// "OpenSSL error: wrong final block length".
    pub(crate) fn commit(&mut self) -> Result<Vec<u8>, String> {
        match self.engine.take() {
            Some(mut e) => e.finish().map_err(|why| format!("OpenSSL error: {why}")),
            None => Err("Cipher not initialized".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn run(
        algo: Algo,
        mode: Mode,
        enc: bool,
        key: &[u8],
        iv: &[u8],
        parts: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut s = Stream::new(algo, mode, enc);
        s.begin(key, iv)?;
        let mut out = Vec::new();
        for p in parts {
            out.extend(s.append(p)?);
        }
        out.extend(s.commit()?);
        Ok(out)
    }

    #[test]
    fn aes_cbc_matches_tarantool() {
        let key = b"1234567887654321";
        let iv = b"abcdefghijklmnop";
        let enc = run(Algo::Aes128, Mode::Cbc, true, key, iv, &[b"test"]).unwrap();
        assert_eq!(hex(&enc), "5a9249bba97aa33899732bcd0fc2ae78");
        assert_eq!(
            run(
                Algo::Aes128,
                Mode::Cbc,
                false,
                key,
                iv,
                &[&enc[..3], &enc[3..]]
            )
            .unwrap(),
            b"test"
        );
        let bad = run(
            Algo::Aes128,
            Mode::Cbc,
            false,
            b"8765432112345678",
            iv,
            &[&enc],
        );
        assert_eq!(bad.unwrap_err(), "OpenSSL error: bad decrypt");
        let enc = run(
            Algo::Aes256,
            Mode::Cbc,
            true,
            b"passpasspasspasspasspasspasspass",
            b"iv12tras8712cvbh",
            &[b"test123"],
        )
        .unwrap();
        assert_eq!(hex(&enc), "ca73b4a934eb4cb369366dc6ad39e39e");
    }

    #[test]
    fn stream_modes_round_trip() {
        for mode in [Mode::Ecb, Mode::Cfb, Mode::Ofb, Mode::Cbc] {
            for (algo, k) in [(Algo::Aes192, 24), (Algo::Des, 8), (Algo::None, 0)] {
                let key = vec![7u8; k];
                let s = Stream::new(algo, mode, true);
                let iv = vec![9u8; s.iv_len()];
                let msg: &[u8] = b"a message of some thirty-one b";
                let enc = run(algo, mode, true, &key, &iv, &[&msg[..5], &msg[5..]]).unwrap();
                let dec = run(algo, mode, false, &key, &iv, &[&enc[..7], &enc[7..]]).unwrap();
                assert_eq!(dec, msg, "{algo:?} {mode:?}");
            }
        }
    }
}
