//! The default `package.path` and `package.cpath` of the `luafiber` binary:
//! the engine's own (LuaJIT's or Lua 5.4's), then LuaRocks' user tree
//! (`~/.luarocks`) and Debian's directories (`/usr/share/lua/5.1`,
//! `/usr/lib/x86_64-linux-gnu/lua/5.1`, ...; 5.4 for the Lua 5.4 build).
//! `LUA_PATH` and `LUA_CPATH` (on Lua 5.4 `LUA_PATH_5_4` and
//! `LUA_CPATH_5_4` first) replace them as `lua` does: a `;;` in the
//! variable stands for the default.
//!
//! ```
//! let rt = luafiber::LuaRuntime::new().unwrap();
//! luafiber::paths::install(rt.lua()).unwrap();
//! let path: String = rt.lua().load("return package.path").eval().unwrap();
//! assert!(path.contains("/usr/share/lua/5."));
//! ```

/// The Lua version the search directories are named after.
#[cfg(not(feature = "lua54"))]
const VERSION: &str = "5.1";
/// The Lua version the search directories are named after.
#[cfg(feature = "lua54")]
const VERSION: &str = "5.4";

/// The engine's own defaults (`luaconf.h` of the vendored build).
#[cfg(not(feature = "lua54"))]
const ENGINE_PATH: &str = "./?.lua;/usr/local/share/luajit-2.1/?.lua;\
    /usr/local/share/lua/5.1/?.lua;/usr/local/share/lua/5.1/?/init.lua";
#[cfg(not(feature = "lua54"))]
const ENGINE_CPATH: &str = "./?.so;/usr/local/lib/lua/5.1/?.so;/usr/local/lib/lua/5.1/loadall.so";
#[cfg(feature = "lua54")]
const ENGINE_PATH: &str = "/usr/local/share/lua/5.4/?.lua;/usr/local/share/lua/5.4/?/init.lua;\
    /usr/local/lib/lua/5.4/?.lua;/usr/local/lib/lua/5.4/?/init.lua;./?.lua;./?/init.lua";
#[cfg(feature = "lua54")]
const ENGINE_CPATH: &str = "/usr/local/lib/lua/5.4/?.so;/usr/local/lib/lua/5.4/loadall.so;./?.so";

/// Debian's multiarch directory name, where there is one.
const MULTIARCH: Option<&str> = if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
    Some("x86_64-linux-gnu")
} else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
    Some("aarch64-linux-gnu")
} else {
    None
};

/// The default `package.path`: the engine's, then `home`'s LuaRocks tree
/// (when there is a home), then Debian's.
pub fn default_path(home: Option<&str>) -> String {
    let mut p = vec![ENGINE_PATH.to_owned()];
    if let Some(h) = home {
        p.push(format!("{h}/.luarocks/share/lua/{VERSION}/?.lua"));
        p.push(format!("{h}/.luarocks/share/lua/{VERSION}/?/init.lua"));
    }
    p.push(format!("/usr/share/lua/{VERSION}/?.lua"));
    p.push(format!("/usr/share/lua/{VERSION}/?/init.lua"));
    p.join(";")
}

/// The default `package.cpath`: as [`default_path`], for C modules.
pub fn default_cpath(home: Option<&str>) -> String {
    let mut p = vec![ENGINE_CPATH.to_owned()];
    if let Some(h) = home {
        p.push(format!("{h}/.luarocks/lib/lua/{VERSION}/?.so"));
    }
    if let Some(triplet) = MULTIARCH {
        p.push(format!("/usr/lib/{triplet}/lua/{VERSION}/?.so"));
    }
    p.push(format!("/usr/lib/lua/{VERSION}/?.so"));
    p.join(";")
}

/// The search path from the variable's value `var` and the default `def`,
/// as the engine's `package` library makes it: unset, the default; else the
/// value with `;;` replaced by `;def;` (LuaJIT: every `;;`; Lua 5.4: the
/// first, with no empty entry left around it).
pub fn resolve(var: Option<&str>, def: &str) -> String {
    let Some(var) = var else {
        return def.to_owned();
    };
    if cfg!(feature = "lua54") {
        let Some(at) = var.find(";;") else {
            return var.to_owned();
        };
        let (before, after) = (&var[..at], &var[at + 2..]);
        let mut out = String::new();
        if !before.is_empty() {
            out.push_str(before);
            out.push(';');
        }
        out.push_str(def);
        if !after.is_empty() {
            out.push(';');
            out.push_str(after);
        }
        out
    } else {
        var.replace(";;", &format!(";{def};"))
    }
}

/// The value of the first of `names` that is set.
fn env(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| std::env::var(n).ok())
}

/// Sets `package.path` and `package.cpath` of `lua` from the environment
/// and the defaults (see the module doc).
///
/// # Errors
///
/// When `package` is missing or not a table.
pub fn install(lua: &crate::mlua::Lua) -> crate::mlua::Result<()> {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    let (path_vars, cpath_vars): (&[&str], &[&str]) = if cfg!(feature = "lua54") {
        (
            &["LUA_PATH_5_4", "LUA_PATH"],
            &["LUA_CPATH_5_4", "LUA_CPATH"],
        )
    } else {
        (&["LUA_PATH"], &["LUA_CPATH"])
    };
    let path = resolve(env(path_vars).as_deref(), &default_path(home.as_deref()));
    let cpath = resolve(env(cpath_vars).as_deref(), &default_cpath(home.as_deref()));
    let package: crate::mlua::Table = lua.globals().get("package")?;
    package.set("path", path)?;
    package.set("cpath", cpath)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_is_the_default() {
        assert_eq!(resolve(None, "D"), "D");
    }

    #[test]
    fn set_without_double_semicolon_replaces() {
        assert_eq!(resolve(Some("/a/?.lua"), "D"), "/a/?.lua");
    }

    #[test]
    fn double_semicolon_is_the_default() {
        if cfg!(feature = "lua54") {
            assert_eq!(resolve(Some("/a/?.lua;;"), "D"), "/a/?.lua;D");
            assert_eq!(resolve(Some(";;/b/?.lua"), "D"), "D;/b/?.lua");
            assert_eq!(resolve(Some("/a;;/b;;"), "D"), "/a;D;/b;;");
        } else {
            assert_eq!(resolve(Some("/a/?.lua;;"), "D"), "/a/?.lua;D;");
            assert_eq!(resolve(Some("/a;;/b;;"), "D"), "/a;D;/b;D;");
        }
    }

    #[test]
    fn defaults_name_debian_and_luarocks() {
        let p = default_path(Some("/home/u"));
        assert!(p.starts_with(ENGINE_PATH));
        assert!(p.contains(&format!("/home/u/.luarocks/share/lua/{VERSION}/?.lua")));
        assert!(p.contains(&format!("/usr/share/lua/{VERSION}/?/init.lua")));
        let c = default_cpath(None);
        assert!(c.starts_with(ENGINE_CPATH));
        assert!(!c.contains(".luarocks"));
        assert!(c.contains(&format!("/usr/lib/lua/{VERSION}/?.so")));
    }
}
