//! The Lua heap's small blocks: a per-thread pool of size classes in front
//! of the state's own allocator.
//!
//! A Lua state makes and frees small blocks all the time (tables, their
//! hash parts, strings, closures); through the system `malloc` (mlua's
//! allocator) that was about a fifth of `msgpack.decode`. Blocks of up to
//! [`MAX_SMALL`] bytes come instead from one arena per thread, a reserved
//! mapping cut into 16-byte size classes: a class's freed blocks form a
//! free list, a class with none takes the next block of the arena (bump).
//! Freeing pushes the block back: a handful of instructions each way, no
//! lock, no header.
//!
//! Rules, cited as "heap rule N":
//!
//! 1. A block is the arena's when its address lies in the arena; any other
//!    block (larger ones, those made before the pool was installed, those
//!    made once the arena was full) belongs to the inner allocator and goes
//!    back to it. So the pool can be put in front of a live state.
//! 2. A state's allocator runs only on the state's own thread, and never
//!    re-enters itself: the arena is the thread's, with no lock. Each
//!    state's allocator data points at its thread's pool (found once, at
//!    install), so the hot path reads no thread-local.
//! 3. Lua gives the exact size of a block when it frees or resizes it
//!    (`lua_Alloc`'s `osize`), so a block's class is known without a header.
//! 4. The arena is never unmapped while a block of it lives. When its last
//!    block is freed (the thread's states are closed) its pages go back to
//!    the system (`MADV_DONTNEED`, when it used more than a MiB) and the
//!    bump starts over; the mapping stays, so a late caller still gets
//!    valid memory. When the thread exits with no block live, the arena is
//!    unmapped and the pool left empty (`base == end`: it owns nothing, and
//!    every later block goes to the inner allocator).

use std::cell::UnsafeCell;
use std::ffi::c_void;

use mlua::ffi;

/// The largest block the pool serves, in bytes.
pub const MAX_SMALL: usize = 512;
/// The size-class step: blocks are this many bytes apart in size (and
/// aligned to it, as `lua_Alloc` blocks must be for any Lua value).
const STEP: usize = 16;
const CLASSES: usize = MAX_SMALL / STEP;
/// The arena's reserved size per thread (address space; pages are used as
/// the bump reaches them).
const ARENA: usize = 1 << 30;
/// Past this many bytes of bump, an emptied arena gives its pages back.
const RESET_PAGES_OVER: usize = 1 << 20;

/// One thread's arena.
struct Pool {
    base: usize,
    end: usize,
    bump: usize,
    free: [*mut Free; CLASSES],
    /// Blocks handed out and not yet freed.
    live: usize,
}

/// A freed block: the next one of its class.
struct Free {
    next: *mut Free,
}

/// What the state's allocator data points to: the inner allocator and the
/// thread's pool.
struct Heap {
    inner: ffi::lua_Alloc,
    inner_ud: *mut c_void,
    pool: *mut Pool,
}

/// Unmaps the thread's arena at thread exit when no block of it lives
/// (heap rule 4).
struct ExitGuard(*mut Pool);

impl Drop for ExitGuard {
    fn drop(&mut self) {
        // SAFETY: the pool is leaked (never freed); heap rule 2: no
        // allocator call of this thread runs during its exit's destructors
        // at the same time as this one.
        let pool = unsafe { &mut *self.0 };
        if pool.live == 0 && pool.end > pool.base {
            // SAFETY: the arena's mapping, with no live block in it.
            unsafe { libc::munmap(pool.base as *mut c_void, pool.end - pool.base) };
            pool.end = pool.base;
            pool.bump = pool.base;
        }
    }
}

thread_local! {
    /// This thread's pool (leaked; heap rule 2), made by the first
    /// [`install`] here; null when the arena could not be mapped.
    static POOL: UnsafeCell<*mut Pool> = const { UnsafeCell::new(std::ptr::null_mut()) };
    static EXIT: UnsafeCell<Option<ExitGuard>> = const { UnsafeCell::new(None) };
}

/// Starts loading the cache line at `p` (any address, null too: a
/// prefetch reads nothing and never faults); nothing off x86-64.
#[inline(always)]
fn prefetch(p: *const Free) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: no memory is read, nothing faults.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The class of a block of `n` bytes (`1..=MAX_SMALL`).
#[inline(always)]
fn class(n: usize) -> usize {
    (n - 1) / STEP
}

impl Pool {
    fn new() -> Option<Pool> {
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choice touches no existing memory.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ARENA,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then(|| Pool {
            base: p as usize,
            end: p as usize + ARENA,
            bump: p as usize,
            free: [std::ptr::null_mut(); CLASSES],
            live: 0,
        })
    }

    #[inline(always)]
    fn owns(&self, p: *mut c_void) -> bool {
        (self.base..self.end).contains(&(p as usize))
    }

    /// A block of `n` bytes (`1..=MAX_SMALL`), or null when the arena is full.
    #[inline(always)]
    fn alloc(&mut self, n: usize) -> *mut c_void {
        let c = class(n);
        let head = self.free[c];
        if !head.is_null() {
            // SAFETY: a free-list entry is a freed block of this arena,
            // which holds its link (heap rule 1).
            let next = unsafe { (*head).next };
            self.free[c] = next;
            // The collector's sweep freed the list's blocks long ago: each
            // is out of the cache by the time it is handed out, and reading
            // its link was a cache miss per allocation (10% of the IPROTO
            // server's CPU under CALL, `perf`). The next block's line is
            // fetched now, while Lua fills this one.
            prefetch(next);
            self.live += 1;
            return head.cast();
        }
        let size = (c + 1) * STEP;
        if self.end - self.bump < size {
            return std::ptr::null_mut();
        }
        let p = self.bump;
        self.bump += size;
        self.live += 1;
        p as *mut c_void
    }

