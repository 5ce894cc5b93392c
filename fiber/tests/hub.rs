//! The hub (state rule 6) against the plain loop: random programs of
//! fibers that yield, wait on conds and channels, wake, cancel, join and
//! spawn each other (at once and queued, nested) run the same way, step for
//! step, under [`fiber::run`] (a blocked fiber runs the loop's batch from
//! its own stack, and its children hand it back the thread) and under
//! [`fiber::run_until`] (every switch goes through the loop), with and
//! without a switch hook, and with a trace subscriber turned on in the
//! middle of the run.
//!
//! No timer of a program fires, so the order of the fibers' steps depends on
//! the FIFO order alone: any difference between the logs is a bug. Each run
//! has a thread of its own, so a fresh scheduler (fiber ids start at 101
//! each time).
//!
//! Then the cases around the hub: `spawn_now` outside the loop (no batch
//! is left to run), a hub's own timer, and a waiter that leaves the middle
//! of a wait list while a hub runs.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use luafiber_fiber::{self as fiber, Builder, Channel, Cond, FiberId};

#[path = "support/quiet.rs"]
mod quiet;
use quiet::Quiet;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How a program is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `run_until(|| false)`: no hub, no hand-back.
    Loop,
    /// `run()`.
    Hub,
    /// `run_until` with a switch hook that logs the fiber it sees.
    LoopHooked,
    /// `run()` with that hook (no hand-back while it is set).
    HubHooked,
    /// `run()`; a fiber turns a trace subscriber on at some step and another
    /// turns it off later (no hub while it is on).
    HubTraceMidRun,
    /// `run()`; a fiber sets a switch hook at some step and another unsets
    /// it later. The hook does not log, so the log matches [`Mode::Loop`].
    HubHookMidRun,
}

/// What the fibers of one program share.
struct World {
    mode: Mode,
    log: RefCell<Vec<String>>,
    conds: Vec<Cond>,
    chans: Vec<Channel<u64>>,
    ids: RefCell<Vec<FiberId>>,
    spawned: Cell<u32>,
    /// Steps taken by all fibers, for the mid-run switches.
    steps: Cell<u32>,
    trace: RefCell<Option<tracing::subscriber::DefaultGuard>>,
}

const MAX_FIBERS: u32 = 64;
const MAX_DEPTH: u32 = 3;
/// A timeout that no run lasts.
const NEVER: Duration = Duration::from_secs(3600);

