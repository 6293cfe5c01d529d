//! Concrete counterexample packets: Ethernet frames and pcap files.
//!
//! Expects [`Headers`] (a witness of a header space). Guarantees: the frame
//! is a well-formed Ethernet II frame (IPv4 with a valid header checksum and
//! TCP/UDP with a valid checksum, or ARP) that Scapy's `rdpcap` reads and
//! `sendp` replays; the pcap is the classic format (magic a1b2c3d4, link
//! type 1 = Ethernet).

use crate::space::{Field, Headers, ETH_ARP, ETH_IP};

fn csum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from(c[0]) << 8
        };
        sum += u32::from(w);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn mac(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The Ethernet frame of `h`.
pub fn frame(h: &Headers) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(mac(h.get(Field::DlDst)));
    f.extend(mac(h.get(Field::DlSrc)));
    let ty = h.get(Field::DlType) as u16;
    f.extend(ty.to_be_bytes());
    if u128::from(ty) == ETH_ARP {
        f.extend([0, 1, 8, 0, 6, 4]);
        f.extend((h.get(Field::ArpOp) as u16).to_be_bytes());
        f.extend(mac(h.get(Field::ArpSha)));
        f.extend((h.get(Field::ArpSpa) as u32).to_be_bytes());
        f.extend(mac(h.get(Field::ArpTha)));
        f.extend((h.get(Field::ArpTpa) as u32).to_be_bytes());
    } else if u128::from(ty) == ETH_IP {
        let proto = h.get(Field::NwProto) as u8;
        let src = (h.get(Field::NwSrc) as u32).to_be_bytes();
        let dst = (h.get(Field::NwDst) as u32).to_be_bytes();
        let sport = (h.get(Field::TpSrc) as u16).to_be_bytes();
        let dport = (h.get(Field::TpDst) as u16).to_be_bytes();
        let mut l4 = Vec::new();
        match proto {
            6 => {
                l4.extend(sport);
                l4.extend(dport);
                l4.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
            }
            17 => {
                l4.extend(sport);
                l4.extend(dport);
                l4.extend(8u16.to_be_bytes());
                l4.extend([0, 0]);
            }
            _ => {}
        }
        if proto == 6 || proto == 17 {
            let mut pseudo = Vec::new();
            pseudo.extend(src);
            pseudo.extend(dst);
            pseudo.extend([0, proto]);
            pseudo.extend((l4.len() as u16).to_be_bytes());
            pseudo.extend(&l4);
            let c = csum(&pseudo);
            let at = if proto == 6 { 16 } else { 6 };
            l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
        let total = (20 + l4.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend(total.to_be_bytes());
        ip.extend([0, 1, 0, 0, 64, proto, 0, 0]);
        ip.extend(src);
        ip.extend(dst);
        let c = csum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend(ip);
        f.extend(l4);
    }
    while f.len() < 60 {
        f.push(0);
    }
    f
}

/// A pcap file holding `frames`.
pub fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend(0i32.to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out.extend(65535u32.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    for f in frames {
        out.extend(0u32.to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend((f.len() as u32).to_le_bytes());
        out.extend((f.len() as u32).to_le_bytes());
        out.extend(f);
    }
    out
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A TCP/UDP packet from `src:sport` to `dst:dport` (for table-level counterexamples).
pub fn five_tuple(proto: u8, src: u32, dst: u32, sport: u16, dport: u16) -> Headers {
    Headers(vec![
        (Field::DlType, ETH_IP),
        (Field::NwProto, u128::from(proto)),
        (Field::NwDst, u128::from(dst)),
        (Field::NwSrc, u128::from(src)),
        (Field::TpDst, u128::from(dport)),
        (Field::TpSrc, u128::from(sport)),
        (Field::DlSrc, 0x02_00_00_00_00_99),
        (Field::DlDst, 0xfe_ff_ff_ff_ff_ff),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_checksum_verifies() {
        let f = frame(&five_tuple(6, 0x0a000001, 0x0a000002, 1234, 80));
        assert_eq!(csum(&f[14..34]), 0);
        assert_eq!(f.len(), 60); // 14 + 20 + 20, padded to the Ethernet minimum
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 40);
        let p = pcap(&[f]);
        assert_eq!(&p[..4], &0xa1b2_c3d4u32.to_le_bytes());
    }
}
