//! The `luafiber` binary exports the Lua C API and luafiber's C module API
//! (`include/luafiber.dynlist`), so the C modules it loads with `require`
//! (and `ffi.C`) find them, as in `luajit`, `lua` and `tarantool`. The
//! integration tests link the same way: one of them loads a C module into
//! an embedded runtime, as an embedder's program would.
//!
//! On LuaJIT they are also linked with `--wrap=lua_call,--wrap=lua_pcall`,
//! which sends every static call of those (LuaJIT's libraries, the bridge)
//! through the C stack check of `luafiber-lua` (`lua_bridge/src/luajit/
//! cstack.c`): recursion through C callbacks raises "C stack overflow"
//! instead of running into the fiber's stack guard.

fn main() {
    println!("cargo:rerun-if-changed=include/luafiber.dynlist");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if os == "macos" || os == "ios" {
        // Mach-O has no dynamic list: export every global symbol.
        println!("cargo:rustc-link-arg-bins=-Wl,-export_dynamic");
        println!("cargo:rustc-link-arg-tests=-Wl,-export_dynamic");
    } else if os != "windows" {
        let list = format!("-Wl,--dynamic-list={dir}/include/luafiber.dynlist");
        println!("cargo:rustc-link-arg-bins={list}");
        println!("cargo:rustc-link-arg-tests={list}");
        if std::env::var_os("CARGO_FEATURE_LUAJIT").is_some() {
            let wrap = "-Wl,--wrap=lua_call,--wrap=lua_pcall";
            for kind in ["bins", "tests", "benches", "examples"] {
                println!("cargo:rustc-link-arg-{kind}={wrap}");
            }
        }
    }
}
