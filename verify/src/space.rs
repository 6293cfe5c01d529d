//! Header spaces: sets of packets as BDDs (biodivine-lib-bdd).
//!
//! Expects: fields named as in `ovs-fields(7)`. Guarantees: one BDD variable
//! per bit of every *packet header* field a packet carries from the VM that
//! sent it ([`HEADER_FIELDS`], most significant bit first, fields in a fixed
//! order chosen so that the fields matched most often come first). A set of
//! packets is a [`Bdd`] over these variables: the headers *as the packet
//! was sent*. What devices write on the way (registers, tunnel metadata,
//! rewritten addresses) is not a BDD variable but an [`Overlay`] value of
//! the path (see `bridge.rs`), so every hop's match is a constraint on the
//! original packet and a counterexample is a packet one can replay.

use biodivine_lib_bdd::{Bdd, BddPartialValuation, BddVariable, BddVariableSet};
use std::fmt;

/// A field a flow may match or an action may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    DlType,
    NwProto,
    NwDst,
    NwSrc,
    TpDst,
    TpSrc,
    DlSrc,
    DlDst,
    ArpOp,
    ArpSpa,
    ArpTpa,
    ArpSha,
    ArpTha,
    // metadata (never BDD variables)
    InPort,
    TunId,
    TunDst,
    Reg(u8),
    CtState,
}

/// The header fields, in BDD variable order.
pub const HEADER_FIELDS: [Field; 13] = [
    Field::DlType,
    Field::NwProto,
    Field::NwDst,
    Field::NwSrc,
    Field::TpDst,
    Field::TpSrc,
    Field::DlSrc,
    Field::DlDst,
    Field::ArpOp,
    Field::ArpSpa,
    Field::ArpTpa,
    Field::ArpSha,
    Field::ArpTha,
];

pub const ETH_IP: u128 = 0x0800;
pub const ETH_ARP: u128 = 0x0806;

impl Field {
    pub fn width(self) -> u32 {
        match self {
            Field::DlType | Field::TpDst | Field::TpSrc | Field::ArpOp | Field::InPort => 16,
            Field::NwProto | Field::CtState => 8,
            Field::NwDst
            | Field::NwSrc
            | Field::ArpSpa
            | Field::ArpTpa
            | Field::TunDst
            | Field::Reg(_) => 32,
            Field::DlSrc | Field::DlDst | Field::ArpSha | Field::ArpTha => 48,
            Field::TunId => 64,
        }
    }
    pub fn is_header(self) -> bool {
        HEADER_FIELDS.contains(&self)
    }
    /// Parses an ovs-fields(7) name (also the NXM/OXM long names used in
    /// `load:`/`move:`).
    pub fn parse(name: &str) -> Option<Field> {
        let f = match name {
            "dl_type" | "eth_type" | "NXM_OF_ETH_TYPE" => Field::DlType,
            "nw_proto" | "ip_proto" | "NXM_OF_IP_PROTO" => Field::NwProto,
            "nw_dst" | "ip_dst" | "NXM_OF_IP_DST" => Field::NwDst,
            "nw_src" | "ip_src" | "NXM_OF_IP_SRC" => Field::NwSrc,
            "tp_dst" | "tcp_dst" | "udp_dst" | "NXM_OF_TCP_DST" | "NXM_OF_UDP_DST" => Field::TpDst,
            "tp_src" | "tcp_src" | "udp_src" | "NXM_OF_TCP_SRC" | "NXM_OF_UDP_SRC" => Field::TpSrc,
            "dl_src" | "eth_src" | "NXM_OF_ETH_SRC" => Field::DlSrc,
            "dl_dst" | "eth_dst" | "NXM_OF_ETH_DST" => Field::DlDst,
            "arp_op" | "NXM_OF_ARP_OP" => Field::ArpOp,
            "arp_spa" | "NXM_OF_ARP_SPA" => Field::ArpSpa,
            "arp_tpa" | "NXM_OF_ARP_TPA" => Field::ArpTpa,
            "arp_sha" | "NXM_NX_ARP_SHA" => Field::ArpSha,
            "arp_tha" | "NXM_NX_ARP_THA" => Field::ArpTha,
            "in_port" | "NXM_OF_IN_PORT" => Field::InPort,
            "tun_id" | "tunnel_id" | "NXM_NX_TUN_ID" => Field::TunId,
            "tun_dst" | "NXM_NX_TUN_IPV4_DST" => Field::TunDst,
            "ct_state" => Field::CtState,
            _ => {
                let n = name
                    .strip_prefix("NXM_NX_REG")
                    .or_else(|| name.strip_prefix("reg"))?;
                let r: u8 = n.parse().ok()?;
                if r > 15 {
                    return None;
                }
                Field::Reg(r)
            }
        };
        Some(f)
    }
    pub fn mask(self) -> u128 {
        let w = self.width();
        if w >= 128 {
            u128::MAX
        } else {
            (1u128 << w) - 1
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Field::DlType => "dl_type",
            Field::NwProto => "nw_proto",
            Field::NwDst => "nw_dst",
            Field::NwSrc => "nw_src",
            Field::TpDst => "tp_dst",
            Field::TpSrc => "tp_src",
            Field::DlSrc => "dl_src",
            Field::DlDst => "dl_dst",
            Field::ArpOp => "arp_op",
            Field::ArpSpa => "arp_spa",
            Field::ArpTpa => "arp_tpa",
            Field::ArpSha => "arp_sha",
            Field::ArpTha => "arp_tha",
            Field::InPort => "in_port",
            Field::TunId => "tun_id",
            Field::TunDst => "tun_dst",
            Field::Reg(r) => return write!(f, "reg{r}"),
            Field::CtState => "ct_state",
        };
        f.write_str(s)
    }
}

