//! Fiber stacks: one `mmap` each, with a `PROT_NONE` guard below the usable part.
//!
//! Layout of one stack, addresses growing to the right:
//!
//! ```text
//! | guard (PROT_NONE, >= 64 KiB) | usable (read/write, `size` bytes) |
//! ^ limit() (mapping start)      ^ guard().end                      ^ base()
//! ```
//!
//! The stack grows down from `base()`. `limit()` includes the guard, as
//! corosensei's `Stack` trait requires. A frame that runs past the usable
//! part faults in the guard; the guard is wide enough that LuaJIT's 8.8 KiB `gsub` frames
//! cannot jump over it (the vendored Lua is also built with
//! `-fstack-clash-protection`, so every large frame probes each page).
//!
//! Every stack costs two memory maps (guard and usable part). Creation refuses
//! to go past `vm.max_map_count` (less a reserve for the allocator) with
//! [`StackError::MapLimit`], so the process never reaches the limit where
//! `malloc` itself fails and aborts. The other ways creation fails are told
//! apart: a size that no address space holds ([`StackError::TooLarge`]), and
//! the kernel out of memory ([`StackError::OutOfMemory`]).

use std::io::{self, Read};
use std::mem::ManuallyDrop;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};

mod error;
pub(crate) mod overflow;
pub mod pool;

pub use error::StackError;

/// Default usable stack size: 512 KiB, Tarantool's default.
pub const DEFAULT_STACK_SIZE: usize = 512 * 1024;
/// Smallest usable stack size accepted: 16 KiB, as in Tarantool.
pub const MIN_STACK_SIZE: usize = 16 * 1024;
/// Size of the `PROT_NONE` guard below every stack: 64 KiB.
pub const GUARD_SIZE: usize = 64 * 1024;
/// Memory maps kept free for the allocator and the Lua heap when counting
/// stacks against `vm.max_map_count`.
const MAP_RESERVE: usize = 2048;

/// Stacks alive in this process (all threads), two memory maps each.
static LIVE_STACKS: AtomicUsize = AtomicUsize::new(0);

fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize })
}

/// The system's `vm.max_map_count` (65530 when it cannot be read).
pub fn max_map_count() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(65530)
    })
}

/// The usable size a stack asked for with `size` bytes gets: whole pages, at
/// least [`MIN_STACK_SIZE`] (and at most the largest whole number of pages
/// a `usize` holds; [`FiberStack::new`] refuses sizes that large).
pub fn usable_size(size: usize) -> usize {
    let page = page_size();
    size.max(MIN_STACK_SIZE)
        .checked_next_multiple_of(page)
        .unwrap_or(usize::MAX / page * page)
}

