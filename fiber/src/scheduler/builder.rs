//! Making fibers: the options ([`Builder`]), the coroutine every fiber runs
//! in, and its slot.

use std::borrow::Cow;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};

use corosensei::Coroutine;

use super::core::{run_switch_hook, with};
use super::error::Error;
use super::id::FiberId;
use super::record::{truncate, DisplayName, FiberYielder, Handle, Resume, Slot, Status};
use super::switch::switch_to;
use crate::context::Running;
use crate::stack::overflow;

/// Options for a new fiber; see [`Builder::spawn_now`] and
/// [`Builder::spawn_ready`].
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<Cow<'static, [u8]>>,
    stack_size: Option<usize>,
    joinable: bool,
    ext: usize,
    tag: usize,
}

impl Builder {
    /// Default options: named "lua", the configured stack size, not joinable.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the fiber (at most [`MAX_NAME_LEN`](crate::MAX_NAME_LEN)
    /// bytes; longer names are cut, see [`truncate`]).
    pub fn name(self, name: impl Into<Cow<'static, str>>) -> Builder {
        self.name_bytes(match name.into() {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        })
    }

    /// [`Builder::name`] with a name of any bytes (a fiber name need not be
    /// UTF-8, as in Tarantool).
    pub fn name_bytes(mut self, name: impl Into<Cow<'static, [u8]>>) -> Builder {
        let name = name.into();
        self.name = Some(match truncate(&name).len() == name.len() {
            true => name,
            false => Cow::Owned(truncate(&name).to_owned()),
        });
        self
    }

    /// Usable stack size in bytes (rounded up to pages, at least 16 KiB).
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Whether the fiber stays after its end until joined.
    pub fn joinable(mut self, joinable: bool) -> Builder {
        self.joinable = joinable;
        self
    }

    /// The embedder's word for this fiber (see [`ext`](crate::ext)).
    pub fn ext(mut self, ext: usize) -> Builder {
        self.ext = ext;
        self
    }

    /// A constant word for this fiber that [`current_tag`](crate::current_tag)
    /// reads async-signal-safely while it runs (the Lua bridge keeps its
    /// Lua thread there).
    pub fn tag(mut self, tag: usize) -> Builder {
        self.tag = tag;
        self
    }

    fn build(self, body: impl FnOnce() + 'static) -> Result<Handle, Error> {
        overflow::install();
        let stack = with(|s| s.stacks().take(self.stack_size))?;
        let stack_size = stack.size();
        let guard = stack.guard();
        let guard = (guard.start, guard.end);
        let coro = Coroutine::with_stack(stack, move |y: &FiberYielder, _: Resume| {
            with(|s| {
                let (_, slot) = s.current_slot().expect("a fiber runs as current");
                slot.yielder = y;
            });
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(body)) {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                let (fid, name) = with(|s| {
                    let (h, slot) = s.current_slot().expect("a fiber runs as current");
                    (h.id, DisplayName(&slot.name).to_string())
                });
                eprintln!("fiber {fid} ({name}) panicked: {msg}");
            }
            run_switch_hook();
        });
        Ok(with(|s| {
            let fid = s.next_fid;
            s.next_fid += 1;
            let name = self.name.unwrap_or(Cow::Borrowed(b"lua"));
            // The bytes stay where they are when the slot moves.
            let name_bytes = (name.as_ptr(), name.len());
            let h = s.slots.insert_with(fid, || Slot {
                status: Status::Suspended,
                coro: Some(coro),
                resumer: None,
                yielder: std::ptr::null(),
                name,
                cancelled: false,
                joinable: self.joinable,
                timed_out: false,
                wait: 0,
                joiner: None,
                csw: 0,
                running: Running {
                    guard,
                    stack_size,
                    fid,
                    name: name_bytes,
                    ext: self.ext,
                    word: Cell::new(0),
                    tag: self.tag,
                },
            });
            s.by_fid.insert(fid, h);
            tracing::trace!(id = fid, name = %DisplayName(&s.slots[h].name), "spawn");
            h
        }))
    }

    /// Creates the fiber and runs it at once, until its first yield or its
    /// end; then returns to the caller (Tarantool's `fiber.create`).
    ///
    /// # Errors
    ///
    /// [`Error::Stack`] when no stack can be made.
    pub fn spawn_now(self, body: impl FnOnce() + 'static) -> Result<FiberId, Error> {
        let h = self.build(body)?;
        switch_to(h);
        Ok(FiberId(h.id))
    }

    /// Creates the fiber and appends it to the ready queue (Tarantool's
    /// `fiber.new`): it runs when the caller yields, or in [`run`](crate::run).
    ///
    /// # Errors
    ///
    /// [`Error::Stack`] when no stack can be made.
    pub fn spawn_ready(self, body: impl FnOnce() + 'static) -> Result<FiberId, Error> {
        let h = self.build(body)?;
        with(|s| s.wake(h));
        Ok(FiberId(h.id))
    }
}
