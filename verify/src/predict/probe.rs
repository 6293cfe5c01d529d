//! `netc predict`'s packet language: one concrete packet entering one
//! device, a host's bridge or a P4 switch, in one syntax.
//!
//! Expects the text `host=DEV,in_port=N[,tun_id=V[,tun_dst=A]],HEADERS`
//! (ovs-fields(7) names; `device=` is `host=`'s synonym, and a switch
//! counterexample's packet line — `in_port=…,outer_nw_dst=…,vxlan_vni=…` —
//! reads as is). Guarantees: [`Probe::parse`] checks the syntax only; which
//! keys a device takes (a bridge's tunnel port is 1, a switch's VXLAN
//! packet needs its outer destination) is checked by `predict`, which
//! knows the device.

use crate::ofctl::{parse_value, split_top};
use crate::space::{Field, Headers, ETH_IP, HEADER_FIELDS};
use std::collections::BTreeMap;

/// A concrete packet entering one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The device: a host's (or Hoverboard's) bridge, or a P4 switch.
    pub host: String,
    pub in_port: u32,
    /// The VXLAN VNI it arrives with (a bridge: only by its tunnel port 1).
    pub tun_id: Option<u128>,
    /// The outer IPv4 destination of a VXLAN packet (a switch routes on it).
    pub tun_dst: Option<u32>,
    /// The headers (of the inner frame, when it arrives by VXLAN).
    pub headers: Headers,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("bad packet `{text}`: {message}")]
    Syntax { text: String, message: String },
    #[error("no bridge or switch `{host}` in the artifacts (devices: {known})")]
    UnknownHost { host: String, known: String },
    #[error("bad packet for {device}: {message}")]
    Device { device: String, message: String },
}

fn syntax(text: &str, message: impl Into<String>) -> ProbeError {
    ProbeError::Syntax {
        text: text.to_string(),
        message: message.into(),
    }
}

/// The keys a probe accepts.
pub const PROBE_KEYS: &str = "host (or device) in_port tun_id tun_dst, then eth_src eth_dst \
     eth_type ip_src ip_dst proto tp_src tp_dst arp_op arp_spa arp_tpa arp_sha arp_tha \
     (ovs-fields(7) names such as dl_src, nw_dst, tcp_dst work too) and the shorthands ip, \
     tcp, udp, icmp, arp";

