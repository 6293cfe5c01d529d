//! `hash5` and `hash5_sym`: the 5-tuple hash that the engine, the P4 and
//! OVS targets and the verifier must compute identically.
//!
//! Definition (normative text and test vectors: `specs/functors.md`):
//! CRC-32/ISO-HDLC (zlib's `crc32`, IEEE 802.3; BMv2's
//! `HashAlgorithm.crc32`) over the byte string
//! `proto (1) ‖ src_ip (4 or 16, big-endian) ‖ dst_ip ‖ src_port (2, BE) ‖
//! dst_port (2, BE)`: 13 bytes for IPv4, 37 for IPv6. The symmetric variant
//! first puts the smaller endpoint `(address, port)` first.
//!
//! Other crates should build the input with [`hash5_bytes_v4`] /
//! [`hash5_bytes_v6`] (or [`hash5_bytes`] from values) rather than
//! re-deriving the layout. Guarantees: no panics; value-level functions
//! return `None` when an argument is out of range (proto outside 0..=255,
//! port outside 0..=65535, addresses of different families, wrong types).

use crate::value::Value;

/// Length of the `hash5` input for IPv4 endpoints.
pub const HASH5_V4_LEN: usize = 13;
/// Length of the `hash5` input for IPv6 endpoints.
pub const HASH5_V6_LEN: usize = 37;

/// CRC-32/ISO-HDLC: poly 0x04C11DB7 (reflected 0xEDB88320), init
/// 0xFFFFFFFF, input and output reflected, xorout 0xFFFFFFFF.
/// `crc32(b"123456789") == 0xCBF43926`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The `hash5` input for IPv4: proto ‖ src ‖ dst ‖ sport ‖ dport, every
/// field big-endian (network byte order).
pub fn hash5_bytes_v4(proto: u8, src: u32, dst: u32, sport: u16, dport: u16) -> [u8; HASH5_V4_LEN] {
    let mut b = [0u8; HASH5_V4_LEN];
    b[0] = proto;
    b[1..5].copy_from_slice(&src.to_be_bytes());
    b[5..9].copy_from_slice(&dst.to_be_bytes());
    b[9..11].copy_from_slice(&sport.to_be_bytes());
    b[11..13].copy_from_slice(&dport.to_be_bytes());
    b
}

/// The `hash5` input for IPv6: proto ‖ src ‖ dst ‖ sport ‖ dport, every
/// field big-endian (network byte order).
pub fn hash5_bytes_v6(
    proto: u8,
    src: u128,
    dst: u128,
    sport: u16,
    dport: u16,
) -> [u8; HASH5_V6_LEN] {
    let mut b = [0u8; HASH5_V6_LEN];
    b[0] = proto;
    b[1..17].copy_from_slice(&src.to_be_bytes());
    b[17..33].copy_from_slice(&dst.to_be_bytes());
    b[33..35].copy_from_slice(&sport.to_be_bytes());
    b[35..37].copy_from_slice(&dport.to_be_bytes());
    b
}

/// Orders two endpoints for the symmetric hash: returns
/// `(src, sport, dst, dport)` unchanged if `(src, sport) <= (dst, dport)`
/// (address compared as an unsigned integer first, then port), else the
/// two endpoints swapped.
pub fn symmetric_order<A: Ord>(src: A, sport: u16, dst: A, dport: u16) -> (A, u16, A, u16) {
    if (&src, sport) > (&dst, dport) {
        (dst, dport, src, sport)
    } else {
        (src, sport, dst, dport)
    }
}

pub fn hash5_v4(proto: u8, src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
    crc32(&hash5_bytes_v4(proto, src, dst, sport, dport))
}

pub fn hash5_v6(proto: u8, src: u128, dst: u128, sport: u16, dport: u16) -> u32 {
    crc32(&hash5_bytes_v6(proto, src, dst, sport, dport))
}

pub fn hash5_sym_v4(proto: u8, src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
    let (s, sp, d, dp) = symmetric_order(src, sport, dst, dport);
    hash5_v4(proto, s, d, sp, dp)
}

pub fn hash5_sym_v6(proto: u8, src: u128, dst: u128, sport: u16, dport: u16) -> u32 {
    let (s, sp, d, dp) = symmetric_order(src, sport, dst, dport);
    hash5_v6(proto, s, d, sp, dp)
}

/// The `hash5` input for the arguments of a `hash5`/`hash5_sym` call
/// `(proto, src_ip, dst_ip, src_port, dst_port)`, after the symmetric swap
/// when `symmetric`. `None` when the arguments are out of range or ill-typed.
pub fn hash5_bytes(args: &[Value], symmetric: bool) -> Option<Vec<u8>> {
    let [proto, src, dst, sport, dport] = args else {
        return None;
    };
    let proto = u8::try_from(super::int_arg(proto)?).ok()?;
    let sport = u16::try_from(super::int_arg(sport)?).ok()?;
    let dport = u16::try_from(super::int_arg(dport)?).ok()?;
    match (*src, *dst) {
        (Value::Ipv4(s), Value::Ipv4(d)) => {
            let (s, sp, d, dp) = if symmetric {
                symmetric_order(s, sport, d, dport)
            } else {
                (s, sport, d, dport)
            };
            Some(hash5_bytes_v4(proto, s, d, sp, dp).to_vec())
        }
        (Value::Ipv6(s), Value::Ipv6(d)) => {
            let (s, sp, d, dp) = if symmetric {
                symmetric_order(s, sport, d, dport)
            } else {
                (s, sport, d, dport)
            };
            Some(hash5_bytes_v6(proto, s, d, sp, dp).to_vec())
        }
        _ => None,
    }
}

/// `hash5(...)` (or `hash5_sym(...)` when `symmetric`) of call arguments.
pub fn hash5_value(args: &[Value], symmetric: bool) -> Option<u32> {
    hash5_bytes(args, symmetric).map(|b| crc32(&b))
}
