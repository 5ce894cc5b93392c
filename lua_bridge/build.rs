//! Compiles the C half of the C module API (`src/capi/shim.c`): the
//! variadic `fiber_start` and the call of a `fiber_func`, which take C's
//! `...` and `va_list`; and, on LuaJIT, the wrappers of `lua_call` and
//! `lua_pcall` that check the fiber's C stack (`src/luajit/cstack.c`), with
//! which this crate's own tests are linked (`--wrap`).

fn main() {
    println!("cargo:rerun-if-changed=src/capi/shim.c");
    cc::Build::new()
        .file("src/capi/shim.c")
        .warnings(true)
        .compile("luafiber_capi");
    if std::env::var_os("CARGO_FEATURE_LUAJIT").is_some() {
        println!("cargo:rerun-if-changed=src/luajit/cstack.c");
        cc::Build::new()
            .file("src/luajit/cstack.c")
            .warnings(true)
            // LuaJIT's errors unwind through the wrappers' frames.
            .flag("-funwind-tables")
            .compile("luafiber_cstack");
        let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
        if os != "macos" && os != "ios" && os != "windows" {
            // The crate's only linked targets are its unit tests.
            println!("cargo:rustc-link-arg=-Wl,--wrap=lua_call,--wrap=lua_pcall");
        }
    }
}
