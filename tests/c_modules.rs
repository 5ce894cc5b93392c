//! C modules load with `require`: the binary exports its engine's Lua C
//! API, so a module built for Lua 5.1/LuaJIT (or Lua 5.4, in the Lua 5.4
//! build) finds it; the default search paths name Debian's and LuaRocks'
//! directories; `LUA_PATH`/`LUA_CPATH` work as in `lua`.

#[path = "support/cmod.rs"]
mod cmod;
#[path = "../fiber/tests/support/skip.rs"]
mod skip;

use std::path::Path;
use std::process::Command;

use cmod::{assert_prints, luafiber, LUA_VERSION, MULTIARCH};

#[test]
fn a_c_module_built_now_loads() {
    let dir = cmod::build("tiny");
    assert_prints(
        &dir,
        "local tiny = require('tiny')
         print(tiny.add(2, 40))
         print(tiny.greet('fiber'))
         print(pcall(tiny.greet, string.rep('x', 65)))",
        "42\nhello, \tfiber\t!\nfalse\tname too long: 65 bytes\n",
    );
}

#[test]
fn a_c_module_runs_in_fibers() {
    let dir = cmod::build("tiny");
    assert_prints(
        &dir,
        "local fiber, tiny = require('fiber'), require('tiny')
         local sums = {}
         for i = 1, 3 do
             fiber.create(function()
                 fiber.sleep(0.001 * i)
                 table.insert(sums, tiny.add(i, 100))
             end)
         end
         fiber.sleep(0.01)
         print(table.concat(sums, ' '))",
        "101 102 103\n",
    );
}

/// What an embedder does (docs/c-modules.md): this test
/// binary links with the dynamic symbol list (`build.rs`), keeps the C API
/// in the link, and its runtime loads a C module, also one that uses the
/// C module API.
#[test]
fn an_embedded_runtime_loads_c_modules() {
    luafiber::capi::keep_exports();
    let (tiny, fibers) = (cmod::build("tiny"), cmod::build("fibers"));
    let rt = luafiber::LuaRuntime::new().unwrap();
    luafiber::paths::install(rt.lua()).unwrap();
    prepend_cpath(&rt, &[&tiny, &fibers]);
    let got = rt
        .eval(
            "local tiny, f = require('tiny'), require('fibers')
             local log, sum = f.run(2)
             return tiny.add(40, 2), log, sum",
            vec![],
        )
        .unwrap();
    let want: Vec<luafiber::Value> = vec![
        42.into(),
        "start1 start2 main0 slept1 slept2 broadcast0 woke1 woke2 ".into(),
        30.into(),
    ];
    assert_eq!(got, want);
}

#[test]
fn lua_code_a_c_module_calls_keeps_the_memory_limit() {
    // luaT_call runs its function with the limit in force (the C API's own
    // allocations are exempt, as a bridge body's): past it, the function
    // fails with "not enough memory", which luaT_error raises again.
    luafiber::capi::keep_exports();
    let fibers = cmod::build("fibers");
    let rt = luafiber::LuaRuntime::builder()
        .memory_limit(8 << 20)
        .build()
        .unwrap();
    prepend_cpath(&rt, &[&fibers]);
    let got = rt
        .eval(
            "local f = require('fibers')
             local ok, e = pcall(f.call, function()
                 local t = {}
                 for i = 1, 2e6 do t[i] = {i} end
             end)
             collectgarbage()
             return ok, tostring(e.message):find('memory') ~= nil",
            vec![],
        )
        .unwrap();
    assert_eq!(got, vec![false.into(), true.into()]);
}

/// Puts `dirs` (their `?.so`) first in the runtime's `package.cpath`.
fn prepend_cpath(rt: &luafiber::LuaRuntime, dirs: &[&Path]) {
    let cpath: String = dirs
        .iter()
        .map(|d| format!("{}/?.so;", d.display()))
        .collect();
    rt.lua()
        .load(format!("package.cpath = {cpath:?} .. package.cpath"))
        .exec()
        .unwrap();
}

#[test]
fn debian_lua_cjson_loads_with_the_default_paths() {
    let so = format!("/usr/lib/{MULTIARCH}/lua/{LUA_VERSION}/cjson.so");
    if !Path::new(&so).exists() {
        skip::skipped(&format!("{so} is not there (apt-get install lua-cjson)"));
        return;
    }
    let run = luafiber(
        r#"local cjson = require('cjson')
           print(cjson.encode({list = {1, 2, 3}}))
           local t = cjson.decode('{"a": [true, null, "x"]}')
           print(t.a[1], t.a[2] == cjson.null, t.a[3])
           print(package.searchpath('cjson', package.cpath))"#,
        &[],
    );
    assert_eq!(
        run.stdout,
        format!("{{\"list\":[1,2,3]}}\ntrue\ttrue\tx\n{so}\n"),
        "stderr: {}",
        run.stderr
    );
    assert_eq!(run.status, 0);
}

