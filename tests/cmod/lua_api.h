/*
 * The few Lua C API functions the test modules call, declared here so the
 * tests need no Lua headers installed; -DLUA54 selects Lua 5.4's forms.
 * (A real module includes its engine's lua.h and lauxlib.h.)
 */
#ifndef lua_h
#define lua_h

#include <stddef.h>

typedef struct lua_State lua_State;
typedef int (*lua_CFunction)(lua_State *L);
typedef double lua_Number;
#ifdef LUA54
typedef long long lua_Integer;
#else
typedef ptrdiff_t lua_Integer;
#endif

int lua_gettop(lua_State *L);
void lua_settop(lua_State *L, int idx);
int lua_type(lua_State *L, int idx);
void lua_pushnil(lua_State *L);
void lua_pushnumber(lua_State *L, lua_Number n);
void lua_pushinteger(lua_State *L, lua_Integer n);
const char *lua_pushlstring(lua_State *L, const char *s, size_t len);
const char *lua_pushstring(lua_State *L, const char *s);
void lua_pushboolean(lua_State *L, int b);
void lua_pushcclosure(lua_State *L, lua_CFunction fn, int n);
void lua_createtable(lua_State *L, int narr, int nrec);
void lua_setfield(lua_State *L, int idx, const char *k);
const char *lua_tolstring(lua_State *L, int idx, size_t *len);
lua_Number luaL_checknumber(lua_State *L, int arg);
lua_Integer luaL_checkinteger(lua_State *L, int arg);
const char *luaL_checklstring(lua_State *L, int arg, size_t *l);
int luaL_error(lua_State *L, const char *fmt, ...);

#define lua_pushcfunction(L, f) lua_pushcclosure(L, (f), 0)

#endif
