//! Abandoning fibers (`fiber::abandon`): what an embedder does with the
//! fibers that a cancel and a run could not end, when their frames can no
//! longer run. They are never resumed nor unwound; the scheduler, the
//! conds they waited on and their joiners go on without them.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use luafiber_fiber::{self as fiber, Builder, Cond, Error};

/// Sets its flag when dropped.
struct DropFlag(Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

#[test]
fn abandoned_fibers_never_run_again() {
    let log: Rc<RefCell<Vec<String>>> = Rc::new(RefCell::new(Vec::new()));
    let cond = Rc::new(Cond::new());
    // Blocked on a cond with a frame that owns something: never dropped.
    let owned = Rc::new(Cell::new(false));
    let (l, c, o) = (log.clone(), cond.clone(), owned.clone());
    let waiter = Builder::new()
        .joinable(true)
        .spawn_now(move || {
            let _own = DropFlag(o);
            let _ = c.wait(None);
            l.borrow_mut().push("waiter woke".into());
        })
        .unwrap();
    // Sleeping on a timer.
    let l = log.clone();
    let sleeper = Builder::new()
        .spawn_now(move || {
            let _ = fiber::sleep(Duration::from_millis(5));
            l.borrow_mut().push("sleeper woke".into());
        })
        .unwrap();
    // Not started: its function is dropped.
    let captured = Rc::new(Cell::new(false));
    let flag = DropFlag(captured.clone());
    let l = log.clone();
    let unstarted = Builder::new()
        .spawn_ready(move || {
            let _flag = flag;
            l.borrow_mut().push("unstarted ran".into());
        })
        .unwrap();
    // A joiner of the waiter, and a joinable fiber that has ended.
    let l = log.clone();
    let joiner = Builder::new()
        .spawn_now(move || {
            let r = fiber::join(waiter, None);
            l.borrow_mut()
                .push(format!("join: {}", matches!(r, Err(Error::Dead(_)))));
        })
        .unwrap();
    let ended = Builder::new().joinable(true).spawn_now(|| {}).unwrap();
    let _ = joiner;

    for id in [waiter, sleeper, unstarted, ended] {
        fiber::abandon(id).unwrap();
        assert!(!fiber::exists(id));
    }
    assert!(captured.get(), "an unstarted fiber's function was dropped");
    assert!(matches!(fiber::abandon(waiter), Err(Error::Dead(_))));
    // The cond still holds the waiter's record: signalling it is harmless.
    cond.broadcast();
    assert!(fiber::wakeup(sleeper).is_err());
    fiber::run();
    assert_eq!(*log.borrow(), ["join: true"]);
    assert!(!owned.get(), "an abandoned fiber's frames were unwound");
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn a_running_fiber_cannot_be_abandoned() {
    let refused = Rc::new(Cell::new(false));
    let r = refused.clone();
    Builder::new()
        .spawn_now(move || {
            let me = fiber::current().unwrap();
            let caught = std::panic::catch_unwind(|| fiber::abandon(me));
            r.set(caught.is_err());
        })
        .unwrap();
    assert!(refused.get());
    assert_eq!(fiber::stats().fibers, 0);
}
