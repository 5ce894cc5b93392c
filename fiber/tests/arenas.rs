//! Stack arenas: where the kernel has `MADV_GUARD_INSTALL`, stacks are
//! slots of shared mappings (a few memory maps for thousands of stacks),
//! a freed slot gives its pages back and is reused, neighbours' tops have
//! different colours, sizes past the arenas' bound take the two-map path,
//! and `LUAFIBER_STACK_ARENAS=0` forces the two-map path everywhere.

use std::sync::Mutex;

use corosensei::stack::Stack;
use luafiber_fiber::stack::{arena, COLOURS, COLOUR_STEP, GUARD_SIZE};
use luafiber_fiber::{self as fiber, Builder, FiberStack};

#[path = "support/child.rs"]
mod child;
#[path = "support/skip.rs"]
mod skip;

/// The tests here count the process's memory maps: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

/// The mapping holding `addr`: its range and permissions.
fn mapping_at(addr: usize) -> Option<(std::ops::Range<usize>, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (a, b) = fields.next()?.split_once('-')?;
        let range = usize::from_str_radix(a, 16).ok()?..usize::from_str_radix(b, 16).ok()?;
        let perms = fields.next()?.to_string();
        range.contains(&addr).then_some((range, perms))
    })
}

/// Resident pages of `len` bytes at `addr` (`mincore`).
fn resident_pages(addr: usize, len: usize) -> usize {
    let mut vec = vec![0u8; len.div_ceil(page())];
    // SAFETY: the range is mapped (a stack's usable part); `vec` has a
    // byte per page.
    let rc = unsafe { libc::mincore(addr as *mut _, len, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    vec.iter().filter(|&&b| b & 1 != 0).count()
}

/// Writes a byte in each of the top `pages` pages below `base`.
fn touch(stack: &FiberStack, pages: usize) {
    let base = stack.base().get();
    for i in 0..pages {
        // SAFETY: inside the stack's usable part, which no coroutine uses.
        unsafe { ((base - 1 - i * page()) as *mut u8).write_volatile(1) };
    }
}

fn skip_without_arenas() -> bool {
    if !arena::enabled() {
        skip::skipped("this kernel has no MADV_GUARD_INSTALL, so no arenas");
    }
    !arena::enabled()
}

#[test]
fn thousands_of_stacks_cost_a_few_memory_maps() {
    if skip_without_arenas() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock();
    let mut stacks = Vec::with_capacity(5000);
    let before = maps();
    for _ in 0..5000 {
        stacks.push(FiberStack::new(0).unwrap());
    }
    let after = maps();
    // 5000 default stacks fill 5 arenas; the allocator may add a map or two.
    assert!(after <= before + 5 + 4, "{before} maps -> {after}");
    let mut guards: Vec<_> = stacks.iter().map(FiberStack::guard).collect();
    guards.sort_by_key(|g| g.start);
    for (s, g) in stacks.iter().zip(stacks.iter().map(FiberStack::guard)) {
        assert!(s.in_arena());
        assert_eq!(g.len(), GUARD_SIZE);
        assert_eq!(s.limit().get(), g.start);
        assert!(s.base().get() - g.end >= s.size());
        assert_eq!(s.base().get() % 16, 0);
    }
    // No two stacks overlap.
    for w in guards.windows(2) {
        assert!(w[0].end + stacks[0].size() <= w[1].start);
    }
}

#[test]
fn neighbours_tops_have_different_colours() {
    if skip_without_arenas() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock();
    let stacks: Vec<_> = (0..COLOURS).map(|_| FiberStack::new(0).unwrap()).collect();
    let mut offsets: Vec<usize> = stacks
        .iter()
        .map(|s| s.base().get() % page() / COLOUR_STEP)
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    // Slots carved one after the other (or reused in some order) take
    // most of the colours.
    assert!(offsets.len() >= COLOURS / 2, "{offsets:?}");
}

#[test]
fn a_freed_slot_gives_its_pages_back_and_is_reused() {
    if skip_without_arenas() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock();
    let stack = FiberStack::new(64 * 1024).unwrap();
    let (start, base) = (stack.limit().get(), stack.base().get());
    touch(&stack, 8);
    let usable = stack.guard().end;
    assert!(resident_pages(usable, base - usable) >= 8);
    drop(stack);
    assert_eq!(resident_pages(usable, base - usable), 0);
    // The most recently freed slot of its size comes back first, still
    // guarded and reading as zero.
    let again = FiberStack::new(64 * 1024).unwrap();
    assert_eq!(again.limit().get(), start);
    // SAFETY: the top byte of the usable part, which nothing uses.
    assert_eq!(unsafe { ((base - 1) as *const u8).read_volatile() }, 0);
}

#[test]
fn sizes_share_arenas_by_size_and_large_ones_are_mapped_alone() {
    if skip_without_arenas() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock();
    let small: Vec<_> = (0..3).map(|_| FiberStack::new(20_000).unwrap()).collect();
    for s in &small {
        assert!(s.in_arena());
        assert_eq!(s.size(), 20_000usize.next_multiple_of(page()));
    }
    let large = FiberStack::new(arena::MAX_ARENA_STACK + 1).unwrap();
    assert!(!large.in_arena());
    assert!(large.size() > arena::MAX_ARENA_STACK);
    // Its guard is a `PROT_NONE` mapping of its own; an arena slot's guard
    // lies inside a read/write mapping.
    assert_eq!(
        mapping_at(large.guard().start),
        Some((large.guard(), "---p".into()))
    );
    let (range, perms) = mapping_at(small[0].guard().start).unwrap();
    assert_eq!(perms, "rw-p");
    assert!(range.start <= small[0].limit().get() && range.end >= small[0].base().get());
    let max = FiberStack::new(arena::MAX_ARENA_STACK).unwrap();
    assert!(max.in_arena());
}

#[test]
fn fibers_run_on_arena_stacks() {
    if skip_without_arenas() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock();
    let sum = std::rc::Rc::new(std::cell::Cell::new(0));
    for i in 0..100 {
        let sum = sum.clone();
        Builder::new()
            .stack_size(if i % 2 == 0 { 16 * 1024 } else { 256 * 1024 })
            .spawn_ready(move || {
                fiber::yield_now().unwrap();
                sum.set(sum.get() + i);
            })
            .unwrap();
    }
    fiber::run();
    assert_eq!(sum.get(), (0..100).sum::<i32>());
}

#[test]
fn arenas_switched_off_give_two_map_stacks() {
    const TEST: &str = "arenas_switched_off_give_two_map_stacks";
    if !child::is_child(TEST) {
        let _one = ONE_AT_A_TIME.lock();
        let out = child::run_alone_with(TEST, &[(arena::ARENAS_ENV, "0")]);
        child::assert_passed(&out);
        return;
    }
    assert!(!arena::enabled());
    let before = maps();
    let stacks: Vec<_> = (0..100).map(|_| FiberStack::new(0).unwrap()).collect();
    assert!(stacks.iter().all(|s| !s.in_arena()));
    // Two maps each: neighbours never merge (guard and usable part
    // alternate), but the first and last may merge with mappings beside
    // them, and the allocator may add or reuse one.
    let grown = maps() - before;
    assert!((196..=202).contains(&grown), "{grown} maps for 100 stacks");
    assert_eq!(arena::arena_count(), 0);
    drop(stacks);
    assert!(maps() <= before + 1);
}
