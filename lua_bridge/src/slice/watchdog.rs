//! The slice watchdog: one thread for the process that notes when each
//! watched cord's switch count last moved and, once the running fiber is
//! past its slice, asks the cord to check it.
//!
//! Nothing runs on the switch path for this: the switch count is the one
//! the scheduler keeps anyway ([`luafiber_fiber::switch_counter`], read
//! with relaxed loads from here). The watchdog wakes every [`TICK`]; for a
//! cord whose count has not moved since the deadline its Lua code last
//! published ([`publish`]; without one, since the switch plus the
//! shortest limit the cord uses, [`hint`]), it stores the count in the
//! cord's target word and sends the cord's thread `SIGURG` (the signal Go
//! preempts goroutines with; ignored by default). The signal handler, on
//! the cord's thread, sets a one-shot count hook on the running fiber's
//! Lua thread (its fiber tag) when the same fiber still runs: as `lua.c`
//! and `luajit.c` set their Ctrl-C hooks, `lua_sethook` being the one Lua
//! call meant for signal handlers. The hook, at the fiber's next Lua
//! instruction, clears itself and, if the same fiber still runs (the
//! switch count is the target), runs
//! [`check_unreported`](super::check_unreported) exactly: it logs the
//! warning, raises `FiberSliceIsExceeded` unless the slice's error was
//! already raised (a signal sent just before `check_slice` failed and
//! landing just after), or publishes the next deadline (a slice that was
//! extended).
//!
//! LuaJIT runs hooks only in the interpreter: it is built with
//! `-DLUAJIT_ENABLE_CHECKHOOK` (`.cargo/config.toml`), so compiled loops
//! test the hook mask on each iteration and leave the trace when it is set.
//!
//! Limits: a fiber inside a C function is asked again when it is back in
//! Lua; a hook already set (a debugger's, the console's Ctrl-C) is not
//! replaced, so the watchdog asks again [`ASK_AGAIN`] later; on Lua 5.4
//! the hook is per Lua thread, so a fiber running a Lua coroutine of its
//! own is not interrupted until the coroutine yields back.

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use luafiber_fiber as fiber;
use mlua::ffi;

use super::{now_ns, ns, Slice};
use crate::raw::context::Part;
use crate::raw::{error::ErrorKind, lua_fn, Raise};

/// How often the watchdog looks at the cords.
pub const TICK: Duration = Duration::from_millis(10);

/// How long the watchdog waits for an answer (a published deadline or a
/// switch) before it asks a cord again about the same fiber.
pub const ASK_AGAIN: Duration = Duration::from_millis(100);

/// One watched cord, shared by its thread and the watchdog.
struct Watch {
    /// The cord thread's switch count (0 outside fibers).
    counter: &'static AtomicU64,
    /// The cord thread's [`TARGET`].
    target: &'static AtomicU64,
    thread: libc::pthread_t,
    /// `(switch count, deadline)`: published by the cord for that count.
    deadline: Mutex<(u64, u64)>,
    /// Nanoseconds after a switch the watchdog asks when no deadline was
    /// published for it: the shortest limit the cord has used.
    fallback: AtomicU64,
    /// `(switch count, when the watchdog first saw it)`.
    moved: Mutex<(u64, u64)>,
}

/// The watchdog's own record of a cord.
struct Entry {
    watch: Arc<Watch>,
    /// The count last seen, when, and when the cord was last asked.
    last: u64,
    seen_at: u64,
    asked_at: Option<u64>,
}

/// Every watched cord.
static CORDS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Unregisters the cord's [`Watch`] when its thread ends (or [`disarm`]).
struct Registered(Arc<Watch>);

impl Drop for Registered {
    fn drop(&mut self) {
        // Under the lock: no signal is sent to the thread after this.
        let mut cords = CORDS.lock().unwrap_or_else(|e| e.into_inner());
        cords.retain(|e| !Arc::ptr_eq(&e.watch, &self.0));
    }
}

