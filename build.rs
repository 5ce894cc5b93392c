//! The `luafiber` binary exports the Lua C API and luafiber's C module API
//! (`include/luafiber.dynlist`), so the C modules it loads with `require`
//! (and `ffi.C`) find them, as in `luajit`, `lua` and `tarantool`.

fn main() {
    println!("cargo:rerun-if-changed=include/luafiber.dynlist");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if os == "macos" || os == "ios" {
        // Mach-O has no dynamic list: export every global symbol.
        println!("cargo:rustc-link-arg-bins=-Wl,-export_dynamic");
    } else if os != "windows" {
        println!("cargo:rustc-link-arg-bins=-Wl,--dynamic-list={dir}/include/luafiber.dynlist");
    }
}
