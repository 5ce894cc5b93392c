//! Reporting a fiber stack overflow: a `SIGSEGV` handler, on an alternate
//! signal stack, that recognises a fault inside the running fiber's guard and
//! names the fiber before ending the process.
//!
//! The running fiber's guard range, id and name are read from its record
//! ([`crate::context`]), which the scheduler points a thread-local at on
//! every switch (state rule 7), so the handler needs no lock and no
//! allocation. A fault anywhere else goes to the handler that was installed
//! before (Rust's own, or the default action).

use std::cell::Cell;
use std::sync::{Once, OnceLock};

use crate::context::running;

thread_local! {
    static ALT_STACK: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

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

/// [`stack_left`] and the running fiber's usable stack size, in bytes, or
/// `None` outside fibers: for a check whose margin depends on the size
/// (a quarter of a small stack, a fixed amount of a large one).
#[inline]
pub fn stack_left_and_size() -> Option<(usize, usize)> {
    let r = running()?;
    let here = 0u8;
    Some((
        (std::ptr::addr_of!(here) as usize).saturating_sub(r.guard.1),
        r.stack_size,
    ))
}

/// Whether the running fiber has `margin` bytes of machine stack left, or
/// `1 / share` of its usable stack when that is less (a margin larger than
/// a small stack would refuse everything on it); `true` outside fibers (the
/// thread's own stack is the kernel's to grow). For code that recurses on
/// the machine stack and stops with an error before the guard: the Lua
/// bridge's C stack check (a quarter), and the JSON and msgpack codecs'
/// table levels (a half, so that their own error comes before the C stack
/// check of the calls they make).
///
/// # Panics
///
/// When `share` is 0.
#[inline]
pub fn stack_room(margin: usize, share: usize) -> bool {
    stack_left_and_size().is_none_or(|(left, size)| left >= margin.min(size / share))
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
    // State rule 7; a fault never happens in the few instructions that
    // replace the record.
    let r = running();
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
            // SAFETY: state rule 7: the name's bytes stay valid while the
            // record is the running one.
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
