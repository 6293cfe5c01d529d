//! A switch counterexample's packet as a frame a Scapy user can replay at
//! the switch port: the innermost packet (`crate::packet::frame`), wrapped
//! in Ethernet/IPv4/UDP 4789/VXLAN when it arrives encapsulated.
//!
//! Expects a [`PacketIn`] (a witness of the symbolic ingress). Guarantees:
//! the headers map names every field the ingress read (switch port, VNI,
//! outer destination, the inner 5-tuple); the frame's IPv4 header checksum
//! is valid, its UDP checksum 0 (allowed for IPv4, as VTEPs send it).

use super::ingress::PacketIn;
use crate::packet;
use crate::report::Packet;
use std::net::Ipv4Addr;

/// The underlay source of the outer header: a documentation address, since
/// the switch's ingress never reads it.
const OUTER_SRC: u32 = 0xc000_0201; // 192.0.2.1

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// `inner` (an Ethernet frame) in VXLAN `vni`, sent to `outer_dst`.
fn vxlan(vni: u32, outer_dst: u32, sport: u16, inner: &[u8]) -> Vec<u8> {
    let mut vx = vec![0x08, 0, 0, 0];
    vx.extend(&(vni << 8).to_be_bytes());
    let udp_len = (8 + vx.len() + inner.len()) as u16;
    let mut udp = Vec::new();
    udp.extend(sport.to_be_bytes());
    udp.extend(4789u16.to_be_bytes());
    udp.extend(udp_len.to_be_bytes());
    udp.extend([0, 0]);
    let mut ip = vec![0x45, 0];
    ip.extend((20 + udp_len).to_be_bytes());
    ip.extend([0, 1, 0, 0, 64, 17, 0, 0]);
    ip.extend(OUTER_SRC.to_be_bytes());
    ip.extend(outer_dst.to_be_bytes());
    let c = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = Vec::new();
    f.extend([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff]); // the router MAC
    f.extend([0x02, 0, 0, 0, 0, 0x98]);
    f.extend(0x0800u16.to_be_bytes());
    f.extend(ip);
    f.extend(udp);
    f.extend(vx);
    f.extend(inner);
    f
}

/// The counterexample packet `p` entering `switch`.
pub fn packet(switch: &str, p: &PacketIn) -> Packet {
    let h = packet::five_tuple(p.proto, p.src, p.dst, p.sport, p.dport);
    let mut out = Packet::from_headers(format!("switch {switch} port {}", p.ingress_port), &h);
    if let Some(vni) = p.vxlan_vni {
        out.frame = vxlan(vni, p.outer_dst, 0xc000, &out.frame);
        out.frame_hex = packet::hex(&out.frame);
        out.headers.insert("vxlan_vni".into(), vni.to_string());
        out.headers.insert(
            "outer_nw_dst".into(),
            Ipv4Addr::from(p.outer_dst).to_string(),
        );
    }
    out.headers
        .insert("in_port".into(), p.ingress_port.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vxlan_packet_is_wrapped_with_a_valid_outer_header() {
        let p = PacketIn {
            ingress_port: 3,
            vxlan_vni: Some(100),
            outer_dst: 0xef01_0101,
            proto: 17,
            src: 0x0a00_0001,
            dst: 0xef01_0101,
            sport: 5,
            dport: 6,
        };
        let pk = packet("tor1", &p);
        let f = &pk.frame;
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(ipv4_checksum(&f[14..34]), 0, "outer IPv4 checksum");
        assert_eq!(&f[36..38], &4789u16.to_be_bytes());
        assert_eq!(&f[42..50], &[0x08, 0, 0, 0, 0, 0, 100, 0]);
        // the inner frame follows: its ethertype is IPv4, its destination the group
        assert_eq!(&f[62..64], &[0x08, 0x00]);
        assert_eq!(&f[80..84], &[0xef, 1, 1, 1]);
        assert_eq!(pk.headers["vxlan_vni"], "100");
        assert_eq!(pk.ingress, "switch tor1 port 3");
    }
}
