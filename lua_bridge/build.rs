//! Compiles the C half of the C module API (`src/capi/shim.c`): the
//! variadic `fiber_start` and the call of a `fiber_func`, which take C's
//! `...` and `va_list`; on LuaJIT, the wrappers of `lua_call` and
//! `lua_pcall` that check the fiber's C stack (`src/luajit/cstack.c`), with
//! which this crate's own tests are linked (`--wrap`); and tells the crate
//! whether the vendored Lua engine is built with `-fstack-clash-protection`
//! (`STACK_CLASH_PROTECTION`).

/// Whether the C flags the `cc` crate gives every C build of this cargo
/// run, the vendored Lua engine's included (mlua's build script compiles it
/// through `cc` too), turn on `-fstack-clash-protection`: the first of the
/// variables `cc` reads that is set, the last of the flag's forms in it.
fn stack_clash_protection() -> bool {
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let kind = if target == host {
        "HOST_CFLAGS"
    } else {
        "TARGET_CFLAGS"
    };
    let keys = [
        format!("CFLAGS_{target}"),
        format!("CFLAGS_{}", target.replace('-', "_")),
        kind.to_owned(),
        "CFLAGS".to_owned(),
    ];
    for k in &keys {
        println!("cargo:rerun-if-env-changed={k}");
    }
    let Some(flags) = keys.iter().find_map(|k| std::env::var(k).ok()) else {
        return false;
    };
    flags
        .split_whitespace()
        .rev()
        .find_map(|f| match f {
            "-fstack-clash-protection" => Some(true),
            "-fno-stack-clash-protection" => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

fn main() {
    println!(
        "cargo:rustc-env=LUAFIBER_STACK_CLASH_PROTECTION={}",
        u8::from(stack_clash_protection())
    );
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
