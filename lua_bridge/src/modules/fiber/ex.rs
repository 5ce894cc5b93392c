//! luafiber's own extension of the `fiber` module: `fiber.new_ex` and
//! `fiber.create_ex`, which take options first (the stack size and the
//! name). Tarantool offers a fiber's stack size only in C
//! (`fiber_attr_setstacksize`, tarantool/tarantool#2438); `fiber.new` and
//! `fiber.create` stay as Tarantool has them.

use luafiber_fiber::stack::MIN_STACK_SIZE;
use luafiber_fiber::{Builder, MAX_NAME_LEN};
use mlua::ffi;

use super::object::push_fiber;
use crate::cord::ErrorUse;
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// Reads the options table at index 1 into a builder; `what` names the
/// function in errors ("fiber.new_ex").
fn options(s: &mut Stack, what: &str) -> LResult<Builder> {
    let bad = |msg: String| Raise::illegal(format!("{what}(opts, fn, ...): {msg}"));
    if s.type_of(1) != ffi::LUA_TTABLE {
        return Err(bad("opts must be a table".into()));
    }
    if s.type_of(2) != ffi::LUA_TFUNCTION {
        return Err(bad("fn must be a function".into()));
    }
    let mut builder = Builder::new();
    // Every key is checked, so a misspelt option is an error, not ignored.
    s.push_nil();
    while s.next_checked(1)? {
        // Only a string is read as one: `to_str` would turn a number key
        // into a string in place, which `next` cannot go on from.
        if s.type_of(-2) != ffi::LUA_TSTRING {
            return Err(bad("opts has a key that is not a string".into()));
        }
        let key = s.to_str(-2).unwrap_or_default().to_vec();
        match &key[..] {
            b"stack_size" => {
                let size = s
                    .to_integer(-1)
                    .ok_or_else(|| bad("opts.stack_size must be an integer (bytes)".into()))?;
                if size < MIN_STACK_SIZE as i64 {
                    return Err(bad(format!(
                        "opts.stack_size is {size}, less than the smallest stack ({MIN_STACK_SIZE} bytes)"
                    )));
                }
                builder = builder.stack_size(usize::try_from(size).unwrap_or(usize::MAX));
            }
            b"name" => {
                if s.type_of(-1) != ffi::LUA_TSTRING {
                    return Err(bad("opts.name must be a string".into()));
                }
                let name = s.to_str(-1).unwrap_or_default();
                if name.len() > MAX_NAME_LEN {
                    return Err(bad(format!(
                        "opts.name is longer than {MAX_NAME_LEN} bytes"
                    )));
                }
                // The bytes as they are, as `fiber.name` keeps them.
                builder = builder.name_bytes(name.to_vec());
            }
            other => {
                return Err(bad(format!(
                    "unknown option '{}' (stack_size and name are known)",
                    String::from_utf8_lossy(other)
                )))
            }
        }
        s.pop(1);
    }
    Ok(builder)
}

/// `fiber.new_ex` and `fiber.create_ex`: options at 1, the function at 2,
/// its arguments above.
fn create_ex(s: &mut Stack, start: Start, what: &str) -> LResult {
    let builder = options(s, what)?;
    if start == Start::Now {
        super::top::note_switch();
    }
    let id = lua_fiber::spawn(s, 2, start, builder, ErrorUse::Lua)?;
    push_fiber(s, id);
    Ok(1)
}

lua_fn! {
    /// `fiber.new_ex(opts, fn, ...)`: `fiber.new(fn, ...)` with options:
    /// `stack_size` (bytes, an integer of at least 16384, rounded up to
    /// whole pages) and `name` (bytes, at most 255). A wrong option, type or
    /// size is an `IllegalParams` error naming the function and the option;
    /// a stack that cannot be made is `OutOfMemory`. luafiber's own: Tarantool
    /// has no such function (it sets stack sizes only from C).
    pub(super) fn fiber_new_ex(s: &mut Stack) {
        create_ex(s, Start::Ready, "fiber.new_ex")
    }
}

lua_fn! {
    /// `fiber.create_ex(opts, fn, ...)`: `fiber.create(fn, ...)` (runs the
    /// fiber at once, until its first yield or its end) with the options of
    /// [`fiber_new_ex`]. luafiber's own.
    pub(super) fn fiber_create_ex(s: &mut Stack) {
        create_ex(s, Start::Now, "fiber.create_ex")
    }
}
