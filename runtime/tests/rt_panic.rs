//! Panics inside fibers: caught in the fiber, reported by the join.

use std::panic;

use luafiber_runtime::{fiber, spawn, yield_now, ErrorKind, Runtime};

#[test]
fn panic_is_reported_by_join() {
    let rt = Runtime::new();
    let e = rt.block_on(|| {
        let n = std::hint::black_box(1);
        let h = spawn(move || -> u8 {
            yield_now().unwrap();
            panic!("boom {n}")
        });
        h.join().unwrap_err()
    });
    assert!(e.is_panic());
    assert_eq!(e.kind(), ErrorKind::Panic);
    assert_eq!(e.panic_message(), Some("boom 1"));
    let payload = e.into_panic();
    assert_eq!(payload.downcast_ref::<String>().unwrap(), "boom 1");
}

#[test]
fn panic_does_not_stop_other_fibers() {
    let rt = Runtime::new();
    let (bad, good) = rt.block_on(|| {
        let bad = spawn(|| panic!("bad"));
        let good = spawn(|| {
            yield_now().unwrap();
            yield_now().unwrap();
            "good"
        });
        (bad.join(), good.join())
    });
    assert!(bad.unwrap_err().is_panic());
    assert_eq!(good.unwrap(), "good");
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn non_string_payload_is_kept() {
    let _rt = Runtime::new();
    let e = spawn(|| panic::panic_any(42i32)).join().unwrap_err();
    assert_eq!(e.panic_message(), None);
    assert_eq!(*e.into_panic().downcast::<i32>().unwrap(), 42);
}

#[test]
fn block_on_resumes_panic() {
    let rt = Runtime::new();
    let r = panic::catch_unwind(panic::AssertUnwindSafe(|| {
        rt.block_on(|| panic::panic_any(7u16));
    }));
    assert_eq!(*r.unwrap_err().downcast::<u16>().unwrap(), 7);
    // The runtime is still usable.
    assert_eq!(rt.block_on(|| 1), 1);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn try_into_panic_gives_back_other_errors() {
    let _rt = Runtime::new();
    let h = spawn(|| ());
    h.cancel();
    let e = h.join().unwrap_err();
    let e = e.try_into_panic().unwrap_err();
    assert!(e.is_cancelled());
}

#[test]
fn error_is_send_sync_static() {
    fn check<E: std::error::Error + Send + Sync + 'static>() {}
    check::<luafiber_runtime::FiberError>();
    let e = luafiber_runtime::FiberError::lua_error(fiber::FiberId(123), "x.lua:1: oops");
    assert!(e.is_lua_error());
    assert_eq!(e.lua_message(), Some("x.lua:1: oops"));
    assert_eq!(e.to_string(), "fiber 123 raised a Lua error: x.lua:1: oops");
    assert_eq!(format!("{e:?}"), "LuaError(123, \"x.lua:1: oops\")");
}
