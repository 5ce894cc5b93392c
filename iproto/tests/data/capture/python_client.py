#!/usr/bin/env python3
"""tarantool-python against record_server.py greeting as 2.11.0: it sends ID
(with its features) and AUTH with the scramble as MP_BIN or MP_STR, as that
connector encodes it. Usage: python_client.py PORT"""
import sys
import tarantool

port = int(sys.argv[1])
c = tarantool.Connection("127.0.0.1", port, user="alice", password="secret",
                         fetch_schema=False)
c.ping()
c.call("echo", [1, "two"])
c.close()
