//! The non-cryptographic hashes of `digest`: CRC32-C, MurmurHash3
//! (Tarantool's `PMurHash32`), Guava's consistent hash, and xxHash.
//!
//! Tarantool's `crc32` is CRC-32C (Castagnoli) without the final
//! inversion: `crc32_calc(crc, buf)` carries the raw register from
//! `0xFFFFFFFF`, so `digest.crc32(s)` is the inverted standard CRC-32C,
//! and `crc32_update(digest.crc32(a), b) == digest.crc32(a .. b)`.

/// Tarantool's `crc32_calc(crc, data)`: the CRC-32C register after
/// `data`, from `crc` (`crc32c` crate: SSE 4.2 when the CPU has it).
#[inline]
pub(super) fn crc32c(crc: u32, data: &[u8]) -> u32 {
    // The crate inverts the register on the way in and out (a standard
    // CRC); Tarantool keeps it as it is.
    !crc32c::crc32c_append(!crc, data)
}

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

/// One 4-byte block of MurmurHash3_x86_32 mixed into `h1`.
#[inline]
fn murmur_block(h1: u32, k1: u32) -> u32 {
    let k1 = k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    (h1 ^ k1)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// `PMurHash32_Process`: feeds `data` to the incremental state `(h1,
/// carry)`, where `carry` holds up to 3 bytes not yet mixed (in its top
/// bytes, the first fed lowest) and their count (in its low 2 bits), as
/// Tarantool's `PMurHash.c` keeps them.
pub(super) fn murmur_process(mut h1: u32, carry: u32, data: &[u8]) -> (u32, u32) {
    let mut n = (carry & 3) as usize;
    let mut c = carry & !3;
    let mut rest = data;
    // Complete a pending block first.
    while n != 0 && !rest.is_empty() {
        c = (c >> 8) | (u32::from(rest[0]) << 24);
        rest = &rest[1..];
        n += 1;
        if n == 4 {
            h1 = murmur_block(h1, c);
            n = 0;
            c = 0;
        }
    }
    let mut blocks = rest.chunks_exact(4);
    for b in &mut blocks {
        h1 = murmur_block(h1, u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    }
    for &byte in blocks.remainder() {
        c = (c >> 8) | (u32::from(byte) << 24);
        n += 1;
    }
    (h1, (c & !3) | n as u32)
}

/// `PMurHash32_Result`: the hash of the state after `total` bytes.
pub(super) fn murmur_result(mut h1: u32, carry: u32, total: u32) -> u32 {
    let n = carry & 3;
    if n != 0 {
        let k1 = (carry >> ((4 - n) * 8))
            .wrapping_mul(C1)
            .rotate_left(15)
            .wrapping_mul(C2);
        h1 ^= k1;
    }
    h1 ^= total;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^ (h1 >> 16)
}

/// Tarantool's `guava(state, buckets)` (`src/lib/salad/guava.c`): Lamping
/// and Veach's jump consistent hash, as Guava computes it, with
/// Tarantool's quirks kept (a 31-bit LCG draw made signed, the division
/// done in doubles).
pub(super) fn guava(mut state: u64, buckets: i32) -> i32 {
    const K: u64 = 2_862_933_555_777_941_757;
    const D: f64 = 2_147_483_648.0; // 0x1.0p31
    let mut candidate: i64 = 0;
    loop {
        state = K.wrapping_mul(state).wrapping_add(1);
        let lcg = f64::from(((state >> 33) as i32).wrapping_add(1)) / D;
        // C converts the double to int64_t; Rust's `as` saturates where
        // C's is undefined (infinity, NaN: 0).
        let next = ((candidate + 1) as f64 / lcg) as i64;
        if next >= 0 && next < i64::from(buckets) {
            candidate = next;
        } else {
            return candidate as i32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_tarantools() {
        assert_eq!(crc32c(u32::MAX, b"abc"), 3_384_066_120);
        assert_eq!(crc32c(u32::MAX, b""), u32::MAX);
        assert_eq!(crc32c(crc32c(u32::MAX, b"abc"), b"cde"), 3_628_146_660);
    }

    #[test]
    fn murmur_is_tarantools() {
        let (h, c) = murmur_process(13, 0, b"1234");
        assert_eq!(murmur_result(h, c, 4), 1_859_914_009);
        let (h, c) = murmur_process(14, 0, b"1234");
        assert_eq!(murmur_result(h, c, 4), 1_689_834_281);
        // Fed in pieces: the same.
        let whole = murmur_process(13, 0, b"hello, world");
        let (h, c) = murmur_process(13, 0, b"hel");
        let (h, c) = murmur_process(h, c, b"lo, w");
        let (h, c) = murmur_process(h, c, b"orld");
        assert_eq!(murmur_result(h, c, 12), murmur_result(whole.0, whole.1, 12));
    }

    #[test]
    fn guava_is_tarantools() {
        // Master's test passes Lua numbers (doubles): the states are the
        // doubles nearest to its literals.
        assert_eq!(guava(10_863_919_174_838_991_f64 as u64, 11), 8);
        assert_eq!(guava(2_016_238_256_797_177_309_f64 as u64, 11), 7);
        assert_eq!(guava(1_673_758_223_894_951_030_f64 as u64, 11), 7);
        assert_eq!(guava(10_863_919_174_838_991, 11), 6);
    }
}
