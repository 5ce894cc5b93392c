//! The fiber functions of the C module API (Tarantool's `fiber.h`): the
//! fibers a C module makes are fibers of the scheduler, and the functions
//! that wait switch on the calling fiber's own stack.
//!
//! Differences from Tarantool:
//!
//! - A fiber made by `fiber_new` gets its id when it starts: `fiber_id` of
//!   one not started yet is 0, and `fiber_join` of it fails at once (-1)
//!   instead of waiting for a start.
//! - Where Tarantool panics (`fiber_join` of a fiber that is not joinable,
//!   `fiber_start` of a started fiber, a wait outside any fiber or where the
//!   bridge refuses a switch), the function does nothing and fails (-1 where
//!   it returns `int`), with the reason in the diagnostics (`luaT_error`).
//! - `fiber_join` of a Lua fiber is refused: join it from Lua, which frees
//!   its Lua thread.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::time::Duration;

use luafiber_fiber::{self as fiber, Builder, FiberId};

use super::diag;
use super::handle::{self, Fiber, FiberFunc, Record, State, Target};
use super::{guard, may_switch};
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;

/// The arguments of one `fiber_start` call (`struct luafiber_va` of
/// `shim.c`), only ever handled by address.
#[repr(C)]
pub struct VaArgs {
    _opaque: [u8; 0],
}

extern "C" {
    /// `shim.c`: calls `f` with `args`' `va_list` (or an empty one).
    fn luafiber_capi_invoke(f: FiberFunc, args: *mut VaArgs) -> c_int;
    /// `shim.c`: Tarantool's variadic `fiber_start(callee, ...)`.
    pub fn fiber_start(callee: *mut Fiber, ...);
}

/// Tarantool's `TIMEOUT_INFINITY`: a timeout this long waits forever.
const TIMEOUT_INFINITY: f64 = 100.0 * 365.0 * 86400.0;

/// Tarantool's `FIBER_STACK_SIZE_MINIMAL`.
const STACK_SIZE_MINIMAL: usize = 16 * 1024;

/// `struct fiber_attr`: the stack size of the fibers made with it.
pub struct FiberAttr {
    stack_size: usize,
}

/// A timeout in seconds of the C function `fname`: `None` forever
/// (infinite, or Tarantool's `TIMEOUT_INFINITY`), zero for a negative one.
///
/// # Errors
///
/// NaN, which would wait for ever, is refused as Lua's `fiber.sleep(0/0)`
/// is: an `IllegalParams` error recorded for `luaT_error`.
pub(crate) fn timeout(t: f64, fname: &str) -> Result<Option<Duration>, ()> {
    if t.is_nan() {
        diag::set(
            ErrorKind::IllegalParams,
            format!("{fname}: the timeout is NaN"),
        );
        return Err(());
    }
    if t >= TIMEOUT_INFINITY {
        return Ok(None);
    }
    Ok(crate::raw::args::seconds(t))
}

/// `fiber_attr_new()`: attributes with the default stack size.
#[no_mangle]
pub extern "C" fn fiber_attr_new() -> *mut FiberAttr {
    guard("fiber_attr_new", std::ptr::null_mut(), || {
        let stack_size = fiber::config().stacks.stack_size;
        Box::into_raw(Box::new(FiberAttr { stack_size }))
    })
}

capi! {
    /// `fiber_attr_delete(attr)`: frees attributes made by
    /// [`fiber_attr_new`].
    ///
    /// # Safety
    ///
    /// `attr` is NULL or from [`fiber_attr_new`], not deleted yet.
    fn fiber_attr_delete(attr: *mut FiberAttr => Option<Box<FiberAttr>>) {
        drop(attr);
    }
}

capi! {
    /// `fiber_attr_setstacksize(attr, bytes)`: 0, or -1 below 16 KiB.
    ///
    /// # Safety
    ///
    /// `attr` is NULL or from [`fiber_attr_new`], not deleted.
    fn fiber_attr_setstacksize(
        attr: *mut FiberAttr => Option<&mut FiberAttr>,
        stack_size: usize,
    ) -> c_int {
        match attr {
            Some(a) if stack_size >= STACK_SIZE_MINIMAL => {
                a.stack_size = stack_size;
                0
            }
            _ => {
                diag::set(ErrorKind::IllegalParams, "stack size is too small");
                -1
            }
        }
    }
}

