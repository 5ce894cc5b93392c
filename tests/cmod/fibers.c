/* A C module over luafiber's C module API (include/module.h): its Lua
 * functions start fibers, sleep, yield, join, wait on conds, and use the
 * cord's buffers and the 64-bit helpers. tests/c_api.rs checks the results
 * from Lua. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lua_api.h"
#include "module.h"

/* An ordered log of what the fibers did. */
struct log {
	char buf[1024];
	size_t len;
};

static void
note(struct log *log, const char *what, int n)
{
	if (log->len < sizeof(log->buf))
		log->len += snprintf(log->buf + log->len, sizeof(log->buf) - log->len,
				     "%s%d ", what, n);
}

/* worker(id, log, cond): sleeps id ms, waits for the cond, returns 10 * id. */
static int
worker(va_list ap)
{
	int id = va_arg(ap, int);
	struct log *log = va_arg(ap, struct log *);
	struct fiber_cond *cond = va_arg(ap, struct fiber_cond *);
	note(log, "start", id);
	fiber_sleep(0.001 * id);
	note(log, "slept", id);
	if (fiber_cond_wait(cond) != 0)
		return -1;
	note(log, "woke", id);
	return 10 * id;
}

/* run(n): n joinable workers; returns the log and the sum of their results. */
static int
run(lua_State *L)
{
	int n = (int)luaL_checkinteger(L, 1);
	struct fiber *f[8];
	struct log log = {{0}, 0};
	struct fiber_cond *cond = fiber_cond_new();
	int i, sum = 0;
	if (n < 1 || n > 8)
		return luaL_error(L, "run: 1..8 workers");
	for (i = 0; i < n; i++) {
		f[i] = fiber_new("worker", worker);
		fiber_set_joinable(f[i], true);
		fiber_start(f[i], i + 1, &log, cond);
	}
	note(&log, "main", 0);
	/* Longer than every worker's sleep: they all wait on the cond. */
	fiber_sleep(0.05);
	note(&log, "broadcast", 0);
	fiber_cond_broadcast(cond);
	for (i = 0; i < n; i++)
		sum += fiber_join(f[i]);
	fiber_cond_delete(cond);
	lua_pushstring(L, log.buf);
	lua_pushinteger(L, sum);
	return 2;
}

/* Loops until cancelled; returns 7. */
static int
spinner(va_list ap)
{
	struct log *log = va_arg(ap, struct log *);
	int rounds = 0;
	while (!fiber_is_cancelled()) {
		fiber_sleep(10);
		rounds++;
	}
	note(log, "cancelled", rounds);
	return 7;
}

/* Blocks in fiber_yield() until woken. */
static int
yielder(va_list ap)
{
	struct log *log = va_arg(ap, struct log *);
	note(log, "yield", 0);
	fiber_yield();
	note(log, "woken", 0);
	return 0;
}

/* cancel_and_wakeup(): returns the log and the spinner's join result. */
static int
cancel_and_wakeup(lua_State *L)
{
	struct log log = {{0}, 0};
	struct fiber *s = fiber_new("spinner", spinner);
	struct fiber *y = fiber_new("yielder", yielder);
	int rc;
	fiber_set_joinable(s, true);
	fiber_set_joinable(y, true);
	fiber_start(s, &log);
	fiber_start(y, &log);
	note(&log, "main", 0);
	fiber_cancel(s);
	rc = fiber_join(s);
	fiber_wakeup(y);
	fiber_join(y);
	lua_pushstring(L, log.buf);
	lua_pushinteger(L, rc);
	return 2;
}

/* cond_timeout(): a wait that times out, raised as an error object. */
static int
cond_timeout(lua_State *L)
{
	struct fiber_cond *cond = fiber_cond_new();
	int rc = fiber_cond_wait_timeout(cond, 0.001);
	fiber_cond_delete(cond);
	if (rc != 0)
		return luaT_error(L);
	return 0;
}

static int ticks;

/* A detached fiber started by fiber_wakeup(), with its context. */
static int
ticker(va_list ap)
{
	int *n = fiber_get_ctx(NULL);
	(void)ap;
	fiber_sleep(0.001);
	*n += 1;
	return 0;
}

/* detached(k): k detached fibers that each count one tick after 1 ms;
 * returns how many ticks are there now (none: they still sleep). */
static int
detached(lua_State *L)
{
	int k = (int)luaL_checkinteger(L, 1), i;
	for (i = 0; i < k; i++) {
		struct fiber *f = fiber_new("ticker", ticker);
		fiber_set_ctx(f, &ticks);
		fiber_wakeup(f);
	}
	lua_pushinteger(L, ticks);
	return 1;
}

