//! `luafiber [-e CODE]... [-i] [SCRIPT [ARGS...]]`: runs Lua chunks and a
//! script in one main fiber, with Tarantool's `fiber`, `clock`, `buffer`,
//! `msgpack`, `json` and `log` modules; with no script on a terminal (or
//! with `-i`), an interactive console (`console`). `require` also loads C modules: the binary exports
//! its engine's Lua C API and Tarantool's C module API (`build.rs`), and
//! searches Debian's and LuaRocks' directories (`luafiber::paths`).

mod console;
mod shutdown;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

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
    /// Open the interactive console after the `-e` chunks and the script
    /// (as `lua -i`); without a script it is the default on a terminal.
    #[arg(short = 'i')]
    interactive: bool,
    /// Start a thread group of `experimental.threads` before anything runs
    /// (repeatable, in order): `threads.cfg({groups = {{name = NAME, size
    /// = SIZE}, ...}})`.
    #[arg(long = "threads", value_name = "NAME=SIZE", value_parser = parse_group)]
    threads: Vec<(String, i64)>,
    /// The script (`-`: read from stdin; the default when stdin is not a
    /// terminal), then its arguments: `arg[1..]` and the script's `...`.
    /// All after the script goes to it, `-e` and `-i` too.
    #[arg(value_names = ["SCRIPT", "ARGS"], trailing_var_arg = true)]
    script_and_args: Vec<String>,
}

/// The subscriber that writes Lua's `log` lines (and Rust's warnings) as
/// Tarantool's log lines. `LUAFIBER_LOG` is its filter: one level name
/// (Tarantool's or `tracing`'s, which is also `log.cfg.level` at start)
/// lets every Lua line through and Rust's events from that level; other
/// values are `EnvFilter` directives. By default `lua::log=debug,warn`:
/// the lines `log.cfg` lets through, the runtime's warnings and errors.
fn install_logging() {
    let directives = match std::env::var("LUAFIBER_LOG") {
        Err(_) => "lua::log=debug,warn".to_string(),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "fatal" | "syserror" | "error" | "crit" => "lua::log=debug,error".into(),
            "warn" => "lua::log=debug,warn".into(),
            "info" => "lua::log=debug,info".into(),
            "verbose" | "debug" => "lua::log=debug,debug".into(),
            "trace" => "trace".into(),
            _ => v,
        },
    };
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("luafiber: LUAFIBER_LOG: {e}");
        EnvFilter::new("lua::log=debug,warn")
    });
    let _ = tracing_subscriber::registry()
        .with(luafiber::log::TarantoolLayer.with_filter(filter))
        .try_init();
}

/// Runs `box.ctl.on_shutdown`'s triggers (once: `os.exit` runs them
/// too) before the process exits at the end of the script; a failure is
/// reported and changes nothing.
fn run_on_shutdown(rt: &luafiber::LuaRuntime) {
    let code = "local run = box and rawget(box, 'internal') and box.internal.run_on_shutdown
                if run then run() end";
    if let Err(e) = rt.eval(code, vec![]) {
        eprintln!("luafiber: box.ctl.on_shutdown: {e}");
    }
}

/// A `--threads` value: `NAME=SIZE`, a name that is not empty and a
/// positive size (what else `threads.cfg` refuses, it says in
/// [`start_threads`]).
fn parse_group(s: &str) -> Result<(String, i64), String> {
    let (name, size) = s
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=SIZE, got {s:?}"))?;
    if name.is_empty() {
        return Err(format!("the group name is empty in {s:?}"));
    }
    let size: i64 = size
        .parse()
        .map_err(|_| format!("the size of group {name:?} must be an integer, got {size:?}"))?;
    if size < 1 {
        return Err(format!(
            "the size of group {name:?} must be at least 1, got {size}"
        ));
    }
    Ok((name.to_string(), size))
}

/// How starting the `--threads` groups failed.
enum ThreadsError {
    /// `threads.cfg` refused the groups (a duplicate or reserved name, too
    /// many threads): its message, for a usage error.
    Refused(String),
    /// Something else went wrong.
    Failed(String),
}

/// Starts the `--threads` groups (`threads.cfg`, whose errors end the
/// process).
fn start_threads(rt: &luafiber::LuaRuntime, groups: &[(String, i64)]) -> Result<(), ThreadsError> {
    if groups.is_empty() {
        return Ok(());
    }
    let args = groups
        .iter()
        .flat_map(|(name, size)| [name.as_str().into(), (*size).into()])
        .collect();
    // The refusal's message alone: a traceback of this chunk would tell
    // the user nothing.
    let code = "local groups = {} \
        for i = 1, select('#', ...), 2 do \
            table.insert(groups, {name = select(i, ...), size = select(i + 1, ...)}) \
        end \
        local ok, err = pcall(require('experimental.threads').cfg, {groups = groups}) \
        if not ok then return tostring(err) end";
    match rt.eval(code, args) {
        Ok(r) => match r.first().and_then(luafiber::Value::as_str) {
            Some(msg) => Err(ThreadsError::Refused(msg.to_owned())),
            None => Ok(()),
        },
        Err(e) => Err(ThreadsError::Failed(format!("--threads: {e}"))),
    }
}

fn main() -> ExitCode {
    // The C modules `require` loads call into the binary (build.rs).
    luafiber::capi::keep_exports();
    let cli = Cli::parse();
    install_logging();
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
    match start_threads(&rt, &cli.threads) {
        Ok(()) => {}
        Err(ThreadsError::Refused(msg)) => {
            // As clap reports a bad value: one line and status 2.
            Cli::command()
                .error(
                    clap::error::ErrorKind::ValueValidation,
                    format!("invalid value for '--threads <NAME=SIZE>': {msg}"),
                )
                .exit();
        }
        Err(ThreadsError::Failed(e)) => {
            eprintln!("luafiber: {e}");
            return ExitCode::FAILURE;
        }
    }
    let (mut script, args) = match cli.script_and_args.split_first() {
        Some((script, args)) => (Some(script.as_str()), args),
        None => (None, &[][..]),
    };
    let mut chunks = cli.eval;
    // Tarantool's choice: a console on a terminal, else a script on stdin.
    let console = cli.interactive
        || (script.is_none() && chunks.is_empty() && std::io::stdin().is_terminal());
    if script.is_none() && chunks.is_empty() && !console {
        script = Some("-");
    }
    if console {
        if let Err(e) = console::install(&rt) {
            eprintln!("luafiber: {e}");
            return ExitCode::FAILURE;
        }
        if script.is_some() {
            chunks.push(console::after_main_chunk());
        } else if !chunks.is_empty() {
            chunks.push(console::chunk());
        }
    }
    let result = if console && script.is_none() && chunks.is_empty() {
        rt.run_chunk(&console::chunk(), "interactive")
    } else {
        // SIGTERM (and SIGINT without a console) shut down gracefully.
        if let Err(e) = shutdown::install(&rt, !console) {
            eprintln!("luafiber: {e}");
        } else {
            chunks.insert(0, shutdown::chunk());
        }
        rt.run_main(&chunks, script, args, &interpreter)
    };
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("luafiber: {e}");
            ExitCode::FAILURE
        }
    };
    run_on_shutdown(&rt);
    luafiber::flush_stdio();
    // Fibers still blocked stay suspended: exit without unwinding them.
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 })
}
