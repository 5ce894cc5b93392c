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

/// Hashes sequential ids so that they land near each other in the id map,
/// but never in one probe group: the low bits (the map's bucket, in
/// hashbrown, which std's map is) are the id times 17, so fibers made one
/// after the other sit 17 buckets apart and making a million of them walks
/// the map's memory at a fixed stride instead of a random cache line each;
/// the top 7 bits (hashbrown's tag within a group) are a multiplicative mix,
/// so a probe seldom compares a wrong key. The stride matters when fibers
/// end: a removed entry whose 16-wide group has no empty slot becomes a
/// tombstone, which only a rehash of the whole map clears; with neighbouring
/// ids in neighbouring buckets every group of live fibers was full, and
/// churning through a thousand fibers rehashed the map every lap.
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
        self.0 = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) & TAG) | (n.wrapping_mul(17) & !TAG);
    }
}
