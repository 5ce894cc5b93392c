//! Every request and response type against packets real Tarantool 2.6
//! programs produced (`tests/data/`, made by `tests/data/capture/capture.py`):
//! the decoders read them, and the encoders, given the same fields, write
//! the same bytes.

use std::collections::HashMap;

use luafiber_iproto::encode::{self, ErrorInfo};
use luafiber_iproto::{
    auth, decode_greeting, decode_header, decode_request, decode_response, errcode, frame,
    iterator, kind, Frame, Header, Request, Response,
};
use luafiber_runtime::ibuf::Ibuf;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// `label -> packet` of one data file (the last column is the hex).
fn load(name: &str) -> HashMap<String, Vec<u8>> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("test data");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split(' ').collect();
            let label = cols[cols.len() - 2].to_string();
            (label, unhex(cols[cols.len() - 1]))
        })
        .collect()
}

/// The one packet at the start of `bytes` (which it must fill exactly).
fn packet(bytes: &[u8]) -> (Header, &[u8]) {
    let Ok(Frame::Whole { header_at, end }) = frame(bytes, 1 << 20) else {
        panic!("not a whole packet")
    };
    assert_eq!(end, bytes.len());
    decode_header(&bytes[header_at..end]).expect("a header")
}

fn written(f: impl FnOnce(&mut Ibuf)) -> Vec<u8> {
    let mut b = Ibuf::new();
    f(&mut b);
    b.data().to_vec()
}

/// The fixed salt and credentials of `capture/record_server.py`.
const SALT: [u8; 32] = {
    let mut s = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        s[i] = i as u8;
        i += 1;
    }
    s
};

