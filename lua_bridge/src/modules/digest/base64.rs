//! `digest.base64_encode` and `base64_decode` as Tarantool's
//! `src/lib/digest/base64.c` does them.
//!
//! Encoding: the `base64` crate's engines (the standard or URL-safe
//! alphabet, padded or not), with Tarantool's line breaks put in: a `\n`
//! after each 72 characters of whole 3-byte groups (the last, partial
//! group never ends a line), unless `nowrap`. Options are Tarantool's
//! bits: 1 `nopad`, 2 `nowrap`, 7 `urlsafe` (which is both, and the
//! URL-safe alphabet).
//!
//! Decoding is Tarantool's own, lenient rule, which no crate's engine
//! has: every byte outside both alphabets (`=`, line breaks, spaces,
//! anything) is skipped, both alphabets are read at once, and a trailing
//! partial group yields the whole bytes it holds.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::Engine;

/// `BASE64_NOPAD`.
pub(super) const NOPAD: u32 = 1;
/// `BASE64_NOWRAP`.
pub(super) const NOWRAP: u32 = 2;
/// `BASE64_URLSAFE` (all three bits).
pub(super) const URLSAFE: u32 = 7;

/// Characters a line holds (`BASE64_CHARS_PER_LINE`).
const LINE: usize = 72;

/// The base64 text of `bin` under `options`.
pub(super) fn encode(bin: &[u8], options: u32) -> Vec<u8> {
    let engine = if options & URLSAFE == URLSAFE {
        &URL_SAFE_NO_PAD
    } else if options & NOPAD != 0 {
        &STANDARD_NO_PAD
    } else {
        &STANDARD
    };
    let whole = bin.len() / 3 * 3;
    let body = engine.encode(&bin[..whole]);
    let tail = engine.encode(&bin[whole..]);
    if options & NOWRAP != 0 {
        let mut out = body.into_bytes();
        out.extend_from_slice(tail.as_bytes());
        return out;
    }
    let mut out = Vec::with_capacity(body.len() + body.len() / LINE + tail.len());
    for line in body.as_bytes().chunks(LINE) {
        out.extend_from_slice(line);
        if line.len() == LINE {
            out.push(b'\n');
        }
    }
    out.extend_from_slice(tail.as_bytes());
    out
}

/// The 6-bit value of base64 character `c` in either alphabet, or `None`
/// for any other byte (skipped).
#[inline]
fn value(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    }))
}

/// The bytes of base64 text `text` (Tarantool's lenient rule, above).
pub(crate) fn decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in text.iter().filter_map(|&c| value(c)) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &[u8], o: u32) -> String {
        String::from_utf8(encode(s, o)).unwrap()
    }

    #[test]
    fn encodes_as_tarantool() {
        assert_eq!(enc(b"12345", 0), "MTIzNDU=");
        assert_eq!(enc(b"1234567", URLSAFE), "MTIzNDU2Nw");
        assert_eq!(enc(b"1234567", NOPAD), "MTIzNDU2Nw");
        let two_lines = enc(&[b'a'; 108], 0);
        assert_eq!(two_lines.len(), 146);
        assert!(two_lines.ends_with("YWFh\n"));
        assert!(!enc(&[b'a'; 100], NOWRAP).contains('\n'));
        // 17 whole groups and a tail: 72 characters, no break.
        assert!(!enc(&[b'a'; 53], 0).contains('\n'));
        assert!(enc(b"?>>>", NOWRAP).contains('+'));
    }

    #[test]
    fn decodes_leniently() {
        assert_eq!(decode(b"MTIzNDU="), b"12345");
        assert_eq!(decode(b"MTIzNDU2Nw"), b"1234567");
        assert_eq!(decode(b"MTIz\nND U2Nzg"), b"12345678");
        assert_eq!(decode(&encode(&[0xfb; 40], URLSAFE)), [0xfb; 40]);
        assert_eq!(decode(b""), b"");
    }
}
