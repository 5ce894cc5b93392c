//! A bounded, seeded mutation run of every decoder: packets real
//! Tarantool programs produced (`tests/data/`) cut, flipped, spliced,
//! re-framed and mixed with random bytes, `PACKETS` of them in all. Nothing
//! may panic; the same seed gives the same run. `iproto/fuzz/` runs the
//! same checks under `cargo fuzz` without a bound.

use luafiber_iproto::decode_everything;

/// Packets fed to the decoders (half of the 1,000,000; a live
/// server takes the other half, `tests/iproto_fuzz.rs`).
const PACKETS: usize = 500_000;

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in ["requests.txt", "responses.txt"] {
        let path = format!("{}/tests/data/{f}", env!("CARGO_MANIFEST_DIR"));
        for line in std::fs::read_to_string(path).unwrap().lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let hex = line.rsplit(' ').next().unwrap();
            out.push(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            );
        }
    }
    out
}

/// Bytes that MessagePack gives meaning to: markers of every type and
/// length, and the protocol's keys.
const INTERESTING: &[u8] = &[
    0x00, 0x01, 0x05, 0x0a, 0x10, 0x20, 0x21, 0x22, 0x23, 0x27, 0x30, 0x31, 0x52, 0x54, 0x55, 0x7f,
    0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9,
    0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde,
    0xdf, 0xe0, 0xff,
];

/// One mutated input from the corpus.
fn mutate(rng: &mut Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut p = corpus[rng.below(corpus.len())].clone();
    match rng.below(8) {
        // random bytes
        0 => {
            let n = rng.below(300);
            return (0..n).map(|_| rng.next() as u8).collect();
        }
        // truncate
        1 => p.truncate(rng.below(p.len() + 1)),
        // splice two packets
        2 => {
            let q = &corpus[rng.below(corpus.len())];
            let cut = rng.below(p.len() + 1);
            p.truncate(cut);
            p.extend_from_slice(&q[rng.below(q.len() + 1)..]);
        }
        // a new size prefix (maybe huge, maybe a lie)
        3 => {
            let at = if p.first() == Some(&0xce) { 5 } else { 0 };
            let body = p.split_off(at.min(p.len()));
            let len = match rng.below(3) {
                0 => body.len() as u32,
                1 => rng.next() as u32,
                _ => (body.len() as u32)
                    .wrapping_add(rng.below(5) as u32)
                    .wrapping_sub(2),
            };
            p = [&[0xce][..], &len.to_be_bytes(), &body].concat();
        }
        _ => {}
    }
    // point mutations, then re-frame half the time so the body decoders
    // see them
    for _ in 0..1 + rng.below(4) {
        if p.is_empty() {
            break;
        }
        let i = rng.below(p.len());
        match rng.below(4) {
            0 => p[i] ^= 1 << rng.below(8),
            1 => p[i] = INTERESTING[rng.below(INTERESTING.len())],
            2 => {
                p.remove(i);
            }
            _ => p.insert(i, INTERESTING[rng.below(INTERESTING.len())]),
        }
    }
    if rng.below(2) == 0 && p.len() > 5 && p[0] == 0xce {
        let len = (p.len() - 5) as u32;
        p[1..5].copy_from_slice(&len.to_be_bytes());
    }
    p
}

#[test]
fn half_a_million_mutated_packets_crash_no_decoder() {
    let corpus = corpus();
    assert!(corpus.len() > 40);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut fed, mut framed) = (0usize, 0usize);
    while fed < PACKETS {
        let input = mutate(&mut rng, &corpus);
        framed += decode_everything(&input);
        fed += 1;
    }
    // The corpus itself decodes whole.
    for p in &corpus[..] {
        decode_everything(p);
    }
    eprintln!("{fed} inputs fed to the decoders, {framed} whole packets framed among them");
    assert!(
        framed > PACKETS / 4,
        "mutations kept many packets framed: {framed}"
    );
}
