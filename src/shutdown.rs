//! SIGTERM (and SIGINT, unless a console owns Ctrl-C) as Tarantool's
//! `signal_cb` in `src/main.cc`: a graceful shutdown instead of the
//! default death. The handler only records the signal and wakes the main
//! cord's event loop ([`CordWaker::wake_watchers`]: an atomic and an
//! `eventfd` write, async-signal-safe); a fiber parked in
//! [`io::watch`](luafiber::runtime::io::watch) (which does not keep the
//! process alive) then runs `box.internal.shutdown()` (the on_shutdown
//! triggers; the server stops listening, lets running requests finish
//! within the on_shutdown timeout, closes its connections), flushes stdio
//! and exits with status 0, as Tarantool does. A second signal while that
//! runs is ignored, as in Tarantool (`start_shutdown`).
//!
//! Own code rather than `signal-hook`: one `sigaction` and an atomic is
//! all it takes, and the wake must go through the cord's own eventfd.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use luafiber::runtime::io::{self, CordWaker};
use luafiber::{LuaRuntime, Value};

static WAKER: OnceLock<CordWaker> = OnceLock::new();
/// The first shutdown signal taken (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signo: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, signo, Ordering::SeqCst, Ordering::SeqCst);
    if let Some(w) = WAKER.get() {
        w.wake_watchers();
    }
}

/// The chunk that starts the watcher fiber; run before the script, in the
/// main fiber, after [`install`].
pub fn chunk() -> String {
    "local wait, exit = __luafiber_shutdown_wait, __luafiber_shutdown_exit
     __luafiber_shutdown_wait, __luafiber_shutdown_exit = nil, nil
     local f = require('fiber').new(function()
         wait()
         local box = rawget(_G, 'box')
         local internal = type(box) == 'table' and rawget(box, 'internal')
         if internal and internal.shutdown then
             local ok, err = pcall(internal.shutdown)
             if not ok then
                 io.stderr:write('luafiber: shutdown: ', tostring(err), '\\n')
             end
         end
         exit(0)
     end)
     f:name('shutdown')"
        .to_string()
}

/// Installs the handlers (SIGTERM; SIGINT too when `sigint`) and the
/// watcher's Rust functions; call on the main cord's thread.
///
/// # Errors
///
/// When the cord's event loop cannot be made or a function registered.
pub fn install(rt: &LuaRuntime, sigint: bool) -> Result<(), String> {
    let waker = io::waker().map_err(|e| format!("signals: {e}"))?;
    let _ = WAKER.set(waker);
    rt.register_fn("__luafiber_shutdown_wait", |_| {
        // bounded by the signal: each wake either finds it or parks again
        loop {
            let signo = SIGNAL.load(Ordering::SeqCst);
            if signo != 0 {
                return Ok(vec![Value::Integer(signo.into())]);
            }
            io::watch(None).map_err(|e| e.to_string())?;
        }
    })
    .map_err(|e| e.to_string())?;
    rt.register_fn("__luafiber_shutdown_exit", |args| {
        let code = match args.first() {
            Some(Value::Integer(n)) => *n as i32,
            _ => 0,
        };
        luafiber::flush_stdio();
        std::process::exit(code)
    })
    .map_err(|e| e.to_string())?;
    let signals: &[libc::c_int] = if sigint {
        &[libc::SIGTERM, libc::SIGINT]
    } else {
        &[libc::SIGTERM]
    };
    for &sig in signals {
        // SAFETY: a zeroed sigaction with an empty mask and a handler
        // that does only async-signal-safe work (an atomic, an eventfd
        // write).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int) = on_signal;
            sa.sa_sigaction = handler as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(format!("signals: {}", std::io::Error::last_os_error()));
            }
        }
    }
    Ok(())
}