thread_local! {
    static HOOK_LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Logs the fiber it is called on, with its status.
fn logging_hook() {
    let me = fiber::current().expect("the hook runs on a fiber");
    let status = fiber::status(me);
    HOOK_LOG.with(|l| l.borrow_mut().push(format!("hook {me} {status:?}")));
}

/// Checks that the hook sees a fiber, and nothing else.
fn silent_hook() {
    assert!(fiber::current().is_some(), "the hook runs on a fiber");
}

impl World {
    fn log(&self, s: String) {
        let me = fiber::current().map_or(0, |id| id.0);
        let hooks = HOOK_LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
        let mut log = self.log.borrow_mut();
        log.extend(hooks);
        log.push(format!("{me}: {s}"));
    }

    fn pick_id(&self, rng: &mut Rng) -> Option<FiberId> {
        let ids = self.ids.borrow();
        (!ids.is_empty()).then(|| ids[rng.below(ids.len() as u64) as usize])
    }

    /// The mid-run switches of the modes that have them.
    fn mid_run(&self) {
        let step = self.steps.get() + 1;
        self.steps.set(step);
        match (self.mode, step) {
            (Mode::HubTraceMidRun, 40) => {
                *self.trace.borrow_mut() = Some(tracing::subscriber::set_default(Quiet));
            }
            (Mode::HubTraceMidRun, 120) => drop(self.trace.borrow_mut().take()),
            (Mode::HubHookMidRun, 40) => {
                assert!(fiber::set_switch_hook(Some(silent_hook)).is_none())
            }
            (Mode::HubHookMidRun, 120) => drop(fiber::set_switch_hook(None)),
            _ => {}
        }
    }

    /// One random step of the current fiber.
    fn step(self: &Rc<Self>, rng: &mut Rng, depth: u32, n: u64) {
        self.mid_run();
        let c = rng.below(self.conds.len() as u64) as usize;
        let ch = rng.below(self.chans.len() as u64) as usize;
        // Some waits have a timer that never fires (the order stays the
        // FIFO's), which the loop polls and prunes all the same.
        let timeout = (rng.below(2) == 0).then_some(NEVER);
        match rng.below(24) {
            0..=3 => {
                let r = fiber::yield_now();
                self.log(format!("yield {r:?}"));
            }
            4..=5 => {
                self.log(format!("wait {c}"));
                let r = self.conds[c].wait(timeout);
                self.log(format!("waited {c} {r:?}"));
            }
            6..=7 => {
                self.log(format!("signal {c} ({} waiting)", self.conds[c].waiters()));
                self.conds[c].signal();
            }
            8 => {
                self.log(format!(
                    "broadcast {c} ({} waiting)",
                    self.conds[c].waiters()
                ));
                self.conds[c].broadcast();
            }
            9..=10 => {
                let me = fiber::current().unwrap().0;
                self.log(format!("put {ch} {me}.{n}"));
                let r = self.chans[ch].put(me * 1000 + n, timeout);
                self.log(format!("put {ch} {r:?}"));
            }
            11..=12 => {
                self.log(format!("get {ch}"));
                let r = self.chans[ch].get(timeout);
                self.log(format!("got {ch} {r:?}"));
            }
            13..=14 if depth < MAX_DEPTH && self.spawned.get() < MAX_FIBERS => {
                self.spawned.set(self.spawned.get() + 1);
                let joinable = rng.below(2) == 0;
                self.log(format!("create joinable={joinable}"));
                let body = program(self.clone(), rng.next(), depth + 1);
                let id = Builder::new().joinable(joinable).spawn_now(body).unwrap();
                self.log(format!("created {id}"));
            }
            15..=16 if self.spawned.get() < MAX_FIBERS => {
                self.spawned.set(self.spawned.get() + 1);
                let joinable = rng.below(2) == 0;
                let body = program(self.clone(), rng.next(), 0);
                let id = Builder::new().joinable(joinable).spawn_ready(body).unwrap();
                self.log(format!("new {id} joinable={joinable}"));
            }
            17 => {
                if let Some(id) = self.pick_id(rng) {
                    let r = fiber::wakeup(id);
                    self.log(format!("wakeup {id} {r:?}"));
                }
            }
            18 => {
                if let Some(id) = self.pick_id(rng) {
                    if rng.below(3) == 0 {
                        let r = fiber::cancel(id);
                        self.log(format!("cancel {id} {r:?}"));
                    }
                }
            }
            19 => {
                if let Some(id) = self.pick_id(rng) {
                    self.log(format!("join {id}"));
                    let r = fiber::join(id, timeout);
                    self.log(format!("joined {id} {r:?}"));
                }
            }
            20 => {
                self.log("block".into());
                let r = fiber::block(timeout);
                self.log(format!("unblocked {r:?}"));
            }
            21 => {
                if let Some(id) = self.pick_id(rng) {
                    let s = fiber::stats();
                    self.log(format!(
                        "status {id} {:?}; {} fibers, {} ready",
                        fiber::status(id),
                        s.fibers,
                        s.ready
                    ));
                }
            }
            22 => {
                let v = fiber::current().unwrap().0 * 1000 + n;
                let put = self.chans[ch].put(v, Some(Duration::ZERO));
                let got = self.chans[ch].try_get();
                self.log(format!("try {ch} {put:?} {got:?}"));
            }
            23 if rng.below(4) == 0 => {
                self.log(format!("close {ch}"));
                self.chans[ch].close();
            }
            _ => {
                let r = fiber::testcancel();
                self.log(format!("testcancel {r:?}"));
            }
        }
    }
}

/// A fiber's function: a few random steps, from `seed`.
fn program(w: Rc<World>, seed: u64, depth: u32) -> impl FnOnce() + 'static {
    move || {
        let me = fiber::current().unwrap();
        w.ids.borrow_mut().push(me);
        let mut rng = Rng(seed);
        let steps = 3 + rng.below(10);
        w.log(format!("start depth={depth} steps={steps}"));
        for n in 0..steps {
            w.step(&mut rng, depth, n);
        }
        w.log("end".into());
    }
}

