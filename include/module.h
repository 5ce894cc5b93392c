/*
 * luafiber's C module API: Tarantool's module.h for what luafiber has,
 * with Tarantool's names and signatures, so a C module written for
 * Tarantool's fibers builds and runs here (and its functions are reachable
 * through ffi.C). The luafiber binary exports every function declared here,
 * and the Lua C API of its engine (LuaJIT, or Lua 5.4 in the Lua 5.4
 * build).
 *
 * Build a module against it with the engine's headers, e.g. on Debian:
 *
 *     cc -shared -fPIC -I/usr/include/luajit-2.1 -I<luafiber>/include \
 *        -o mymod.so mymod.c
 *
 * and load it with require('mymod') (the module's luaopen_mymod), as in
 * Tarantool. What differs from Tarantool is said at each function; the Rust
 * docs of luafiber-lua's `capi` module say more.
 *
 * Not yet here: box_*, box_region_*, say_* and the cdata helpers luaL_pushcdata,
 * luaL_checkcdata, luaL_ctypeid, luaL_cdef, luaL_setcdatagc, luaT_toibuf.
 */
#ifndef LUAFIBER_MODULE_H_INCLUDED
#define LUAFIBER_MODULE_H_INCLUDED
#define TARANTOOL_MODULE_H_INCLUDED

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The Lua C API: the engine's lua.h when the include path has it (as
 * Tarantool's module.h includes it), else the two types used below. */
#if !defined(lua_h) && defined(__has_include)
#  if __has_include(<lua.h>)
#    include <lua.h>
#  endif
#endif
#ifndef lua_h
typedef struct lua_State lua_State;
typedef int (*lua_CFunction)(lua_State *L);
#endif