/// The usable size and the mapping's length (guard included) of a stack
/// asked for with `size` bytes, or `None` when the mapping would be larger
/// than an address space holds (`isize::MAX` bytes, as for any Rust
/// allocation).
fn layout(size: usize) -> Option<(usize, usize)> {
    let usable = size
        .max(MIN_STACK_SIZE)
        .checked_next_multiple_of(page_size())?;
    let map_len = usable.checked_add(GUARD_SIZE)?;
    (map_len <= isize::MAX as usize).then_some((usable, map_len))
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

/// What a failed `mmap` or `mprotect` of a `map_len`-byte stack means, with
/// `live` other stacks alive: `ENOMEM` is the map limit when the process
/// has (nearly) `vm.max_map_count` maps, else the kernel out of memory.
#[cold]
fn map_error(err: io::Error, map_len: usize, live: usize) -> StackError {
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

/// Number of fiber stacks alive in the process, pooled ones included.
pub fn live_stacks() -> usize {
    LIVE_STACKS.load(Ordering::Relaxed)
}

/// A guarded, `mmap`'d fiber stack; unmapped on drop.
pub struct FiberStack {
    /// Start of the mapping (the guard's lowest address).
    map: *mut u8,
    /// Length of the whole mapping, guard included.
    map_len: usize,
    /// Usable bytes above the guard.
    size: usize,
    /// The mapping registered as a stack with Valgrind (a no-op elsewhere),
    /// so that it takes a switch onto this stack for one, not for wild
    /// accesses: dropped (deregistered) before the unmap.
    valgrind: ManuallyDrop<ValgrindStackRegistration>,
}

impl FiberStack {
    /// Maps a stack with `size` usable bytes (rounded up to whole pages, at
    /// least [`MIN_STACK_SIZE`]) above a [`GUARD_SIZE`] guard.
    ///
    /// Only the pages the fiber touches become resident.
    ///
    /// # Errors
    ///
    /// [`StackError::MapLimit`] when another stack would pass
    /// `vm.max_map_count` less a reserve, or the kernel refuses a map at
    /// that limit; [`StackError::TooLarge`] when the size with the guard
    /// is more than `isize::MAX` bytes; [`StackError::OutOfMemory`] when the
    /// kernel has no memory or address space for it; [`StackError::Os`]
    /// when `mmap` or `mprotect` fails otherwise.
    pub fn new(size: usize) -> Result<FiberStack, StackError> {
        let Some((size, map_len)) = layout(size) else {
            return Err(StackError::TooLarge { size });
        };
        let max = max_map_count();
        let live = LIVE_STACKS.fetch_add(1, Ordering::Relaxed);
        if (live + 1) * 2 + MAP_RESERVE > max {
            LIVE_STACKS.fetch_sub(1, Ordering::Relaxed);
            return Err(StackError::MapLimit {
                max_map_count: max,
                live_stacks: live,
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
            LIVE_STACKS.fetch_sub(1, Ordering::Relaxed);
            return Err(map_error(io::Error::last_os_error(), map_len, live));
        }
        let map = map.cast::<u8>();
        // SAFETY: `map + GUARD_SIZE .. map + map_len` lies inside the mapping
        // made above, which nothing else uses yet.
        let rc = unsafe {
            libc::mprotect(
                map.add(GUARD_SIZE).cast(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        let stack = FiberStack {
            map,
            map_len,
            size,
            valgrind: ManuallyDrop::new(ValgrindStackRegistration::new(map, map_len)),
        };
        if rc != 0 {
            // Told apart before the unmap changes the count of maps.
            let err = map_error(io::Error::last_os_error(), map_len, live);
            drop(stack);
            return Err(err);
        }
        Ok(stack)
    }

    /// Usable bytes (the guard excluded).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The addresses of this stack's guard: from [`Stack::limit`] up to
    /// the lowest usable byte.
    pub fn guard(&self) -> Range<usize> {
        let start = self.map as usize;
        start..start + GUARD_SIZE
    }

    /// Whether `addr` lies in this stack's guard.
    pub fn guard_contains(&self, addr: usize) -> bool {
        self.guard().contains(&addr)
    }

    /// Whether the fiber wrote just below the top `keep` bytes: a cheap
    /// guess (64 bytes read) that it went deeper than `keep`. Reading a page
    /// that was never written maps the shared zero page and costs no memory.
    pub fn touched_below(&self, keep: usize) -> bool {
        let page = page_size();
        let keep = keep.div_ceil(page) * page;
        if keep >= self.size {
            return false;
        }
        let top = self.map as usize + self.map_len;
        let probe = (top - keep - 64) as *const u64;
        // SAFETY: the 64 bytes lie inside the usable, readable part of this
        // stack (keep < size), which no coroutine uses while pooled.
        (0..8).any(|i| unsafe { probe.add(i).read_volatile() } != 0)
    }

    /// Gives back to the kernel every page more than `keep` bytes below the
    /// top (`madvise(MADV_DONTNEED)`): they read as zero and cost no memory
    /// until touched again.
    pub fn release_deep_pages(&mut self, keep: usize) {
        let page = page_size();
        let keep = keep.div_ceil(page) * page;
        if keep >= self.size {
            return;
        }
        // SAFETY: the range is the usable part of this stack below its top
        // `keep` bytes; the stack is not in use by any coroutine (it is being
        // pooled), so dropping its contents is allowed.
        unsafe {
            libc::madvise(
                self.map.add(GUARD_SIZE).cast(),
                self.size - keep,
                libc::MADV_DONTNEED,
            );
        }
    }
}

impl Drop for FiberStack {
    fn drop(&mut self) {
        // SAFETY: `valgrind` is dropped once, here, before the unmap;
        // `map`/`map_len` describe the mapping made in `new`, which no
        // coroutine uses any more (the stack is owned here).
        unsafe {
            ManuallyDrop::drop(&mut self.valgrind);
            libc::munmap(self.map.cast(), self.map_len);
        }
        LIVE_STACKS.fetch_sub(1, Ordering::Relaxed);
    }
}

// SAFETY: `base()` is the top of a read/write region of `size` bytes (a
// whole number of pages, at least MIN_STACK_SIZE, so 16-byte aligned and
// more than corosensei's minimum), a guard of GUARD_SIZE bytes lies right
// below that region, and `limit()` is the bottom of the guard: it includes
// the guard pages, as the trait requires.
unsafe impl Stack for FiberStack {
    fn base(&self) -> StackPointer {
        NonZeroUsize::new(self.map as usize + self.map_len).expect("mapping is not at 0")
    }

    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.map as usize).expect("mapping is not at 0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "mmap and mprotect are foreign calls Miri does not run")]
    fn sizes_round_up_to_pages_and_minimum() {
        let s = FiberStack::new(1).unwrap();
        assert_eq!(s.size(), MIN_STACK_SIZE);
        let s = FiberStack::new(MIN_STACK_SIZE + 1).unwrap();
        assert_eq!(s.size() % page_size(), 0);
        assert!(s.size() > MIN_STACK_SIZE);
        // `limit()` includes the guard, as corosensei's `Stack` requires.
        assert_eq!(s.base().get() - s.limit().get(), s.size() + GUARD_SIZE);
        assert_eq!(s.guard(), s.limit().get()..s.limit().get() + GUARD_SIZE);
        assert!(s.guard_contains(s.limit().get()));
        assert!(s.guard_contains(s.guard().end - 1));
        assert!(!s.guard_contains(s.guard().end));
        assert!(!s.guard_contains(s.limit().get() - 1));
    }
}