/// Runs the program of `seed` in `mode` on a new thread; returns its log,
/// then the status of every fiber it made.
fn run_program(seed: u64, mode: Mode) -> Vec<String> {
    std::thread::spawn(move || {
        let w = Rc::new(World {
            mode,
            log: RefCell::default(),
            conds: (0..2).map(|_| Cond::new()).collect(),
            chans: vec![Channel::new(0), Channel::new(1), Channel::new(2)],
            ids: RefCell::default(),
            spawned: Cell::new(0),
            steps: Cell::new(0),
            trace: RefCell::default(),
        });
        if matches!(mode, Mode::LoopHooked | Mode::HubHooked) {
            fiber::set_switch_hook(Some(logging_hook));
        }
        let mut rng = Rng(seed);
        for _ in 0..8 {
            w.spawned.set(w.spawned.get() + 1);
            let joinable = rng.below(2) == 0;
            Builder::new()
                .joinable(joinable)
                .spawn_ready(program(w.clone(), rng.next(), 0))
                .unwrap();
        }
        // A fiber that yields in a loop and, when it finds no other fiber
        // ready, cancels every fiber still blocked (and makes it not
        // joinable, which ends the joins), until all have ended: a fiber
        // left suspended keeps its stack mapped for good, and one that
        // waits with a timer would keep the loop sleeping.
        let j = w.clone();
        Builder::new()
            .name("janitor")
            .spawn_ready(move || loop {
                let _ = fiber::yield_now();
                if fiber::stats().ready > 0 {
                    continue;
                }
                let live: Vec<FiberId> = j
                    .ids
                    .borrow()
                    .iter()
                    .copied()
                    .filter(|&id| matches!(fiber::status(id), Some(s) if s != fiber::Status::Dead))
                    .collect();
                if live.is_empty() {
                    break;
                }
                j.log(format!("cancel {live:?}"));
                for id in live {
                    fiber::set_joinable(id, false).unwrap();
                    fiber::cancel(id).unwrap();
                }
            })
            .unwrap();
        match mode {
            Mode::Loop | Mode::LoopHooked => fiber::run_until(|| false),
            _ => fiber::run(),
        }
        fiber::set_switch_hook(None);
        drop(w.trace.borrow_mut().take());
        let mut log = w.log.take();
        log.extend(HOOK_LOG.with(|l| l.take()));
        for &id in w.ids.borrow().iter() {
            log.push(format!("{id} ends {:?}", fiber::status(id)));
            if fiber::status(id).is_some() {
                fiber::join(id, None).unwrap();
            }
        }
        let s = fiber::stats();
        log.push(format!("{} fibers, {} ready", s.fibers, s.ready));
        log
    })
    .join()
    .unwrap_or_else(|_| panic!("seed {seed} in {mode:?} panicked"))
}

/// The first line where two logs differ, with some context.
fn first_difference(a: &[String], b: &[String]) -> Option<String> {
    let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let from = i.saturating_sub(8);
    let show = |l: &[String]| l[from.min(l.len())..(i + 3).min(l.len())].join("\n  ");
    Some(format!(
        "line {i}:\n expected\n  {}\n got\n  {}",
        show(a),
        show(b)
    ))
}

fn check_seeds(seeds: std::ops::Range<u64>, expected: Mode, modes: &[Mode]) {
    let mut lines = 0;
    for seed in seeds {
        let want = run_program(seed, expected);
        lines += want.len();
        for &mode in modes {
            let got = run_program(seed, mode);
            if let Some(diff) = first_difference(&want, &got) {
                panic!("seed {seed}: {mode:?} differs from {expected:?} at {diff}");
            }
        }
    }
    // The programs do something: many steps each.
    assert!(lines > 1000, "only {lines} lines");
}

