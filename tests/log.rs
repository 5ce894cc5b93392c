//! The `log` module: Lua's lines reach an embedder's own `tracing`
//! subscriber with their fields; the binary writes them as Tarantool's log
//! lines, to stderr or to a file, plain or JSON.

use std::process::Command;
use std::sync::{Arc, Mutex};

use luafiber::LuaRuntime;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One event as a test layer saw it: target, level and fields.
#[derive(Debug, Default, Clone)]
struct Seen {
    target: String,
    level: String,
    fields: Vec<(String, String)>,
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.fields
            .push((field.name().into(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields.push((field.name().into(), value.into()));
    }
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Collect(Arc<Mutex<Vec<Seen>>>);

impl<S: tracing::Subscriber> Layer<S> for Collect {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut seen = Seen {
            target: event.metadata().target().into(),
            level: event.metadata().level().to_string(),
            ..Seen::default()
        };
        event.record(&mut seen);
        self.0.lock().unwrap().push(seen);
    }
}

#[test]
fn an_embedders_subscriber_sees_lua_log_lines() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Collect(events.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = LuaRuntime::new().unwrap();
    rt.run_chunk(
        r#"
        local log = require('log')
        log.info('hello %s', 'world')
        require('fiber').create(function() log.warn({a = 1}) end)
        log.new('mymod').error('from a module')
        log.debug('not at the default level')
        log.cfg{level = 'debug'}
        log.debug('now shown')
        "#,
        "app",
    )
    .unwrap();
    let lua: Vec<Seen> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.target == "lua::log")
        .cloned()
        .collect();
    let messages: Vec<&str> = lua.iter().filter_map(|e| e.field("message")).collect();
    assert_eq!(
        messages,
        [
            "hello world",
            "{\"a\":1}",
            "from a module",
            "log.cfg({log=nil, level=debug, nonblock=nil, format=plain})",
            "now shown"
        ],
        "{lua:#?}"
    );
    assert_eq!(lua[0].level, "INFO");
    assert_eq!(lua[0].field("fiber_name"), Some("app"));
    assert_eq!(lua[0].field("tarantool_level"), Some("5"));
    assert_eq!(lua[0].field("line"), Some("3"));
    assert_eq!(lua[1].level, "WARN");
    // The fiber logs at once (fiber.create runs it), before it is renamed.
    assert_eq!(lua[1].field("fiber_name"), Some("lua"));
    assert_eq!(lua[2].level, "ERROR");
    assert_eq!(lua[2].field("module"), Some("mymod"));
    assert_eq!(lua[4].level, "DEBUG");
    assert_eq!(lua[4].field("tarantool_level"), Some("7"));
}

fn luafiber(args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_luafiber"));
    cmd.args(args).env_remove("LUAFIBER_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Checks a plain line: `YYYY-MM-DD hh:mm:ss.mmm [PID] ` then `rest`.
fn assert_plain(line: &str, rest: &str) {
    let b = line.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.clone().all(|i| b[i].is_ascii_digit());
    assert!(
        line.len() > 24
            && digits(0..4)
            && b[4] == b'-'
            && b[10] == b' '
            && b[13] == b':'
            && b[19] == b'.'
            && digits(20..23)
            && b[23] == b' '
            && b[24] == b'[',
        "{line}"
    );
    let after_pid = line.find("] ").map(|i| &line[i + 2..]);
    assert_eq!(after_pid, Some(rest), "{line}");
}

#[test]
fn the_binary_writes_tarantools_plain_lines_to_stderr() {
    let (_, err) = luafiber(
        &[
            "-e",
            "local log = require('log') log.info('one %d', 1) require('fiber').create(function() log.error('two') end)",
        ],
        &[],
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_plain(lines[0], "main/101/-e (command line):1 I> one 1");
    assert_plain(lines[1], "main/103/lua (command line):1 E> two");
}

#[test]
fn log_cfg_writes_json_lines_to_a_file() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("log-cfg.log");
    let _ = std::fs::remove_file(&path);
    let code = format!(
        "local log = require('log') log.cfg{{log = '{}', format = 'json'}} \
         log.info('quote \" here') log.warn({{message = 'm', x = 1}})",
        path.display()
    );
    let (_, err) = luafiber(&["-e", &code], &[]);
    assert_eq!(err, "");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("{\"time\": \""), "{text}");
    assert!(
        lines[0].contains(r#""level": "INFO", "message": "quote \" here", "pid": "#),
        "{text}"
    );
    assert!(
        lines[0].ends_with(r#""cord_name": "main", "fiber_id": 101, "fiber_name": "-e", "file": "(command line)", "line": 1}"#),
        "{text}"
    );
    assert!(lines[1].contains(r#""level": "WARN", "#), "{text}");
    assert!(
        lines[1].contains(r#""message":"m""#) && lines[1].contains(r#""x":1"#),
        "{text}"
    );
}

#[test]
fn luafiber_log_filters_and_sets_the_initial_level() {
    let code = "local log = require('log') log.debug('dbg') log.info('inf')";
    let (_, err) = luafiber(&["-e", code], &[("LUAFIBER_LOG", "debug")]);
    // The runtime's own debug lines (start-up facts) come too: count the
    // script's.
    let script = err.lines().filter(|l| l.contains("(command line)"));
    assert_eq!(script.count(), 2, "{err}");
    assert!(err.contains(" D> dbg") && err.contains(" I> inf"), "{err}");
    let (_, err) = luafiber(&["-e", code], &[("LUAFIBER_LOG", "lua::log=off")]);
    assert_eq!(err, "");
}

/// Issue 13, item 4: a fiber's name is bytes, and a log line has them as
/// they are, in the plain and the JSON format (as Tarantool writes them);
/// an embedder's `tracing` subscriber sees them as text, `\xNN` for a byte
/// that is not UTF-8.
#[test]
fn log_lines_name_the_fiber_by_its_bytes() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("log-name-bytes.log");
    let _ = std::fs::remove_file(&path);
    let code = format!(
        "local log = require('log') log.cfg{{log = {:?}}} \
         require('fiber').name('\\255ab') log.info('plain') \
         log.cfg{{format = 'json'}} log.info('json')",
        path.to_str().unwrap()
    );
    luafiber(&["-e", &code], &[]);
    let text = std::fs::read(&path).unwrap();
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 2, "{}", String::from_utf8_lossy(&text));
    let has = |line: &[u8], want: &[u8]| line.windows(want.len()).any(|w| w == want);
    assert!(
        has(lines[0], b"main/101/\xffab (command line):1 I> plain"),
        "{:?}",
        lines[0]
    );
    assert!(
        has(lines[1], b"\"fiber_name\": \"\xffab\""),
        "{:?}",
        lines[1]
    );

    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Collect(events.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = LuaRuntime::new().unwrap();
    rt.eval(
        "require('fiber').name('\\255ab') require('log').info('traced')",
        vec![],
    )
    .unwrap();
    let events = events.lock().unwrap();
    let traced = events
        .iter()
        .find(|e| e.field("message") == Some("traced"))
        .expect("the line reached the subscriber");
    assert_eq!(traced.field("fiber_name"), Some("\\xffab"));
}

/// Issue 29: `log.level()` with no level raises master's error (Tarantool
/// 2.6: "must be a number or a string") and keeps the level: later log
/// calls work (they raised "attempt to compare nil with number").
#[test]
fn log_level_without_a_level_raises_and_keeps_the_level() {
    let code = "local log = require('log') \
                local ok, err = pcall(log.level) \
                print(ok, tostring(err)) \
                log.info('still') log.debug('hidden') \
                log.level('debug') log.debug('shown')";
    let (out, err) = luafiber(&["-e", code], &[]);
    assert_eq!(
        out,
        "false\tIncorrect value for option 'level': should be one of types number, string\n"
    );
    assert!(err.contains(" I> still"), "{err}");
    assert!(!err.contains("hidden"), "{err}");
    assert!(err.contains(" D> shown"), "{err}");
}

#[test]
fn an_error_object_is_logged_as_its_message() {
    // master's say(): a box.error is a cdata, written with tostring; a
    // plain table is JSON.
    let (_, err) = luafiber(
        &[
            "-e",
            "local log = require('log') log.error(box.error.new{code = 5, reason = 'the reason'}) log.info({a = 1}) log.warn('%s!', box.error.new{reason = 'r'})",
        ],
        &[],
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert_plain(lines[0], "main/101/-e (command line):1 E> the reason");
    assert_plain(lines[1], "main/101/-e (command line):1 I> {\"a\":1}");
    assert_plain(lines[2], "main/101/-e (command line):1 W> r!");
}

#[test]
fn luafibers_own_lines_follow_the_log_level() {
    // Tarantool's own messages follow log_level as Lua's do: a failed
    // on_connect trigger's warning (the server's, in Rust) is not written
    // at level 2 (error), and is at 4 (warn).
    let (_, err) = luafiber(
        &[
            "-e",
            r#"
            local net = require('net.box')
            box.cfg{listen = '127.0.0.1:0', log_level = 2}
            box.session.on_connect(function() error('no entry') end)
            net.connect(box.info.listen):close()
            io.stderr:write('MARK\n')
            require('log').cfg{level = 4}
            net.connect(box.info.listen):close()
            os.exit(0)
            "#,
        ],
        &[],
    );
    let (before, after) = err.split_once("MARK\n").expect(&err);
    assert!(!before.contains("W>"), "{err}");
    assert!(
        after.contains("W>") && after.contains("on_connect"),
        "{err}"
    );
}
