//! Stack arenas: stacks carved as slots out of large read/write mappings,
//! each slot's guard made with `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+),
//! which marks page-table entries of the mapping instead of making a
//! mapping of its own. So a million stacks cost about a thousand memory
//! maps instead of two million, and `vm.max_map_count` no longer caps the
//! number of live fibers.
//!
//! - One arena is one `MAP_NORESERVE` mapping of up to
//!   [`SLOTS_PER_ARENA`] slots (fewer for large stacks, so an arena stays
//!   within [`ARENA_BYTES`]); arenas are never unmapped, so the mapping never
//!   splits (and never costs another map). A freed slot gives its pages back
//!   with `MADV_DONTNEED` (its guard stays: guard markers outlive it) and goes
//!   on its class's free list, reused most recently freed first.
//! - Slots of one usable size form a class. Every size of a whole number of
//!   pages up to [`MAX_ARENA_STACK`] gets its class, for the first
//!   [`MAX_CLASSES`] sizes a process asks for; sizes past either bound take
//!   the two-map path (`stack::mapped`): a few deep fibers do not reserve
//!   an arena each.
//! - The arenas of every thread are one set behind a lock, taken when a
//!   stack is made or freed, which the per-thread pool in front of it makes
//!   rare; making and freeing cost O(1) (a pop or push of the free list, or
//!   carving the next slot), whatever the number of live stacks.
//! - A start-up probe (the first stack of the process) installs a guard
//!   on a page of a scratch mapping: where the kernel refuses (`EINVAL`
//!   before Linux 6.13), or `LUAFIBER_STACK_ARENAS=0` is set in the
//!   environment, every stack takes the two-map path, with its map-limit
//!   error.

use std::ffi::c_int;
use std::io;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::{mapped, page_size, StackError};

/// `madvise` advice that turns a range of a mapping into guard pages (a
/// touch raises `SIGSEGV` with `SEGV_MAPERR`); Linux 6.13+, not in `libc` yet.
const MADV_GUARD_INSTALL: c_int = 102;

/// Most slots in one arena.
pub const SLOTS_PER_ARENA: usize = 1024;
/// Most bytes of one arena, guards included: arenas of stacks larger than
/// 1 MiB hold fewer than [`SLOTS_PER_ARENA`] slots.
pub const ARENA_BYTES: usize = 1 << 30;
/// Largest usable size served from arenas: 8 MiB.
pub const MAX_ARENA_STACK: usize = 8 << 20;
/// Most distinct stack sizes served from arenas.
pub const MAX_CLASSES: usize = 64;

/// The environment variable that switches arenas off when it is `0`,
/// `off`, `no` or `false` (read once, at the first stack of the process).
pub const ARENAS_ENV: &str = "LUAFIBER_STACK_ARENAS";

/// Slots of one size.
struct Class {
    /// Bytes of one slot (its guard included), a whole number of pages.
    slot_len: usize,
    /// Slots of an arena of this class.
    per_arena: usize,
    /// The newest arena's start (0: none yet), and its slots carved.
    arena: usize,
    carved: usize,
    /// Every arena's start, for [`resident_bytes`].
    arenas: Vec<usize>,
    /// Freed slots' starts, most recently freed last.
    free: Vec<usize>,
}

/// Every class, and the stacks alive in them.
struct Arenas {
    classes: Vec<Class>,
    live: usize,
}

static ARENAS: Mutex<Arenas> = Mutex::new(Arenas {
    classes: Vec::new(),
    live: 0,
});

fn arenas() -> std::sync::MutexGuard<'static, Arenas> {
    // Nothing panics while the lock is held; a poisoned lock is still sound.
    ARENAS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether stacks come from arenas in this process: the kernel has
/// `MADV_GUARD_INSTALL` and [`ARENAS_ENV`] does not switch them off.
/// Probed once, at the first call.
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        let off = std::env::var(ARENAS_ENV)
            .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "no" | "false"));
        let on = !off && probe();
        tracing::debug!(arenas = on, switched_off = off, "fiber stacks");
        on
    })
}

