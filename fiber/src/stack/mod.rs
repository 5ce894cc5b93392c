//! Fiber stacks: a usable read/write part above a guard of [`GUARD_SIZE`]
//! bytes that faults when touched.
//!
//! Layout of one stack, addresses growing to the right:
//!
//! ```text
//! | guard (>= 64 KiB) | usable (`size` bytes, and the colour room) |
//! ^ limit()           ^ guard().end                      base() ^ ^ end
//! ```
//!
//! The stack grows down from `base()`. `limit()` includes the guard, as
//! corosensei's `Stack` trait requires. A frame that runs past the usable
//! part faults in the guard; the guard is wide enough that LuaJIT's 8.8 KiB
//! `gsub` frames cannot jump over it (the vendored Lua is also built with
//! `-fstack-clash-protection`, so every large frame probes each page).
//!
//! Where a stack's memory comes from:
//!
//! - [`arena`]: a slot of a large mapping shared by up to 1,024 stacks,
//!   its guard made by `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+): no
//!   memory map of its own, so `vm.max_map_count` does not cap the number
//!   of live fibers. Every size up to 8 MiB, for the first 64 sizes.
//! - `mapped`: a mapping of its own with a `PROT_NONE` guard, two memory
//!   maps. Used for every stack where the kernel has no guard install (or
//!   arenas are switched off, [`arena::ARENAS_ENV`]), and for the sizes
//!   arenas do not serve. Creation refuses to go past `vm.max_map_count`
//!   (less a reserve) with [`StackError::MapLimit`]; the other ways
//!   creation fails are told apart: a size that no address space holds
//!   ([`StackError::TooLarge`]), and the kernel out of memory
//!   ([`StackError::OutOfMemory`]).
//!
//! Colour: every stack's top, `base()`, is set [`COLOUR_STEP`] times a
//! number from 0 to [`COLOURS`] - 1 below the end of its memory (the number
//! follows the stack's address, so neighbours differ), in a room of one page
//! above the usable size. Without it every fiber's hottest frames would sit
//! at the same offset in a page, and so in the same few sets of the caches,
//! evicting each other as soon as more than a few fibers take turns.

use std::mem::ManuallyDrop;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::OnceLock;

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};

pub mod arena;
mod error;
mod mapped;
pub(crate) mod overflow;
pub mod pool;

pub use error::StackError;

/// Default usable stack size: 512 KiB, Tarantool's default.
pub const DEFAULT_STACK_SIZE: usize = 512 * 1024;
/// Smallest usable stack size accepted: 16 KiB, as in Tarantool.
pub const MIN_STACK_SIZE: usize = 16 * 1024;
/// Size of the guard below every stack: 64 KiB.
pub const GUARD_SIZE: usize = 64 * 1024;
/// Bytes between two colours of stack tops: a cache line.
pub const COLOUR_STEP: usize = 64;
/// Distinct colours of stack tops: half a page of lines, so a new fiber's
/// first frames (up to about 2 KiB) stay within the top page (64 colours,
/// a whole page, made one fiber in two touch a second page: a million idle
/// fibers took 5.9 KB of RSS each instead of 4.9, and were made at half the
/// rate, with no gain in switch speed measured).
pub const COLOURS: usize = 32;

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

/// The usable size and the memory's length (guard and colour room
/// included) of a stack asked for with `size` bytes, or `None` when the
/// memory would be larger than an address space holds (`isize::MAX`
/// bytes, as for any Rust allocation).
fn layout(size: usize) -> Option<(usize, usize)> {
    let page = page_size();
    let usable = size.max(MIN_STACK_SIZE).checked_next_multiple_of(page)?;
    let len = usable.checked_add(GUARD_SIZE + page)?;
    (len <= isize::MAX as usize).then_some((usable, len))
}

/// How far below the end of its memory a stack at `start`, `len` bytes
/// long, has its top.
fn colour(start: usize, len: usize) -> usize {
    (start / len) % COLOURS * COLOUR_STEP
}

/// Number of fiber stacks alive in the process, pooled ones included.
pub fn live_stacks() -> usize {
    arena::live() + mapped::live()
}

/// [`FiberStack::class`] of a stack in a mapping of its own.
const MAPPED: usize = usize::MAX;

/// A guarded fiber stack, in an arena or a mapping of its own; given back
/// on drop.
///
/// `repr(C)`, the Valgrind registration first: an `Option` or `Result` of
/// a stack has its tag in `start` (the one field with a niche), and with
/// `start` at offset 8 the moves of a stack out of the pool are read back
/// in the 16-byte pieces they were written in (the store buffer forwards
/// them; with `start` first, the rest was read across two pieces).
#[repr(C)]
pub struct FiberStack {
    /// The stack's memory registered as a stack with Valgrind (a no-op
    /// elsewhere), so that it takes a switch onto this stack for one, not
    /// for wild accesses: dropped (deregistered) before the memory is given
    /// back.
    valgrind: ManuallyDrop<ValgrindStackRegistration>,
    /// The guard's lowest address: the start of the stack's memory.
    start: NonNull<u8>,
    /// Length of the stack's memory, guard and colour room included.
    /// Its usable bytes, above the guard (what was asked for, rounded up
    /// to pages), are `len` less the guard and the colour room of one page
    /// ([`layout`]): not kept, so that the stack fits the slot's line with
    /// the Valgrind registration.
    len: usize,
    /// `base()`: below the end of the memory by the colour.
    base: NonZeroUsize,
    /// Where the memory comes from: the class of the arena it is a slot
    /// of, or [`MAPPED`]. A whole word, as every other field: with a `u32`
    /// (an enum of the class and a tag) the moves of a stack on creation
    /// were made of loads straddling two stores (`Result<FiberStack, _>`
    /// took its tag from the enum's), which the store buffer cannot
    /// forward: `Builder::build` took twice its share of the time.
    class: usize,
}

