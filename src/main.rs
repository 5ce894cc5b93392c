//! `luafiber [-e CODE]... [SCRIPT [ARGS...]]`: runs Lua chunks and a script
//! in one main fiber, with Tarantool's `fiber`, `clock`, `buffer` and
//! `msgpack` modules. `require` also loads C modules: the binary exports
//! its engine's Lua C API and Tarantool's C module API (`build.rs`), and
//! searches Debian's and LuaRocks' directories (`luafiber::paths`).

use std::process::ExitCode;

use clap::Parser;

/// Runs Lua scripts on luafiber: the `-e` chunks, then the script, in one
/// main fiber named after the script; the process exits when no fiber is
/// ready or sleeping.
#[derive(Parser)]
#[command(name = "luafiber", version = luafiber::VERSION_STRING, about)]
struct Cli {
    /// Run CODE before the script, in the same fiber (repeatable: in order;
    /// `arg` is set, `...` is empty). Alone, the main fiber is named "-e".
    #[arg(short = 'e', value_name = "CODE")]
    eval: Vec<String>,
    /// The script (`-`: read from stdin), then its arguments: `arg[1..]`
    /// and the script's `...`. All after the script goes to it, `-e` too.
    #[arg(
        value_names = ["SCRIPT", "ARGS"],
        required_unless_present = "eval",
        trailing_var_arg = true
    )]
    script_and_args: Vec<String>,
}

fn main() -> ExitCode {
    // The C modules `require` loads call into the binary (build.rs).
    luafiber::capi::keep_exports();
    let cli = Cli::parse();
    let interpreter = std::env::args().next().unwrap_or_else(|| "luafiber".into());
    let rt = match luafiber::LuaRuntime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("luafiber: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = luafiber::paths::install(rt.lua()) {
        eprintln!("luafiber: package paths: {e}");
    }
    let (script, args) = match cli.script_and_args.split_first() {
        Some((script, args)) => (Some(script.as_str()), args),
        None => (None, &[][..]),
    };
    let result = rt.run_main(&cli.eval, script, args, &interpreter);
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luafiber: {e}");
            ExitCode::FAILURE
        }
    };
    luafiber::flush_stdio();
    // Fibers still blocked stay suspended: exit without unwinding them.
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 })
}
