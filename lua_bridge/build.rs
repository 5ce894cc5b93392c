//! Compiles the C half of the C module API (`src/capi/shim.c`): the
//! variadic `fiber_start` and the call of a `fiber_func`, which take C's
//! `...` and `va_list`.

fn main() {
    println!("cargo:rerun-if-changed=src/capi/shim.c");
    cc::Build::new()
        .file("src/capi/shim.c")
        .warnings(true)
        .compile("luafiber_capi");
}