#[test]
fn random_programs_run_the_same_with_the_hub_and_through_the_loop() {
    check_seeds(0..300, Mode::Loop, &[Mode::Hub, Mode::HubHookMidRun]);
}

#[test]
fn random_programs_run_the_same_with_a_switch_hook_that_sees_the_blocking_fiber() {
    check_seeds(1000..1200, Mode::LoopHooked, &[Mode::HubHooked]);
}

#[test]
fn random_programs_run_the_same_when_tracing_turns_on_mid_run() {
    check_seeds(2000..2200, Mode::Loop, &[Mode::HubTraceMidRun]);
}

type Log = Rc<RefCell<Vec<&'static str>>>;

/// A fiber made with `spawn_now` that logs, yields, and logs again.
fn create_yielding(log: &Log) {
    let l = log.clone();
    Builder::new()
        .spawn_now(move || {
            l.borrow_mut().push("created");
            fiber::yield_now().unwrap();
            l.borrow_mut().push("created again");
        })
        .unwrap();
    log.borrow_mut().push("back in the creator");
}

#[test]
fn create_outside_the_loop_after_a_run_runs_no_other_fiber() {
    // A run whose batch was not used up: one fiber, which ends at once.
    Builder::new().spawn_ready(|| {}).unwrap();
    fiber::run();
    let log = Log::default();
    let l = log.clone();
    Builder::new()
        .spawn_ready(move || l.borrow_mut().push("queued"))
        .unwrap();
    // The new fiber's yield goes back to its creator (outside any fiber),
    // not to the fiber queued before it.
    create_yielding(&log);
    assert_eq!(*log.borrow(), ["created", "back in the creator"]);
    fiber::run();
    assert_eq!(
        *log.borrow(),
        ["created", "back in the creator", "queued", "created again"]
    );
}