#[test]
fn netbox_requests_decode_and_encode_byte_for_byte() {
    let req = load("requests.txt");
    let get = |l: &str| req.get(l).unwrap_or_else(|| panic!("no {l}")).clone();

    // AUTH alice/secret under the fixed salt.
    let auth_pkt = get("auth");
    let (h, body) = packet(&auth_pkt);
    assert_eq!((h.kind, h.sync), (kind::AUTH, 1));
    let Request::Auth(a) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(a.user, b"alice");
    let m = a.method().unwrap().unwrap();
    let scr = m.scramble;
    assert_eq!(m.method, auth::CHAP_SHA1);
    assert!(auth::check_scramble(
        scr,
        &SALT,
        &auth::password_hash2(b"secret")
    ));
    assert!(!auth::check_scramble(
        scr,
        &SALT,
        &auth::password_hash2(b"secreT")
    ));
    assert_eq!(
        written(|b| encode::encode_auth(b, 1, b"alice", Some(b"secret"), &SALT).unwrap()),
        auth_pkt
    );

    // The schema fetch: SELECT of _vspace, _vindex, _vcollation.
    for (label, sync, space) in [
        ("select_vspace", 2, 281),
        ("select_vindex", 3, 289),
        ("select_vcollation", 4, 277),
    ] {
        let p = get(label);
        let (h, body) = packet(&p);
        let Request::Select(s) = decode_request(&h, body).unwrap() else {
            panic!()
        };
        assert_eq!(
            (
                h.sync,
                s.space_id,
                s.index_id,
                s.iterator,
                s.offset,
                s.limit,
                s.key.len()
            ),
            (sync, space, 0, iterator::ALL, 0, u32::MAX, 0)
        );
        let again = written(|b| {
            encode::encode_select(b, sync, space, 0, iterator::ALL, 0, u32::MAX, &[0x90]).unwrap()
        });
        assert_eq!(again, p, "{label}");
    }

    let p = get("ping");
    let (h, body) = packet(&p);
    assert_eq!(
        (decode_request(&h, body).unwrap(), h.sync),
        (Request::Ping, 5)
    );
    assert_eq!(written(|b| encode::encode_ping(b, 5).unwrap()), p);

    // CALL 'echo' {1, 'two', nil, {a = 3}}
    let args = unhex("9401a374776fc081a16103");
    let p = get("call");
    let (h, body) = packet(&p);
    let Request::Call(c) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (h.sync, c.name, c.args.raw(), c.args.len()),
        (6, &b"echo"[..], &args[..], 4)
    );
    let items: Vec<&[u8]> = c.args.iter().collect();
    assert_eq!(
        items,
        [&[0x01][..], &unhex("a374776f"), &[0xc0], &unhex("81a16103")]
    );
    assert_eq!(
        written(|b| encode::encode_call(b, 6, b"echo", &args).unwrap()),
        p
    );

    // CALL_16 'echo16' (1, 'a') -> args [[1, 'a']]
    let args = unhex("919201a161");
    let p = get("call_16");
    let (h, body) = packet(&p);
    let Request::Call16(c) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (h.sync, c.name, c.args.raw()),
        (7, &b"echo16"[..], &args[..])
    );
    assert_eq!(
        written(|b| encode::encode_call_16(b, 7, b"echo16", &args).unwrap()),
        p
    );

    // EVAL 'return ...' {7, 8}
    let p = get("eval");
    let (h, body) = packet(&p);
    let Request::Eval(e) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (h.sync, e.expr, e.args.raw()),
        (8, &b"return ..."[..], &[0x92, 7, 8][..])
    );
    assert_eq!(
        written(|b| encode::encode_eval(b, 8, b"return ...", &[0x92, 7, 8]).unwrap()),
        p
    );

    // SELECT 512/0, ALL, offset 10, limit 100, key {1}
    let p = get("select");
    let (h, body) = packet(&p);
    let Request::Select(s) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            s.space_id,
            s.index_id,
            s.iterator,
            s.offset,
            s.limit,
            s.key.raw()
        ),
        (512, 0, 2, 10, 100, &[0x91, 1][..])
    );
    assert_eq!(
        written(|b| encode::encode_select(b, 9, 512, 0, 2, 10, 100, &[0x91, 1]).unwrap()),
        p
    );

    // INSERT / REPLACE
    for (label, sync, tuple, k) in [
        ("insert", 10, unhex("9201a161"), kind::INSERT),
        ("replace", 11, unhex("9202a162"), kind::REPLACE),
    ] {
        let p = get(label);
        let (h, body) = packet(&p);
        assert_eq!(h.kind, k);
        let (Request::Insert(d) | Request::Replace(d)) = decode_request(&h, body).unwrap() else {
            panic!()
        };
        assert_eq!((d.space_id, d.tuple.unwrap().raw()), (512, &tuple[..]));
        let again = written(|b| {
            if k == kind::INSERT {
                encode::encode_insert(b, sync, 512, &tuple).unwrap()
            } else {
                encode::encode_replace(b, sync, 512, &tuple).unwrap()
            }
        });
        assert_eq!(again, p, "{label}");
    }

    // UPDATE 512/0 key {1} ops {{'=', 2, 'x'}}
    let ops = unhex("9193a13d02a178");
    let p = get("update");
    let (h, body) = packet(&p);
    let Request::Update(d) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            d.space_id,
            d.index_id,
            d.index_base,
            d.key.unwrap().raw(),
            d.tuple.unwrap().raw()
        ),
        (512, 0, 1, &[0x91, 1][..], &ops[..])
    );
    assert_eq!(
        written(|b| encode::encode_update(b, 12, 512, 0, &[0x91, 1], &ops).unwrap()),
        p
    );

    // UPSERT 512 tuple {3, 'c'} ops {{'+', 1, 1}}
    let (tuple, ops) = (unhex("9203a163"), unhex("9193a12b0101"));
    let p = get("upsert");
    let (h, body) = packet(&p);
    let Request::Upsert(d) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (d.tuple.unwrap().raw(), d.ops.unwrap().raw()),
        (&tuple[..], &ops[..])
    );
    assert_eq!(
        written(|b| encode::encode_upsert(b, 13, 512, &tuple, &ops).unwrap()),
        p
    );

    // DELETE 512/0 key {1}
    let p = get("delete");
    let (h, body) = packet(&p);
    let Request::Delete(d) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (d.space_id, d.index_id, d.key.unwrap().raw()),
        (512, 0, &[0x91, 1][..])
    );
    assert_eq!(
        written(|b| encode::encode_delete(b, 14, 512, 0, &[0x91, 1]).unwrap()),
        p
    );

    // A guest's CALL of a dotted path with no arguments.
    let p = get("call_dotted_no_args");
    let (h, body) = packet(&p);
    let Request::Call(c) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!((c.name, c.args.len()), (&b"vshard.storage.call"[..], 0));
    assert_eq!(
        written(|b| encode::encode_call(b, 4, b"vshard.storage.call", &[0x90]).unwrap()),
        p
    );
}

