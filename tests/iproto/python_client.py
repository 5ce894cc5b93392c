#!/usr/bin/env python3
"""tarantool-python 1.3.0 against luafiber's server (tests/iproto/server.lua),
with the schema fetched on connect (its default):
    python python_client.py HOST PORT
Prints "ok NAME" per case, then "ok"; a failed check raises."""
import sys

import tarantool

host, port = sys.argv[1], int(sys.argv[2])
c = tarantool.Connection(host, port, user="tester", password="secret")
c.ping()
print("ok ping")
assert c.call("echo", [1, "two"]).data == [1, "two"], "call"
assert c.call("many").data == [1, None, "three", None], "many"
print("ok call")
assert c.eval("local a, b = ... return a + b", [40, 2]).data == [42], "eval"
print("ok eval")
got = []
r = c.call("push3", [], on_push=lambda m, ctx: got.append(m), on_push_ctx=None)
assert r.data == ["done"], r.data
assert got == [["msg1"], ["msg2"], ["msg3"]] or got == ["msg1", "msg2", "msg3"], got
print("ok push")
try:
    c.call("no_such_function")
    raise AssertionError("no error")
except tarantool.error.DatabaseError as e:
    assert e.args[0] == 33, e.args
print("ok unknown function")
try:
    c.call("fail")
    raise AssertionError("no error")
except tarantool.error.DatabaseError as e:
    assert "boom" in str(e), e
print("ok lua error")
c.close()
for user, pw in (("tester", "wrong"), ("nobody", "x")):
    try:
        tarantool.Connection(host, port, user=user, password=pw)
        raise AssertionError("connected")
    except tarantool.error.Error as e:
        assert "(47, 'User not found or supplied credentials are invalid')" in str(e), e
print("ok bad auth")
g = tarantool.Connection(host, port)
try:
    g.eval("return 1")
    raise AssertionError("no error")
except tarantool.error.DatabaseError as e:
    assert e.args[0] == 42, e.args
print("ok a grant missing")
g.close()
print("ok")
