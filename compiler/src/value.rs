//! Runtime values and rows, and their text forms.
//!
//! A [`Value`] is one attribute of one tuple. Symbols are interned process-wide
//! ([`Sym`] is a `u32`), so rows are cheap to clone, hash and compare inside
//! the engine. Equality and hashing of symbols use the id; *ordering* of two
//! values always follows the value's meaning (numbers numerically, symbols by
//! text, addresses by bits), so sorted output and `<` never depend on the
//! order in which symbols happened to be interned.
//!
//! Text forms ([`Value::parse`], `Display`) are the ones used in facts files,
//! CSV outputs and update scripts.

use crate::types::Prim;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, OnceLock, RwLock};

/// An interned symbol.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sym(pub u32);

#[derive(Default)]
struct Interner {
    ids: HashMap<Arc<str>, u32>,
    strs: Vec<Arc<str>>,
}

fn interner() -> &'static RwLock<Interner> {
    static I: OnceLock<RwLock<Interner>> = OnceLock::new();
    I.get_or_init(Default::default)
}

impl Sym {
    pub fn new(s: &str) -> Sym {
        if let Some(&id) = interner().read().unwrap().ids.get(s) {
            return Sym(id);
        }
        let mut w = interner().write().unwrap();
        if let Some(&id) = w.ids.get(s) {
            return Sym(id);
        }
        let id = w.strs.len() as u32;
        let a: Arc<str> = Arc::from(s);
        w.strs.push(a.clone());
        w.ids.insert(a, id);
        Sym(id)
    }

    pub fn as_str(self) -> Arc<str> {
        interner().read().unwrap().strs[self.0 as usize].clone()
    }

    /// The symbol's text, borrowed for good: as [`Sym::as_str`] without
    /// touching the `Arc`'s shared count.
    pub fn text(self) -> &'static str {
        let i = interner().read().unwrap();
        Interner::text(&i, self)
    }

    /// The texts of `syms`, in order, appended to `out` under one read of
    /// the interner: for threads that format many symbols side by side
    /// (`netc compile` renders on two), one lock per batch instead of a
    /// contended lock and count per symbol. `syms` must not itself read
    /// the interner (it runs under the lock).
    pub fn texts(syms: impl IntoIterator<Item = Sym>, out: &mut Vec<&'static str>) {
        let i = interner().read().unwrap();
        out.extend(syms.into_iter().map(|s| Interner::text(&i, s)));
    }
}

impl Interner {
    fn text(&self, s: Sym) -> &'static str {
        // SAFETY: the interner is a static that only grows: every Arc it
        // holds lives (and its text stays where it is) until the process
        // ends, so a reference to the text is valid for 'static.
        unsafe { &*Arc::as_ptr(&self.strs[s.0 as usize]) }
    }
}

impl PartialOrd for Sym {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Sym {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.0 == other.0 {
            return Ordering::Equal;
        }
        let i = interner().read().unwrap();
        i.strs[self.0 as usize].cmp(&i.strs[other.0 as usize])
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.as_str())
    }
}

/// A float with a total order (IEEE `totalOrder`), so it can live in rows.
#[derive(Clone, Copy, Debug)]
pub struct F64(pub f64);

impl PartialEq for F64 {
    fn eq(&self, o: &Self) -> bool {
        self.0.total_cmp(&o.0) == Ordering::Equal
    }
}
impl Eq for F64 {}
impl PartialOrd for F64 {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for F64 {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}
impl std::hash::Hash for F64 {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}

/// One attribute value. The variant order is the cross-type order used only
/// when a union column mixes types (IPv4 before IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    Number(i64),
    Unsigned(u64),
    Float(F64),
    Symbol(Sym),
    Ipv4(u32),
    Ipv6(u128),
    /// Network address (host bits zero) and length 0..=32.
    Prefix4(u32, u8),
    /// Network address (host bits zero) and length 0..=128.
    Prefix6(u128, u8),
    /// 48-bit MAC in the low bits.
    Mac(u64),
}

/// A tuple.
pub type Row = Vec<Value>;

/// Why a text could not be read as a value of a type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a valid {ty}: {reason}")]
pub struct ParseValueError {
    pub text: String,
    pub ty: Prim,
    pub reason: &'static str,
}

impl Value {
    pub fn prim(&self) -> Prim {
        match self {
            Value::Number(_) => Prim::Number,
            Value::Unsigned(_) => Prim::Unsigned,
            Value::Float(_) => Prim::Float,
            Value::Symbol(_) => Prim::Symbol,
            Value::Ipv4(_) => Prim::Ipv4,
            Value::Ipv6(_) => Prim::Ipv6,
            Value::Prefix4(..) => Prim::Prefix4,
            Value::Prefix6(..) => Prim::Prefix6,
            Value::Mac(_) => Prim::Mac,
        }
    }

    pub fn sym(s: &str) -> Value {
        Value::Symbol(Sym::new(s))
    }