thread_local! {
    /// The switch count the watchdog asked this thread to check (0: none).
    /// `const` with no destructor: the signal handler reads it. The
    /// thread's, not the cord context's: a signal may come while the
    /// context is being dropped.
    static TARGET: AtomicU64 = const { AtomicU64::new(0) };
}

/// Per-cord state of the watchdog (a part of the cord context): the cord's
/// registration, while it is watched (dropping it unregisters the cord).
#[derive(Default)]
pub(crate) struct Watched(RefCell<Option<Registered>>);

/// This thread's [`TARGET`], for the watchdog.
fn target_word() -> &'static AtomicU64 {
    let p: *const AtomicU64 = TARGET.with(|t| t as *const AtomicU64);
    // SAFETY: a `const` thread-local without destructor lives as long as
    // its thread; the watchdog uses it only while the thread is registered.
    unsafe { &*p }
}

fn watch() -> Option<Arc<Watch>> {
    Watched::try_with(|w| w.0.borrow().as_ref().map(|r| r.0.clone())).flatten()
}

/// Starts watching this thread's cord (idempotent); starts the watchdog
/// and installs the signal handler on first use.
pub(crate) fn arm() {
    if watch().is_some() {
        return;
    }
    static START: Once = Once::new();
    START.call_once(|| {
        install_handler();
        std::thread::Builder::new()
            .name("luafiber-slices".into())
            .spawn(run)
            .expect("the slice watchdog thread starts");
    });
    let w = Arc::new(Watch {
        counter: fiber::switch_counter(),
        target: target_word(),
        // SAFETY: pthread_self has no preconditions.
        thread: unsafe { libc::pthread_self() },
        deadline: Mutex::new((u64::MAX, u64::MAX)),
        fallback: AtomicU64::new(ns(limit(super::max_slice_of(None)))),
        moved: Mutex::new((u64::MAX, 0)),
    });
    let entry = Entry {
        watch: w.clone(),
        last: u64::MAX,
        seen_at: 0,
        asked_at: None,
    };
    CORDS.lock().unwrap_or_else(|e| e.into_inner()).push(entry);
    Watched::with(|r| *r.0.borrow_mut() = Some(Registered(w)));
}

/// Stops watching this thread's cord (its runtime is going).
pub(crate) fn disarm() {
    let registered = Watched::try_with(|r| r.0.borrow_mut().take());
    drop(registered);
}

/// When the watchdog first saw the switch count `epoch` on this cord, in
/// [`now_ns`] nanoseconds (`None`: not watched, or not seen yet).
pub(crate) fn moved_at(epoch: u64) -> Option<u64> {
    let w = watch()?;
    let m = *w.moved.lock().unwrap_or_else(|e| e.into_inner());
    (m.0 == epoch).then_some(m.1)
}

/// Tells the watchdog when to ask about the fiber that runs at switch
/// count `epoch` (a no-op while this cord is not watched).
pub(crate) fn publish(epoch: u64, deadline: u64) {
    if let Some(w) = watch() {
        *w.deadline.lock().unwrap_or_else(|e| e.into_inner()) = (epoch, deadline);
    }
}

/// Tells the watchdog of a limit this cord uses, so that it asks no later
/// than that after any switch (a fiber's own max slice, seen only once it
/// runs).
pub(crate) fn hint(slice: Slice) {
    if let Some(w) = watch() {
        w.fallback.fetch_min(ns(limit(slice)), Relaxed);
    }
}

/// The first of a slice's two limits.
fn limit(slice: Slice) -> f64 {
    slice.warn.min(slice.err)
}

/// The watchdog's loop.
fn run() {
    loop {
        std::thread::sleep(TICK);
        let now = now_ns();
        let mut cords = CORDS.lock().unwrap_or_else(|e| e.into_inner());
        for e in cords.iter_mut() {
            look(e, now);
        }
    }
}

