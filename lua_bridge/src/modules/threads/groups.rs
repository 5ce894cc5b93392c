//! The thread groups of the process: started once by `threads.cfg` (from
//! the main thread, group `tx`), then read by every cord; and each cord's
//! own place in them.
//!
//! A group is a set of cords that serve [`Request`]s ([`Group`]). This
//! layer only routes requests: the embedding layer, which knows how to
//! start a cord with its own Lua state, installs the [`Starter`] that makes
//! a group (one per Lua runtime's thread, with that runtime's settings).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use super::request::Request;
use crate::raw::context::Part;

/// Cords that serve requests.
pub(crate) trait Group: Send + Sync {
    /// Sends `req` to cord `target` (`0..size()`), or with `None` to
    /// whichever cord is free first (the group's injector).
    fn send(&self, target: Option<usize>, req: Request);

    /// The group's cords' runtime (whether they are quiet).
    fn handle(&self) -> &luafiber_runtime::cord::Handle;
}

/// Makes a group of a name and a size.
pub(crate) type Starter = Box<StartFn>;

/// What a [`Starter`] calls.
pub(crate) type StartFn = dyn Fn(&str, usize) -> Result<Arc<dyn Group>, String>;

/// A configured group.
pub(crate) struct Entry {
    pub name: String,
    pub size: usize,
    pub group: Arc<dyn Group>,
}

/// The groups `threads.cfg` started (none before it ran).
static GROUPS: OnceLock<Vec<Entry>> = OnceLock::new();

/// Per-cord state of the thread groups (a part of the cord context).
#[derive(Default)]
pub(crate) struct GroupsState {
    /// How this cord's runtime starts a group.
    starter: RefCell<Option<Rc<StartFn>>>,
    /// This cord's group and its 1-based id there; `None`: `tx`, 1.
    place: RefCell<Option<(Arc<str>, usize)>>,
    /// Set while `threads.cfg` starts the groups (a re-entrant call fails).
    starting: Cell<bool>,
}

/// Sets how this thread's runtime starts groups.
pub(crate) fn set_starter(starter: Starter) {
    GroupsState::with(|g| *g.starter.borrow_mut() = Some(Rc::from(starter)));
}

/// Makes this thread thread `id` (from 1) of group `name`.
pub(crate) fn set_place(name: Arc<str>, id: usize) {
    GroupsState::with(|g| *g.place.borrow_mut() = Some((name, id)));
}

/// This thread's group name and id in it (`tx`, 1 for the main thread).
pub(crate) fn place() -> (Arc<str>, usize) {
    GroupsState::try_with(|g| g.place.borrow().clone())
        .flatten()
        .unwrap_or_else(|| ("tx".into(), 1))
}

/// The configured groups, `tx` not included.
pub(crate) fn all() -> &'static [Entry] {
    GROUPS.get().map_or(&[], Vec::as_slice)
}

/// The group named `name`.
pub(crate) fn find(name: &[u8]) -> Option<&'static Entry> {
    all().iter().find(|e| e.name.as_bytes() == name)
}

/// Starts the groups `specs` (names and sizes, checked by the caller) and
/// makes them the process's.
///
/// # Errors
///
/// When the groups were configured already, this thread is a group's
/// (only the main thread configures), or a group cannot start (the groups
/// started before it keep running, unused).
pub(crate) fn configure(specs: Vec<(String, usize)>) -> Result<(), String> {
    let (starting, placed, starter) = GroupsState::try_with(|g| {
        (
            g.starting.get(),
            g.place.borrow().is_some(),
            g.starter.borrow().clone(),
        )
    })
    .unwrap_or((false, false, None));
    if GROUPS.get().is_some() || starting {
        return Err("the thread groups are configured already".into());
    }
    if placed {
        return Err("only the main thread (group tx) configures thread groups".into());
    }
    let start = starter.ok_or("this thread has no Lua runtime to start threads from")?;
    GroupsState::with(|g| g.starting.set(true));
    let started = specs
        .into_iter()
        .map(|(name, size)| {
            let group = start(&name, size)?;
            Ok(Entry { name, size, group })
        })
        .collect::<Result<Vec<Entry>, String>>();
    GroupsState::with(|g| g.starting.set(false));
    GROUPS
        .set(started?)
        .map_err(|_| "the thread groups are configured already".to_string())?;
    crate::fiber::entry::set_exit_note(exit_note);
    Ok(())
}

/// What an exit now would drop: the groups still at work.
fn exit_note() -> Option<String> {
    let busy = busy();
    (!busy.is_empty()).then(|| {
        format!(
            "exiting drops the work of thread groups {} (fibers ready, sleeping or waiting on I/O)",
            busy.join(", ")
        )
    })
}

/// Blocks until no fiber of any group is ready, sleeping, or waiting on
/// I/O or on another thread, and no work waits to start there: what keeps
/// a script's process alive once its main cord (`tx`) is done, as its own
/// fibers do. Fibers blocked for ever (on a channel nothing will write)
/// keep nothing alive.
pub(crate) fn wait_quiet() {
    let stamps = || -> Option<Vec<u64>> {
        all()
            .iter()
            .map(|e| e.group.handle().quiet_stamp())
            .collect()
    };
    loop {
        for e in all() {
            e.group.handle().wait_quiet();
        }
        // Groups may give each other work: quiet all at once, twice over.
        let first = stamps();
        if first.is_some() && first == stamps() {
            return;
        }
    }
}

/// The names of the groups that are not quiet (see [`wait_quiet`]): work
/// an exit now would drop.
pub(crate) fn busy() -> Vec<&'static str> {
    all()
        .iter()
        .filter(|e| !e.group.handle().is_quiet())
        .map(|e| e.name.as_str())
        .collect()
}
