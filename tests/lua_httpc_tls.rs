//! `http.client` over TLS on both engines, against rustls servers on
//! loopback threads with self-signed certificates made here (`rcgen`):
//! verification off, `ca_file` and `ca_path` pointing at the certificate,
//! a certificate for another name (`verify_host`), the system store
//! refusing it (495), an unusable `ca_file`, a client certificate
//! (`ssl_cert`, `ssl_key`), keep-alive reuse and the chunked io object;
//! and peers that speak no TLS (an error) or say nothing (408, other
//! fibers running while the handshake waits).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection, StreamOwned};

#[path = "support/lua_run.rs"]
mod lua_run;

/// A self-signed certificate for `names`: its DER, its key, and the
/// path of its PEM file in `dir`.
struct Cert {
    der: CertificateDer<'static>,
    key: Vec<u8>,
    pem: PathBuf,
    key_pem: PathBuf,
}

fn cert(dir: &std::path::Path, file: &str, names: &[&str]) -> Cert {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).unwrap();
    let pem = dir.join(format!("{file}.pem"));
    let key_pem = dir.join(format!("{file}.key"));
    std::fs::write(&pem, ck.cert.pem()).unwrap();
    std::fs::write(&key_pem, ck.signing_key.serialize_pem()).unwrap();
    Cert {
        der: ck.cert.der().clone(),
        key: ck.signing_key.serialize_der(),
        pem,
        key_pem,
    }
}

#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server config presenting `c`; asking for a client certificate
/// signed by `client` when given.
fn server_config(c: &Cert, client: Option<&Cert>) -> Arc<ServerConfig> {
    let b = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let b = match client {
        None => b.with_no_client_auth(),
        Some(cl) => {
            let mut roots = RootCertStore::empty();
            roots.add(cl.der.clone()).unwrap();
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            b.with_client_cert_verifier(v)
        }
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key.clone()));
    Arc::new(b.with_single_cert(vec![c.der.clone()], key).unwrap())
}

/// Serves one connection: each request head gets `200` with a body that
/// names its path (`/big`: 200,000 bytes), kept alive until the client
/// closes or 5 s pass idle.
fn serve(tcp: TcpStream, config: Arc<ServerConfig>) {
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let Ok(conn) = ServerConnection::new(config) else {
        return;
    };
    let mut tls = StreamOwned::new(conn, tcp);
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        match tls.read(&mut piece) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&piece[..n]),
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let body = match path.as_str() {
                "/big" => "x".repeat(200_000),
                _ => format!("hello tls {path}"),
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if tls.write_all(reply.as_bytes()).is_err() || tls.flush().is_err() {
                return;
            }
        }
    }
}

