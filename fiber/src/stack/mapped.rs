//! The two-map scheme: a stack that is a mapping of its own, with its guard
//! made `PROT_NONE` by `mprotect`, so two memory maps each (the guard and
//! the usable part). Used where the kernel has no `MADV_GUARD_INSTALL`, for
//! sizes too large for an arena (see [`super::arena`]), and when arenas are
//! switched off.
//!
//! Creation refuses to go past `vm.max_map_count` (less a reserve for the
//! allocator) with [`StackError::MapLimit`], so the process never reaches
//! the limit where `malloc` itself fails and aborts.

use std::io::{self, Read};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{max_map_count, StackError};

/// Memory maps kept free for the allocator and the Lua heap when counting
/// two-map stacks against `vm.max_map_count`.
const MAP_RESERVE: usize = 2048;

/// Two-map stacks alive in this process (all threads).
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Two-map stacks alive in this process.
pub(super) fn live() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

/// The memory maps of this process now (the lines of `/proc/self/maps`),
/// read without allocating, since it runs when maps may have run out.
fn maps_in_use() -> Option<usize> {
    let mut maps = std::fs::File::open("/proc/self/maps").ok()?;
    let mut buf = [0u8; 4096];
    let mut lines = 0;
    loop {
        match maps.read(&mut buf) {
            Ok(0) => return Some(lines),
            Ok(n) => lines += buf[..n].iter().filter(|&&b| b == b'\n').count(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// What a failed `mmap`, `mprotect` or `madvise` of a `map_len`-byte stack
/// or arena means, with `live` stacks alive: `ENOMEM` is the map limit when
/// the process has (nearly) `vm.max_map_count` maps, else the kernel out of
/// memory.
#[cold]
pub(super) fn map_error(err: io::Error, map_len: usize, live: usize) -> StackError {
    if err.raw_os_error() != Some(libc::ENOMEM) {
        return StackError::Os(err);
    }
    let max = max_map_count();
    match maps_in_use() {
        Some(maps) if maps + 2 > max => StackError::MapLimit {
            max_map_count: max,
            live_stacks: live,
        },
        _ => StackError::OutOfMemory { bytes: map_len },
    }
}

/// Maps `map_len` bytes (`usable` of them read/write at the top, the rest a
/// `PROT_NONE` guard below); returns the mapping's start.
///
/// # Errors
///
/// As [`super::FiberStack::new`].
pub(super) fn map(usable: usize, map_len: usize) -> Result<NonNull<u8>, StackError> {
    let max = max_map_count();
    let live = MAPPED.fetch_add(1, Ordering::Relaxed);
    if (live + 1) * 2 + MAP_RESERVE > max {
        MAPPED.fetch_sub(1, Ordering::Relaxed);
        return Err(StackError::MapLimit {
            max_map_count: max,
            live_stacks: super::live_stacks(),
        });
    }
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choice aliases nothing.
    let map = unsafe {
        libc::mmap(
            ptr::null_mut(),
            map_len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        let err = io::Error::last_os_error();
        MAPPED.fetch_sub(1, Ordering::Relaxed);
        return Err(map_error(err, map_len, super::live_stacks()));
    }
    let map = map.cast::<u8>();
    // SAFETY: `map + map_len - usable .. map + map_len` lies inside the
    // mapping made above, which nothing else uses yet.
    let rc = unsafe {
        libc::mprotect(
            map.add(map_len - usable).cast(),
            usable,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    if rc != 0 {
        // Told apart before the unmap changes the count of maps.
        let err = map_error(io::Error::last_os_error(), map_len, super::live_stacks());
        // SAFETY: the mapping made above, used by nothing.
        unsafe { unmap(map, map_len) };
        return Err(err);
    }
    Ok(NonNull::new(map).expect("mmap does not map at 0"))
}

/// Unmaps a stack made by [`map`].
///
/// # Safety
///
/// `map` and `map_len` are a mapping [`map`] returned, which nothing uses
/// any more.
pub(super) unsafe fn unmap(map: *mut u8, map_len: usize) {
    // SAFETY: caller's contract.
    unsafe { libc::munmap(map.cast(), map_len) };
    MAPPED.fetch_sub(1, Ordering::Relaxed);
}
