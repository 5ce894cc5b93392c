//! Why a stack could not be made: each cause has its own error and message
//! (a size no address space holds, the kernel out of memory, the memory map
//! limit), so a huge `stack_size` is not blamed on `vm.max_map_count`.
//!
//! The map limit is reached by two-map stacks only: those tests run in a
//! child process with stack arenas switched off (`LUAFIBER_STACK_ARENAS=0`),
//! as on a kernel without `MADV_GUARD_INSTALL`.

use std::sync::Mutex;

use luafiber_fiber::stack::{arena, live_stacks, max_map_count, GUARD_SIZE};
use luafiber_fiber::{self as fiber, Builder, Error, FiberStack, StackError};

#[path = "support/child.rs"]
mod child;
#[path = "support/skip.rs"]
mod skip;

/// The tests here make stacks by the thousand or count memory maps: one at
/// a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[test]
fn a_size_past_the_address_space_is_too_large() {
    let _one = ONE_AT_A_TIME.lock();
    // A size whose memory (guard and a page of colour room included)
    // passes isize::MAX.
    let first_too_large = isize::MAX as usize - GUARD_SIZE - page() + 1;
    for size in [usize::MAX / 2, first_too_large, usize::MAX - 1, usize::MAX] {
        match FiberStack::new(size).err() {
            Some(StackError::TooLarge { size: s }) => assert_eq!(s, size),
            other => panic!("{size}: {other:?}"),
        }
    }
    // As a user meets it.
    let err = Builder::new()
        .stack_size(usize::MAX / 2)
        .spawn_ready(|| {})
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, Error::Stack(StackError::TooLarge { .. })),
        "{err:?}"
    );
    assert!(msg.contains(&(usize::MAX / 2).to_string()), "{msg}");
    assert!(!msg.contains("max_map_count"), "{msg}");
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn a_size_the_kernel_cannot_map_is_out_of_memory() {
    let _one = ONE_AT_A_TIME.lock();
    let before = live_stacks();
    // Fits in an address space's `isize`, but in no real one (x86-64 and
    // AArch64 map at most 2^57 bytes): `mmap` fails with ENOMEM.
    // The largest size whose memory fits in an `isize`.
    for size in [1 << 60, isize::MAX as usize - GUARD_SIZE - 2 * page() + 1] {
        let err = FiberStack::new(size).err().expect("no stack");
        let bytes = size.next_multiple_of(page()) + GUARD_SIZE + page();
        assert!(
            matches!(err, StackError::OutOfMemory { bytes: b } if b == bytes),
            "{size}: {err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("ENOMEM"), "{msg}");
        assert!(!msg.contains("max_map_count"), "{msg}");
    }
    assert_eq!(live_stacks(), before, "a failed stack is not counted");
}

/// Arenas switched off, as on a kernel without `MADV_GUARD_INSTALL`.
const NO_ARENAS: &[(&str, &str)] = &[(arena::ARENAS_ENV, "0")];

#[test]
fn stacks_past_the_map_reserve_are_refused_with_the_map_limit() {
    const TEST: &str = "stacks_past_the_map_reserve_are_refused_with_the_map_limit";
    let max = max_map_count();
    if max > 1 << 20 {
        skip::skipped(&format!(
            "vm.max_map_count = {max} takes too many stacks to reach"
        ));
        return;
    }
    if !child::is_child(TEST) {
        let _one = ONE_AT_A_TIME.lock();
        child::assert_passed(&child::run_alone_with(TEST, NO_ARENAS));
        return;
    }
    assert!(
        !arena::enabled(),
        "{} switches arenas off",
        arena::ARENAS_ENV
    );
    let mut stacks = Vec::new();
    let err = loop {
        match FiberStack::new(0) {
            Ok(s) => stacks.push(s),
            Err(e) => break e,
        }
        assert!(stacks.len() <= max / 2, "refused before the limit");
    };
    let live = live_stacks();
    assert!(
        matches!(err, StackError::MapLimit { max_map_count, live_stacks }
            if max_map_count == max && live_stacks == live),
        "{err:?}"
    );
    assert!(err.to_string().contains("vm.max_map_count"), "{err}");
    drop(stacks);
    // Stacks can be made again.
    FiberStack::new(0).unwrap();
}

#[test]
fn the_kernel_refusing_a_map_at_the_limit_is_the_map_limit() {
    refused_at_the_limit(
        "the_kernel_refusing_a_map_at_the_limit_is_the_map_limit",
        NO_ARENAS,
    );
}

#[test]
fn the_kernel_refusing_a_new_arena_at_the_limit_is_the_map_limit() {
    if !arena::enabled() {
        skip::skipped("this kernel has no MADV_GUARD_INSTALL, so no arenas");
        return;
    }
    refused_at_the_limit(
        "the_kernel_refusing_a_new_arena_at_the_limit_is_the_map_limit",
        &[],
    );
}

/// The test `test`, in a child with `env`: the process's memory maps are
/// filled up to the kernel's limit, then a stack (a two-map one, or the
/// first arena's) is refused with [`StackError::MapLimit`].
fn refused_at_the_limit(test: &str, env: &[(&str, &str)]) {
    let max = max_map_count();
    if max > 1 << 20 {
        skip::skipped(&format!(
            "vm.max_map_count = {max} takes too many maps to reach"
        ));
        return;
    }
    if !child::is_child(test) {
        let _one = ONE_AT_A_TIME.lock();
        child::assert_passed(&child::run_alone_with(test, env));
        return;
    }
    // Probed before the maps run out, so the probe does not decide.
    assert_eq!(arena::enabled(), env.is_empty());
    // Alone in this process: fill its memory maps with one-page maps of
    // alternating protection (so no two merge), until the kernel refuses
    // one. Nothing allocates until they are unmapped again.
    let mut maps: Vec<*mut libc::c_void> = Vec::with_capacity(max + 16);
    let page = page();
    let refused = loop {
        let prot = if maps.len() % 2 == 0 {
            libc::PROT_READ
        } else {
            libc::PROT_NONE
        };
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choice aliases nothing.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if m == libc::MAP_FAILED || maps.len() == maps.capacity() {
            break m == libc::MAP_FAILED;
        }
        maps.push(m);
    };
    // Below the stacks' own reserve check, so the kernel is what refuses.
    let result = FiberStack::new(0);
    for &m in &maps {
        // SAFETY: each is a one-page map made above, used by nothing.
        unsafe { libc::munmap(m, page) };
    }
    assert!(
        refused,
        "{} maps and the kernel still maps more",
        maps.len()
    );
    let err = result.err().expect("no stack at the map limit");
    assert!(
        matches!(err, StackError::MapLimit { max_map_count, .. } if max_map_count == max),
        "{err:?}"
    );
    assert!(err.to_string().contains("vm.max_map_count"), "{err}");
    // Stacks can be made again.
    let stack = FiberStack::new(0).unwrap();
    assert_eq!(stack.in_arena(), env.is_empty());
}