#[test]
fn default_paths_name_debian_and_luarocks() {
    let run = luafiber(
        "print(package.path) print(package.cpath)",
        &[("HOME", "/home/someone")],
    );
    let v = LUA_VERSION;
    for dir in [
        format!("/usr/share/lua/{v}/?.lua;"),
        format!("/usr/share/lua/{v}/?/init.lua"),
        format!("/usr/local/share/lua/{v}/?.lua;"),
        format!("/home/someone/.luarocks/share/lua/{v}/?.lua;"),
        format!("/usr/lib/{MULTIARCH}/lua/{v}/?.so;"),
        format!("/usr/local/lib/lua/{v}/?.so;"),
        format!("/home/someone/.luarocks/lib/lua/{v}/?.so;"),
    ] {
        assert!(run.stdout.contains(&dir), "{dir} not in {}", run.stdout);
    }
}

#[test]
fn lua_path_and_cpath_are_honoured_as_lua_honours_them() {
    let run = luafiber(
        "print(package.path) print(package.cpath)",
        &[("LUA_PATH", "/first/?.lua;;"), ("LUA_CPATH", "/only/?.so")],
    );
    let (path, cpath) = run.stdout.split_once('\n').unwrap();
    assert!(path.starts_with("/first/?.lua;"), "{path}");
    assert!(
        path.contains(&format!("/usr/share/lua/{LUA_VERSION}/?.lua")),
        "{path}"
    );
    assert_eq!(cpath, "/only/?.so\n");
    if cfg!(feature = "lua54") {
        // The versioned variable wins, as in `lua5.4`.
        let run = luafiber(
            "print(package.path)",
            &[
                ("LUA_PATH", "/plain/?.lua"),
                ("LUA_PATH_5_4", "/versioned/?.lua"),
            ],
        );
        assert_eq!(run.stdout, "/versioned/?.lua\n");
    }
}

/// Runs `luarocks ARGS` in `dir`; `None` (with the reason printed) when it
/// fails.
fn luarocks(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("luarocks")
        .current_dir(dir)
        .arg(format!("--lua-version={LUA_VERSION}"))
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "luarocks {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether LuaRocks finds the engine's headers (needed to build a C rock).
fn luarocks_has_headers(dir: &Path) -> bool {
    luarocks(dir, &["config", "variables.LUA_INCDIR"])
        .is_some_and(|inc| Path::new(&inc).join("lua.h").exists())
}

#[test]
fn a_local_rock_installed_by_luarocks_make_loads() {
    if Command::new("luarocks").arg("--version").output().is_err() {
        skip::skipped("luarocks is not installed (apt-get install luarocks)");
        return;
    }
    let dir = cmod::scratch("rock");
    let tree = dir.join("tree");
    let tree = tree.to_str().unwrap();
    std::fs::write(
        dir.join("lfrock.lua"),
        "return { hello = function() return 'hello from a rock' end }\n",
    )
    .unwrap();
    if !luarocks_has_headers(&dir) {
        // `luarocks make` refuses every rock then, C or not.
        skip::skipped(&format!(
            "LuaRocks finds no Lua {LUA_VERSION} headers (Debian: liblua{LUA_VERSION}-dev)"
        ));
        return;
    }
    std::fs::write(
        dir.join("lfrock_c.c"),
        "#include <lua.h>\n#include <lauxlib.h>\n\
         static int twice(lua_State *L) { lua_pushnumber(L, 2 * luaL_checknumber(L, 1)); return 1; }\n\
         int luaopen_lfrock_c(lua_State *L) { lua_createtable(L, 0, 1);\n\
         lua_pushcfunction(L, twice); lua_setfield(L, -2, \"twice\"); return 1; }\n",
    )
    .unwrap();
    let modules = "lfrock = 'lfrock.lua', lfrock_c = 'lfrock_c.c'";
    std::fs::write(
        dir.join("lfrock-0.1-1.rockspec"),
        format!(
            "package = 'lfrock'\nversion = '0.1-1'\nsource = {{ url = 'file:///dev/null' }}\n\
             description = {{ summary = 'a test rock' }}\n\
             build = {{ type = 'builtin', modules = {{ {modules} }} }}\n"
        ),
    )
    .unwrap();
    if luarocks(&dir, &["--tree", tree, "make", "lfrock-0.1-1.rockspec"]).is_none() {
        panic!("luarocks make failed (see above)");
    }
    // What docs/c-modules.md says: the tree's paths before the defaults.
    let path = luarocks(&dir, &["--tree", tree, "path", "--lr-path"]).unwrap();
    let cpath = luarocks(&dir, &["--tree", tree, "path", "--lr-cpath"]).unwrap();
    let (path, cpath) = (format!("{path};;"), format!("{cpath};;"));
    let code = "print(require('lfrock').hello(), require('lfrock_c').twice(21))";
    let vars = [
        ("LUA_PATH", path.as_str()),
        ("LUA_CPATH", cpath.as_str()),
        ("LUA_PATH_5_4", path.as_str()),
        ("LUA_CPATH_5_4", cpath.as_str()),
    ];
    let run = luafiber(code, &vars);
    assert_eq!(
        run.stdout, "hello from a rock\t42\n",
        "stderr: {}",
        run.stderr
    );
    assert_eq!(run.status, 0);
}