impl FiberStack {
    /// Makes a stack with `size` usable bytes (rounded up to whole pages, at
    /// least [`MIN_STACK_SIZE`]) above a [`GUARD_SIZE`] guard: a slot of
    /// an arena where the kernel and the size allow, else a mapping of its
    /// own.
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
    /// when `mmap`, `mprotect` or `madvise` fails otherwise.
    pub fn new(size: usize) -> Result<FiberStack, StackError> {
        let Some((size, len)) = layout(size) else {
            return Err(StackError::TooLarge { size });
        };
        let (start, class) = match arena::take(size, len, GUARD_SIZE) {
            Some(slot) => {
                let (start, class) = slot?;
                (start, class as usize)
            }
            None => (mapped::map(len - GUARD_SIZE, len)?, MAPPED),
        };
        let end = start.as_ptr() as usize + len;
        let base = NonZeroUsize::new(end - colour(start.as_ptr() as usize, len))
            .expect("stacks are not at 0");
        Ok(FiberStack {
            start,
            len,
            base,
            class,
            valgrind: ManuallyDrop::new(ValgrindStackRegistration::new(start.as_ptr(), len)),
        })
    }

    /// Usable bytes (the guard excluded): at least what was asked for.
    pub fn size(&self) -> usize {
        self.len - GUARD_SIZE - page_size()
    }

    /// Whether this stack is a slot of an arena (else a mapping of its own).
    pub fn in_arena(&self) -> bool {
        self.class != MAPPED
    }

    /// The end of the stack's memory, at or above `base()`.
    fn end(&self) -> usize {
        self.start.as_ptr() as usize + self.len
    }

    /// The addresses of this stack's guard: from [`Stack::limit`] up to
    /// the lowest usable byte.
    pub fn guard(&self) -> Range<usize> {
        let start = self.start.as_ptr() as usize;
        start..start + GUARD_SIZE
    }

    /// Whether `addr` lies in this stack's guard.
    pub fn guard_contains(&self, addr: usize) -> bool {
        self.guard().contains(&addr)
    }

    /// Whether the fiber wrote just below the top `keep` bytes of the
    /// stack's memory: a cheap guess (64 bytes read) that it went deeper
    /// than `keep`. Reading a page that was never written maps the shared
    /// zero page and costs no memory.
    pub fn touched_below(&self, keep: usize) -> bool {
        let page = page_size();
        let keep = keep.div_ceil(page) * page;
        if keep >= self.len - GUARD_SIZE {
            return false;
        }
        let probe = (self.end() - keep - 64) as *const u64;
        // SAFETY: the 64 bytes lie inside the usable, readable part of this
        // stack (keep is less than it), which no coroutine uses while pooled.
        (0..8).any(|i| unsafe { probe.add(i).read_volatile() } != 0)
    }

    /// Gives back to the kernel every page more than `keep` bytes below the
    /// end of the stack's memory (`madvise(MADV_DONTNEED)`): they read as
    /// zero and cost no memory until touched again.
    pub fn release_deep_pages(&mut self, keep: usize) {
        let page = page_size();
        let keep = keep.div_ceil(page) * page;
        let usable = self.len - GUARD_SIZE;
        if keep >= usable {
            return;
        }
        // SAFETY: the range is the usable part of this stack below its top
        // `keep` bytes; the stack is not in use by any coroutine (it is being
        // pooled), so dropping its contents is allowed.
        unsafe {
            libc::madvise(
                self.start.as_ptr().add(GUARD_SIZE).cast(),
                usable - keep,
                libc::MADV_DONTNEED,
            );
        }
    }
}

impl Drop for FiberStack {
    fn drop(&mut self) {
        // SAFETY: dropped once, here, before the memory is given back.
        unsafe { ManuallyDrop::drop(&mut self.valgrind) };
        match self.class {
            // SAFETY: the mapping `new` made; no coroutine uses it any more.
            MAPPED => unsafe { mapped::unmap(self.start.as_ptr(), self.len) },
            // SAFETY: the slot `new` took from the arenas with this length
            // and guard; no coroutine uses it any more (the stack is owned
            // here). Classes are `u32`s (`arena::take`).
            class => unsafe { arena::free(self.start, class as u32, self.len, GUARD_SIZE) },
        }
    }
}

// SAFETY: `base()` is the top of a read/write region of at least `size`
// bytes (a whole number of pages, at least MIN_STACK_SIZE, so more than
// corosensei's minimum; the colour is a multiple of 64 below a page
// boundary, so `base()` is 16-byte aligned), a guard of GUARD_SIZE bytes
// lies right below that region, and `limit()` is the bottom of the guard:
// it includes the guard pages, as the trait requires.
unsafe impl Stack for FiberStack {
    fn base(&self) -> StackPointer {
        self.base
    }

    fn limit(&self) -> StackPointer {
        NonZeroUsize::new(self.start.as_ptr() as usize).expect("stacks are not at 0")
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
        let top = s.limit().get() + s.size() + GUARD_SIZE;
        assert!(s.base().get() >= top && s.base().get() <= top + page_size());
        assert_eq!(s.base().get() % 16, 0);
        assert_eq!(s.guard(), s.limit().get()..s.limit().get() + GUARD_SIZE);
        assert!(s.guard_contains(s.limit().get()));
        assert!(s.guard_contains(s.guard().end - 1));
        assert!(!s.guard_contains(s.guard().end));
        assert!(!s.guard_contains(s.limit().get() - 1));
    }
}