/// Whether the kernel installs a guard in a scratch mapping.
fn probe() -> bool {
    let page = page_size();
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choice aliases nothing.
    let map = unsafe {
        libc::mmap(
            ptr::null_mut(),
            2 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: the first page of the scratch mapping made above, used by
    // nothing else; unmapped right after.
    let rc = unsafe { libc::madvise(map, page, MADV_GUARD_INSTALL) };
    // SAFETY: the scratch mapping made above.
    unsafe { libc::munmap(map, 2 * page) };
    rc == 0
}

/// Stacks alive in arenas.
pub(super) fn live() -> usize {
    arenas().live
}

/// A slot of `slot_len` bytes (guard included; `usable` bytes above the
/// guard) from the class of `usable`: its start and the class's index; or
/// `None` when arenas do not serve this size (switched off, too large, or
/// too many sizes already).
///
/// # Errors
///
/// As [`super::FiberStack::new`], when a new arena cannot be mapped or
/// the guard not installed.
pub(super) fn take(
    usable: usize,
    slot_len: usize,
    guard: usize,
) -> Option<Result<(NonNull<u8>, u32), StackError>> {
    if usable > MAX_ARENA_STACK || !enabled() {
        return None;
    }
    let mut a = arenas();
    let class = match a.classes.iter().position(|c| c.slot_len == slot_len) {
        Some(i) => i,
        None if a.classes.len() < MAX_CLASSES => {
            a.classes.push(Class {
                slot_len,
                per_arena: (ARENA_BYTES / slot_len).clamp(1, SLOTS_PER_ARENA),
                arena: 0,
                carved: 0,
                arenas: Vec::new(),
                free: Vec::new(),
            });
            a.classes.len() - 1
        }
        None => return None,
    };
    let live = a.live;
    let c = &mut a.classes[class];
    let start = match c.free.pop() {
        Some(start) => start,
        None => match carve(c, guard, live) {
            Ok(start) => start,
            Err(e) => return Some(Err(e)),
        },
    };
    a.live += 1;
    let start = NonNull::new(start as *mut u8).expect("arenas are not at 0");
    Some(Ok((start, class as u32)))
}

/// The next slot of `c`'s newest arena (mapping a new one when it is full),
/// with its guard of `guard` bytes installed; `live` stacks are alive in
/// arenas (for the error).
fn carve(c: &mut Class, guard: usize, live: usize) -> Result<usize, StackError> {
    let error = |len| mapped::map_error(io::Error::last_os_error(), len, live + mapped::live());
    if c.arena == 0 || c.carved == c.per_arena {
        let len = c.per_arena * c.slot_len;
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choice aliases nothing.
        let map = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(error(len));
        }
        c.arena = map as usize;
        c.carved = 0;
        c.arenas.push(c.arena);
    }
    let start = c.arena + c.carved * c.slot_len;
    // SAFETY: the lowest `guard` bytes of a slot of an arena of this class,
    // carved by nobody yet: no stack uses them.
    let rc = unsafe { libc::madvise(start as *mut _, guard, MADV_GUARD_INSTALL) };
    if rc != 0 {
        return Err(error(guard));
    }
    c.carved += 1;
    Ok(start)
}

/// Gives a slot back: its pages above the guard go to the kernel, the slot
/// to its class's free list.
///
/// # Safety
///
/// `start` and `class` came from [`take`] with `slot_len` and `guard`, and
/// nothing uses the slot any more.
pub(super) unsafe fn free(start: NonNull<u8>, class: u32, slot_len: usize, guard: usize) {
    // SAFETY: caller's contract: the slot's usable part, which nothing
    // uses, lies inside its arena.
    unsafe {
        libc::madvise(
            start.as_ptr().add(guard).cast(),
            slot_len - guard,
            libc::MADV_DONTNEED,
        );
    }
    let mut a = arenas();
    a.live -= 1;
    a.classes[class as usize].free.push(start.as_ptr() as usize);
}

/// Memory maps the arenas hold (one each, unless the kernel merged
/// neighbours).
pub fn arena_count() -> usize {
    arenas().classes.iter().map(|c| c.arenas.len()).sum()
}

/// Bytes of the arenas' slots that are resident (`mincore`), guards aside:
/// what the stacks of live and freed slots hold. A diagnostic, linear in
/// the arenas' size.
pub fn resident_bytes() -> usize {
    let page = page_size();
    let a = arenas();
    let mut resident = 0;
    let mut vec = Vec::new();
    for c in &a.classes {
        let len = c.per_arena * c.slot_len;
        for &arena in &c.arenas {
            vec.clear();
            vec.resize(len / page, 0u8);
            // SAFETY: `arena..arena + len` is one of the arenas, mapped for
            // the process's life; `vec` has a byte per page.
            let rc = unsafe { libc::mincore(arena as *mut _, len, vec.as_mut_ptr()) };
            if rc == 0 {
                resident += vec.iter().filter(|&&b| b & 1 != 0).count() * page;
            }
        }
    }
    resident
}
