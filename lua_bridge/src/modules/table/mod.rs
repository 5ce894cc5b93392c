//! Tarantool's extensions of the global `table` (master's
//! `src/lua/table.lua`): `table.new(narr, nrec)`, `table.clear(t)`, and
//! `table.copy`, `table.deepcopy`, `table.equals` (`table.lua` here, Lua
//! functions, so that a `__copy` or `__eq` metamethod may yield).
//!
//! On LuaJIT they are LuaJIT's own (fast functions the JIT compiles); on
//! Lua 5.4 C functions here: `table.new` is `lua_createtable` (`narr` and
//! `nrec` preallocated), `table.clear` sets every key to nil (the table
//! keeps its memory where Lua 5.4 allows; `#t` is 0 after it).

use mlua::ffi;

use crate::raw::{lua_fn, Raise, Stack};

/// Sets LuaJIT's functions as `table.new` and `table.clear`.
const LUAJIT: &str = "
local t = ...
t.new = t.new or require('table.new')
t.clear = t.clear or require('table.clear')
";

lua_fn! {
    /// `table.new(narr, nrec)` on Lua 5.4.
    fn table_new(s: &mut Stack) {
        let size = |s: &Stack, i| {
            s.to_number(i)
                .filter(|n| *n >= 0.0 && n.is_finite())
                .map(|n| n.min(f64::from(i32::MAX)) as i32)
                .ok_or_else(|| Raise::illegal(format!("bad argument #{i} to 'new' (number expected)")))
        };
        let (narr, nrec) = (size(s, 1)?, size(s, 2)?);
        s.new_table(narr, nrec);
        Ok(1)
    }
}

lua_fn! {
    /// `table.clear(t)` on Lua 5.4: removes every key (raw).
    fn table_clear(s: &mut Stack) {
        if s.type_of(1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("bad argument #1 to 'clear' (table expected)"));
        }
        s.settop(1);
        // Each key is cleared once `next` went past it (so the key `next`
        // is given still has a value, the check's fast case): `[t, key]`.
        s.push_nil();
        loop {
            s.push_value(2);
            let more = s.next_checked(1)?;
            if !s.is_none_or_nil(2) {
                s.push_value(2);
                s.push_nil();
                s.rawset(1)?;
            }
            if !more {
                break;
            }
            // `[t, key, next key, value]`
            s.pop(1);
            s.remove(2);
        }
        Ok(0)
    }
}

/// `copy`, `deepcopy` and `equals`, run with the `table` table.
const TABLE_LUA: &str = include_str!("table.lua");

/// Sets `table.new`, `table.clear`, `copy`, `deepcopy` and `equals` (at
/// setup).
pub(crate) fn extend(s: &mut Stack) {
    let top = s.top();
    s.push_globals();
    if s.rawget_field(-1, c"table") != ffi::LUA_TTABLE {
        s.settop(top);
        return;
    }
    let t = s.top();
    if cfg!(feature = "luajit") {
        s.run_setup_chunk(LUAJIT, c"=table", |s| {
            s.push_value(t);
            1
        });
    } else {
        s.set_funcs(t, &[(c"new", table_new), (c"clear", table_clear)]);
    }
    s.run_setup_chunk(TABLE_LUA, c"=table", |s| {
        s.push_value(t);
        1
    });
    s.settop(top);
}
