//! Runs a Lua test chunk on a fresh `LuaRuntime` and fails the test with
//! its error. The chunk starts with [`EQ`], the `eq(got, want, what)`
//! assertion the Lua module tests share.

use luafiber::LuaRuntime;

/// `eq(got, want, what)`: raises "what: got G, want W" (at the caller's
/// line) unless `got == want`.
pub const EQ: &str = r#"
local function eq(got, want, what)
    if got ~= want then
        error(('%s: got %s, want %s'):format(what, tostring(got), tostring(want)), 2)
    end
end
"#;

/// Runs [`EQ`] and then `parts` (joined by newlines) as one chunk named
/// `name`.
///
/// # Panics
///
/// When the chunk fails: the panic message is its error.
pub fn run_lua(name: &str, parts: &[&str]) {
    let rt = LuaRuntime::new().unwrap();
    let chunk = format!("{EQ}\n{}", parts.join("\n"));
    if let Err(e) = rt.run_chunk(&chunk, name) {
        panic!("{e}");
    }
}
