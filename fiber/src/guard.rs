//! Reporting a fiber stack overflow: a `SIGSEGV` handler, on an alternate
//! signal stack, that recognises a fault inside the running fiber's guard and
//! names the fiber before ending the process.
//!
//! The running fiber's guard range, id and name are kept in a record in
//! its slot, and a thread-local pointer to that record is set on every
//! switch (one store), so the handler reads them without locks or
//! allocation. Slots never move and their memory is never freed while the
//! thread's scheduler lives, and the pointer is moved off a slot before the
//! slot is freed. A fault anywhere else goes to the handler that was
//! installed before (Rust's own, or the default action).

use std::cell::Cell;
use std::sync::{Once, OnceLock};

/// What the handler (and [`current_ext`](crate::current_ext)) needs to
/// know about a fiber while it runs, and its [`fiber_word`]; kept in its
/// slot.
///
/// [`fiber_word`]: crate::fiber_word
pub(crate) struct Running {
    /// Guard start and end addresses.
    pub guard: (usize, usize),
    pub fid: u64,
    /// The name's bytes (kept in step with the slot's name by `set_name`).
    pub name: (*const u8, usize),
    /// The embedder's word.
    pub ext: usize,
    /// The fiber's [`fiber_word`](crate::fiber_word).
    pub word: Cell<usize>,
}

thread_local! {
    /// The running fiber's record, or null outside fibers.
    static RUNNING: Cell<*const Running> = const { Cell::new(std::ptr::null()) };
    static ALT_STACK: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Records the fiber switched to (null: none). The record must stay where
/// it is, unchanged but for its name, until another is set.
#[inline(always)]
pub(crate) fn set_running(r: *const Running) {
    RUNNING.with(|c| c.set(r));
}

/// The running fiber's record, if any.
#[inline(always)]
pub(crate) fn running() -> Option<&'static Running> {
    // SAFETY: `set_running`'s contract: a record set stays valid until it
    // is replaced; the reference is used at once by the callers.
    unsafe { RUNNING.with(Cell::get).as_ref() }
}

/// Bytes of machine stack left below the caller's frame before the running
/// fiber's guard, or `None` outside fibers. For code that recurses on
/// input (an encoder walking nested tables) to stop with an error where it
/// would otherwise fault in the guard.
#[inline]
pub fn stack_left() -> Option<usize> {
    let (_, end) = running()?.guard;
    let here = 0u8;
    Some((std::ptr::addr_of!(here) as usize).saturating_sub(end))
}

/// Calls `f` with the running fiber's id and name, read from its record
/// without the scheduler (so it works anywhere, scheduler code included:
/// a `tracing` layer sees events the scheduler emits); `None` outside
/// fibers.
pub fn with_running<R>(f: impl FnOnce(u64, &[u8]) -> R) -> Option<R> {
    let r = running()?;
    // SAFETY: the record's name points at the slot's name bytes, kept in
    // step by `set_name` and alive while the fiber runs (this call).
    let name = unsafe { std::slice::from_raw_parts(r.name.0, r.name.1) };
    Some(f(r.fid, name))
}

/// Installs the handler (once per process) and this thread's alternate
/// signal stack (once per thread).
pub(crate) fn install() {
    if !ALT_STACK.with(Cell::get) {
        ALT_STACK.with(|c| c.set(true));
        const SIZE: usize = 64 * 1024;
        // Leaked on purpose: the signal stack must outlive the thread's use.
        let mem = Box::leak(vec![0u8; SIZE].into_boxed_slice());
        let ss = libc::stack_t {
            ss_sp: mem.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: SIZE,
        };
        // SAFETY: `ss` describes memory that lives for the rest of the process.
        unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
    }
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; `on_segv` has the SA_SIGINFO
        // signature; PREVIOUS is written once, before any fault we handle.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_segv as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGSEGV, &sa, &mut old);
            let _ = PREVIOUS.set(old);
        }
    });
}

/// Writes `n` in decimal into `buf`; returns the digits.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let addr = unsafe { (*info).si_addr() } as usize;
    // SAFETY: as in `running`; a fault never happens in the few
    // instructions that replace the record.
    let r = unsafe { RUNNING.with(Cell::get).as_ref() };
    if let Some(r) = r.filter(|r| addr >= r.guard.0 && addr < r.guard.1) {
        let mut num = [0u8; 20];
        let write = |b: &[u8]| {
            // SAFETY: write(2) is async-signal-safe; `b` is valid.
            unsafe { libc::write(2, b.as_ptr().cast(), b.len()) };
        };
        write(b"luafiber: fiber ");
        write(decimal(r.fid, &mut num));
        write(b" (");
        if !r.name.0.is_null() {
            // SAFETY: the name stays valid while its fiber runs (module doc).
            write(unsafe { std::slice::from_raw_parts(r.name.0, r.name.1) });
        }
        write(b"): stack overflow (a fault in its stack guard); aborting\n");
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(134) };
    }
    // Not ours: hand it to the previous handler, or take the default action.
    // SAFETY: PREVIOUS was set before this handler could run.
    unsafe {
        match PREVIOUS.get().copied() {
            Some(old) if old.sa_flags & libc::SA_SIGINFO != 0 && old.sa_sigaction > 1 => {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
            }
            _ => {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            }
        }
    }
}