impl Probe {
    /// Parses `host=h1,in_port=10,tcp,eth_src=02:..,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80`
    /// (or `host=tor1,in_port=1,tun_id=5001,tun_dst=192.168.0.13,tcp,…` at a switch).
    /// Unset IPv4 TCP/UDP fields default to 0 except `tp_src` (40000); a
    /// packet with IP addresses and no `eth_type` is IPv4.
    pub fn parse(text: &str) -> Result<Probe, ProbeError> {
        let mut host = None;
        let mut in_port = None;
        let mut tun_id = None;
        let mut tun_dst = None;
        let mut vals: BTreeMap<Field, u128> = BTreeMap::new();
        for tok in split_top(text) {
            let (k, v) = match tok {
                "ip" => ("eth_type", "0x0800"),
                "arp" => ("eth_type", "0x0806"),
                "tcp" | "udp" | "icmp" => {
                    vals.insert(Field::DlType, ETH_IP);
                    let p = match tok {
                        "tcp" => 6,
                        "udp" => 17,
                        _ => 1,
                    };
                    vals.insert(Field::NwProto, p);
                    continue;
                }
                _ => tok.split_once('=').ok_or_else(|| {
                    syntax(
                        text,
                        format!("`{tok}` is not key=value (keys: {PROBE_KEYS})"),
                    )
                })?,
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "host" | "device" => host = Some(v.to_string()),
                "in_port" => {
                    in_port =
                        Some(v.parse::<u32>().map_err(|_| {
                            syntax(text, format!("in_port `{v}` is not a port number"))
                        })?)
                }
                "tun_id" | "tunnel_id" | "vxlan_vni" => {
                    tun_id = Some(
                        parse_value(Field::TunId, v)
                            .ok_or_else(|| syntax(text, format!("tun_id `{v}` is not a number")))?,
                    )
                }
                "tun_dst" | "outer_nw_dst" => {
                    tun_dst = Some(v.parse::<std::net::Ipv4Addr>().map(u32::from).map_err(
                        |_| syntax(text, format!("tun_dst `{v}` is not an IPv4 address")),
                    )?)
                }
                _ => {
                    let f = match k {
                        "proto" => Some(Field::NwProto),
                        _ => Field::parse(k).filter(|f| f.is_header()),
                    }
                    .ok_or_else(|| {
                        syntax(text, format!("unknown key `{k}` (keys: {PROBE_KEYS})"))
                    })?;
                    let x = parse_value(f, v)
                        .ok_or_else(|| syntax(text, format!("bad value `{v}` for `{k}`")))?;
                    vals.insert(f, x);
                }
            }
        }
        let host = host.ok_or_else(|| {
            syntax(
                text,
                "missing `host=` (the device: a host's bridge or a switch)",
            )
        })?;
        let in_port = in_port.ok_or_else(|| {
            syntax(
                text,
                "missing `in_port=` (a VM's port or 1, the tunnel, on a bridge; a switch port)",
            )
        })?;
        if tun_dst.is_some() && tun_id.is_none() {
            return Err(syntax(
                text,
                "`tun_dst=` is the outer destination of a VXLAN packet: give its `tun_id=` too",
            ));
        }
        if !vals.contains_key(&Field::DlType)
            && (vals.contains_key(&Field::NwSrc) || vals.contains_key(&Field::NwDst))
        {
            vals.insert(Field::DlType, ETH_IP);
        }
        if vals.get(&Field::DlType) == Some(&ETH_IP) {
            vals.entry(Field::TpSrc).or_insert(40000);
        }
        let headers = Headers(
            HEADER_FIELDS
                .iter()
                .map(|f| (*f, vals.get(f).copied().unwrap_or(0)))
                .collect(),
        );
        Ok(Probe {
            host,
            in_port,
            tun_id,
            tun_dst,
            headers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_probe() {
        let p = Probe::parse(
            "host=h1,in_port=10,tcp,eth_src=02:00:00:00:01:01,ip_src=10.1.1.11,ip_dst=10.1.1.12,tp_dst=80",
        )
        .unwrap();
        assert_eq!((p.host.as_str(), p.in_port, p.tun_id), ("h1", 10, None));
        assert_eq!(p.headers.get(Field::NwDst), 0x0a01010c);
        assert_eq!(p.headers.get(Field::TpSrc), 40000);
        assert_eq!(p.headers.get(Field::NwProto), 6);
        let t = Probe::parse("host=h2,in_port=1,tun_id=5001,ip_dst=10.1.1.11").unwrap();
        assert_eq!(
            (t.tun_id, t.headers.get(Field::DlType)),
            (Some(5001), ETH_IP)
        );
        // a switch counterexample's packet line, as printed
        let s = Probe::parse("device=tor2,dl_dst=fe:ff:ff:ff:ff:ff,dl_type=0x0800,in_port=49,nw_dst=0.0.0.0,nw_proto=6,nw_src=198.51.100.7,outer_nw_dst=192.168.0.13,tp_dst=0,tp_src=0,vxlan_vni=0").unwrap();
        assert_eq!(
            (s.host.as_str(), s.in_port, s.tun_id, s.tun_dst),
            ("tor2", 49, Some(0), Some(0xc0a8_000d))
        );
        assert_eq!(s.headers.get(Field::TpSrc), 0);
        for bad in [
            "in_port=10",
            "host=h1",
            "host=h1,in_port=x",
            "host=h1,in_port=10,reg6=1",
            "host=h1,in_port=10,ip_dst=10.1.1",
            "host=h1,in_port=10,bogus",
            "host=tor1,in_port=1,tun_dst=10.0.0.1",
            "host=tor1,in_port=1,tun_id=1,tun_dst=10.0.0",
        ] {
            assert!(Probe::parse(bad).is_err(), "{bad}");
        }
    }
}