#[test]
fn python_connector_requests_decode() {
    let req = load("requests.txt");
    // ID: {VERSION: 6, FEATURES: [2]}, header {TYPE, SYNC} with a fixint size.
    let p = &req["python_id"];
    let (h, body) = packet(p);
    let Request::Id(id) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    assert_eq!(
        (h.kind, id.version, id.feature_ids().collect::<Vec<_>>()),
        (kind::ID, 6, vec![2])
    );
    // Our ID encoder writes what decodes the same.
    let mine = written(|b| encode::encode_id(b, 0, 6, &[2], None).unwrap());
    let (h2, body2) = packet(&mine);
    assert_eq!(
        decode_request(&h2, body2).unwrap(),
        decode_request(&h, body).unwrap()
    );

    // AUTH with the scramble as MP_BIN and a header with SCHEMA_VERSION.
    let p = &req["python_auth"];
    let (h, body) = packet(p);
    assert_eq!(h.schema_version, Some(0));
    let Request::Auth(a) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    let m = a.method().unwrap().unwrap();
    assert_eq!(m.scramble, auth::scramble(&SALT, b"secret"));

    let p = &req["python_call"];
    let (h, body) = packet(p);
    let Request::Call(c) = decode_request(&h, body).unwrap() else {
        panic!()
    };
    // tarantool-python 1.3.0 sends sync 0 on a plain connection.
    assert_eq!(
        (h.sync, c.name, c.args.raw()),
        (0, &b"echo"[..], &unhex("9201a374776f")[..])
    );
}

/// Re-encodes a decoded response with the encoders and expects the bytes
/// Tarantool wrote.
fn reencode(pkt: &[u8]) -> Vec<u8> {
    let (h, body) = packet(pkt);
    let sv = h.schema_version.expect("2.6 always sends it") as u32;
    match decode_response(&h, body).unwrap() {
        Response::Ok { data: Some(d), .. } => written(|b| {
            encode::encode_data_reply(b, kind::OK, h.sync, sv, d.items_raw(), d.len()).unwrap()
        }),
        Response::Ok { data: None, body } => {
            assert_eq!(body, [0x80]);
            written(|b| encode::encode_ok(b, h.sync, sv).unwrap())
        }
        Response::Chunk { data } => {
            let d = data.unwrap();
            written(|b| {
                encode::encode_data_reply(b, kind::CHUNK, h.sync, sv, d.items_raw(), d.len())
                    .unwrap()
            })
        }
        Response::Error(e) => {
            let errors: Vec<_> = e
                .stack
                .unwrap()
                .errors()
                .unwrap()
                .map(|e| e.unwrap())
                .collect();
            assert_eq!(errors.len(), 1);
            let m = errors[0];
            let s = |b: &[u8]| std::str::from_utf8(b).unwrap().to_string();
            let (t, f) = (s(m.type_name), s(m.file));
            let info = ErrorInfo {
                code: m.code as u32,
                type_name: &t,
                message: m.message,
                file: &f,
                line: m.line as u32,
                errno: m.errno as u32,
                fields: m.fields,
                cause: None,
            };
            assert_eq!(e.code, info.code);
            assert_eq!(e.message, info.message);
            written(|b| encode::encode_error(b, h.sync, sv, &info).unwrap())
        }
    }
}

#[test]
fn tarantool_responses_decode_and_encode_byte_for_byte() {
    let resp = load("responses.txt");
    let mut n = 0;
    for (label, pkt) in &resp {
        if label == "greeting" {
            continue;
        }
        assert_eq!(&reencode(pkt), pkt, "{label}");
        n += 1;
    }
    assert!(n >= 20, "{n} responses");
}