static int
get_ticks(lua_State *L)
{
	lua_pushinteger(L, ticks);
	return 1;
}

/* int64(a, b): UINT64_MAX, INT64_MIN, checkint64(a), checkuint64(b). */
static int
int64(lua_State *L)
{
	int64_t a = luaL_checkint64(L, 1);
	uint64_t b = luaL_checkuint64(L, 2);
	luaL_pushuint64(L, UINT64_MAX);
	luaL_pushint64(L, INT64_MIN);
	luaL_pushint64(L, a);
	luaL_pushuint64(L, b);
	return 4;
}

/* buffers(): what a cord buffer holds, whether a put one comes back
 * empty with its memory, and whether a yield gives one back. */
static int
buffers(lua_State *L)
{
	struct ibuf *b = cord_ibuf_take(), *again, *before_yield, *after_yield;
	char *p = ibuf_reserve(b, 100000);
	if (p == NULL)
		return luaT_error(L);
	memcpy(p, "hello", 5);
	b->wpos += 5;
	lua_pushlstring(L, b->rpos, b->wpos - b->rpos);
	cord_ibuf_put(b);
	again = cord_ibuf_take();
	lua_pushboolean(L, again == b && again->rpos == again->wpos &&
			   again->buf != NULL && again->epos - again->buf >= 100000);
	cord_ibuf_put(again);
	before_yield = cord_ibuf_take();
	fiber_sleep(0);
	after_yield = cord_ibuf_take();
	lua_pushboolean(L, after_yield == before_yield);
	cord_ibuf_drop(after_yield);
	return 3;
}

/* self(): fiber_id(NULL), fiber_name(NULL), and whether fiber_self(),
 * fiber_find() and fiber_id() agree. */
static int
self(lua_State *L)
{
	struct fiber *me = fiber_self();
	lua_pushinteger(L, (lua_Integer)fiber_id(NULL));
	lua_pushstring(L, fiber_name(NULL));
	lua_pushboolean(L, me != NULL && fiber_find(fiber_id(me)) == me &&
			   fiber_id(me) == fiber_id(NULL));
	return 3;
}

/* clocks(): the cached loop time twice, and whether the clocks move on. */
static int
clocks(lua_State *L)
{
	int64_t t1 = fiber_time64(), t2 = fiber_time64();
	int64_t m1 = clock_monotonic64();
	double c = fiber_clock();
	fiber_sleep(0.002);
	lua_pushboolean(L, t1 == t2);
	lua_pushboolean(L, clock_monotonic64() - m1 >= 2000000 && fiber_clock() > c);
	lua_pushnumber(L, clock_realtime());
	return 3;
}

static char main_err[256];

/* A wait that raises its failure. */
static int
waits(lua_State *L)
{
	struct fiber_cond *cond = fiber_cond_new();
	int rc = fiber_cond_wait_timeout(cond, 0.001);
	fiber_cond_delete(cond);
	if (rc != 0)
		return luaT_error(L);
	return 0;
}

/* Calls waits() on the cord's main Lua thread, keeping its error. */
static int
main_runner(va_list ap)
{
	lua_State *L = luaT_state();
	int top = lua_gettop(L);
	(void)ap;
	lua_pushcfunction(L, waits);
	if (luaT_call(L, 0, 0) != 0)
		snprintf(main_err, sizeof(main_err), "%s", luaT_tolstring(L, -1, NULL));
	lua_settop(L, top);
	return 0;
}

/* on_main_thread(): what a wait on luaT_state() from a C fiber gives. */
static int
on_main_thread(lua_State *L)
{
	struct fiber *f = fiber_new("main-runner", main_runner);
	fiber_set_joinable(f, true);
	fiber_start(f);
	fiber_join(f);
	lua_pushstring(L, main_err);
	return 1;
}

/* reader(fd, log): waits for fd to be readable, notes the events. */
static int
reader(va_list ap)
{
	int fd = va_arg(ap, int);
	struct log *log = va_arg(ap, struct log *);
	int ev = coio_wait(fd, COIO_READ, 10);
	note(log, "ready", ev);
	return ev;
}

/* pipes(): a wait that times out, a reader woken by a write, and one
 * woken by coio_close; returns the log and the two joins' results. */
