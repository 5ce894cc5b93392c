/*
 * The variadic half of luafiber's C module API (capi/fiber.rs): Rust cannot
 * define `fiber_start(struct fiber *, ...)` nor call a `fiber_func`, which
 * takes a `va_list`, so these few lines do it in C.
 *
 * A `va_list` travels between C and Rust only by the address of a struct
 * holding it, which is the same on every ABI (on x86-64 `va_list` is an
 * array type, on arm64 a struct).
 */
#include <stdarg.h>
#include <stddef.h>

struct fiber;
typedef int (*fiber_func)(va_list);

/* The arguments of one fiber_start() call, alive until it returns. */
struct luafiber_va {
	va_list ap;
};

/* capi/fiber.rs: starts `callee` at once with `args` (NULL: none). */
extern void luafiber_capi_start(struct fiber *callee, struct luafiber_va *args);

void
fiber_start(struct fiber *callee, ...)
{
	struct luafiber_va args;
	va_start(args.ap, callee);
	luafiber_capi_start(callee, &args);
	va_end(args.ap);
}

/* Gives `f` an empty argument list. */
static int
invoke_empty(fiber_func f, ...)
{
	va_list ap;
	int rc;
	va_start(ap, f);
	rc = f(ap);
	va_end(ap);
	return rc;
}

/*
 * Runs a fiber's function: with the arguments of the fiber_start() call
 * that started it (valid until the fiber first yields, as in Tarantool), or
 * with none when it was started by fiber_wakeup() or fiber_cancel().
 */
int
luafiber_capi_invoke(fiber_func f, struct luafiber_va *args)
{
	if (args == NULL)
		return invoke_empty(f);
	return f(args->ap);
}
