//! Cache prefetches for the switch: while one fiber runs, the lines the
//! next switches will touch are brought in (the next fiber's slot, and the
//! top and the suspended frames of its stack), so that with many fibers
//! taking turns a switch does not wait on each of them in turn.

use super::core::Scheduler;
use super::record::Handle;

/// The part of a suspended fiber's stack that a switch back into it reads,
/// around the stack pointer `blocked` saw: the registers the switch saved
/// below it, the frames of the call that blocked above it.
const BELOW: usize = 2 * 64;
/// See [`BELOW`].
const ABOVE: usize = 4 * 64;

/// Ready fibers below which nothing is prefetched: the lines a switch
/// touches (about a dozen a fiber) of this many fibers stay in the first
/// level cache (32 KiB) anyway.
const FEW: usize = 32;

/// Asks the cache for the line at `p` (no fault if `p` is not mapped).
#[inline(always)]
fn line(p: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and never faults, whatever `p` is.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The current stack pointer.
#[inline(always)]
pub(super) fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads a register; touches no memory.
        unsafe {
            core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags))
        };
        sp
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

impl Scheduler {
    /// Prefetches for the switches after the one to the fiber just taken
    /// from the ready queue: the slot of the fiber after the next one, and
    /// the stack of the next one (whose slot the previous call brought in):
    /// its yielder, at its top, its embedder's tag word (the Lua bridge's
    /// `lua_State`), and the frames around the stack pointer at which fibers
    /// last blocked ([`Scheduler::depth`]).
    #[inline(always)]
    pub(super) fn prefetch_next(&self) {
        if self.ready.len() < FEW {
            return;
        }
        if let Some(h) = self.ready.get(1) {
            slot_lines(h);
        }
        let Some(h) = self.ready.front() else {
            return;
        };
        let Some(slot) = self.slots.get(h) else {
            return;
        };
        let y = slot.yielder as usize;
        if y == 0 || self.depth == 0 {
            return;
        }
        line(y);
        // The embedder's constant word: the Lua bridge's is the fiber's
        // `lua_State`, which the switch back reads first.
        line(slot.running.tag);
        line(slot.running.tag.wrapping_add(64));
        let sp = y.wrapping_sub(self.depth);
        let mut p = sp.wrapping_sub(BELOW) & !63;
        let end = sp.wrapping_add(ABOVE);
        while p < end {
            line(p);
            p += 64;
        }
    }
}

/// Prefetches the first two lines of `h`'s slot: what a switch and
/// [`Scheduler::prefetch_next`] read.
#[inline(always)]
fn slot_lines(h: Handle) {
    line(h.entry.as_ptr() as usize);
    line(h.entry.as_ptr() as usize + 64);
}
