//! Fiber ids: unique in the process run, growing, never reused; and the
//! hasher of the id map.

use std::hash::Hasher;

/// First fiber id handed out; ids up to 100 are reserved, as in Tarantool.
pub const FIRST_FID: u64 = 101;
/// The id reported for code that runs outside any fiber (Tarantool's
/// scheduler fiber).
pub const SCHED_FID: u64 = 1;

/// A fiber's id: unique in the process run, growing, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiberId(pub u64);

impl std::fmt::Display for FiberId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Hashes sequential ids so that they stay neighbours in the id map: the
/// low bits are the id itself (the map's bucket, in hashbrown, which std's
/// map is), the top 7 bits a multiplicative mix (hashbrown's tag within a
/// group, so a probe seldom compares a wrong key). Fibers made one after
/// the other land in neighbouring buckets, so making a million of them
/// touches the map's memory in order instead of a random cache line each.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        const TAG: u64 = 0x7F << 57;
        self.0 = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) & TAG) | (n & !TAG);
    }
}