/// The BDD variable universe of header spaces.
pub struct Space {
    pub vars: BddVariableSet,
    /// First variable index of each header field (HEADER_FIELDS order).
    offsets: [u16; 13],
}

/// A concrete packet header (the values of every header field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headers(pub Vec<(Field, u128)>);

impl Headers {
    pub fn get(&self, f: Field) -> u128 {
        self.0
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    }
}

impl Default for Space {
    fn default() -> Self {
        Self::new()
    }
}

impl Space {
    pub fn new() -> Space {
        let mut offsets = [0u16; 13];
        let mut n = 0u16;
        for (i, f) in HEADER_FIELDS.iter().enumerate() {
            offsets[i] = n;
            n += f.width() as u16;
        }
        Space {
            vars: BddVariableSet::new_anonymous(n),
            offsets,
        }
    }

    fn var(&self, f: Field, bit_from_msb: u32) -> BddVariable {
        let i = HEADER_FIELDS.iter().position(|g| *g == f).unwrap_or(0);
        BddVariable::from_index(self.offsets[i] as usize + bit_from_msb as usize)
    }

    pub fn all(&self) -> Bdd {
        self.vars.mk_true()
    }
    pub fn none(&self) -> Bdd {
        self.vars.mk_false()
    }

    /// Packets whose header field `f` (a header field) equals `value` on the bits of `mask`.
    pub fn field_eq(&self, f: Field, value: u128, mask: u128) -> Bdd {
        let w = f.width();
        let mut clause = BddPartialValuation::empty();
        for b in 0..w {
            let bit = w - 1 - b;
            if (mask >> bit) & 1 == 1 {
                clause.set_value(self.var(f, b), (value >> bit) & 1 == 1);
            }
        }
        self.vars.mk_conjunctive_clause(&clause)
    }

    /// Packets whose field `f` lies in `lo..=hi` (as a union of aligned blocks).
    pub fn field_range(&self, f: Field, lo: u128, hi: u128) -> Bdd {
        let mut out = self.none();
        let full = f.mask();
        let mut s = lo;
        while s <= hi {
            let mut size: u128 = 1;
            while s.is_multiple_of(size * 2) && s + size * 2 - 1 <= hi && size * 2 <= full {
                size *= 2;
            }
            out = out.or(&self.field_eq(f, s, full & !(size - 1)));
            s += size;
            if s == 0 {
                break;
            }
        }
        out
    }

    /// One packet of `set`, preferring ordinary values (IPv4 TCP, port
    /// 40000 → unconstrained otherwise 0), or None if `set` is empty.
    pub fn witness(&self, set: &Bdd) -> Option<Headers> {
        if set.is_false() {
            return None;
        }
        let mut s = set.clone();
        for (f, v) in [
            (Field::DlType, ETH_IP),
            (Field::NwProto, 6),
            (Field::TpSrc, 40000),
            (Field::DlDst, 0xfeff_ffff_ffff),
        ] {
            let t = s.and(&self.field_eq(f, v, f.mask()));
            if !t.is_false() {
                s = t;
            }
        }
        let clause = s.first_clause()?;
        let mut out = Vec::new();
        for f in HEADER_FIELDS {
            let w = f.width();
            let mut v: u128 = 0;
            for b in 0..w {
                if clause.get_value(self.var(f, b)) == Some(true) {
                    v |= 1 << (w - 1 - b);
                }
            }
            out.push((f, v));
        }
        Some(Headers(out))
    }
}

/// Formats a field value the way ovs-ofctl prints it.
pub fn show(f: Field, v: u128) -> String {
    match f {
        Field::NwDst | Field::NwSrc | Field::ArpSpa | Field::ArpTpa | Field::TunDst => {
            std::net::Ipv4Addr::from(v as u32).to_string()
        }
        Field::DlSrc | Field::DlDst | Field::ArpSha | Field::ArpTha => mac(v as u64),
        Field::DlType => format!("0x{v:04x}"),
        _ => v.to_string(),
    }
}

pub fn mac(m: u64) -> String {
    let b = m.to_be_bytes();
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        b[2], b[3], b[4], b[5], b[6], b[7]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_exact() {
        let s = Space::new();
        let r = s.field_range(Field::TpDst, 1000, 1031);
        for p in [999u128, 1000, 1024, 1031, 1032] {
            let inside = !r.and(&s.field_eq(Field::TpDst, p, 0xffff)).is_false();
            assert_eq!(inside, (1000..=1031).contains(&p), "port {p}");
        }
    }

    #[test]
    fn witness_satisfies() {
        let s = Space::new();
        let set = s
            .field_eq(Field::NwDst, 0x0a010203, 0xffff_ffff)
            .and(&s.field_eq(Field::DlType, ETH_IP, 0xffff));
        let w = s.witness(&set).unwrap();
        assert_eq!(w.get(Field::NwDst), 0x0a010203);
        assert_eq!(w.get(Field::NwProto), 6);
    }
}
