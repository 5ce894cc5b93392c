//! The Lua `fio` module: calls run on the blocking pool while the other
//! fibers go on, errors are `nil, err` with `errno()` set, argument errors
//! are strings, a handle collected while open closes its fd, a cancel
//! during a call. Each test works in a directory of its own under the
//! system's temporary directory, removed at the end.

use luafiber::LuaRuntime;

const PRELUDE: &str = r#"
local fio = require('fio')
local fiber = require('fiber')
local errno = require('errno')
local function eq(got, want, what)
    if got ~= want then
        error(('%s: got %s, want %s'):format(what, tostring(got), tostring(want)), 2)
    end
end
local dir = assert(fio.tempdir())
"#;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    let chunk = format!(
        "{PRELUDE}\nlocal ok, err = pcall(function()\n{code}\nend)\n\
         fio.rmtree(dir)\n\
         if not ok then error(err, 0) end"
    );
    if let Err(e) = rt.run_chunk(&chunk, "lua_fio") {
        panic!("{e}");
    }
}

#[test]
fn other_fibers_run_while_a_call_waits_on_the_pool() {
    run(r#"
        local ticks, done = 0, false
        local ticker = fiber.new(function()
            while not done and ticks < 1e7 do ticks = ticks + 1; fiber.yield() end
        end)
        ticker:set_joinable(true)
        fiber.yield()
        local before = ticks
        local fh = assert(fio.open(fio.pathjoin(dir, 'f'), {'O_RDWR', 'O_CREAT'}))
        -- Each of these parks the main fiber until a pool thread is done:
        -- the ticker runs meanwhile.
        assert(fh:write(string.rep('x', 1024 * 1024)))
        eq(fh:seek(0), 0, 'seek')
        eq(#fh:read(), 1024 * 1024, 'read back')
        assert(ticks > before, 'the ticker ran while the calls waited')
        done = true
        ticker:join()
        assert(fh:close())
    "#);
}

#[test]
fn failures_give_nil_and_a_system_error_with_errno_set() {
    run(r#"
        local st, err = fio.stat(fio.pathjoin(dir, 'none'))
        eq(st, nil, 'stat')
        eq(tostring(err), 'fio: No such file or directory', 'message')
        eq(err.type, 'SystemError', 'type')
        eq(errno(), errno.ENOENT, 'errno')
        local ok, e2 = fio.unlink(fio.pathjoin(dir, 'none'))
        eq(ok, false, 'unlink')
        eq(tostring(e2), 'fio: No such file or directory', 'unlink message')
        local fh = assert(fio.open(fio.pathjoin(dir, 'f'), {'O_WRONLY', 'O_CREAT'}))
        assert(fh:close())
        local closed, e3 = fh:close()
        eq(closed, false, 'close twice')
        eq(tostring(e3), 'fio: Bad file descriptor', 'close twice message')
        eq(errno(), errno.EBADF, 'EBADF')
        eq(fh.fh, -1, 'fd of a closed handle')
    "#);
}

#[test]
fn argument_errors_are_strings() {
    run(r#"
        local ok, err = pcall(fio.link, nil, nil)
        eq(ok, false, 'link')
        eq(err, 'Usage: fio.link(target, linkpath)', 'C half')
        ok, err = pcall(fio.open, nil)
        eq(type(err), 'string', 'Lua half')
        assert(err:find('^builtin/fio%.lua:%d+: Usage: fio%.open'), err)
        ok, err = pcall(fio.pathjoin, 'a', nil)
        eq(err, 'fio.pathjoin(): undefined path part 2', 'pathjoin')
    "#);
}

#[test]
fn paths_and_tree_functions() {
    run(r#"
        eq(fio.pathjoin('a/', '/b', '', 'c//'), 'a/b/c', 'pathjoin')
        eq(fio.basename('/x/y.lua', '.lua'), 'y', 'basename')
        eq(fio.dirname('/x/y/'), '/x', 'dirname')
        eq(fio.abspath('/a/./b/../c'), '/a/c', 'abspath')
        local deep = fio.pathjoin(dir, 'a', 'b', 'c')
        assert(fio.mktree(deep))
        assert(fio.path.is_dir(deep))
        local fh = assert(fio.open(fio.pathjoin(deep, 'f'), {'O_WRONLY', 'O_CREAT'}, tonumber('600', 8)))
        assert(fh:write('data'))
        assert(fh:close())
        assert(fio.symlink(fio.pathjoin(deep, 'f'), fio.pathjoin(dir, 'link')))
        eq(fio.readlink(fio.pathjoin(dir, 'link')), fio.pathjoin(deep, 'f'), 'readlink')
        assert(fio.path.is_link(fio.pathjoin(dir, 'link')))
        assert(fio.copytree(fio.pathjoin(dir, 'a'), fio.pathjoin(dir, 'copy')))
        eq(fio.stat(fio.pathjoin(dir, 'copy', 'b', 'c', 'f')).size, 4, 'copied')
        eq(#fio.glob(fio.pathjoin(dir, '*')), 3, 'glob')
        local names = fio.listdir(dir)
        table.sort(names)
        eq(table.concat(names, ','), 'a,copy,link', 'listdir')
        assert(fio.rmtree(fio.pathjoin(dir, 'a')))
        eq(fio.path.exists(fio.pathjoin(dir, 'a')), false, 'removed')
        eq(fio.path.lexists(fio.pathjoin(dir, 'link')), true, 'a dangling link is there')
        eq(fio.path.exists(fio.pathjoin(dir, 'link')), false, 'its target is not')
    "#);
}

#[test]
fn a_handle_collected_while_open_closes_its_fd() {
    run(r#"
        local path = fio.pathjoin(dir, 'f')
        local fh = assert(fio.open(path, {'O_RDWR', 'O_CREAT'}))
        local fd = fh.fh
        fh = nil
        collectgarbage('collect')
        collectgarbage('collect')
        -- The number is closed, or open on something else (tests run in
        -- parallel threads of one process, which may have taken it).
        local target = fio.readlink('/proc/self/fd/' .. fd)
        assert(target ~= path, 'the collected handle\'s fd is still open')
    "#);
}

#[test]
fn a_cancelled_fiber_gets_fiber_is_cancelled() {
    run(r#"
        local path = fio.pathjoin(dir, 'f')
        local fh = assert(fio.open(path, {'O_RDWR', 'O_CREAT'}))
        local f = fiber.new(function()
            while true do fh:write(string.rep('y', 65536)) end
        end)
        f:set_joinable(true)
        fiber.yield()
        f:cancel()
        local ok, err = f:join()
        eq(ok, false, 'join')
        eq(err.type, 'FiberIsCancelled', 'error')
        assert(fh:close())
    "#);
}
