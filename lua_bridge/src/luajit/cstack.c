/*
 * The C stack check LuaJIT lacks (luajit/cstack.rs): wrappers of lua_call
 * and lua_pcall for the linker's `--wrap` (the root package's build.rs
 * links the binary and the tests with `-Wl,--wrap=lua_call,--wrap=lua_pcall`),
 * so every call into Lua from C code linked with it (LuaJIT's libraries:
 * gsub callbacks, sort comparators, print, string.format's %s, require;
 * luaL_callmeta; the bridge) first asks whether the fiber's machine stack
 * still has a safe margin. Without one, lua_call raises "C stack overflow"
 * and lua_pcall returns it as a LUA_ERRRUN, as Lua 5.4 does past its C call
 * limit, instead of running into the fiber's stack guard.
 *
 * `__real_*` are weak: a program linked without `--wrap` (an embedder's)
 * never calls these wrappers, and still links.
 */
struct lua_State;
typedef struct lua_State lua_State;

#define LUA_ERRRUN 2

extern void __real_lua_call(lua_State *L, int nargs, int nresults) __attribute__((weak));
extern int __real_lua_pcall(lua_State *L, int nargs, int nresults, int errfunc)
	__attribute__((weak));

/* LuaJIT's C API (lua_pcall is the wrapper in a linked --wrap build). */
extern int lua_pcall(lua_State *L, int nargs, int nresults, int errfunc);
extern void lua_settop(lua_State *L, int idx);
extern void lua_pushstring(lua_State *L, const char *s);
extern int lua_error(lua_State *L);

/* luajit/cstack.rs: whether the running fiber's stack is below the margin. */
extern int luafiber_cstack_low(void);

static const char OVERFLOW[] = "C stack overflow";

/* Replaces the function and its arguments with the message. */
static void
replace_call(lua_State *L, int nargs)
{
	lua_settop(L, -nargs - 2);
	lua_pushstring(L, OVERFLOW);
}

void
__wrap_lua_call(lua_State *L, int nargs, int nresults)
{
	if (luafiber_cstack_low()) {
		replace_call(L, nargs);
		lua_error(L);
	}
	__real_lua_call(L, nargs, nresults);
}

int
__wrap_lua_pcall(lua_State *L, int nargs, int nresults, int errfunc)
{
	if (luafiber_cstack_low()) {
		replace_call(L, nargs);
		return LUA_ERRRUN;
	}
	return __real_lua_pcall(L, nargs, nresults, errfunc);
}

/*
 * lua_pcall without the check, for a call that starts at the top of a fresh
 * fiber stack (a fiber's body): the real one when the build is linked with
 * --wrap, else the only one there is.
 */
int
luafiber_pcall_unchecked(lua_State *L, int nargs, int nresults, int errfunc)
{
	if (__real_lua_pcall)
		return __real_lua_pcall(L, nargs, nresults, errfunc);
	return lua_pcall(L, nargs, nresults, errfunc);
}
