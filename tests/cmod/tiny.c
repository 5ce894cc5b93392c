/* A tiny C module: what a Lua 5.1/LuaJIT or Lua 5.4 module does with the
 * Lua C API, loaded through the luafiber binary's exports. */
#include "lua_api.h"

static int
add(lua_State *L)
{
	lua_pushinteger(L, luaL_checkinteger(L, 1) + luaL_checkinteger(L, 2));
	return 1;
}

static int
greet(lua_State *L)
{
	size_t len;
	const char *who = luaL_checklstring(L, 1, &len);
	if (len > 64)
		return luaL_error(L, "name too long: %d bytes", (int)len);
	lua_pushstring(L, "hello, ");
	lua_pushlstring(L, who, len);
	lua_pushstring(L, "!");
	/* lua_concat would do; three values show the stack at work. */
	return 3;
}

int
luaopen_tiny(lua_State *L)
{
	lua_createtable(L, 0, 2);
	lua_pushcfunction(L, add);
	lua_setfield(L, -2, "add");
	lua_pushcfunction(L, greet);
	lua_setfield(L, -2, "greet");
	return 1;
}