capi! {
    /// `fiber_attr_getstacksize(attr)`: its stack size; NULL: the default.
    ///
    /// # Safety
    ///
    /// `attr` is NULL or from [`fiber_attr_new`], not deleted.
    fn fiber_attr_getstacksize(attr: *const FiberAttr => Option<&FiberAttr>) -> usize {
        match attr {
            Some(a) => a.stack_size,
            None => guard("fiber_attr_getstacksize", 0, || {
                fiber::config().stacks.stack_size
            }),
        }
    }
}

capi! {
    /// `fiber_new(name, f)`: a new fiber that runs `f` once started
    /// ([`fiber_start`], or `fiber_wakeup`); NULL when `f` is NULL.
    ///
    /// # Safety
    ///
    /// `name` is NULL or a NUL-terminated string.
    fn fiber_new(name: *const c_char => Option<&CStr>, f: Option<FiberFunc>) -> *mut Fiber {
        new(name, None, f)
    }
}

capi! {
    /// `fiber_new_ex(name, attr, f)`: [`fiber_new`] with the stack size of
    /// `attr` (NULL: the default).
    ///
    /// # Safety
    ///
    /// As [`fiber_new`]; `attr` is NULL or from [`fiber_attr_new`], not
    /// deleted.
    fn fiber_new_ex(
        name: *const c_char => Option<&CStr>,
        attr: *const FiberAttr => Option<&FiberAttr>,
        f: Option<FiberFunc>,
    ) -> *mut Fiber {
        new(name, attr, f)
    }
}

/// [`fiber_new_ex`].
fn new(name: Option<&CStr>, attr: Option<&FiberAttr>, f: Option<FiberFunc>) -> *mut Fiber {
    let Some(f) = f else {
        diag::set(ErrorKind::IllegalParams, "fiber_new: the function is NULL");
        return std::ptr::null_mut();
    };
    let name = name.map_or(&b"lua"[..], CStr::to_bytes);
    let stack_size = attr.map(|a| a.stack_size);
    guard("fiber_new", std::ptr::null_mut(), move || {
        handle::insert(Record {
            f,
            name: fiber::truncate(name).to_owned(),
            stack_size,
            joinable: false,
            ctx: std::ptr::null_mut(),
            state: State::Pending,
            ret: 0,
            diag: None,
        })
    })
}

/// What `fiber_start` runs in C (`shim.c`): starts `callee` at once with
/// `args`, returning when it first yields or ends (Tarantool's
/// `fiber_call`).
///
/// # Safety
///
/// `args` holds the live arguments of the `fiber_start` call.
#[no_mangle]
pub unsafe extern "C" fn luafiber_capi_start(callee: *mut Fiber, args: *mut VaArgs) {
    guard("fiber_start", (), || match handle::resolve(callee) {
        Target::Pending(serial) => {
            start(serial, true, args);
        }
        _ => {
            tracing::error!("fiber_start: the fiber is started already, or gone");
            diag::set(
                ErrorKind::IllegalParams,
                "fiber_start: the fiber is not new",
            );
        }
    })
}

/// Spawns the record `serial`'s fiber: at once (`now`), or appended to the
/// ready queue with no arguments.
fn start(serial: u64, now: bool, args: *mut VaArgs) -> Option<FiberId> {
    let (f, name, stack_size, joinable) =
        handle::with_record(serial, |r| (r.f, r.name.clone(), r.stack_size, r.joinable))?;
    let mut b = Builder::new().name_bytes(name).joinable(joinable);
    if let Some(bytes) = stack_size {
        b = b.stack_size(bytes);
    }
    let args = if now { args } else { std::ptr::null_mut() };
    let body = move || run(serial, f, args);
    let spawned = if now {
        b.spawn_now(body)
    } else {
        b.spawn_ready(body)
    };
    match spawned {
        Ok(id) => {
            handle::with_record(serial, |r| {
                if r.state == State::Pending {
                    r.state = State::Started { id, done: false };
                }
            });
            Some(id)
        }
        Err(e) => {
            diag::set_fiber_error(e);
            None
        }
    }
}