#if defined(__cplusplus)
extern "C" {
#endif

/* ---- Fibers (Tarantool's src/lib/core/fiber.h) ---------------------- */

/* A fiber: an opaque handle, never dereferenced (a stale one is refused,
 * not followed). */
struct fiber;

/* The function a fiber runs; its va_list holds the arguments given to
 * fiber_start(), valid until the fiber first yields. Its result is what
 * fiber_join() returns. */
typedef int (*fiber_func)(va_list);

/* Attributes of new fibers: their stack size. */
struct fiber_attr;

struct fiber_attr *fiber_attr_new(void);
void fiber_attr_delete(struct fiber_attr *fiber_attr);
/* 0, or -1 below 16 KiB. */
int fiber_attr_setstacksize(struct fiber_attr *fiber_attr, size_t stack_size);
/* NULL: the default stack size (512 KiB unless configured). */
size_t fiber_attr_getstacksize(struct fiber_attr *fiber_attr);

/* The current fiber; NULL outside any fiber. */
struct fiber *fiber_self(void);

/* A new fiber that runs f once started by fiber_start() (or, with no
 * arguments, by fiber_wakeup()). NULL when f is NULL. Its id is given when
 * it starts. */
struct fiber *fiber_new(const char *name, fiber_func f);
/* fiber_new() with the stack size of fiber_attr (NULL: the default). */
struct fiber *fiber_new_ex(const char *name, const struct fiber_attr *fiber_attr,
			   fiber_func f);

/* Runs a new fiber at once with these arguments; returns when it first
 * yields or ends. */
void fiber_start(struct fiber *callee, ...);

/* Blocks the current fiber until fiber_wakeup() or fiber_cancel(). Not a
 * cancellation point. */
void fiber_yield(void);

/* Sleeps at least s seconds (0: to the back of the ready queue); a wakeup
 * or a cancel ends it early. */
void fiber_sleep(double s);

/* To the back of the ready queue. */
void fiber_reschedule(void);

/* Makes a waiting fiber ready; a no-op on the current and on dead ones. */
void fiber_wakeup(struct fiber *f);

/* Sets the fiber's cancel flag and wakes it; fiber_join() waits for it. */
void fiber_cancel(struct fiber *f);

/* Deprecated in Tarantool: a no-op, returns true. */
bool fiber_set_cancellable(bool yesno);

/* Whether the current fiber's cancel flag is set. */
bool fiber_is_cancelled(void);

/* Whether the fiber waits for fiber_join() after its end (NULL: the
 * current one). */
void fiber_set_joinable(struct fiber *fiber, bool yesno);

/* Waits for a joinable fiber to end; its function's result, or -1 when it
 * cannot be joined (not joinable, itself, never started, a Lua fiber: join
 * those from Lua). Where Tarantool panics, this fails with -1 and the
 * reason for luaT_error(). */
int fiber_join(struct fiber *f);
/* fiber_join(), or -1 (TimedOut) after timeout seconds. */
int fiber_join_timeout(struct fiber *f, double timeout);

/* The fiber's id (NULL: the current one); 0 before it starts. */
uint64_t fiber_id(const struct fiber *fiber);
/* The live fiber with this id, or NULL. */
struct fiber *fiber_find(uint64_t fid);
/* Context switches into the fiber so far (NULL: the current one). */
uint64_t fiber_csw(const struct fiber *fiber);
/* The fiber's name (NULL: the current one's). Unlike Tarantool's, a copy
 * valid for the next three fiber_name() calls of the thread. */
const char *fiber_name(const struct fiber *fiber);
/* Renames the fiber (NULL: the current one); past 255 bytes it is cut. */
void fiber_set_name_n(struct fiber *fiber, const char *name, uint32_t len);

/* A pointer the fiber's function reads with fiber_get_ctx(NULL). */
void fiber_set_ctx(struct fiber *f, void *f_arg);
void *fiber_get_ctx(struct fiber *f);

/* The loop's time, the same until the fiber yields: wall clock
 * (fiber_time) or monotonic (fiber_clock); seconds, or microseconds for
 * the 64-bit ones. */
double fiber_time(void);
int64_t fiber_time64(void);
double fiber_clock(void);
int64_t fiber_clock64(void);

/* ---- Conds (src/lib/core/fiber_cond.h) ------------------------------- */

struct fiber_cond;

struct fiber_cond *fiber_cond_new(void);
/* No fiber may wait on the cond. */
void fiber_cond_delete(struct fiber_cond *cond);
/* Wakes the fiber that has waited longest, if any. */
void fiber_cond_signal(struct fiber_cond *cond);
/* Wakes every waiting fiber. */
void fiber_cond_broadcast(struct fiber_cond *cond);
/* 0 when signalled; -1 on timeout (TimedOut) or cancel (FiberIsCancelled),
 * the error ready for luaT_error(). Unlike Tarantool, a plain
 * fiber_wakeup() does not end the wait. */
int fiber_cond_wait_timeout(struct fiber_cond *cond, double timeout);
int fiber_cond_wait(struct fiber_cond *cond);

/* ---- Waits on file descriptors (src/lib/core/coio.h) --------------- */

enum {
	COIO_READ = 0x1,
	COIO_WRITE = 0x2,
};

/* Parks the current fiber until fd (non-blocking) is ready for event
 * (COIO_READ | COIO_WRITE) or timeout seconds pass: the ready events, or 0
 * on timeout (also on a cancel or an error, kept for luaT_error()). The fd
 * must stay open while a fiber waits: close it with coio_close(). */
int coio_wait(int fd, int event, double timeout);
/* Closes fd, waking the fibers waiting on it (their coio_wait() gives 0):
 * 0, or -1 with errno set. */
int coio_close(int fd);

/* ---- Clocks (src/lib/core/clock.h): seconds; the 64-bit ones are
 * nanoseconds ----------------------------------------------------------- */

double clock_realtime(void);
double clock_monotonic(void);
double clock_process(void);
double clock_thread(void);
int64_t clock_realtime64(void);
int64_t clock_monotonic64(void);
int64_t clock_process64(void);
int64_t clock_thread64(void);

/* ---- Buffers (small's struct ibuf, src/lib/core/cord_buf.h) ---------- */

/* Unread data is rpos..wpos, room to write wpos..epos. */
struct ibuf {
	void *slabc; /* unused here (NULL) */
	char *buf;
	char *rpos;
	char *wpos;
	char *epos;
	size_t start_capacity;
};
typedef struct ibuf box_ibuf_t;

void ibuf_create(struct ibuf *ibuf, void *slabc, size_t start_capacity);
void ibuf_destroy(struct ibuf *ibuf);
void ibuf_reinit(struct ibuf *ibuf);
/* Room for size bytes at wpos (the unread data may move): wpos, or NULL. */
void *ibuf_reserve_slow(struct ibuf *ibuf, size_t size);

static inline void *
ibuf_reserve(struct ibuf *ibuf, size_t size)
{
	if ((size_t)(ibuf->epos - ibuf->wpos) >= size)
		return ibuf->wpos;
	return ibuf_reserve_slow(ibuf, size);
}

void *box_ibuf_reserve(box_ibuf_t *ibuf, size_t size);
void box_ibuf_read_range(box_ibuf_t *ibuf, char ***rpos, char ***wpos);
void box_ibuf_write_range(box_ibuf_t *ibuf, char ***wpos, char ***end);

/* An empty buffer of the cord; inside a fiber it comes back by itself
 * when the fiber yields or ends. */
struct ibuf *cord_ibuf_take(void);
/* Gives it back, emptied, keeping its memory. */
void cord_ibuf_put(struct ibuf *ibuf);
/* Frees its memory and gives it back. */
void cord_ibuf_drop(struct ibuf *ibuf);

/* ---- Lua helpers (src/lua/utils.h, src/lua/error.h) ------------------- */

/* A number when a double holds the value exactly, else an int64_t /
 * uint64_t cdata (LuaJIT); on Lua 5.4 an integer (a uint64_t above
 * INT64_MAX: a float). */
void luaL_pushuint64(lua_State *L, uint64_t val);
void luaL_pushint64(lua_State *L, int64_t val);
/* A number, an integer cdata, or a decimal string; raise "expected
 * uint64_t as N argument" (check) or give 0 (to) for anything else. */
uint64_t luaL_checkuint64(lua_State *L, int idx);
int64_t luaL_checkint64(lua_State *L, int idx);
uint64_t luaL_touint64(lua_State *L, int idx);
int64_t luaL_toint64(lua_State *L, int idx);

/* 1 for a cdata (never on Lua 5.4). */
int luaL_iscdata(lua_State *L, int idx);
/* msgpack.NULL: ffi.cast('void *', 0) on LuaJIT, a light userdata NULL on
 * Lua 5.4; luaL_isnull() tells a NULL pointer. */
void luaL_pushnull(lua_State *L);
bool luaL_isnull(lua_State *L, int idx);
/* 1 for a function or a value with a __call metamethod (a cdata: never). */
int luaL_iscallable(lua_State *L, int idx);

/* The cord's main Lua state (code run on it cannot yield). */
lua_State *luaT_state(void);
/* lua_pcall / lua_cpcall; on an error, non-zero with the error value on
 * the stack and kept for luaT_error(). */
int luaT_call(lua_State *L, int nargs, int nreturns);
int luaT_cpcall(lua_State *L, lua_CFunction func, void *ud);
/* Raises the last error of the C API functions (or of luaT_call) as a
 * Tarantool error object (type, message). Unlike Tarantool's, the last
 * error is per thread, not per fiber: raise it before the fiber yields. */
int luaT_error(lua_State *L);
/* Pushes tostring(value) and returns it (its length in *len). */
const char *luaT_tolstring(lua_State *L, int idx, size_t *len);

#if defined(__cplusplus)
}
#endif

#endif /* LUAFIBER_MODULE_H_INCLUDED */