/// Starts a server with `config` on a loopback port: the port, and the
/// count of connections it accepted.
fn start(config: Arc<ServerConfig>) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let config = config.clone();
            std::thread::spawn(move || serve(tcp, config));
        }
    });
    (port, accepted)
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("luafiber-httpc-tls-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn verification_off_ca_file_ca_path_and_wrong_certificates() {
    let dir = scratch("verify");
    let good = cert(&dir, "good", &["localhost", "127.0.0.1"]);
    let other = cert(&dir, "other", &["other.example"]);
    let ca_dir = dir.join("ca");
    std::fs::create_dir_all(&ca_dir).unwrap();
    std::fs::copy(&good.pem, ca_dir.join("good.pem")).unwrap();
    let (port, _) = start(server_config(&good, None));
    let (other_port, _) = start(server_config(&other, None));
    let code = format!(
        r#"
        local http = require('http.client')
        local base = 'https://localhost:{port}'
        local c = http.new()
        local r = c:get(base .. '/off', {{verify_peer = false, verify_host = false, timeout = 5}})
        eq(r.status, 200, 'verification off')
        eq(r.body, 'hello tls /off', 'body')
        r = c:get(base .. '/file', {{ca_file = '{ca}', timeout = 5}})
        eq(r.status, 200, 'ca_file')
        eq(r.body, 'hello tls /file', 'body by ca_file')
        r = c:get('https://127.0.0.1:{port}/ip', {{ca_file = '{ca}', timeout = 5}})
        eq(r.status, 200, 'an IP address in the certificate')
        r = c:get(base .. '/path', {{ca_path = '{ca_dir}', timeout = 5}})
        eq(r.status, 200, 'ca_path')
        r = c:get(base .. '/big', {{ca_file = '{ca}', timeout = 5}})
        eq(#r.body, 200000, 'a body of many records')
        -- The system store knows no self-signed certificate.
        r = c:get(base .. '/system', {{timeout = 5}})
        eq(r.status, 495, 'refused by the system store')
        assert(r.reason:find('SSL peer certificate or SSH remote key was not OK', 1, true), r.reason)
        -- A certificate for another name.
        local other = 'https://localhost:{other_port}/'
        r = c:get(other, {{ca_file = '{other_ca}', timeout = 5}})
        eq(r.status, 495, 'another name')
        assert(r.reason:find('not valid for name', 1, true), r.reason)
        r = c:get(other, {{ca_file = '{other_ca}', verify_host = false, timeout = 5}})
        eq(r.status, 200, 'another name, verify_host off')
        -- Another certificate than the trusted one (rcgen gives both the
        -- same issuer name, so webpki finds a bad signature).
        r = c:get(other, {{ca_file = '{ca}', verify_host = false, timeout = 5}})
        eq(r.status, 495, 'an untrusted certificate')
        assert(r.reason:find('invalid peer certificate', 1, true), r.reason)
        local ok, err = pcall(c.get, c, base, {{ca_file = '{dir}/missing.pem', timeout = 5}})
        eq(ok, false, 'a missing ca_file raises')
        assert(tostring(err):find('Problem with the SSL CA cert', 1, true), tostring(err))
        local st = c:stat()
        eq(st.active_requests, 0, 'no request left active')
    "#,
        ca = good.pem.display(),
        ca_dir = ca_dir.display(),
        other_ca = other.pem.display(),
        dir = dir.display(),
    );
    lua_run::run_lua("lua_httpc_tls", &[&code]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn client_certificates_keep_alive_and_chunked_io() {
    let dir = scratch("client");
    let server = cert(&dir, "server", &["localhost"]);
    let client = cert(&dir, "client", &["client.example"]);
    let (port, accepted) = start(server_config(&server, Some(&client)));
    let (plain_port, plain_accepted) = start(server_config(&server, None));
    let code = format!(
        r#"
        local http = require('http.client')
        local c = http.new()
        local opts = {{ca_file = '{ca}', ssl_cert = '{cert}', ssl_key = '{key}', timeout = 5}}
        local r = c:get('https://localhost:{port}/client', opts)
        eq(r.status, 200, 'with a client certificate')
        -- Without one the server ends the session: an error or a failed
        -- status, never a response.
        local ok, res = pcall(c.get, c, 'https://localhost:{port}/none', {{ca_file = '{ca}', timeout = 5}})
        assert(not ok or res.status ~= 200, 'refused without a client certificate')
        -- Keep-alive: three requests on one connection.
        local keep = {{ca_file = '{ca}', keepalive_idle = 30, keepalive_interval = 30, timeout = 5}}
        for i = 1, 3 do
            eq(c:get('https://localhost:{plain_port}/k' .. i, keep).body, 'hello tls /k' .. i, 'kept ' .. i)
        end
        -- Other TLS options: another connection.
        local other = table.copy(keep)
        other.verify_host = false
        eq(c:get('https://localhost:{plain_port}/o', other).status, 200, 'other options')
        -- The chunked io object over TLS.
        local io = c:get('https://localhost:{plain_port}/io', {{ca_file = '{ca}', chunked = true, timeout = 5}})
        eq(io.status, 200, 'io status')
        eq(io:read(5), 'hello', 'io read')
        eq(io:read(' '), ' ', 'io read by delimiter')
        io:finish()
        eq(io:read(100), 'tls /io', 'io read after finish')
        eq(io:read(100), '', 'io at its end')
    "#,
        ca = server.pem.display(),
        cert = client.pem.display(),
        key = client.key_pem.display(),
    );
    lua_run::run_lua("lua_httpc_tls", &[&code]);
    assert_eq!(
        plain_accepted.load(Ordering::SeqCst),
        3,
        "three kept requests on one connection, one with other options, one io"
    );
    assert!(accepted.load(Ordering::SeqCst) >= 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts a loopback server that answers each connection with `reply`
/// (not TLS) and holds it `hold` before closing: its port.
fn start_plain(reply: &'static [u8], hold: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut tcp in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = tcp.write_all(reply);
                std::thread::sleep(hold);
            });
        }
    });
    port
}

#[test]
fn a_peer_that_speaks_no_tls_or_nothing() {
    let http = start_plain(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
        Duration::ZERO,
    );
    let silent = start_plain(b"", Duration::from_secs(2));
    let code = format!(
        r#"
        local http = require('http.client')
        local c = http.new()
        local ok, err = pcall(c.get, c, 'https://127.0.0.1:{http}/', {{verify_peer = false, timeout = 5}})
        eq(ok, false, 'plain HTTP on an https URL raises')
        assert(tostring(err):find('curl: SSL connect error', 1, true), tostring(err))
        eq(err.type, 'SystemError', 'its type')
        -- Only the calling fiber waits: another one ticks meanwhile.
        local fiber = require('fiber')
        local ticks = 0
        local ticker = fiber.new(function()
            while true do
                ticks = ticks + 1
                fiber.sleep(0.01)
            end
        end)
        local r = c:get('https://127.0.0.1:{silent}/', {{verify_peer = false, timeout = 0.2}})
        ticker:cancel()
        assert(ticks >= 2, 'the ticker ran while the handshake waited: ' .. ticks)
        eq(r.status, 408, 'a handshake with no answer times out')
        eq(r.reason, 'Timeout was reached', 'its reason')
        eq(c:stat().active_requests, 0, 'no request left active')
    "#
    );
    lua_run::run_lua("lua_httpc_tls", &[&code]);
}
