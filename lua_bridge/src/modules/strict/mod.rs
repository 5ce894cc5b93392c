//! The Lua `strict` module: Tarantool master's `src/lua/strict.lua`, Lua
//! only. `strict.on()` makes reading an undeclared global an error
//! ("variable 'x' is not declared") and so assigning one inside a
//! function ("assign to undeclared variable 'x'"); a global is declared by
//! an assignment in a main chunk (or from C). `strict.off()` forgets the
//! declarations and removes the checks.
//!
//! Difference from Tarantool: loading the module does not turn the checks
//! on (master's file does, at boot, and its release builds turn them off
//! again before any user code runs: the user finds them off either way).

use crate::raw::{lua_fn, Raise};

const CHUNK: &str = include_str!("strict.lua");

lua_fn! {
    /// The `strict` module's loader (`package.preload.strict`).
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(4)?;
        s.load(CHUNK, c"@builtin/strict.lua").map_err(|()| Raise::Top)?;
        s.pcall(0, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