    /// Reads the text form of a value of type `ty` (facts files, scripts).
    /// Symbols take the text verbatim.
    pub fn parse(text: &str, ty: Prim) -> Result<Value, ParseValueError> {
        let err = |reason| ParseValueError {
            text: text.to_string(),
            ty,
            reason,
        };
        let t = text.trim();
        match ty {
            Prim::Symbol => Ok(Value::sym(text)),
            Prim::Number => parse_int(t)
                .map(Value::Number)
                .ok_or_else(|| err("expected a signed 64-bit integer")),
            Prim::Unsigned => parse_uint(t)
                .map(Value::Unsigned)
                .ok_or_else(|| err("expected an unsigned 64-bit integer")),
            Prim::Float => t
                .parse::<f64>()
                .map(|f| Value::Float(F64(f)))
                .map_err(|_| err("expected a number")),
            Prim::Ipv4 => t
                .parse::<Ipv4Addr>()
                .map(|a| Value::Ipv4(a.into()))
                .map_err(|_| err("expected a dotted quad such as 10.0.0.1")),
            Prim::Ipv6 => t
                .parse::<Ipv6Addr>()
                .map(|a| Value::Ipv6(a.into()))
                .map_err(|_| err("expected an IPv6 address such as 2001:db8::1")),
            Prim::Prefix4 => {
                let (a, l) = t
                    .split_once('/')
                    .ok_or_else(|| err("expected address/length such as 10.0.0.0/8"))?;
                let a: u32 = a
                    .parse::<Ipv4Addr>()
                    .map_err(|_| err("the address part is not IPv4"))?
                    .into();
                let l: u8 = l
                    .parse()
                    .ok()
                    .filter(|l| *l <= 32)
                    .ok_or_else(|| err("the length must be 0..=32"))?;
                if a & !mask4(l) != 0 {
                    return Err(err("host bits are set; write the network address"));
                }
                Ok(Value::Prefix4(a, l))
            }
            Prim::Prefix6 => {
                let (a, l) = t
                    .split_once('/')
                    .ok_or_else(|| err("expected address/length such as 2001:db8::/32"))?;
                let a: u128 = a
                    .parse::<Ipv6Addr>()
                    .map_err(|_| err("the address part is not IPv6"))?
                    .into();
                let l: u8 = l
                    .parse()
                    .ok()
                    .filter(|l| *l <= 128)
                    .ok_or_else(|| err("the length must be 0..=128"))?;
                if a & !mask6(l) != 0 {
                    return Err(err("host bits are set; write the network address"));
                }
                Ok(Value::Prefix6(a, l))
            }
            Prim::Mac => parse_mac(t)
                .map(Value::Mac)
                .ok_or_else(|| err("expected six hex octets such as de:ad:be:ef:00:01")),
        }
    }
}

/// Reads a signed integer: decimal, `0x` hex or `0b` binary, optional sign.
pub fn parse_int(t: &str) -> Option<i64> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let mag = parse_uint(body)? as i128;
    let v = if neg { -mag } else { mag };
    i64::try_from(v).ok()
}

/// Reads an unsigned integer: decimal, `0x` hex or `0b` binary.
pub fn parse_uint(t: &str) -> Option<u64> {
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()
    } else if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
        t.parse().ok()
    } else {
        None
    }
}

pub fn parse_mac(t: &str) -> Option<u64> {
    let parts: Vec<&str> = t.split([':', '-']).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut v = 0u64;
    for p in parts {
        if p.len() != 2 {
            return None;
        }
        v = (v << 8) | u64::from_str_radix(p, 16).ok()?;
    }
    Some(v)
}

/// The netmask of an IPv4 prefix length.
pub fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

/// The netmask of an IPv6 prefix length.
pub fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Number(n) => write!(f, "{n}"),
            Value::Unsigned(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{}", x.0),
            Value::Symbol(s) => f.write_str(&s.as_str()),
            Value::Ipv4(a) => write!(f, "{}", Ipv4Addr::from(*a)),
            Value::Ipv6(a) => write!(f, "{}", Ipv6Addr::from(*a)),
            Value::Prefix4(a, l) => write!(f, "{}/{}", Ipv4Addr::from(*a), l),
            Value::Prefix6(a, l) => write!(f, "{}/{}", Ipv6Addr::from(*a), l),
            Value::Mac(m) => {
                let b = m.to_be_bytes();
                write!(
                    f,
                    "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                    b[2], b[3], b[4], b[5], b[6], b[7]
                )
            }
        }
    }
}

/// Joins a row's values with tabs (the facts/CSV line form).
pub fn row_to_tsv(row: &[Value]) -> String {
    row.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join("\t")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_values_round_trip_through_text() {
        for (text, ty) in [
            ("10.0.0.1", Prim::Ipv4),
            ("2001:db8::1", Prim::Ipv6),
            ("10.0.0.0/8", Prim::Prefix4),
            ("2001:db8::/32", Prim::Prefix6),
            ("de:ad:be:ef:00:01", Prim::Mac),
            ("-42", Prim::Number),
            ("18446744073709551615", Prim::Unsigned),
        ] {
            let v = Value::parse(text, ty).unwrap();
            assert_eq!(v.to_string(), text);
            assert_eq!(v.prim(), ty);
        }
    }

    #[test]
    fn prefixes_with_host_bits_are_rejected() {
        let e = Value::parse("10.0.0.1/8", Prim::Prefix4).unwrap_err();
        assert!(e.reason.contains("host bits"));
    }

    #[test]
    fn symbols_order_by_text_not_by_intern_order() {
        let z = Value::sym("zeta-first-interned");
        let a = Value::sym("alpha-second-interned");
        assert!(a < z);
    }

    #[test]
    fn addresses_order_numerically() {
        let a = Value::parse("9.0.0.1", Prim::Ipv4).unwrap();
        let b = Value::parse("10.0.0.1", Prim::Ipv4).unwrap();
        assert!(a < b);
    }
}
