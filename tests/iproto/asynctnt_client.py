#!/usr/bin/env python3
"""asynctnt 2.4.0 against luafiber's server (tests/iproto/server.lua), with
the schema fetched on connect (its default):
    python asynctnt_client.py HOST PORT
Prints "ok NAME" per case, then "ok"; a failed check raises."""
import asyncio
import sys

import asynctnt


async def main(host, port):
    c = asynctnt.Connection(host=host, port=port, username="tester", password="secret")
    await c.connect()
    await c.ping()
    print("ok ping")
    r = await c.call("echo", [1, "two"])
    assert list(r) == [1, "two"], list(r)
    print("ok call")
    r = await c.eval("local a, b = ... return a + b", [40, 2])
    assert list(r) == [42], list(r)
    print("ok eval")
    fut = c.call("push3", [], push_subscribe=True)
    it = asynctnt.PushIterator(fut)
    got = []
    async for m in it:
        got.append(m)
    res = await fut
    assert [m[0] if isinstance(m, list) else m for m in got] == ["msg1", "msg2", "msg3"], got
    assert list(res) == ["done"], list(res)
    print("ok push")
    try:
        await c.call("no_such_function")
        raise AssertionError("no error")
    except asynctnt.exceptions.TarantoolDatabaseError as e:
        assert e.code == 33, e.code
    print("ok unknown function")
    # Many requests at once on one connection.
    rs = await asyncio.gather(*[c.call("echo", [i]) for i in range(500)])
    assert [list(r)[0] for r in rs] == list(range(500))
    print("ok concurrent calls")
    await c.disconnect()
    bad = asynctnt.Connection(host=host, port=port, username="tester", password="wrong",
                              reconnect_timeout=0)
    try:
        await bad.connect()
        raise AssertionError("connected")
    except asynctnt.exceptions.TarantoolDatabaseError as e:
        assert e.code == 47, e.code
    print("ok bad auth")
    print("ok")


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