static int
pipes(lua_State *L)
{
	struct log log = {{0}, 0};
	int p[2], q[2], rc1, rc2;
	struct fiber *f, *g;
	if (pipe(p) != 0 || pipe(q) != 0)
		return luaL_error(L, "pipe failed");
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	fcntl(q[0], F_SETFL, O_NONBLOCK);
	note(&log, "timeout", coio_wait(p[0], COIO_READ, 0.001));
	note(&log, "writable", coio_wait(p[1], COIO_READ | COIO_WRITE, 1));
	f = fiber_new("reader", reader);
	g = fiber_new("closed", reader);
	fiber_set_joinable(f, true);
	fiber_set_joinable(g, true);
	fiber_start(f, p[0], &log);
	fiber_start(g, q[0], &log);
	note(&log, "write", (int)write(p[1], "x", 1));
	rc1 = fiber_join(f);
	note(&log, "close", coio_close(q[0]));
	rc2 = fiber_join(g);
	close(p[0]);
	close(p[1]);
	close(q[1]);
	lua_pushstring(L, log.buf);
	lua_pushinteger(L, rc1);
	lua_pushinteger(L, rc2);
	return 3;
}

/* toint(v): luaL_toint64(v), luaL_touint64(v). */
static int
toint(lua_State *L)
{
	int64_t a = luaL_toint64(L, 1);
	uint64_t b = luaL_touint64(L, 1);
	luaL_pushint64(L, a);
	luaL_pushuint64(L, b);
	return 2;
}

/* tostr(v): luaT_tolstring's string and its length. */
static int
tostr(lua_State *L)
{
	size_t len = 99;
	luaT_tolstring(L, 1, &len);
	lua_pushinteger(L, (lua_Integer)len);
	return 2;
}

/* kinds(v): luaL_iscallable(v), luaL_isnull(v), luaL_iscdata(v). */
static int
kinds(lua_State *L)
{
	int callable = luaL_iscallable(L, 1);
	int isnull = luaL_isnull(L, 1);
	int iscdata = luaL_iscdata(L, 1);
	lua_pushboolean(L, callable);
	lua_pushboolean(L, isnull);
	lua_pushboolean(L, iscdata);
	return 3;
}

/* null(): luaL_pushnull. */
static int
null(lua_State *L)
{
	luaL_pushnull(L);
	return 1;
}

/* Sleeps until cancelled. */
static int
sleeper(va_list ap)
{
	(void)ap;
	while (!fiber_is_cancelled())
		fiber_sleep(10);
	return 0;
}

/* nan_timeouts(what): fiber_sleep, fiber_cond_wait_timeout, coio_wait or
 * fiber_join_timeout with a NaN timeout, which is refused at once: the
 * error each records, raised by luaT_error. */
static int
nan_timeouts(lua_State *L)
{
	const char *what = luaL_checklstring(L, 1, NULL);
	int failed = 0;
	if (strcmp(what, "sleep") == 0) {
		fiber_sleep(NAN);
		failed = 1;
	} else if (strcmp(what, "cond") == 0) {
		struct fiber_cond *cond = fiber_cond_new();
		failed = fiber_cond_wait_timeout(cond, NAN) != 0;
		fiber_cond_delete(cond);
	} else if (strcmp(what, "coio") == 0) {
		int p[2];
		if (pipe(p) != 0)
			return luaL_error(L, "pipe failed");
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		failed = coio_wait(p[0], COIO_READ, NAN) == 0;
		close(p[0]);
		close(p[1]);
	} else if (strcmp(what, "join") == 0) {
		struct fiber *f = fiber_new("sleeper", sleeper);
		fiber_set_joinable(f, true);
		fiber_start(f);
		failed = fiber_join_timeout(f, NAN) != 0;
		fiber_cancel(f);
		fiber_join(f);
	}
	if (failed)
		return luaT_error(L);
	lua_pushboolean(L, 1);
	return 1;
}

/* call(f, ...): luaT_call(f, ...) with no results, true; its error raised
 * again by luaT_error. */
static int
call(lua_State *L)
{
	if (luaT_call(L, lua_gettop(L) - 1, 0) != 0)
		return luaT_error(L);
	lua_pushboolean(L, 1);
	return 1;
}

int
luaopen_fibers(lua_State *L)
{
	static const struct {
		const char *name;
		lua_CFunction f;
	} fns[] = {
		{"run", run},
		{"cancel_and_wakeup", cancel_and_wakeup},
		{"cond_timeout", cond_timeout},
		{"detached", detached},
		{"ticks", get_ticks},
		{"int64", int64},
		{"buffers", buffers},
		{"self", self},
		{"clocks", clocks},
		{"on_main_thread", on_main_thread},
		{"pipes", pipes},
		{"toint", toint},
		{"tostr", tostr},
		{"kinds", kinds},
		{"null", null},
		{"call", call},
		{"nan_timeouts", nan_timeouts},
	};
	size_t i;
	lua_createtable(L, 0, sizeof(fns) / sizeof(fns[0]));
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		lua_pushcfunction(L, fns[i].f);
		lua_setfield(L, -2, fns[i].name);
	}
	return 1;
}
