//! The idle-wait hook: what the scheduler loop calls instead of sleeping,
//! and how its answer keeps the loop going.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use luafiber_fiber as fiber;

thread_local! {
    static CALLS: RefCell<Vec<Option<Duration>>> = const { RefCell::new(Vec::new()) };
    /// How many more idle calls the hook says it has waiters for.
    static WAITERS: Cell<u32> = const { Cell::new(0) };
    static WAKE: Cell<Option<fiber::FiberId>> = const { Cell::new(None) };
}

fn hook(timeout: Option<Duration>) -> bool {
    CALLS.with(|c| c.borrow_mut().push(timeout));
    if timeout == Some(Duration::ZERO) {
        return WAITERS.get() > 0;
    }
    // An "event": the blocked fiber is made ready.
    if let Some(id) = WAKE.take() {
        fiber::wakeup(id).unwrap();
    }
    let left = WAITERS.get();
    WAITERS.set(left.saturating_sub(1));
    left > 0
}

fn calls() -> Vec<Option<Duration>> {
    CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

#[test]
fn ready_fibers_poll_once_per_batch_and_idle_ends_without_waiters() {
    fiber::set_idle_hook(Some(hook));
    for _ in 0..2 {
        fiber::Builder::new()
            .spawn_ready(|| fiber::yield_now().unwrap())
            .unwrap();
    }
    fiber::run();
    let c = calls();
    // One zero poll for the batch (its 64-switch floor covers both
    // fibers' yields), then one idle call with no timer: no waiters, so
    // the loop ends.
    assert_eq!(c, [Some(Duration::ZERO), None]);
    fiber::set_idle_hook(None);
}

#[test]
fn a_blocked_fiber_keeps_the_loop_while_the_hook_has_waiters() {
    fiber::set_idle_hook(Some(hook));
    let done = std::rc::Rc::new(Cell::new(false));
    let d = done.clone();
    let id = fiber::Builder::new()
        .spawn_ready(move || {
            fiber::block(None).unwrap();
            d.set(true);
        })
        .unwrap();
    WAKE.set(Some(id));
    WAITERS.set(1);
    fiber::run();
    assert!(done.get());
    let c = calls();
    // The batch's poll, the idle wait that wakes the fiber, its batch's
    // poll, and the idle call that finds no waiters left.
    assert_eq!(c, [Some(Duration::ZERO), None, Some(Duration::ZERO), None]);
    fiber::set_idle_hook(None);
}

#[test]
fn a_sleeper_gives_the_hook_its_deadline() {
    fiber::set_idle_hook(Some(hook));
    fiber::Builder::new()
        .spawn_ready(|| fiber::sleep(Duration::from_millis(20)).unwrap())
        .unwrap();
    fiber::run();
    let c = calls();
    assert_eq!(c[0], Some(Duration::ZERO));
    // Idle calls with the time left to the timer (the hook here returns
    // at once, so the loop calls it until the timer is due).
    assert!(c.len() >= 3, "{c:?}");
    assert!(c[1..c.len() - 2]
        .iter()
        .all(|t| matches!(t, Some(t) if *t <= Duration::from_millis(20))));
    fiber::set_idle_hook(None);
}
