//! Network functors on addresses and prefixes: `contains(prefix, x)`,
//! `prefix_len`, `network`, `broadcast`, `nth_addr`, `prefix`, and the
//! conversions between `ipv4`/`mac` and `unsigned`.
//!
//! Expects prefix values as [`Value`] documents them (length within the
//! family's range, host bits zero), but does not trust it: a length out of
//! range makes every functor undefined (`None` / `false`) instead of
//! panicking, and host bits are masked off before use. Guarantees: results
//! are well-formed values (prefixes have clear host bits, MACs fit 48 bits).

use super::{int_arg, Builtin};
use crate::value::Value;

/// The netmask of an IPv4 prefix length, `None` if the length exceeds 32.
fn mask4(len: u8) -> Option<u32> {
    match len {
        0 => Some(0),
        1..=32 => Some(u32::MAX << (32 - u32::from(len))),
        _ => None,
    }
}

/// The netmask of an IPv6 prefix length, `None` if the length exceeds 128.
fn mask6(len: u8) -> Option<u128> {
    match len {
        0 => Some(0),
        1..=128 => Some(u128::MAX << (128 - u32::from(len))),
        _ => None,
    }
}

/// `contains(p, x)`: whether the address `x` lies in `p`, or whether the
/// prefix `x` is a subnet of `p` (equal prefixes contain each other).
pub(super) fn contains(p: &Value, x: &Value) -> bool {
    let check = || -> Option<bool> {
        Some(match (*p, *x) {
            (Value::Prefix4(a, l), Value::Ipv4(x)) => {
                let m = mask4(l)?;
                x & m == a & m
            }
            (Value::Prefix6(a, l), Value::Ipv6(x)) => {
                let m = mask6(l)?;
                x & m == a & m
            }
            (Value::Prefix4(a, l), Value::Prefix4(b, k)) => {
                let m = mask4(l)?;
                mask4(k)?;
                l <= k && b & m == a & m
            }
            (Value::Prefix6(a, l), Value::Prefix6(b, k)) => {
                let m = mask6(l)?;
                mask6(k)?;
                l <= k && b & m == a & m
            }
            _ => return None,
        })
    };
    check().unwrap_or(false)
}

/// `prefix_len(p)`.
pub(super) fn prefix_len(p: &Value) -> Option<Value> {
    match *p {
        Value::Prefix4(_, l) => mask4(l).map(|_| Value::Number(i64::from(l))),
        Value::Prefix6(_, l) => mask6(l).map(|_| Value::Number(i64::from(l))),
        _ => None,
    }
}

/// `network(p)`: the first address of `p`.
pub(super) fn first(p: &Value) -> Option<Value> {
    match *p {
        Value::Prefix4(a, l) => Some(Value::Ipv4(a & mask4(l)?)),
        Value::Prefix6(a, l) => Some(Value::Ipv6(a & mask6(l)?)),
        _ => None,
    }
}

/// `broadcast(p)`: the last address of `p` (all host bits set).
pub(super) fn last(p: &Value) -> Option<Value> {
    match *p {
        Value::Prefix4(a, l) => {
            let m = mask4(l)?;
            Some(Value::Ipv4((a & m) | !m))
        }
        Value::Prefix6(a, l) => {
            let m = mask6(l)?;
            Some(Value::Ipv6((a & m) | !m))
        }
        _ => None,
    }
}

/// `nth_addr(p, n)`: the address `network(p) + n`; undefined unless
/// `0 <= n < 2^(host bits)`.
pub(super) fn nth_addr(p: &Value, n: &Value) -> Option<Value> {
    let n = u128::try_from(int_arg(n)?).ok()?;
    let fits = |host_bits: u32| host_bits >= 128 || n < (1u128 << host_bits);
    match *p {
        Value::Prefix4(a, l) => {
            let m = mask4(l)?;
            if !fits(32 - u32::from(l)) {
                return None;
            }
            let n = u32::try_from(n).ok()?;
            Some(Value::Ipv4((a & m) | n))
        }
        Value::Prefix6(a, l) => {
            let m = mask6(l)?;
            if !fits(128 - u32::from(l)) {
                return None;
            }
            Some(Value::Ipv6((a & m) | n))
        }
        _ => None,
    }
}

/// `prefix(addr, len)`: the prefix of length `len` containing `addr` (host
/// bits cleared); undefined unless `0 <= len <= 32` (ipv4) / `128` (ipv6).
pub(super) fn make_prefix(addr: &Value, len: &Value) -> Option<Value> {
    let len = u8::try_from(int_arg(len)?).ok()?;
    match *addr {
        Value::Ipv4(a) => Some(Value::Prefix4(a & mask4(len)?, len)),
        Value::Ipv6(a) => Some(Value::Prefix6(a & mask6(len)?, len)),
        _ => None,
    }
}

/// `ipv4_to_unsigned`, `unsigned_to_ipv4`, `mac_to_unsigned`,
/// `unsigned_to_mac`: the address as an integer (big-endian bit order, so
/// 10.0.0.1 is 167772161 and de:ad:be:ef:00:01 is 0xdeadbeef0001). The
/// conversions to an address are undefined when the integer does not fit
/// (≥ 2^32, ≥ 2^48).
pub(super) fn convert(f: Builtin, v: &Value) -> Option<Value> {
    const MAC_MAX: u64 = (1 << 48) - 1;
    match (f, *v) {
        (Builtin::Ipv4ToUnsigned, Value::Ipv4(a)) => Some(Value::Unsigned(u64::from(a))),
        (Builtin::UnsignedToIpv4, Value::Unsigned(u)) => u32::try_from(u).ok().map(Value::Ipv4),
        (Builtin::MacToUnsigned, Value::Mac(m)) if m <= MAC_MAX => Some(Value::Unsigned(m)),
        (Builtin::UnsignedToMac, Value::Unsigned(u)) if u <= MAC_MAX => Some(Value::Mac(u)),
        _ => None,
    }
}
