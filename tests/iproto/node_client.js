// tarantool-driver 3.1.0 (Node) against luafiber's server
// (tests/iproto/server.lua): call (CALL_16), eval, ping, auth.
//   NODE_PATH=target/node/node_modules node node_client.js HOST PORT
// Prints "ok NAME" per case, then "ok"; a failed check exits 1.
const Tarantool = require('tarantool-driver');
const assert = require('assert');
const [host, port] = process.argv.slice(2);

async function main() {
    const c = new Tarantool({host, port: Number(port), username: 'tester',
                             password: 'secret', lazyConnect: true});
    await c.connect();
    assert.strictEqual(await c.ping(), true);
    console.log('ok ping');
    assert.deepStrictEqual(await c.call('echo', 1, 'two'), [[1], ['two']]);
    console.log('ok call');
    assert.deepStrictEqual(await c.eval('local a, b = ... return a + b', 40, 2), [42]);
    console.log('ok eval');
    await assert.rejects(c.call('no_such_function'), /not defined/);
    console.log('ok unknown function');
    c.disconnect();
    const bad = new Tarantool({host, port: Number(port), username: 'tester',
                               password: 'wrong', lazyConnect: true,
                               retryStrategy: () => null});
    let seen = '';
    bad.on('error', (e) => { seen += e.message; });
    await assert.rejects(bad.connect());
    assert.match(seen, /User not found or supplied credentials are invalid/);
    bad.disconnect();
    console.log('ok bad auth');
    console.log('ok');
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
