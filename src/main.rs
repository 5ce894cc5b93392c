//! `luafiber script.lua [args...]`: runs a Lua script whose main chunk is a
//! fiber, with Tarantool's `fiber` and `clock` modules.

use std::process::ExitCode;

use clap::Parser;

/// Runs Lua scripts on luafiber: the main chunk is a fiber named after the
/// script; the process exits when no fiber is ready or sleeping.
#[derive(Parser)]
#[command(name = "luafiber", version = luafiber::VERSION_STRING, about)]
struct Cli {
    /// Run this chunk instead of a script (the main fiber is named "-e").
    #[arg(short = 'e', value_name = "CODE")]
    eval: Option<String>,
    /// The script to run.
    #[arg(value_name = "SCRIPT", required_unless_present = "eval")]
    script: Option<String>,
    /// Arguments for the script: `arg[1..]` and the chunk's `...`.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let interpreter = std::env::args().next().unwrap_or_else(|| "luafiber".into());
    let rt = match luafiber::LuaRuntime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("luafiber: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match (&cli.eval, &cli.script) {
        (Some(code), _) => rt.run_chunk(code, "-e"),
        (None, Some(script)) => rt.run_script(script, &cli.args, &interpreter),
        (None, None) => unreachable!("clap requires a script or -e"),
    };
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