fn error_of(pkt: &[u8]) -> (u32, String, String) {
    let (h, body) = packet(pkt);
    let Response::Error(e) = decode_response(&h, body).unwrap() else {
        panic!()
    };
    let top = e.stack.unwrap().top().unwrap();
    (
        e.code,
        String::from_utf8(e.message.to_vec()).unwrap(),
        String::from_utf8(top.type_name.to_vec()).unwrap(),
    )
}

#[test]
fn tarantool_responses_mean_what_26_said() {
    let r = load("responses.txt");
    let g = decode_greeting(&r["greeting"]).unwrap();
    assert_eq!(
        (g.version(), g.is_binary, g.salt().len()),
        ((2, 6, 0), true, 32)
    );
    assert!(g.uuid.is_some());

    let (h, _) = packet(&r["ping"]);
    assert_eq!((h.kind, h.sync, h.schema_version), (kind::OK, 1, Some(78)));

    assert_eq!(
        error_of(&r["guest_call_denied"]),
        (
            errcode::ACCESS_DENIED,
            "Execute access to function 'multi' is denied for user 'guest'".into(),
            "AccessDeniedError".into()
        )
    );
    assert_eq!(
        error_of(&r["guest_eval_denied"]).1,
        "Execute access to universe '' is denied for user 'guest'"
    );
    assert_eq!(error_of(&r["auth_unknown_user"]).0, errcode::NO_SUCH_USER);
    assert_eq!(
        error_of(&r["auth_wrong_password"]).0,
        errcode::CREDS_MISMATCH
    );
    assert_eq!(
        error_of(&r["call_missing"]),
        (
            33,
            "Procedure 'nosuchfn' is not defined".into(),
            "ClientError".into()
        )
    );
    assert_eq!(
        error_of(&r["call_lua_error"]),
        (32, "server.lua:9: boom".into(), "LuajitError".into())
    );
    assert_eq!(
        error_of(&r["select_missing_space"]).0,
        errcode::NO_SUCH_SPACE
    );
    assert_eq!(
        error_of(&r["unknown_type_73"]),
        (48, "Unknown request type 73".into(), "ClientError".into())
    );
    // A custom error's payload: {custom_type = 'MyError'}.
    let (h, body) = packet(&r["call_custom_error"]);
    let Response::Error(e) = decode_response(&h, body).unwrap() else {
        panic!()
    };
    let top = e.stack.unwrap().top().unwrap();
    assert_eq!((e.code, top.type_name), (0, &b"CustomError"[..]));
    assert_eq!(
        top.fields.unwrap(),
        unhex("81ab637573746f6d5f74797065a74d794572726f72")
    );

    // Multiple returns, nils kept; CALL_16 wraps scalars.
    let data = |l: &str| {
        let (h, body) = packet(&r[l]);
        match decode_response(&h, body).unwrap() {
            Response::Ok { data: Some(d), .. } | Response::Chunk { data: Some(d) } => {
                d.raw().to_vec()
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(data("call_multi"), unhex("dd0000000301c0a178"));
    assert_eq!(data("call16_echo"), unhex("dd00000002910191a161"));
    assert_eq!(data("call_no_returns"), unhex("dd00000000"));
    for i in 1..=3 {
        let (h, _) = packet(&r[&format!("call_push3_chunk{i}")]);
        assert_eq!((h.kind, h.sync), (kind::CHUNK, 18));
        assert_eq!(
            data(&format!("call_push3_chunk{i}")),
            [&unhex("dd00000001a46d7367")[..], &[b'0' + i]].concat()
        );
    }
    let (h, _) = packet(&r["call_big_sync"]);
    assert_eq!(h.sync, (1 << 40) + 5);
}

#[test]
fn greeting_is_encoded_as_tarantool_lays_it_out() {
    let r = load("responses.txt");
    let real = &r["greeting"];
    let g = decode_greeting(real).unwrap();
    let uuid = std::str::from_utf8(&g.uuid.unwrap()).unwrap().to_string();
    let salt: [u8; 32] = g.salt().try_into().unwrap();
    assert_eq!(
        &luafiber_iproto::encode_greeting("2.6.0", &uuid, &salt)[..],
        &real[..]
    );
}
