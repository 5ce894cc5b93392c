//! The cases of Tarantool master's `test/unit/uri_parser.c` and
//! `test/unit/uri.c` (as data), and the corners this parser decides.

use super::{parse, parse_many, HostHint, Uri};

use HostHint::{Ipv4 as V4, Ipv6 as V6, None as N, Unix as U};

type Fields = [Option<&'static str>; 8];

/// `(text, [scheme, login, password, host, service, path, query,
/// fragment], hint)`: master's `test/unit/uri_parser.c`.
const CASES: &[(&str, Fields, HostHint)] = &[
    ("host", [None, None, None, Some("host"), None, None, None, None], N),
    ("host/", [None, None, None, Some("host"), None, Some("/"), None, None], N),
    ("host/path1/path2/path3", [None, None, None, Some("host"), None, Some("/path1/path2/path3"), None, None], N),
    ("host/path1/path2/path3?q1=v1&q2=v2#fragment", [None, None, None, Some("host"), None, Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("host:service", [None, None, None, Some("host"), Some("service"), None, None, None], N),
    ("host:service/", [None, None, None, Some("host"), Some("service"), Some("/"), None, None], N),
    ("host:service/path1/path2/path3", [None, None, None, Some("host"), Some("service"), Some("/path1/path2/path3"), None, None], N),
    ("host:service/path1/path2/path3?q1=v1&q2=v2#fragment", [None, None, None, Some("host"), Some("service"), Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("login@host", [None, Some("login"), None, Some("host"), None, None, None, None], N),
    ("login@host/", [None, Some("login"), None, Some("host"), None, Some("/"), None, None], N),
    ("login@host/path1/path2/path3", [None, Some("login"), None, Some("host"), None, Some("/path1/path2/path3"), None, None], N),
    ("login@host/path1/path2/path3?q1=v1&q2=v2#fragment", [None, Some("login"), None, Some("host"), None, Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("login:password@host", [None, Some("login"), Some("password"), Some("host"), None, None, None, None], N),
    ("login:@host", [None, Some("login"), Some(""), Some("host"), None, None, None, None], N),
    ("login:password@host/", [None, Some("login"), Some("password"), Some("host"), None, Some("/"), None, None], N),
    ("login:password@host/path1/path2/path3", [None, Some("login"), Some("password"), Some("host"), None, Some("/path1/path2/path3"), None, None], N),
    ("login:password@host/path1/path2/path3?q1=v1&q2=v2#fragment", [None, Some("login"), Some("password"), Some("host"), None, Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("login:password@host:service", [None, Some("login"), Some("password"), Some("host"), Some("service"), None, None, None], N),
    ("login:password@host:service/", [None, Some("login"), Some("password"), Some("host"), Some("service"), Some("/"), None, None], N),
    ("login:password@host:service/path1/path2/path3", [None, Some("login"), Some("password"), Some("host"), Some("service"), Some("/path1/path2/path3"), None, None], N),
    ("login:password@host:service/path1/path2/path3?q1=v1&q2=v2#fragment", [None, Some("login"), Some("password"), Some("host"), Some("service"), Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("scheme://login:password@host:service", [Some("scheme"), Some("login"), Some("password"), Some("host"), Some("service"), None, None, None], N),
    ("scheme://login:password@host:service/", [Some("scheme"), Some("login"), Some("password"), Some("host"), Some("service"), Some("/"), None, None], N),
    ("scheme://login:password@host:service/path1/path2/path3", [Some("scheme"), Some("login"), Some("password"), Some("host"), Some("service"), Some("/path1/path2/path3"), None, None], N),
    ("scheme://login:password@host:service/path1/path2/path3?q1=v1&q2=v2#fragment", [Some("scheme"), Some("login"), Some("password"), Some("host"), Some("service"), Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("host/path", [None, None, None, Some("host"), None, Some("/path"), None, None], N),
    ("host//", [None, None, None, Some("host"), None, Some("//"), None, None], N),
    ("host//path", [None, None, None, Some("host"), None, Some("//path"), None, None], N),
    ("host/;abc?q", [None, None, None, Some("host"), None, Some("/;abc"), Some("q"), None], N),
    ("scheme://login:password@host:service/@path1/:path2?q1=v1&q2=v2#fragment", [Some("scheme"), Some("login"), Some("password"), Some("host"), Some("service"), Some("/@path1/:path2"), Some("q1=v1&q2=v2"), Some("fragment")], N),
    ("host/~user", [None, None, None, Some("host"), None, Some("/~user"), None, None], N),
    ("try.tarantool.org", [None, None, None, Some("try.tarantool.org"), None, None, None, None], N),
    ("try.tarantool.org", [None, None, None, Some("try.tarantool.org"), None, None, None, None], N),
    ("www.llanfairpwllgwyngyllgogerychwyrndrobwyll-llantysiliogogogoch.com", [None, None, None, Some("www.llanfairpwllgwyngyllgogerychwyrndrobwyll-llantysiliogogogoch.com"), None, None, None, None], N),
    ("0.0.0.0", [None, None, None, Some("0.0.0.0"), None, None, None, None], V4),
    ("127.0.0.1", [None, None, None, Some("127.0.0.1"), None, None, None, None], V4),
    ("127.0.0.1:3313", [None, None, None, Some("127.0.0.1"), Some("3313"), None, None, None], V4),
    ("scheme://login:password@127.0.0.1:3313", [Some("scheme"), Some("login"), Some("password"), Some("127.0.0.1"), Some("3313"), None, None, None], V4),
    ("[2001::11a3:09d7::1]", [None, None, None, Some("2001::11a3:09d7::1"), None, None, None, None], V6),
    ("scheme://login:password@[2001::11a3:09d7::1]:3313", [Some("scheme"), Some("login"), Some("password"), Some("2001::11a3:09d7::1"), Some("3313"), None, None, None], V6),
    ("scheme://[2001:0db8:11a3:09d7::1]", [Some("scheme"), None, None, Some("2001:0db8:11a3:09d7::1"), None, None, None, None], V6),
    ("[::ffff:11.2.3.4]", [None, None, None, Some("::ffff:11.2.3.4"), None, None, None, None], V6),
    ("scheme://login:password@[::ffff:11.2.3.4]:3313", [Some("scheme"), Some("login"), Some("password"), Some("::ffff:11.2.3.4"), Some("3313"), None, None, None], V6),
    ("1", [None, None, None, None, Some("1"), None, None, None], N),
    ("10", [None, None, None, None, Some("10"), None, None, None], N),
    ("331", [None, None, None, None, Some("331"), None, None, None], N),
    ("3313", [None, None, None, None, Some("3313"), None, None, None], N),
    ("/", [None, None, None, Some("unix/"), Some("/"), None, None, None], U),
    ("/path1/path2/path3", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("login:password@/path1/path2/path3", [None, Some("login"), Some("password"), Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("unix/:/path1/path2/path3", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("unix/:/path1/path2/path3:", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("unix/:/path1/path2/path3:/", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), Some("/"), None, None], U),
    ("unix/:/path1/path2/path3?q1=v1&q2=v2#fragment", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), None, Some("q1=v1&q2=v2"), Some("fragment")], U),
    ("unix/:/path1/path2/path3:/p1/p2?q1=v1&q2=v2#fragment", [None, None, None, Some("unix/"), Some("/path1/path2/path3"), Some("/p1/p2"), Some("q1=v1&q2=v2"), Some("fragment")], U),
    ("login:password@unix/:/path1/path2/path3", [None, Some("login"), Some("password"), Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("login:password@unix/:/path1/path2/path3:", [None, Some("login"), Some("password"), Some("unix/"), Some("/path1/path2/path3"), None, None, None], U),
    ("scheme://login:password@unix/:/tmp/unix.sock:/path1/path2/path3", [Some("scheme"), Some("login"), Some("password"), Some("unix/"), Some("/tmp/unix.sock"), Some("/path1/path2/path3"), None, None], U),
    ("unix/:./relative/path.sock:/test", [None, None, None, Some("unix/"), Some("./relative/path.sock"), Some("/test"), None, None], U),
    ("scheme://unix/:./relative/path.sock:/test", [Some("scheme"), None, None, Some("unix/"), Some("./relative/path.sock"), Some("/test"), None, None], U),
    ("http://tarantool.org/dist/master/debian/pool/main/t/tarantool/tarantool_1.6.3+314+g91066ee+20140910+1434.orig.tar.gz", [Some("http"), None, None, Some("tarantool.org"), None, Some("/dist/master/debian/pool/main/t/tarantool/tarantool_1.6.3+314+g91066ee+20140910+1434.orig.tar.gz"), None, None], N),
    ("https://www.google.com/search?safe=off&site=&tbm=isch&source=hp&biw=1918&bih=1109&q=Tarantool&oq=Tarantool&gs_l=img.3..0i24l3j0i10i24j0i24&gws_rd=ssl", [Some("https"), None, None, Some("www.google.com"), None, Some("/search"), Some("safe=off&site=&tbm=isch&source=hp&biw=1918&bih=1109&q=Tarantool&oq=Tarantool&gs_l=img.3..0i24l3j0i10i24j0i24&gws_rd=ssl"), None], N),
    ("/tmp/unix.sock?q1=v1&q2=v2#fragment", [None, None, None, Some("unix/"), Some("/tmp/unix.sock"), None, Some("q1=v1&q2=v2"), Some("fragment")], U),
    ("/tmp/unix.sock:/path1/path2/path3?q1=v1&q2=v2#fragment", [None, None, None, Some("unix/"), Some("/tmp/unix.sock"), Some("/path1/path2/path3"), Some("q1=v1&q2=v2"), Some("fragment")], U),
    ("login:password@/tmp/unix.sock:/path1/path2/path3?q1=v1#fragment", [None, Some("login"), Some("password"), Some("unix/"), Some("/tmp/unix.sock"), Some("/path1/path2/path3"), Some("q1=v1"), Some("fragment")], U),
    ("scheme://login:password@/tmp/unix.sock:/path1/path2/path3", [Some("scheme"), Some("login"), Some("password"), Some("unix/"), Some("/tmp/unix.sock"), Some("/path1/path2/path3"), None, None], U),
];

fn fields(u: &Uri) -> [Option<&str>; 8] {
    [
        u.scheme.as_deref(),
        u.login.as_deref(),
        u.password.as_deref(),
        u.host.as_deref(),
        u.service.as_deref(),
        u.path.as_deref(),
        u.query.as_deref(),
        u.fragment.as_deref(),
    ]
}

#[test]
fn master_parser_cases() {
    for (text, want, hint) in CASES {
        let u = parse(text.as_bytes()).unwrap_or_else(|_| panic!("{text}: not parsed"));
        assert_eq!(fields(&u), *want, "{text}");
        assert_eq!(u.host_hint, *hint, "{text}: host hint");
        // What format gives parses to the same address (but `unix/:/`: a
        // socket path has a non-empty segment; and a socket's path is
        // written right after the socket's, as master does).
        if *text == "/" || (*hint == U && u.path.is_some()) {
            continue;
        }
        let again = parse(u.format(true).as_bytes()).unwrap();
        assert!(again.addr_eq(&u), "{text}: {} reparsed", u.format(true));
    }
}

#[test]
fn invalid() {
    for text in [
        "", "://", "a:b:c", ":a", "a@", "@a", "a:bc1", "a:1b", "a%", "a|b", "//", "//host",
        "host:1:2", "a b", "[1]", "[::1", "/a?x#y#z", "a@/x?q", "h\0",
    ] {
        assert!(parse(text.as_bytes()).is_err(), "{text:?} parsed");
    }
    let long = format!("/{}", "x".repeat(255));
    assert!(parse(long.as_bytes()).is_err(), "a 256-byte socket path");
    assert!(parse(&long.as_bytes()[..255]).is_ok());
    let host = "h".repeat(1025);
    assert!(parse(host.as_bytes()).is_err(), "a 1025-byte host");
}

#[test]
fn corners() {
    let cases: &[(&str, Fields, HostHint)] = &[
        (
            "a:",
            [None, None, None, Some("a"), None, None, None, None],
            N,
        ),
        (
            "1.2.3",
            [None, None, None, Some("1.2.3"), None, None, None, None],
            N,
        ),
        (
            "999.1.1.1",
            [None, None, None, Some("999.1.1.1"), None, None, None, None],
            V4,
        ),
        (
            "%41%u12aB%%",
            [
                None,
                None,
                None,
                Some("%41%u12aB%%"),
                None,
                None,
                None,
                None,
            ],
            N,
        ),
        (
            "?q",
            [None, None, None, None, None, None, Some("q"), None],
            N,
        ),
        (
            "h?#",
            [None, None, None, Some("h"), None, None, Some(""), Some("")],
            N,
        ),
        (
            "sch://",
            [Some("sch"), None, None, None, None, None, None, None],
            N,
        ),
        (
            "a:/b",
            [None, None, None, Some("a"), None, Some("/b"), None, None],
            N,
        ),
        (
            "unix/path",
            [
                None,
                None,
                None,
                Some("unix"),
                None,
                Some("/path"),
                None,
                None,
            ],
            N,
        ),
        (
            "./a.sock",
            [
                None,
                None,
                None,
                Some("."),
                None,
                Some("/a.sock"),
                None,
                None,
            ],
            N,
        ),
        (
            "./a.sock:/p",
            [
                None,
                None,
                None,
                Some("unix/"),
                Some("./a.sock"),
                Some("/p"),
                None,
                None,
            ],
            U,
        ),
        (
            "/a//b:c",
            [
                None,
                None,
                None,
                Some("unix/"),
                Some("/a//b:c"),
                None,
                None,
                None,
            ],
            U,
        ),
        (
            "/a//b?x",
            [None, None, None, None, None, Some("/a//b"), Some("x"), None],
            N,
        ),
        (
            "x:///tmp/s",
            [
                Some("x"),
                None,
                None,
                None,
                None,
                Some("/tmp/s"),
                None,
                None,
            ],
            N,
        ),
        (
            "[::1]:3301",
            [
                None,
                None,
                None,
                Some("::1"),
                Some("3301"),
                None,
                None,
                None,
            ],
            V6,
        ),
        (
            "[::FFFF:1.2.3.4]",
            [
                None,
                None,
                None,
                Some("::FFFF:1.2.3.4"),
                None,
                None,
                None,
                None,
            ],
            V6,
        ),
        (
            "h:http",
            [None, None, None, Some("h"), Some("http"), None, None, None],
            N,
        ),
    ];
    for (text, want, hint) in cases {
        let u = parse(text.as_bytes()).unwrap_or_else(|_| panic!("{text}: not parsed"));
        assert_eq!(fields(&u), *want, "{text}");
        assert_eq!(u.host_hint, *hint, "{text}: host hint");
    }
}

#[test]
fn params() {
    let u = parse(b"/unix.sock?q1=v1&q1=&q2&q3=&&=x&").unwrap();
    let got: Vec<(&str, Vec<&str>)> = u
        .params
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.values.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("q1", vec!["v1", ""]), ("q2", vec![]), ("q3", vec![""])]
    );
    assert_eq!(u.param_count("q1"), 2);
    assert_eq!(u.param("q1", 1), Some(""));
    assert_eq!(u.param("q1", 2), None);
    assert_eq!(u.param_count("nope"), 0);
    assert!(parse(b"/unix.sock?").unwrap().params.is_empty());
}

#[test]
fn many() {
    assert!(parse_many(b"").unwrap().is_empty());
    let set = parse_many(b"/unix.sock?q1=v1, unix.sock?q2=v2").unwrap();
    assert_eq!(set.len(), 2);
    assert_eq!(set[0].param("q1", 0), Some("v1"));
    assert_eq!(set[1].host.as_deref(), Some("unix.sock"));
    assert_eq!(set[1].param("q2", 0), Some("v2"));
    for bad in [
        "/unix.sock, ://",
        "/unix.sock?q1=v1,, /unix.sock?q2=v2",
        "/unix.sock?q1=v1,,/unix.sock?q2=v2",
        "/unix.sock?q1=v1, ,/unix.sock?q2=v2",
        "/unix.sock?q1=v1 ,,/unix.sock?q2=v2",
        "a,",
    ] {
        assert!(parse_many(bad.as_bytes()).is_err(), "{bad}");
    }
}

#[test]
fn equality() {
    let eq = |a: &str, b: &str| parse(a.as_bytes()).unwrap() == parse(b.as_bytes()).unwrap();
    let addr = |a: &str, b: &str| {
        parse(a.as_bytes())
            .unwrap()
            .addr_eq(&parse(b.as_bytes()).unwrap())
    };
    // master's test/unit/uri.c, test_addr_is_equal and test_is_equal
    assert!(addr("user:pass@localhost", "user@localhost"));
    assert!(!addr("localhost:3301", "localhost:3302"));
    assert!(addr("scheme1://host:port", "scheme2://host:port"));
    assert!(!addr("localhost/path/to/file", "localhost"));
    assert!(!addr("unix/path/to/file", "/path/to/file"));
    assert!(addr("unix/:/path/to/file", "/path/to/file"));
    assert!(!eq("user@localhost", "localhost"));
    assert!(!eq("scheme://localhost", "localhost"));
    assert!(!eq("localhost?foo=1", "localhost?foo"));
    assert!(eq("localhost?foo=1", "localhost?foo&foo=1"));
    assert!(eq("localhost?foo&bar", "localhost?bar&foo"));
    assert!(!eq("localhost?foo=1&foo=2", "localhost?foo=2&foo=1"));
    assert!(eq(
        "localhost?foo=1&bar=3&foo=2",
        "localhost?bar=3&foo=1&foo=2"
    ));
    assert!(!eq("localhost#foo", "localhost#bar"));
}

#[test]
fn format() {
    let u = parse(b"scheme://user:pw@[::1]:3301/p?ssl_key=k&a=1&a=2&b#f").unwrap();
    assert_eq!(
        u.format(true),
        "scheme://user:pw@[::1]:3301/p?ssl_key=k&a=1&a=2&b#f"
    );
    assert_eq!(u.format(false), "scheme://user@[::1]:3301/p?a=1&a=2&b#f");
    assert_eq!(u.to_string(), u.format(false));
    assert_eq!(parse(b"3301").unwrap().format(false), "3301");
    assert_eq!(parse(b"/tmp/s").unwrap().format(false), "unix/:/tmp/s");
}

#[test]
fn escapes() {
    use super::{escape, unescape, RFC3986};
    let all: Vec<u8> = (0..=255).collect();
    let mut esc = Vec::new();
    escape(&all, &RFC3986, false, &mut esc);
    let mut back = Vec::new();
    unescape(&esc, false, &mut back);
    assert_eq!(back, all);
    back.clear();
    unescape(b"%1a%1B%4%zz%", false, &mut back);
    assert_eq!(back, b"\x1a\x1b%4%zz%");
}
