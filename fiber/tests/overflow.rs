//! A fiber that overflows its stack faults in its guard, and the process
//! ends with a report that names the fiber (by its latest name) instead of
//! a silent write into a neighbour or a bare SIGSEGV.

use luafiber_fiber::{self as fiber, Builder};

#[path = "support/child.rs"]
mod child;

/// Recurses with 4 KiB frames until the stack runs out (never returns).
fn recurse(depth: usize) -> usize {
    let frame = std::hint::black_box([depth as u8; 4096]);
    if depth == usize::MAX {
        return 0;
    }
    recurse(depth + 1) + usize::from(frame[depth % 4096])
}

#[test]
fn an_overflow_is_reported_with_the_fibers_id_and_latest_name() {
    // An arena slot's guard where the kernel has MADV_GUARD_INSTALL.
    overflow_reported(
        "an_overflow_is_reported_with_the_fibers_id_and_latest_name",
        &[],
    );
}

#[test]
fn an_overflow_into_a_two_map_stacks_guard_is_reported_too() {
    overflow_reported(
        "an_overflow_into_a_two_map_stacks_guard_is_reported_too",
        &[(luafiber_fiber::stack::arena::ARENAS_ENV, "0")],
    );
}

/// The test `test`, in a child with `env`: a fiber renamed, then
/// overflowing its stack, ends the process with a report naming it.
fn overflow_reported(test: &str, env: &[(&str, &str)]) {
    if child::is_child(test) {
        Builder::new()
            .name("deep")
            .stack_size(64 * 1024)
            .spawn_ready(|| {
                let me = fiber::current().unwrap();
                fiber::set_name(me, b"renamed-before-overflow").unwrap();
                recurse(0);
            })
            .unwrap();
        fiber::run();
        unreachable!("the overflow ends the process");
    }
    let out = child::run_alone_with(test, env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(134), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!(
            "luafiber: fiber {} (renamed-before-overflow): stack overflow",
            fiber::FIRST_FID
        )),
        "stderr: {stderr}"
    );
}

/// [`fiber::stack_left`] in a frame of its own.
#[inline(never)]
fn here() -> usize {
    fiber::stack_left().unwrap()
}

/// [`here`] below an 8 KiB frame.
#[inline(never)]
fn under_a_frame() -> usize {
    let frame = std::hint::black_box([0u8; 8192]);
    here() + usize::from(std::hint::black_box(frame)[0])
}

#[test]
fn stack_left_shrinks_as_a_fiber_goes_deeper_and_is_none_outside() {
    assert_eq!(fiber::stack_left(), None);
    let left = std::rc::Rc::new(std::cell::Cell::new((0, 0)));
    let l = left.clone();
    Builder::new()
        .stack_size(64 * 1024)
        .spawn_ready(move || {
            l.set((here(), under_a_frame()));
        })
        .unwrap();
    fiber::run();
    let (top, deeper) = left.get();
    // The colour room adds up to a page above the usable size.
    assert!(top <= 64 * 1024 + 4096, "{top}");
    assert!(deeper + 8192 <= top, "{deeper} {top}");
}
