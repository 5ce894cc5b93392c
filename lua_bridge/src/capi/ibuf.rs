//! `struct ibuf` as Tarantool's C code sees it (`small/ibuf.h`: pointers
//! `buf <= rpos <= wpos <= epos`, which C modules read and move
//! themselves), its functions (`ibuf_create`, `ibuf_destroy`,
//! `ibuf_reinit`, `ibuf_reserve_slow`, `box_ibuf_*`), and the cord's stash
//! of them (`cord_ibuf_take` / `cord_ibuf_put` / `cord_ibuf_drop`).
//!
//! The runtime's [`luafiber_runtime::ibuf::Ibuf`] keeps offsets, not
//! pointers, so C cannot share it: these buffers are their own, with memory
//! from C's `malloc`, and their stash keeps the rules of the runtime's
//! (a take hands out an empty buffer; a put keeps the memory, up to
//! [`StashConfig`] limits; a buffer taken in a fiber comes back by itself
//! when the fiber yields or ends, as in Tarantool).

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void};

use luafiber_fiber::{self as fiber, FiberId};
use luafiber_runtime::ibuf::{stash_config, StashConfig, CORD_IBUF_START_CAPACITY};

use super::{diag, guard};
use crate::raw::error::ErrorKind;

/// Tarantool's `struct ibuf` (`box_ibuf_t`), field for field.
#[repr(C)]
pub struct CIbuf {
    /// Tarantool's slab cache; unused here (NULL).
    pub slabc: *mut c_void,
    /// Start of the memory (NULL when there is none).
    pub buf: *mut c_char,
    /// Start of the unread data.
    pub rpos: *mut c_char,
    /// End of the unread data, start of the room to write.
    pub wpos: *mut c_char,
    /// End of the memory.
    pub epos: *mut c_char,
    /// The capacity of the first growth, in bytes.
    pub start_capacity: usize,
}

impl CIbuf {
    const fn empty(start_capacity: usize) -> CIbuf {
        let null = std::ptr::null_mut();
        CIbuf {
            slabc: null as *mut c_void,
            buf: null,
            rpos: null,
            wpos: null,
            epos: null,
            start_capacity,
        }
    }

    fn capacity(&self) -> usize {
        self.epos as usize - self.buf as usize
    }

    fn free_memory(&mut self) {
        // SAFETY: `buf` is NULL or from `malloc` (`reserve`).
        unsafe { libc::free(self.buf.cast()) };
        *self = CIbuf::empty(self.start_capacity);
    }

    /// Makes room for `size` bytes at `wpos`, keeping the unread data;
    /// `None` when memory cannot be had.
    fn reserve(&mut self, size: usize) -> Option<*mut c_char> {
        let used = self.wpos as usize - self.rpos as usize;
        let cap = self.capacity();
        if self.epos as usize - self.wpos as usize >= size {
            return Some(self.wpos);
        }
        let need = used.checked_add(size)?;
        if used <= cap / 2 && need <= cap {
            // SAFETY: `rpos..wpos` and `buf..buf + used` lie in the block.
            unsafe { std::ptr::copy(self.rpos, self.buf, used) };
        } else {
            let mut new_cap = self.start_capacity.max(cap).max(1);
            while new_cap < need {
                new_cap = new_cap.checked_mul(2)?;
            }
            // SAFETY: a plain allocation, checked below.
            let mem = unsafe { libc::malloc(new_cap) }.cast::<c_char>();
            if mem.is_null() {
                return None;
            }
            // SAFETY: `used` bytes at `rpos` are readable; `mem` has room.
            unsafe {
                if used > 0 {
                    std::ptr::copy_nonoverlapping(self.rpos, mem, used);
                }
                libc::free(self.buf.cast());
            }
            self.buf = mem;
            // SAFETY: within the new block.
            self.epos = unsafe { mem.add(new_cap) };
        }
        self.rpos = self.buf;
        // SAFETY: `used <= capacity`.
        self.wpos = unsafe { self.buf.add(used) };
        Some(self.wpos)
    }
}