/// One look at one cord.
fn look(e: &mut Entry, now: u64) {
    let w = &*e.watch;
    let epoch = w.counter.load(Relaxed);
    if epoch != e.last {
        e.last = epoch;
        e.seen_at = now;
        e.asked_at = None;
        *w.moved.lock().unwrap_or_else(|e| e.into_inner()) = (epoch, now);
        return;
    }
    if epoch == 0 {
        return; // no fiber runs
    }
    let (dl_epoch, dl) = *w.deadline.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = if dl_epoch == epoch {
        dl
    } else {
        e.seen_at.saturating_add(w.fallback.load(Relaxed))
    };
    let again = e
        .asked_at
        .is_none_or(|t| now.saturating_sub(t) >= ASK_AGAIN.as_nanos() as u64);
    if now >= deadline && again {
        e.asked_at = Some(now);
        w.target.store(epoch, Relaxed);
        // SAFETY: the thread is registered, so it has not ended
        // (`Registered` unregisters under the lock held here); SIGURG has
        // our handler (or is ignored).
        unsafe { libc::pthread_kill(w.thread, libc::SIGURG) };
    }
}

/// Installs the `SIGURG` handler (`SA_RESTART`: system calls that a fiber
/// is blocked in go on).
fn install_handler() {
    // SAFETY: an all-zero sigaction is valid; the handler is
    // async-signal-safe (see `on_signal`).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGURG, &sa, std::ptr::null_mut());
    }
}

/// The signal handler: sets the hook on the running fiber's Lua thread if
/// the fiber the watchdog asked about still runs. Only atomic loads, the
/// fiber record's two loads ([`fiber::current_tag`]) and `lua_sethook`.
extern "C" fn on_signal(_sig: c_int) {
    let target = TARGET.with(|t| t.load(Relaxed));
    if target == 0 || fiber::switch_count() != Some(target) {
        return;
    }
    let Some(l) = fiber::current_tag().filter(|&t| t != 0) else {
        return;
    };
    let l = l as *mut ffi::lua_State;
    // SAFETY: the tag of a running Lua fiber is its Lua thread, alive while
    // it runs; as in lua.c's SIGINT handler, `lua_gethook` and
    // `lua_sethook` only load and store hook fields (and, on LuaJIT,
    // update the dispatch table, which luajit.c does from its handler).
    unsafe {
        if ffi::lua_gethook(l).is_some() {
            return; // someone's hook: ask again later
        }
        ffi::lua_sethook(l, Some(hook), ffi::LUA_MASKCOUNT, 1);
    }
}

/// The one-shot hook: clears itself and checks the slice of the fiber the
/// watchdog asked about, raising `FiberSliceIsExceeded` past `err` unless
/// that slice's error was already raised.
///
/// # Safety
///
/// Lua calls it as its debug hook, with the running thread `l`.
unsafe extern "C-unwind" fn hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: clearing a hook does not raise.
    unsafe { ffi::lua_sethook(l, None, 0, 0) };
    let target = TARGET.with(|t| t.swap(0, Relaxed));
    if target == 0 || fiber::switch_count() != Some(target) {
        return; // another fiber runs (LuaJIT's hook is global)
    }
    let exceeded = std::panic::catch_unwind(|| super::check_unreported().is_err()).unwrap_or(false);
    if exceeded {
        // SAFETY: a hook runs between instructions, where Lua may raise;
        // this frame owns nothing (raw rule 2), as lua.c's `lstop`; the
        // C function raises through its own frame; a hook has
        // LUA_MINSTACK free slots.
        unsafe {
            ffi::lua_pushcfunction(l, raise_exceeded);
            ffi::lua_call(l, 0, 0);
        }
    }
}

lua_fn! {
    /// Raises `FiberSliceIsExceeded` (called by the hook).
    fn raise_exceeded(_s: &mut Stack) {
        Err(exceeded())
    }
}

/// The error of a fiber past its slice (Tarantool's message).
pub(crate) fn exceeded() -> Raise {
    Raise::Error(
        ErrorKind::FiberSliceIsExceeded,
        "fiber slice is exceeded".into(),
    )
}
