//! Conformance tests for `hash5` / `hash5_sym` through the public API only.
//!
//! The vectors are the table in `specs/functors.md` (computed independently
//! with Python's `zlib.crc32` over the documented byte layout); the CRC is
//! also checked against a literal transcription of BMv2's `crc32` (MSB-first
//! table algorithm with reflected input and output), which is what a P4
//! `HashAlgorithm.crc32` computes on the simple_switch target.

use netc_compiler::functors::{
    self, crc32, hash5_bytes, hash5_bytes_v4, hash5_bytes_v6, hash5_sym_v4, hash5_sym_v6, hash5_v4,
    hash5_v6, Builtin, HASH5_V4_LEN, HASH5_V6_LEN,
};
use netc_compiler::types::Prim;
use netc_compiler::value::Value;
use proptest::prelude::*;

struct Vector {
    proto: u8,
    src: &'static str,
    dst: &'static str,
    sport: u16,
    dport: u16,
    bytes: &'static str,
    hash5: u32,
    hash5_sym: u32,
}

#[rustfmt::skip]
const VECTORS: &[Vector] = &[
    Vector { proto: 6, src: "10.0.0.1", dst: "10.0.0.2", sport: 12345, dport: 80, bytes: "060a0000010a00000230390050", hash5: 0x09275D9F, hash5_sym: 0x09275D9F },
    Vector { proto: 6, src: "10.0.0.2", dst: "10.0.0.1", sport: 80, dport: 12345, bytes: "060a0000020a00000100503039", hash5: 0x2B0FFC8B, hash5_sym: 0x09275D9F },
    Vector { proto: 17, src: "192.168.1.10", dst: "8.8.8.8", sport: 53, dport: 53, bytes: "11c0a8010a0808080800350035", hash5: 0x4F292446, hash5_sym: 0x8938BEE8 },
    Vector { proto: 1, src: "10.1.2.3", dst: "10.1.2.3", sport: 0, dport: 0, bytes: "010a0102030a01020300000000", hash5: 0xF9FC88F9, hash5_sym: 0xF9FC88F9 },
    Vector { proto: 0, src: "0.0.0.0", dst: "0.0.0.0", sport: 0, dport: 0, bytes: "00000000000000000000000000", hash5: 0x0F744682, hash5_sym: 0x0F744682 },
    Vector { proto: 255, src: "255.255.255.255", dst: "255.255.255.255", sport: 65535, dport: 65535, bytes: "ffffffffffffffffffffffffff", hash5: 0xF2D6F3C1, hash5_sym: 0xF2D6F3C1 },
    Vector { proto: 6, src: "10.0.0.5", dst: "10.0.0.5", sport: 8080, dport: 80, bytes: "060a0000050a0000051f900050", hash5: 0xC8130904, hash5_sym: 0x07F814A3 },
    Vector { proto: 6, src: "10.0.0.5", dst: "10.0.0.5", sport: 80, dport: 8080, bytes: "060a0000050a00000500501f90", hash5: 0x07F814A3, hash5_sym: 0x07F814A3 },
    Vector { proto: 6, src: "10.0.0.1", dst: "10.0.0.2", sport: 65535, dport: 1, bytes: "060a0000010a000002ffff0001", hash5: 0xAE47285F, hash5_sym: 0xAE47285F },
    Vector { proto: 6, src: "10.0.0.2", dst: "10.0.0.1", sport: 1, dport: 65535, bytes: "060a0000020a0000010001ffff", hash5: 0x78141408, hash5_sym: 0xAE47285F },
    Vector { proto: 6, src: "2001:db8::1", dst: "2001:db8::2", sport: 443, dport: 50000, bytes: "0620010db800000000000000000000000120010db800000000000000000000000201bbc350", hash5: 0xEE788C4B, hash5_sym: 0xEE788C4B },
    Vector { proto: 6, src: "2001:db8::2", dst: "2001:db8::1", sport: 50000, dport: 443, bytes: "0620010db800000000000000000000000220010db8000000000000000000000001c35001bb", hash5: 0x6521E388, hash5_sym: 0xEE788C4B },
    Vector { proto: 17, src: "::", dst: "ff02::1", sport: 546, dport: 547, bytes: "1100000000000000000000000000000000ff02000000000000000000000000000102220223", hash5: 0x56F43947, hash5_sym: 0x56F43947 },
    Vector { proto: 0, src: "::", dst: "::", sport: 0, dport: 0, bytes: "00000000000000000000000000000000000000000000000000000000000000000000000000", hash5: 0x24D17F64, hash5_sym: 0x24D17F64 },
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn addr(text: &str) -> Value {
    let ty = if text.contains(':') {
        Prim::Ipv6
    } else {
        Prim::Ipv4
    };
    Value::parse(text, ty).unwrap()
}

/// BMv2's `crc32` (src/bm_sim/calculations.cpp), transcribed literally:
/// MSB-first table for 0x04C11DB7, input bytes and the final remainder
/// bit-reflected, init and final xor 0xFFFFFFFF.
fn bmv2_crc32(buf: &[u8]) -> u32 {
    fn reflect(mut data: u32, nbits: u32) -> u32 {
        let mut r = 0;
        for bit in 0..nbits {
            if data & 1 == 1 {
                r |= 1 << (nbits - 1 - bit);
            }
            data >>= 1;
        }
        r
    }
    let mut table = [0u32; 256];
    for (dividend, entry) in table.iter_mut().enumerate() {
        let mut rem = (dividend as u32) << 24;
        for _ in 0..8 {
            rem = if rem & 0x8000_0000 != 0 {
                (rem << 1) ^ 0x04C1_1DB7
            } else {
                rem << 1
            };
        }
        *entry = rem;
    }
    let mut rem: u32 = 0xFFFF_FFFF;
    for &b in buf {
        let data = reflect(u32::from(b), 8) ^ (rem >> 24);
        rem = table[data as usize] ^ (rem << 8);
    }
    reflect(rem, 32) ^ 0xFFFF_FFFF
}

#[test]
fn crc32_is_crc32_iso_hdlc() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(bmv2_crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b""), 0);
}