/// The body of a fiber made by `fiber_new`: calls its function, then keeps
/// the result for a joiner or drops the record. Owns nothing while C runs.
fn run(serial: u64, f: FiberFunc, args: *mut VaArgs) {
    let Some(me) = fiber::current() else { return };
    handle::with_record(serial, |r| {
        r.state = State::Started {
            id: me,
            done: false,
        }
    });
    handle::set_running(me, Some(serial));
    // SAFETY: `f` is the C function given to `fiber_new`; `args` is NULL or
    // the arguments of the `fiber_start` call that runs this at once, alive
    // until this fiber first yields (Tarantool's contract for `f`).
    let ret = unsafe { luafiber_capi_invoke(f, args) };
    handle::set_running(me, None);
    if fiber::is_joinable(me).unwrap_or(false) {
        let diag = if ret != 0 { diag::last() } else { None };
        handle::with_record(serial, |r| {
            r.state = State::Started { id: me, done: true };
            r.ret = ret;
            r.diag = diag;
        });
    } else {
        handle::remove(serial);
    }
}

/// `fiber_self()`: the current fiber; NULL outside any fiber.
#[no_mangle]
pub extern "C" fn fiber_self() -> *mut Fiber {
    guard("fiber_self", std::ptr::null_mut(), || {
        fiber::current().map_or(std::ptr::null_mut(), handle::of)
    })
}

/// `fiber_yield()`: blocks the current fiber until a `fiber_wakeup` (or a
/// cancel). Not a cancellation point, as in Tarantool (unlike Lua's
/// `fiber.yield()`, which is `sleep(0)`).
#[no_mangle]
pub extern "C" fn fiber_yield() {
    guard("fiber_yield", (), || {
        if may_switch("fiber_yield") {
            let _ = fiber::block(None);
        }
    })
}

/// `fiber_sleep(s)`: sleeps at least `s` seconds (0 or less: a yield to
/// the back of the ready queue); a wakeup or a cancel ends it early. A NaN
/// `s` returns at once with an `IllegalParams` error recorded.
#[no_mangle]
pub extern "C" fn fiber_sleep(s: f64) {
    guard("fiber_sleep", (), || {
        let Ok(t) = timeout(s, "fiber_sleep") else {
            return;
        };
        if may_switch("fiber_sleep") {
            let _ = match t {
                Some(d) => fiber::sleep(d),
                None => fiber::block_cancellable(None).map(drop),
            };
        }
    })
}

/// `fiber_reschedule()`: to the back of the ready queue (not a
/// cancellation point).
#[no_mangle]
pub extern "C" fn fiber_reschedule() {
    guard("fiber_reschedule", (), || {
        if may_switch("fiber_reschedule") {
            let _ = fiber::yield_now();
        }
    })
}

/// `fiber_wakeup(f)`: makes a waiting fiber ready; starts one made by
/// `fiber_new` that is not started yet (with no arguments). A no-op on the
/// current fiber and on dead ones.
#[no_mangle]
pub extern "C" fn fiber_wakeup(f: *mut Fiber) {
    guard("fiber_wakeup", (), || match handle::resolve(f) {
        Target::Fiber(id, _) => {
            let _ = fiber::wakeup(id);
        }
        Target::Pending(serial) => {
            start(serial, false, std::ptr::null_mut());
        }
        Target::Gone => {}
    })
}

/// `fiber_cancel(f)`: sets the fiber's cancel flag and wakes it (a fiber
/// not started yet is started, cancelled). Use [`fiber_join`] to wait for
/// its end.
#[no_mangle]
pub extern "C" fn fiber_cancel(f: *mut Fiber) {
    guard("fiber_cancel", (), || {
        let id = match handle::resolve(f) {
            Target::Fiber(id, _) => Some(id),
            Target::Pending(serial) => start(serial, false, std::ptr::null_mut()),
            Target::Gone => None,
        };
        if let Some(id) = id {
            let _ = fiber::cancel(id);
        }
    })
}

/// `fiber_set_cancellable(yesno)`: deprecated in Tarantool, a no-op;
/// returns `true`.
#[no_mangle]
pub extern "C" fn fiber_set_cancellable(_yesno: bool) -> bool {
    true
}

