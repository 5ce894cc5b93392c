//! Ctrl-C while a console line runs: SIGINT interrupts the line (through
//! [`luafiber::interrupt`]) and wakes the console fiber, which cancels the
//! line's fiber when it is parked. A Ctrl-C at the prompt, which the line
//! editor reads as a key (its terminal mode turns signals off), is sent on
//! to the cord as a SIGINT ([`forward`]): a fiber started at the prompt
//! that spins without yielding (which keeps the console fiber from ever
//! reading the key) is interrupted the same way. A second Ctrl-C before
//! the first was taken (a loop no hook reaches) ends the process, as in
//! `lua`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use luafiber::interrupt;
use luafiber::runtime::io::CordWaker;

static WAKER: OnceLock<CordWaker> = OnceLock::new();
/// The cord's thread (`pthread_t`), where the handler must run.
static CORD: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigint(_: libc::c_int) {
    // SAFETY: pthread_self, pthread_kill, signal and raise are
    // async-signal-safe; the rest are atomic loads and stores
    // (interrupt's are, CordWaker::wake is an atomic and an eventfd write).
    unsafe {
        let cord = CORD.load(Ordering::SeqCst) as libc::pthread_t;
        if libc::pthread_self() != cord {
            libc::pthread_kill(cord, libc::SIGINT);
            return;
        }
        if interrupt::pending() && interrupt::armed() {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::raise(libc::SIGINT);
            return;
        }
    }
    interrupt::interrupt();
    if let Some(w) = WAKER.get() {
        w.wake();
    }
}

/// Installs the SIGINT handler; call on the cord's thread.
pub fn install(waker: CordWaker) {
    let _ = WAKER.set(waker);
    // SAFETY: pthread_self has no preconditions; the handler is an
    // `extern "C" fn(c_int)` that does only async-signal-safe work.
    unsafe {
        CORD.store(libc::pthread_self() as u64, Ordering::SeqCst);
        let handler: extern "C" fn(libc::c_int) = on_sigint;
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

/// Sends a SIGINT to the cord's thread (a Ctrl-C the line editor read as
/// a key): whatever Lua fiber runs there is interrupted.
pub fn forward() {
    let cord = CORD.load(Ordering::SeqCst) as libc::pthread_t;
    if cord != 0 {
        // SAFETY: `cord` is the console's cord thread, which lives as long
        // as the process (the reader thread never outlives it).
        unsafe { libc::pthread_kill(cord, libc::SIGINT) };
    }
}

/// Blocks SIGINT in the calling thread (the line reader's), so the kernel
/// delivers it to the cord.
pub fn block_in_this_thread() {
    // SAFETY: a sigset made by sigemptyset/sigaddset, given to
    // pthread_sigmask of this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