#[test]
fn spec_vectors() {
    for t in VECTORS {
        let (src, dst) = (addr(t.src), addr(t.dst));
        let args = [
            Value::Number(i64::from(t.proto)),
            src,
            dst,
            Value::Number(i64::from(t.sport)),
            Value::Number(i64::from(t.dport)),
        ];
        let bytes = hash5_bytes(&args, false).unwrap();
        assert_eq!(hex(&bytes), t.bytes, "layout of {}", t.bytes);
        assert_eq!(crc32(&bytes), t.hash5);
        assert_eq!(bmv2_crc32(&bytes), t.hash5, "BMv2 agrees on {}", t.bytes);
        assert_eq!(
            functors::eval(Builtin::Hash5, &args),
            Some(Value::Unsigned(u64::from(t.hash5)))
        );
        assert_eq!(
            functors::eval(Builtin::Hash5Sym, &args),
            Some(Value::Unsigned(u64::from(t.hash5_sym)))
        );
        match (src, dst) {
            (Value::Ipv4(s), Value::Ipv4(d)) => {
                assert_eq!(bytes.len(), HASH5_V4_LEN);
                assert_eq!(
                    hash5_bytes_v4(t.proto, s, d, t.sport, t.dport).as_slice(),
                    bytes.as_slice()
                );
                assert_eq!(hash5_v4(t.proto, s, d, t.sport, t.dport), t.hash5);
                assert_eq!(hash5_sym_v4(t.proto, s, d, t.sport, t.dport), t.hash5_sym);
            }
            (Value::Ipv6(s), Value::Ipv6(d)) => {
                assert_eq!(bytes.len(), HASH5_V6_LEN);
                assert_eq!(
                    hash5_bytes_v6(t.proto, s, d, t.sport, t.dport).as_slice(),
                    bytes.as_slice()
                );
                assert_eq!(hash5_v6(t.proto, s, d, t.sport, t.dport), t.hash5);
                assert_eq!(hash5_sym_v6(t.proto, s, d, t.sport, t.dport), t.hash5_sym);
            }
            _ => unreachable!("vectors use one family per row"),
        }
    }
}

#[test]
fn the_checker_finds_hash5_by_name_with_unsigned_result() {
    let sigs = functors::overloads("hash5_sym").unwrap();
    assert!(sigs
        .iter()
        .all(|s| s.builtin == Builtin::Hash5Sym && s.result == functors::Ty::P(Prim::Unsigned)));
    assert!(functors::names().contains(&"hash5"));
}

proptest! {
    #[test]
    fn crc32fast_agrees_with_bmv2(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(crc32(&bytes), bmv2_crc32(&bytes));
    }

    #[test]
    fn hash5_sym_is_the_same_in_both_directions(p in any::<u8>(), a in any::<u32>(), b in any::<u32>(), x in any::<u16>(), y in any::<u16>()) {
        prop_assert_eq!(hash5_sym_v4(p, a, b, x, y), hash5_sym_v4(p, b, a, y, x));
        // And it is hash5 of the ordered direction.
        let ordered = if (a, x) <= (b, y) { hash5_v4(p, a, b, x, y) } else { hash5_v4(p, b, a, y, x) };
        prop_assert_eq!(hash5_sym_v4(p, a, b, x, y), ordered);
    }

    #[test]
    fn hash5_sym_v6_is_the_same_in_both_directions(p in any::<u8>(), a in any::<u128>(), b in any::<u128>(), x in any::<u16>(), y in any::<u16>()) {
        prop_assert_eq!(hash5_sym_v6(p, a, b, x, y), hash5_sym_v6(p, b, a, y, x));
    }
}