/// `ibuf_create(ibuf, slabc, start_capacity)`: an empty buffer with no
/// memory yet.
///
/// # Safety
///
/// `ibuf` points to writable room for a `struct ibuf`.
#[no_mangle]
pub unsafe extern "C" fn ibuf_create(ibuf: *mut CIbuf, slabc: *mut c_void, start_capacity: usize) {
    // SAFETY: writable (contract).
    unsafe {
        ibuf.write(CIbuf {
            slabc,
            ..CIbuf::empty(start_capacity)
        })
    };
}

/// `ibuf_destroy(ibuf)`: frees the buffer's memory.
///
/// # Safety
///
/// `ibuf` was set up by [`ibuf_create`] (or taken from the cord).
#[no_mangle]
pub unsafe extern "C" fn ibuf_destroy(ibuf: *mut CIbuf) {
    // SAFETY: a live buffer (contract).
    if let Some(b) = unsafe { ibuf.as_mut() } {
        b.free_memory();
    }
}

/// `ibuf_reinit(ibuf)`: frees the memory, keeping the buffer usable.
///
/// # Safety
///
/// As [`ibuf_destroy`].
#[no_mangle]
pub unsafe extern "C" fn ibuf_reinit(ibuf: *mut CIbuf) {
    // SAFETY: the same contract.
    unsafe { ibuf_destroy(ibuf) }
}

/// `ibuf_reserve_slow(ibuf, size)`: room for `size` bytes at `wpos` (the
/// unread data may move); returns `wpos`, or NULL (with an `OutOfMemory`
/// error in the diagnostics).
///
/// # Safety
///
/// As [`ibuf_destroy`], with `buf <= rpos <= wpos <= epos`.
#[no_mangle]
pub unsafe extern "C" fn ibuf_reserve_slow(ibuf: *mut CIbuf, size: usize) -> *mut c_void {
    // SAFETY: a live buffer (contract).
    let Some(b) = (unsafe { ibuf.as_mut() }) else {
        return std::ptr::null_mut();
    };
    match b.reserve(size) {
        Some(p) => p.cast(),
        None => {
            diag::set(
                ErrorKind::OutOfMemory,
                format!("Failed to allocate {size} bytes in ibuf"),
            );
            std::ptr::null_mut()
        }
    }
}

/// `box_ibuf_reserve(ibuf, size)`: as [`ibuf_reserve_slow`].
///
/// # Safety
///
/// As [`ibuf_reserve_slow`].
#[no_mangle]
pub unsafe extern "C" fn box_ibuf_reserve(ibuf: *mut CIbuf, size: usize) -> *mut c_void {
    // SAFETY: the same contract.
    unsafe { ibuf_reserve_slow(ibuf, size) }
}

/// `box_ibuf_read_range(ibuf, &rpos, &wpos)`: the addresses of the
/// buffer's `rpos` and `wpos` fields.
///
/// # Safety
///
/// `ibuf` is live; the out-pointers are writable.
#[no_mangle]
pub unsafe extern "C" fn box_ibuf_read_range(
    ibuf: *mut CIbuf,
    rpos: *mut *mut *mut c_char,
    wpos: *mut *mut *mut c_char,
) {
    // SAFETY: contract.
    unsafe {
        *rpos = &raw mut (*ibuf).rpos;
        *wpos = &raw mut (*ibuf).wpos;
    }
}

/// `box_ibuf_write_range(ibuf, &wpos, &end)`: the addresses of the
/// buffer's `wpos` and `epos` fields.
///
/// # Safety
///
/// As [`box_ibuf_read_range`].
#[no_mangle]
pub unsafe extern "C" fn box_ibuf_write_range(
    ibuf: *mut CIbuf,
    wpos: *mut *mut *mut c_char,
    end: *mut *mut *mut c_char,
) {
    // SAFETY: contract.
    unsafe {
        *wpos = &raw mut (*ibuf).wpos;
        *end = &raw mut (*ibuf).epos;
    }
}