/// `fiber_is_cancelled()`: whether the current fiber's cancel flag is set.
#[no_mangle]
pub extern "C" fn fiber_is_cancelled() -> bool {
    guard("fiber_is_cancelled", false, || {
        fiber::current().is_some_and(|id| fiber::is_cancelled(id).unwrap_or(false))
    })
}

/// `fiber_set_joinable(f, yesno)`: whether the fiber waits for a join after
/// its end (NULL: the current fiber).
#[no_mangle]
pub extern "C" fn fiber_set_joinable(f: *mut Fiber, yesno: bool) {
    guard("fiber_set_joinable", (), || match handle::resolve(f) {
        Target::Fiber(id, _) => {
            if let Err(e) = fiber::set_joinable(id, yesno) {
                diag::set_fiber_error(e);
            }
        }
        Target::Pending(serial) => {
            handle::with_record(serial, |r| r.joinable = yesno);
        }
        Target::Gone => {}
    })
}

/// `fiber_join(f)`: waits for a joinable fiber to end; returns its
/// function's result (and its error in the diagnostics when non-zero), or
/// -1 when it cannot be joined. Not a cancellation point.
#[no_mangle]
pub extern "C" fn fiber_join(f: *mut Fiber) -> c_int {
    guard("fiber_join", -1, || join(f, None))
}

/// `fiber_join_timeout(f, timeout)`: [`fiber_join`], or -1 with a
/// `TimedOut` error after `timeout` seconds (the fiber stays joinable); a
/// NaN `timeout` is refused at once (-1, `IllegalParams`).
#[no_mangle]
pub extern "C" fn fiber_join_timeout(f: *mut Fiber, timeout: f64) -> c_int {
    guard("fiber_join_timeout", -1, || {
        match self::timeout(timeout, "fiber_join_timeout") {
            Ok(t) => join(f, t),
            Err(()) => -1,
        }
    })
}

fn join(f: *mut Fiber, timeout: Option<Duration>) -> c_int {
    let (id, serial) = match handle::resolve(f) {
        Target::Fiber(id, serial) => (id, serial),
        Target::Pending(_) => {
            diag::set(
                ErrorKind::IllegalParams,
                "fiber_join: the fiber was never started",
            );
            return -1;
        }
        Target::Gone => {
            diag::set(ErrorKind::IllegalParams, "fiber_join: the fiber is dead");
            return -1;
        }
    };
    if f.is_null() || fiber::current() == Some(id) {
        diag::set(ErrorKind::IllegalParams, "fiber_join: cannot join itself");
        return -1;
    }
    if fiber::status(id) != Some(fiber::Status::Dead) && !may_switch("fiber_join") {
        return -1;
    }
    if serial.is_none() && fiber::ext(id).is_ok_and(|e| e > 0) {
        return join_lua(id, timeout);
    }
    if let Err(e) = fiber::join(id, timeout) {
        diag::set_fiber_error(e);
        return -1;
    }
    let Some(rec) = serial.and_then(handle::remove) else {
        return 0;
    };
    if rec.ret != 0 {
        diag::put(rec.diag);
    }
    rec.ret
}

/// Joins a Lua fiber from C (master's `fiber_join_timeout` on a fiber
/// that Lua made): its results are dropped; an error it ended with is set
/// as the diag (its message), and -1 returned.
fn join_lua(id: FiberId, timeout: Option<Duration>) -> c_int {
    let mut ended = match crate::cord::Ended::joined(id, timeout) {
        Ok(Some(ended)) => ended,
        Ok(None) => return 0,
        Err(e) => {
            diag::set_fiber_error(e);
            return -1;
        }
    };
    if ended.rc() == Some(0) {
        return 0;
    }
    let msg = {
        let st = ended.stack();
        let top = st.top();
        st.to_str(top)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_else(|| "the fiber ended with an error".into())
    };
    diag::set(ErrorKind::IllegalParams, msg);
    -1
}

/// `fiber_id(f)`: the fiber's id (NULL: the current fiber's); 0 for a fiber
/// not started yet or a stale handle.
#[no_mangle]
pub extern "C" fn fiber_id(f: *const Fiber) -> u64 {
    guard("fiber_id", 0, || match handle::resolve(f) {
        Target::Fiber(id, _) => id.0,
        _ => 0,
    })
}