#[test]
fn create_from_the_stop_check_of_run_until_runs_no_other_fiber() {
    let log = Log::default();
    for _ in 0..2 {
        let l = log.clone();
        Builder::new()
            .spawn_ready(move || l.borrow_mut().push("queued"))
            .unwrap();
    }
    let l = log.clone();
    let mut checks = 0;
    fiber::run_until(|| {
        checks += 1;
        if checks == 2 {
            // After the first fiber: the second is still queued.
            create_yielding(&l);
            assert_eq!(
                *l.borrow(),
                ["queued", "created", "back in the creator"],
                "only the new fiber ran"
            );
        }
        false
    });
    assert_eq!(
        *log.borrow(),
        [
            "queued",
            "created",
            "back in the creator",
            "queued",
            "created again"
        ]
    );
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Counts the rounds busy fibers run once a wait's deadline has surely
/// passed: a loop that polls its timers between batches ends the wait
/// within a batch of it (64 switches), however loaded the machine; one that
/// starved the timer would count on, until `round` sets `stop` at
/// `GIVE_UP` so the test ends (and fails).
#[derive(Default)]
struct Late {
    /// At or after the deadline: the first round's time (the waiter
    /// blocked before it) plus the wait's timeout.
    due: Cell<Option<std::time::Instant>>,
    rounds: Cell<u32>,
}

const GIVE_UP: u32 = 100_000;

impl Late {
    /// Called by a busy fiber once a round, for a wait of `timeout`.
    fn round(&self, timeout: Duration, stop: &Cell<bool>) {
        let now = std::time::Instant::now();
        let due = self.due.get().unwrap_or(now + timeout);
        self.due.set(Some(due));
        if now >= due {
            self.rounds.set(self.rounds.get() + 1);
            if self.rounds.get() >= GIVE_UP {
                stop.set(true);
            }
        }
    }
}

#[test]
fn a_hub_whose_own_timer_fires_goes_on_while_the_fibers_it_runs_keep_busy() {
    // The first fiber blocks with a timeout, so it runs the others from its
    // stack: two that ping-pong on a cond and one that yields in a loop.
    // Its timer is polled between batches all the same.
    let stop = Rc::new(Cell::new(false));
    let rounds = Rc::new(RefCell::new([0u32; 3]));
    let waited = Rc::new(Cell::new(None));
    let late = Rc::new(Late::default());
    let (s, w) = (stop.clone(), waited.clone());
    Builder::new()
        .spawn_ready(move || {
            let start = std::time::Instant::now();
            let signalled = Cond::new().wait(Some(ms(5))).unwrap();
            w.set(Some((signalled, start.elapsed())));
            s.set(true);
        })
        .unwrap();
    let ping = Rc::new(Cond::new());
    for i in 0..2 {
        let (stop, rounds, ping, late) = (stop.clone(), rounds.clone(), ping.clone(), late.clone());
        Builder::new()
            .spawn_ready(move || {
                while !stop.get() {
                    late.round(ms(5), &stop);
                    rounds.borrow_mut()[i] += 1;
                    ping.signal();
                    ping.wait(None).unwrap();
                }
                ping.signal();
            })
            .unwrap();
    }
    let (s, r, l) = (stop.clone(), rounds.clone(), late.clone());
    Builder::new()
        .spawn_ready(move || {
            while !s.get() {
                l.round(ms(5), &s);
                r.borrow_mut()[2] += 1;
                fiber::yield_now().unwrap();
            }
        })
        .unwrap();
    fiber::run();
    let (signalled, elapsed) = waited.get().expect("the wait ended");
    assert!(!signalled);
    assert!(elapsed >= ms(5));
    assert!(
        late.rounds.get() <= 3 * 64,
        "{} rounds ran after the wait was due",
        late.rounds.get()
    );
    let rounds = *rounds.borrow();
    assert!(
        rounds.iter().all(|&n| n > 10),
        "every fiber made progress: {rounds:?}"
    );
    assert_eq!(ping.waiters(), 0);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn a_waiter_that_times_out_between_two_others_leaves_them_linked_in_order() {
    // The first waiter is the hub; the second times out while a yielder
    // keeps the loop busy, then the yielder signals twice and puts twice.
    let cond = Rc::new(Cond::new());
    let ch = Channel::<u32>::new(0);
    let log = Log::default();
    for (name, timeout) in [("first", None), ("middle", Some(ms(2))), ("last", None)] {
        let (c, ch, l) = (cond.clone(), ch.clone(), log.clone());
        Builder::new()
            .spawn_ready(move || {
                let signalled = c.wait(timeout).unwrap();
                l.borrow_mut().push(match signalled {
                    true => name,
                    false => "middle timed out",
                });
                match ch.get(timeout) {
                    Ok(1) => l.borrow_mut().push("got 1"),
                    Ok(2) => l.borrow_mut().push("got 2"),
                    Ok(_) => unreachable!(),
                    Err(e) => {
                        assert_eq!(e, fiber::GetError::TimedOut);
                        l.borrow_mut().push("get timed out");
                    }
                }
            })
            .unwrap();
    }
    let (c, l) = (cond.clone(), log.clone());
    Builder::new()
        .spawn_ready(move || {
            // Until the middle one has given up both waits.
            while l
                .borrow()
                .iter()
                .filter(|&&e| e.ends_with("timed out"))
                .count()
                < 2
            {
                fiber::yield_now().unwrap();
            }
            assert_eq!(c.waiters(), 2);
            c.signal();
            c.signal();
            while !ch.has_readers() || ch.put(1, Some(Duration::ZERO)).is_err() {
                fiber::yield_now().unwrap();
            }
            ch.put(2, None).unwrap();
        })
        .unwrap();
    fiber::run();
    assert_eq!(
        *log.borrow(),
        [
            "middle timed out",
            "get timed out",
            "first",
            "last",
            "got 1",
            "got 2"
        ]
    );
}