/// The cord's C buffers: free ones, and taken ones with the fiber that took
/// them (`None`: outside any fiber, never given back by itself).
#[derive(Default)]
// Boxed: C holds the buffers' addresses while they move between the lists.
#[allow(clippy::vec_box)]
struct Stash {
    free: Vec<Box<CIbuf>>,
    taken: Vec<(Box<CIbuf>, Option<FiberId>)>,
    hooked: bool,
}

impl Stash {
    /// Gives back taken buffer number `i`: emptied, its memory kept within
    /// the limits of `config`.
    fn put(&mut self, i: usize, config: StashConfig) {
        let (mut b, _) = self.taken.swap_remove(i);
        b.rpos = b.buf;
        b.wpos = b.buf;
        if self.free.len() >= config.free_max || b.capacity() > config.keep_max {
            b.free_memory();
        }
        self.free.push(b);
    }
}

thread_local! {
    static STASH: RefCell<Stash> = RefCell::new(Stash::default());
    static PREV_HOOK: Cell<Option<fn()>> = const { Cell::new(None) };
}

/// `cord_ibuf_take()`: an empty buffer of the cord (one that came back
/// keeps its memory). Inside a fiber it comes back by itself when the fiber
/// yields or ends.
#[no_mangle]
pub extern "C" fn cord_ibuf_take() -> *mut CIbuf {
    guard("cord_ibuf_take", std::ptr::null_mut(), || {
        let owner = fiber::current();
        STASH.with(|s| {
            let mut s = s.borrow_mut();
            if !s.hooked {
                s.hooked = true;
                PREV_HOOK.with(|p| p.set(fiber::set_switch_hook(Some(switch_hook))));
            }
            let mut b = s.free.pop().unwrap_or_else(|| {
                let start = stash_config().start_capacity.max(CORD_IBUF_START_CAPACITY);
                Box::new(CIbuf::empty(start))
            });
            let p = &raw mut *b;
            s.taken.push((b, owner));
            p
        })
    })
}

/// Gives back the taken buffer `ibuf`, freeing its memory first when
/// `drop_memory`; a buffer not taken (given back already) is left alone.
fn give_back(ibuf: *mut CIbuf, drop_memory: bool) {
    STASH.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(i) = s.taken.iter().position(|(b, _)| std::ptr::eq(&**b, ibuf)) {
            if drop_memory {
                s.taken[i].0.free_memory();
            }
            s.put(i, stash_config());
        }
    });
}

/// `cord_ibuf_put(ibuf)`: gives a taken buffer back, emptied, keeping its
/// memory.
#[no_mangle]
pub extern "C" fn cord_ibuf_put(ibuf: *mut CIbuf) {
    guard("cord_ibuf_put", (), || give_back(ibuf, false));
}

/// `cord_ibuf_drop(ibuf)`: frees a taken buffer's memory and gives it back.
#[no_mangle]
pub extern "C" fn cord_ibuf_drop(ibuf: *mut CIbuf) {
    guard("cord_ibuf_drop", (), || give_back(ibuf, true));
}

/// Gives back what the current fiber took, then runs the hook installed
/// before.
fn switch_hook() {
    if let Some(me) = fiber::current() {
        STASH.with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return;
            };
            let config = stash_config();
            let mut i = 0;
            while i < s.taken.len() {
                match s.taken[i].1 == Some(me) {
                    true => s.put(i, config),
                    false => i += 1,
                }
            }
        });
    }
    if let Some(prev) = PREV_HOOK.with(Cell::get) {
        prev();
    }
}

impl Drop for Stash {
    fn drop(&mut self) {
        for b in &mut self.free {
            b.free_memory();
        }
        for (b, _) in &mut self.taken {
            b.free_memory();
        }
    }
}