    /// Takes back the arena block `p` of `n` bytes.
    #[inline(always)]
    fn free(&mut self, p: *mut c_void, n: usize) {
        let c = class(n);
        let f = p.cast::<Free>();
        // SAFETY: `p` is a block of this arena that Lua is done with, at
        // least `STEP` bytes and aligned to it.
        unsafe { f.write(Free { next: self.free[c] }) };
        self.free[c] = f;
        self.live -= 1;
        if self.live == 0 && self.bump - self.base > RESET_PAGES_OVER {
            self.reset();
        }
    }

    /// Gives the arena's pages back and starts it over (heap rule 4).
    #[cold]
    fn reset(&mut self) {
        // SAFETY: no block of the arena is live; the pages stay mapped and
        // read back as zeros.
        unsafe {
            libc::madvise(
                self.base as *mut c_void,
                self.bump - self.base,
                libc::MADV_DONTNEED,
            );
        }
        self.bump = self.base;
        self.free = [std::ptr::null_mut(); CLASSES];
    }
}

/// The allocator installed by [`install`].
///
/// # Safety
///
/// Lua calls it as its allocator, `ud` the state's [`Heap`], on the state's
/// thread, with `lua_Alloc`'s contract for `ptr`, `osize` and `nsize`.
unsafe extern "C" fn pool_alloc(
    ud: *mut c_void,
    ptr: *mut c_void,
    osize: usize,
    nsize: usize,
) -> *mut c_void {
    // SAFETY: `ud` is the leaked `Heap` installed with this function.
    let heap = unsafe { &*ud.cast::<Heap>() };
    {
        // SAFETY: heap rule 2: the leaked pool of the state's thread, and no
        // other reference to it is live (this function does not re-enter).
        let pool = unsafe { &mut *heap.pool };
        // SAFETY: the inner allocator gets what Lua gave, or a fresh
        // request; blocks of the arena are at least `osize` bytes (heap rule
        // 3).
        unsafe {
            if ptr.is_null() {
                if nsize == 0 {
                    return std::ptr::null_mut();
                }
                if nsize <= MAX_SMALL {
                    let p = pool.alloc(nsize);
                    if !p.is_null() {
                        return p;
                    }
                }
                return (heap.inner)(heap.inner_ud, ptr, osize, nsize);
            }
            if !pool.owns(ptr) {
                return (heap.inner)(heap.inner_ud, ptr, osize, nsize);
            }
            if nsize == 0 {
                pool.free(ptr, osize);
                return std::ptr::null_mut();
            }
            if nsize <= MAX_SMALL && class(nsize) == class(osize) {
                return ptr;
            }
            let mut p = if nsize <= MAX_SMALL {
                pool.alloc(nsize)
            } else {
                std::ptr::null_mut()
            };
            if p.is_null() {
                p = (heap.inner)(heap.inner_ud, std::ptr::null_mut(), 0, nsize);
                if p.is_null() {
                    return p;
                }
            }
            std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), p.cast::<u8>(), osize.min(nsize));
            pool.free(ptr, osize);
            p
        }
    }
}

/// Puts the pool in front of `main`'s allocator (heap rule 1: blocks made
/// before stay the inner allocator's). Without an arena (the mapping
/// failed) every block goes to the inner allocator.
///
/// # Safety
///
/// `main` is the main thread of an idle state of this thread.
pub unsafe fn install(main: *mut ffi::lua_State) {
    let pool = POOL.with(|cell| {
        // SAFETY: heap rule 2; no allocator call is running.
        let pool = unsafe { &mut *cell.get() };
        if pool.is_null() {
            if let Some(p) = Pool::new() {
                *pool = Box::leak(Box::new(p));
                let guard = ExitGuard(*pool);
                // SAFETY: as above.
                EXIT.with(|e| unsafe { *e.get() = Some(guard) });
            }
        }
        *pool
    });
    if pool.is_null() {
        return;
    }
    // SAFETY: caller's contract; the `Heap` is leaked, so it outlives the
    // state (three words per runtime).
    unsafe {
        let mut inner_ud = std::ptr::null_mut();
        let inner = ffi::lua_getallocf(main, &mut inner_ud);
        let heap = Box::leak(Box::new(Heap {
            inner,
            inner_ud,
            pool,
        }));
        ffi::lua_setallocf(main, pool_alloc, (heap as *mut Heap).cast());
    }
}

#[cfg(test)]
mod tests {
    use super::POOL;
    use crate::LuaRuntime;

    /// Blocks of this thread's pool that are handed out.
    fn live() -> usize {
        // SAFETY: heap rule 2: no allocator call runs meanwhile.
        POOL.with(|c| unsafe { (*c.get()).as_ref().map_or(0, |p| p.live) })
    }

    #[test]
    fn a_closed_state_gives_every_block_back_and_contents_survive_resizes() {
        let rt = LuaRuntime::new().expect("a runtime");
        rt.run_chunk(
            r#"
            local parts, t = {}, {}
            for i = 1, 2000 do
                parts[#parts + 1] = tostring(i)
                t[i] = {i, tostring(i), {x = i}}
            end
            -- tables grow through every size class (realloc across classes)
            for i = 1, 2000 do
                assert(t[i][1] == i and t[i][2] == parts[i] and t[i][3].x == i)
            end
            assert(table.concat(parts):sub(1, 9) == '123456789')
            "#,
            "heap",
        )
        .expect("the chunk runs");
        assert!(live() > 0, "the state's small blocks come from the pool");
        drop(rt);
        assert_eq!(live(), 0, "every block came back when the state closed");
    }
}