/// `fiber_find(id)`: the live fiber with this id, or NULL.
#[no_mangle]
pub extern "C" fn fiber_find(fid: u64) -> *mut Fiber {
    guard("fiber_find", std::ptr::null_mut(), || {
        let id = FiberId(fid);
        match fiber::exists(id) {
            true => handle::of(id),
            false => std::ptr::null_mut(),
        }
    })
}

/// `fiber_csw(f)`: context switches into the fiber so far (NULL: the
/// current one); 0 for a fiber not started yet or a stale handle.
#[no_mangle]
pub extern "C" fn fiber_csw(f: *const Fiber) -> u64 {
    guard("fiber_csw", 0, || match handle::resolve(f) {
        Target::Fiber(id, _) => fiber::csw(id).unwrap_or(0),
        _ => 0,
    })
}

/// Per-cord state of `fiber_name` (a part of the cord context): the last
/// names it returned (each stays valid for three more calls on the cord).
#[derive(Default)]
pub(crate) struct FiberNames(std::cell::RefCell<(usize, [CString; 4])>);

/// `fiber_name(f)`: the fiber's name, NUL-terminated (NULL: the current
/// fiber's). Difference: the string is a copy that stays valid for the
/// next three `fiber_name` calls on this thread, not for the fiber's life.
#[no_mangle]
pub extern "C" fn fiber_name(f: *const Fiber) -> *const c_char {
    guard("fiber_name", c"".as_ptr(), || {
        let name = match handle::resolve(f) {
            Target::Fiber(id, _) => fiber::name(id).unwrap_or_default(),
            Target::Pending(serial) => {
                handle::with_record(serial, |r| r.name.clone()).unwrap_or_default()
            }
            Target::Gone => Vec::new(),
        };
        let name = CString::new(name.into_iter().filter(|&b| b != 0).collect::<Vec<u8>>())
            .unwrap_or_default();
        FiberNames::with(|n| {
            let (next, names) = &mut *n.0.borrow_mut();
            *next = (*next + 1) % names.len();
            names[*next] = name;
            names[*next].as_ptr()
        })
    })
}

/// `fiber_set_name_n(f, name, len)`: renames the fiber (NULL: the current
/// one); a name over 255 bytes is cut.
///
/// # Safety
///
/// `name` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn fiber_set_name_n(f: *mut Fiber, name: *const c_char, len: u32) {
    let bytes = match name.is_null() {
        true => &[][..],
        // SAFETY: `len` readable bytes (contract).
        false => unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len as usize) },
    };
    guard("fiber_set_name_n", (), || {
        let name = fiber::truncate(bytes);
        match handle::resolve(f) {
            Target::Fiber(id, _) => {
                let _ = fiber::set_name(id, name);
            }
            Target::Pending(serial) => {
                handle::with_record(serial, |r| r.name = name.to_owned());
            }
            Target::Gone => {}
        }
    })
}

/// `fiber_set_ctx(f, ctx)`: a pointer for the fiber's function to read with
/// [`fiber_get_ctx`] (NULL `f`: the current fiber).
#[no_mangle]
pub extern "C" fn fiber_set_ctx(f: *mut Fiber, ctx: *mut c_void) {
    guard("fiber_set_ctx", (), || match handle::resolve(f) {
        Target::Fiber(_, Some(serial)) | Target::Pending(serial) => {
            handle::with_record(serial, |r| r.ctx = ctx);
        }
        Target::Fiber(id, None) => handle::set_ctx(id, ctx),
        Target::Gone => {}
    })
}

/// `fiber_get_ctx(f)`: what [`fiber_set_ctx`] set, or NULL.
#[no_mangle]
pub extern "C" fn fiber_get_ctx(f: *mut Fiber) -> *mut c_void {
    guard(
        "fiber_get_ctx",
        std::ptr::null_mut(),
        || match handle::resolve(f) {
            Target::Fiber(_, Some(serial)) | Target::Pending(serial) => {
                handle::with_record(serial, |r| r.ctx).unwrap_or(std::ptr::null_mut())
            }
            Target::Fiber(id, None) => handle::ctx(id),
            Target::Gone => std::ptr::null_mut(),
        },
    )
}
